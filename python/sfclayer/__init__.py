"""sfclayer: raster tile layers on Spark.

Tiles keyed by ``(col, row)`` or ``(col, row, time)`` are stored as Hadoop MapFiles sorted by
a space-filling-curve index, so one layer serves both bounding-box scans and point look-ups.

Examples
--------
>>> import sfclayer, tempfile
>>> spark = sfclayer.session("local[2]")                     # doctest: +SKIP
>>> path = tempfile.mkdtemp() + "/layer"
>>> df = spark.range(256).selectExpr("int(id % 16) AS col", "int(id DIV 16) AS row", "id AS value")
>>> sfclayer.write(df, path, bounds=(0, 0, 15, 15), extent=(0, 0, 16, 16))
>>> sfclayer.read(spark, path, bbox=(10.5, 10.5, 12.5, 12.5)).count()
9
>>> with sfclayer.open(spark, path) as layer:
...     layer.get(3, 2)["value"]
35
"""

import os
import sys

from .errors import (
    SfcLayerError,
    KeyNotFound,
    KeyOutOfBounds,
    InvalidArgument,
    InvalidInput,
    LayerNotFound,
    LayerExists,
    CorruptLayer,
    UnsupportedFormat,
    ConcurrentUpdate,
    CommitStateUnknown,
    StorageError,
)

from .layer import write, read, open, Layer
from .reader import layer as _reader_layer  # noqa: F401  registers the in-process transport (sfclayer.open(path))
from . import _connect
from . import _s3a
from . import _quiet

_quiet.filter_warnings()  # pyspark's pandas-3 FutureWarning, harmless here (sfclayer._quiet says why)

__version__ = "0.1.0"

#: Names imported on first use (PEP 562): the read commands (``sfclayer info``, ``get``) and the tile
#: server start without the modules that write, maintain or analyse layers.
_LAZY = {"verify": "integrity", "repair": "integrity", "VerifyReport": "integrity", "RepairReport": "integrity",
         "Version": "maintenance", "history": "maintenance", "delete": "maintenance", "compact": "maintenance",
         "restore": "maintenance", "vacuum": "maintenance", "ingest": "ingestion", "pyramid": "pyramids",
         "pyramid_levels": "pyramids", "zonal_stats": "zonal", "to_xarray": "arrays", "progress": "_progress:track"}


def __getattr__(name):
    import importlib

    module = _LAZY.get(name)
    if module is not None:
        module, _, attr = module.partition(":")
        value = globals()[name] = getattr(importlib.import_module(f".{module}", __name__), attr or name)
        return value
    if not name.startswith("__"):  # a submodule not imported yet (sfclayer.raster, ...)
        try:
            return importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "jar_path",
    "configure",
    "CATALOG",
    "RELATION_PLUGINS",
    "COMMAND_PLUGINS",
    "session",
    "write",
    "read",
    "open",
    "Layer",
    "verify",
    "repair",
    "VerifyReport",
    "RepairReport",
    "serve",
    "Version",
    "history",
    "delete",
    "compact",
    "restore",
    "vacuum",
    "ingest",
    "pyramid",
    "pyramid_levels",
    "zonal_stats",
    "to_xarray",
    "progress",
    "SfcLayerError",
    "KeyNotFound",
    "KeyOutOfBounds",
    "InvalidArgument",
    "InvalidInput",
    "LayerNotFound",
    "LayerExists",
    "CorruptLayer",
    "UnsupportedFormat",
    "ConcurrentUpdate",
    "CommitStateUnknown",
    "StorageError",
]


def jar_path():
    """Path of the sfclayer connector jar shipped inside this package.

    Returns
    -------
    str
        Absolute path of ``sfclayer.jar``; the ``SFCLAYER_JAR`` environment variable overrides it
        (to try a connector built elsewhere).

    Raises
    ------
    SfcLayerError
        If the package was installed without its jar (build it with ``make jar``).
    """
    path = os.environ.get("SFCLAYER_JAR") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "jars", "sfclayer.jar")
    if not os.path.exists(path):
        raise SfcLayerError(f"sfclayer's connector jar is missing at {path}; build it with `make jar`")
    return path


CATALOG = "io.sfclayer.spark.SfcLayerCatalog"
"""The Spark catalog holding sfclayer's SQL procedures (``CALL sfclayer.system.compact(...)``,
``vacuum``, ``history``). :func:`configure` and :func:`session` register it as ``sfclayer``; any other
session (Spark Connect too, with the jar on the server) can at run time, before its first ``CALL``:
``spark.conf.set("spark.sql.catalog.sfclayer", sfclayer.CATALOG)``."""


RELATION_PLUGINS = "spark.connect.extensions.relation.classes"
"""The Spark Connect server setting naming sfclayer's relation plugin
(``io.sfclayer.spark.connect.SfcLayerRelationPlugin``), which answers ``sfclayer.open`` look-ups and
queries, verify, vacuum and repair for Connect clients without py4j. A static setting of the server."""


COMMAND_PLUGINS = "spark.connect.extensions.command.classes"
"""The Spark Connect server setting naming sfclayer's command plugin
(``io.sfclayer.spark.connect.SfcLayerCommandPlugin``): the short way for look-ups and box queries (their
answers skip Spark's query planning). Optional: without it they go through the relation plugin, slower.
A static setting of the server."""


def configure(builder):
    """Add the sfclayer connector to a ``SparkSession.Builder``.

    Parameters
    ----------
    builder : pyspark.sql.SparkSession.Builder

    Returns
    -------
    pyspark.sql.SparkSession.Builder
        The same builder, with ``spark.jars`` naming the connector jar and, unless the builder
        names a catalog ``sfclayer`` already, ``spark.sql.catalog.sfclayer`` set to :data:`CATALOG`, and
        sfclayer's Spark Connect relation and command plugins added to
        ``spark.connect.extensions.relation.classes`` (:data:`RELATION_PLUGINS`) and
        ``spark.connect.extensions.command.classes`` (:data:`COMMAND_PLUGINS`). For Spark Connect,
        ``builder.remote("local[...]")`` starts its own server, which gets all four;
        a client of a separate server (``remote("sc://...")``) gets the catalog only: the jar must
        be on that server's class path already (README, "Spark Connect").

        The connector jar must be this package's version (its manifest says; SfcLayerError otherwise),
        and is left out when ``spark.jars.packages`` (or spark-submit's ``--packages``/``--jars``) brings
        it, whose version is then checked in the driver's JVM. On any master but ``local`` the package
        itself is shipped to executors (``spark.files`` + ``spark.submit.pyFiles``; README "Install").

    Examples
    --------
    >>> from pyspark.sql import SparkSession
    >>> spark = sfclayer.configure(SparkSession.builder.master("local[2]")).getOrCreate()  # doctest: +SKIP
    >>> spark.sql(f"CALL sfclayer.system.history(path => '{path}')").count()  # doctest: +SKIP
    """
    options = builder._options if hasattr(builder, "_options") else {}
    remote = str(options.get("spark.remote") or os.environ.get("SPARK_REMOTE") or "")
    if remote.startswith("sc://"):
        if "spark.sql.catalog.sfclayer" not in options:  # a run-time setting, which a client may make
            builder = builder.config("spark.sql.catalog.sfclayer", CATALOG)
        return builder
    from . import _deploy, _jvm

    submitted = _deploy.submitted_conf()  # under spark-submit: its --packages, --jars, --py-files...

    def existing(key):
        return options.get(key) or submitted.get(key)

    packages = [p.strip() for p in (existing("spark.jars.packages") or "").split(",")]
    brought = any(p.startswith(_deploy.MAVEN_PREFIX) for p in packages)  # --packages io.sfclayer:...
    if submitted:  # spark-submit's JVM runs already: the connector it loaded (--packages, --jars), if any
        from pyspark import SparkContext

        loaded = _jvm.connector_version(SparkContext._jvm)
        if loaded is not None:
            _deploy.check_version(loaded[0], loaded[1], __version__)
            brought = True
    if not brought:
        jar = jar_path()
        _deploy.check_version(_deploy.jar_version(jar), jar, __version__)
        jars = existing("spark.jars")
        builder = builder.config("spark.jars", jar if not jars else f"{jars},{jar}")
    if "spark.sql.catalog.sfclayer" not in options:
        builder = builder.config("spark.sql.catalog.sfclayer", CATALOG)
    # for remote("local")'s own Connect server (on a classic session, a setting nothing reads)
    for setting, plugin in ((RELATION_PLUGINS, _connect.PLUGIN), (COMMAND_PLUGINS, _connect.COMMAND_PLUGIN)):
        plugins = options.get(setting)
        if not plugins or plugin not in plugins.split(","):
            builder = builder.config(setting, f"{plugins},{plugin}" if plugins else plugin)
    master = None if remote else (options.get("spark.master") or submitted.get("spark.master"))
    if (remote or str(master or "local").startswith("local")) and not os.environ.get("PYSPARK_PYTHON"):
        os.environ["PYSPARK_PYTHON"] = sys.executable  # local Python workers run this interpreter (session's note)
    for key, value in _deploy.ship_package(master, {k: existing(k) for k in ("spark.files", "spark.submit.pyFiles")}).items():
        builder = builder.config(key, value)  # executors whose Python lacks sfclayer get it with the job
    return builder


def session(master="local[*]", app_name="sfclayer", s3=None, **conf):
    """A classic (non-Connect) SparkSession with the connector loaded and its SQL procedures
    (``CALL sfclayer.system.compact(...)``, see :data:`CATALOG`) registered.

    Parameters
    ----------
    master : str
        Spark master URL, ``local[*]`` by default.
    app_name : str
    s3 : bool or str, optional
        Put the S3A connector (``hadoop-aws`` 3.5.0 and the AWS SDK v2 2.35.4 ``s3`` modules) on the
        class path, for layers at ``s3a://``: a directory of its jars (``make s3-jars`` leaves them
        in ``integration/target/s3-jars``), or True (``$SFCLAYER_S3A_JARS``, a checkout's
        ``integration/target/s3-jars``, else ``spark.jars.packages`` from Maven Central). S3A's own
        settings (endpoint, credentials) go in ``conf`` as ``spark.hadoop.fs.s3a.*``; README, "Layers
        on S3".
    **conf
        Extra Spark settings; underscores may stand for dots
        (``spark_sql_shuffle_partitions=4``). When ``PYSPARK_PYTHON`` is unset, it is set to
        ``sys.executable``: Python workers run this interpreter.

    Returns
    -------
    pyspark.sql.SparkSession
    """
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName(app_name)
    if not os.environ.get("PYSPARK_PYTHON"):
        # Python workers run this interpreter (a virtualenv's, even if it was never activated), so
        # UDFs can import what the driver imports, sfclayer included. pyspark reads the variable
        # when the SparkContext starts (and ships it with every Python function to executors).
        os.environ["PYSPARK_PYTHON"] = sys.executable
    # Spark's console bar off: sfclayer's operations draw their own (sfclayer._progress), which Spark's
    # would overwrite; sfclayer.progress(spark, ...) shows any other action's the same way.
    builder = builder.config("spark.ui.showConsoleProgress", "false")
    conf = {key if "." in key else key.replace("_", "."): str(value) for key, value in conf.items()}
    for key, value in _quiet.spark_conf(master, conf).items():  # a quiet start (sfclayer._quiet)
        conf.setdefault(key, value)
    for key, value in _s3a.spark_conf(s3).items():
        if key == "spark.jars" and conf.get("spark.jars"):
            value = f"{conf['spark.jars']},{value}"
        conf[key] = value
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = configure(builder).getOrCreate()
    from . import _deploy, _jvm

    loaded = _jvm.connector_version(spark.sparkContext._jvm)  # the jar given, or one --packages brought
    if loaded is None:
        raise SfcLayerError("the SparkSession has no sfclayer connector classes (a session started before "
                            "without sfclayer.configure? stop it first)")
    _deploy.check_version(loaded[0], loaded[1], __version__)
    return spark


def serve(spark, paths, **kwargs):
    """Serve layers over HTTP with a web map viewer; see :func:`sfclayer.server.serve`."""
    from .server import serve as _serve

    return _serve(spark, paths, **kwargs)
