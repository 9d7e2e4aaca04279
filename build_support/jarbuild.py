"""Builds sfclayer's connector jar for a wheel: ``gradle jar`` with a JDK 17 against pyspark's jars.

Used by setup.py's ``build_py`` (the jar goes into the wheel's ``sfclayer/jars/``) and by backend.py
(what the build environment needs). Every failure is one line naming what the build needs: a wheel
is never made without its jar.
"""

import glob
import os
import re
import shutil
import subprocess
import sys

__all__ = ["PYSPARK_FOR_BUILD", "check_tools", "given_pyspark_jars", "pyspark_jars", "build_jar"]

#: What the build environment installs when no pyspark jars are given: the Spark the jar is compiled
#: against (the tests' pyspark; the jar runs on the pyspark range of pyproject.toml's [spark] extra).
PYSPARK_FOR_BUILD = "pyspark==4.3.0"

NEEDS = ("building sfclayer's connector jar needs a JDK 17+ (javac on PATH or $JAVA_HOME/bin), Gradle "
         "(gradle on PATH or $GRADLE) and pyspark's jars (pyspark installed in the build environment, "
         "$PYSPARK_JARS or $SPARK_HOME/jars)")


def _fail(what):
    raise SystemExit(f"error: {what}: {NEEDS}")


def _javac():
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "javac"), os.X_OK):
        return os.path.join(home, "bin", "javac")
    return shutil.which("javac")


def _gradle():
    return os.environ.get("GRADLE") or shutil.which("gradle")


def check_tools():
    """Raise SystemExit (one line) unless a JDK 17+ and Gradle are there."""
    javac = _javac()
    if not javac:
        _fail("no JDK (javac) found")
    try:
        out = subprocess.run([javac, "-version"], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        _fail(f"{javac} -version failed ({e})")
    m = re.search(r"javac (\d+)", out.stdout + out.stderr)
    if not m or int(m.group(1)) < 17:
        _fail(f"{javac} is not a JDK 17+ ({(out.stdout + out.stderr).strip() or 'no version'})")
    if not _gradle():
        _fail("no Gradle found")


def _has_spark(directory):
    return bool(directory) and bool(glob.glob(os.path.join(directory, "spark-sql_*.jar")))


def given_pyspark_jars():
    """``$PYSPARK_JARS`` or ``$SPARK_HOME/jars`` when it holds Spark's jars, else None."""
    for directory in (os.environ.get("PYSPARK_JARS"),
                      os.environ.get("SPARK_HOME") and os.path.join(os.environ["SPARK_HOME"], "jars")):
        if _has_spark(directory):
            return directory
    return None


def pyspark_jars():
    """The directory of Spark's jars to compile against: given, else the build environment's pyspark."""
    given = given_pyspark_jars()
    if given:
        return given
    try:
        import pyspark
    except ImportError:
        _fail("no pyspark in the build environment")
    directory = os.path.join(os.path.dirname(pyspark.__file__), "jars")
    if not _has_spark(directory):
        _fail(f"pyspark at {os.path.dirname(pyspark.__file__)} has no Spark jars (pyspark-client?)")
    return directory


def build_jar(root):
    """Run ``gradle jar`` in ``root``; the path of the jar it built (``build/libs/sfclayer.jar``)."""
    check_tools()
    env = dict(os.environ, PYSPARK_JARS=pyspark_jars())
    javac = _javac()
    env.setdefault("JAVA_HOME", os.path.dirname(os.path.dirname(os.path.realpath(javac))))
    # --build-cache: a wheel built again from the same sources (another sdist directory) reuses the classes
    cmd = [_gradle(), "--quiet", "--console=plain", "--no-daemon", "--build-cache", "-p", root, "jar"]
    print("building the connector jar: " + " ".join(cmd), file=sys.stderr, flush=True)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    jar = os.path.join(root, "build", "libs", "sfclayer.jar")
    if proc.returncode != 0 or not os.path.exists(jar):
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        _fail(f"`gradle jar` failed (exit {proc.returncode}; its output above)")
    return jar
