"""What a Spark application needs of this installation, set up by :func:`sfclayer.configure`:

* the connector jar, of this package's version: the jar shipped in the wheel (its manifest's
  ``Implementation-Version``), or one the application brought (``spark-submit --packages
  io.sfclayer:sfclayer-spark_2.13:<version>`` or ``--jars``), checked in the driver's JVM;
* the package itself for executors whose Python lacks it (the code ingest, zonal statistics, pyramids
  and conversions run in Python workers): zipped once per process and shipped with the application
  (``spark.files`` + ``spark.submit.pyFiles``: the workers put it on their path) on any master but
  ``local``, whose workers run the driver's interpreter.
"""

import hashlib
import os
import tempfile
import zipfile

from .errors import SfcLayerError

__all__ = ["MAVEN_PREFIX", "jar_version", "check_version", "submitted_conf", "package_zip", "ship_package"]

#: The connector's Maven coordinates without the version (``spark-submit --packages``).
MAVEN_PREFIX = "io.sfclayer:sfclayer-spark_"

_ZIP = {}  # the package zip of this process, made once


def jar_version(path):
    """The ``Implementation-Version`` in the manifest of the jar at ``path``, or None."""
    with zipfile.ZipFile(path) as z:
        try:
            text = z.read("META-INF/MANIFEST.MF").decode("utf-8", "replace")
        except KeyError:
            return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "Implementation-Version":
            return value.strip()
    return None


def check_version(found, where, version):
    """Raise :class:`~sfclayer.errors.SfcLayerError` unless the connector ``found`` (a version string or
    None) at ``where`` is this package's ``version``."""
    if found == version:
        return
    raise SfcLayerError(
        f"sfclayer's connector jar {where} is version {found or 'unknown (built without a version)'}, the "
        f"Python package is {version}: they must be the same release (pip install sfclayer=={found} to match "
        f"the jar, or give the jar of {version}: --packages {MAVEN_PREFIX}2.13:{version}, or `make jar` in a "
        "source checkout)")


def submitted_conf():
    """The Spark settings of the JVM spark-submit launched this driver with (``--packages``, ``--jars``,
    ``--py-files``...), or {} when this Python process started no JVM of spark-submit's yet."""
    if not os.environ.get("PYSPARK_GATEWAY_PORT"):
        return {}
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()  # connects to spark-submit's gateway; starts nothing
    return dict(SparkConf().getAll())


def package_zip():
    """A zip of the installed ``sfclayer`` package (its Python files; not the jar), made once per process
    in a temporary directory; its name carries a hash of its contents (Spark refuses a second file of
    one name with other bytes)."""
    if "path" in _ZIP and os.path.exists(_ZIP["path"]):
        return _ZIP["path"]
    root = os.path.dirname(os.path.abspath(__file__))
    files = []
    for directory, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in ("__pycache__", "jars"))
        files += [os.path.join(directory, n) for n in sorted(names) if not n.endswith((".pyc", ".jar"))]
    digest = hashlib.sha256()
    for f in files:
        digest.update(os.path.relpath(f, root).encode())
        with open(f, "rb") as fh:
            digest.update(fh.read())
    out = os.path.join(tempfile.mkdtemp(prefix="sfclayer-pyfiles-"), f"sfclayer-{digest.hexdigest()[:12]}.zip")
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for f in files:
            z.write(f, os.path.join("sfclayer", os.path.relpath(f, root)))
    _ZIP["path"] = out
    return out


def ship_package(master, existing):
    """Settings that ship :func:`package_zip` to executors (``spark.files`` and ``spark.submit.pyFiles``,
    appended to their ``existing`` values), or {} for a ``local`` master (or none: pyspark's default)."""
    if not master or str(master).startswith("local"):
        return {}
    path = package_zip()
    conf = {}
    for key in ("spark.files", "spark.submit.pyFiles"):
        old = existing.get(key)
        if old and path in old.split(","):  # configured twice
            continue
        conf[key] = f"{old},{path}" if old else path
    return conf
