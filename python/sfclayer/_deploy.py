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

__all__ = ["MAVEN_PREFIX", "jar_version", "check_version", "submitted_conf", "package_zip", "ship_package",
           "check_executors"]

#: The connector's Maven coordinates without the version (``spark-submit --packages``).
MAVEN_PREFIX = "io.sfclayer:sfclayer-spark_"

_ZIP = {}  # the package zip of this process, made once
_CHECKED = set()  # (application id, modules) whose executors were found to have them


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


def check_executors(spark, needs, feature):
    """Refuse ``feature`` before its job when the executors' Python lacks one of ``needs`` (module name ->
    the extra that installs it; ``sfclayer`` itself is always checked): a probe of a few tasks, once per
    application and set of modules, on any master but ``local`` (whose workers run the driver's
    interpreter, checked where the feature imports them). Without it the job would fail in its Python
    workers with a ``ModuleNotFoundError`` buried in a long trace, after the time spent until then.

    Raises :class:`~sfclayer.errors.SfcLayerError` naming the modules, the extras, the executors' hosts and
    Python, and how to fix it.
    """
    master = str(spark.conf.get("spark.master", "") or "")
    if master.startswith("local"):
        return
    modules = tuple(sorted({"sfclayer", *needs}))
    key = (spark.conf.get("spark.app.id", "") or master, modules)
    if key in _CHECKED:
        return
    import json

    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType

    def probe(_):  # defined here so that cloudpickle ships it by value: the probe needs no sfclayer
        import importlib
        import json as j
        import socket
        import sys

        missing = []
        for m in modules:
            try:
                importlib.import_module(m)
            except ImportError:
                missing.append(m)
        return j.dumps([socket.gethostname(), sys.executable, missing])

    slices = 8  # a few tasks: they spread over the executors the job will use (not a proof for all of them)
    rows = spark.range(0, slices, 1, slices).select(F.udf(probe, StringType())("id").alias("p")).distinct().collect()
    lacking = {}
    for row in rows:
        host, python, missing = json.loads(row["p"])
        for m in missing:
            lacking.setdefault(m, set()).add(f"{python} on {host}")
    if not lacking:
        _CHECKED.add(key)
        return
    extras = sorted({needs.get(m, "") for m in lacking if m != "sfclayer"} - {""})
    install = "pip install " + (" ".join(f"'sfclayer[{e}]'" for e in extras) if extras else "sfclayer")
    where = "; ".join(f"{m}: {', '.join(sorted(ps))}" for m, ps in sorted(lacking.items()))
    raise SfcLayerError(
        f"{feature} runs Python on the executors, and their Python lacks {', '.join(sorted(lacking))} ({where}): "
        f"{install} into that Python on every worker, or point spark.pyspark.python at one that has it"
        + (" (sfclayer itself reaches executors when the session comes from sfclayer.session or "
           "sfclayer.configure)" if "sfclayer" in lacking else ""))
