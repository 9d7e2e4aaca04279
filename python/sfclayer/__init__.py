"""sfclayer: raster tile layers on Spark.

Tiles keyed by ``(col, row)`` or ``(col, row, time)`` are stored as Hadoop MapFiles sorted by
a space-filling-curve index, so one layer serves both bounding-box scans and point look-ups.

Examples
--------
>>> import sfclayer
>>> spark = sfclayer.session("local[2]")                     # doctest: +SKIP
>>> sfclayer.write(df, "/tmp/layer", bounds=(0, 0, 255, 255))  # doctest: +SKIP
>>> sfclayer.read(spark, "/tmp/layer", bbox=(10, 10, 20, 20)).count()  # doctest: +SKIP
"""

import os

from .errors import (
    SfcLayerError,
    KeyNotFound,
    KeyOutOfBounds,
    InvalidArgument,
    InvalidInput,
    LayerNotFound,
    LayerExists,
    CorruptLayer,
    ConcurrentUpdate,
)

from .layer import write, read, open, Layer
from .integrity import verify, repair, VerifyReport, RepairReport
from .maintenance import Version, history, delete, compact, vacuum

__version__ = "0.1.0"


def __getattr__(name):
    # sfclayer.pictures moved to sfclayer.viz.pictures; the old spelling keeps working.
    if name == "pictures":
        import sys

        from .viz import pictures

        sys.modules.setdefault(__name__ + ".pictures", pictures)
        return pictures
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "jar_path",
    "configure",
    "session",
    "write",
    "read",
    "open",
    "Layer",
    "verify",
    "repair",
    "VerifyReport",
    "RepairReport",
    "Version",
    "history",
    "delete",
    "compact",
    "vacuum",
    "SfcLayerError",
    "KeyNotFound",
    "KeyOutOfBounds",
    "InvalidArgument",
    "InvalidInput",
    "LayerNotFound",
    "LayerExists",
    "CorruptLayer",
    "ConcurrentUpdate",
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


def configure(builder):
    """Add the sfclayer connector to a ``SparkSession.Builder``.

    Parameters
    ----------
    builder : pyspark.sql.SparkSession.Builder

    Returns
    -------
    pyspark.sql.SparkSession.Builder
        The same builder, with ``spark.jars`` naming the connector jar.

    Examples
    --------
    >>> from pyspark.sql import SparkSession
    >>> spark = sfclayer.configure(SparkSession.builder.master("local[2]")).getOrCreate()  # doctest: +SKIP
    """
    jar = jar_path()
    existing = builder._options.get("spark.jars") if hasattr(builder, "_options") else None
    jars = jar if not existing else f"{existing},{jar}"
    return builder.config("spark.jars", jars)


def session(master="local[*]", app_name="sfclayer", **conf):
    """A classic (non-Connect) SparkSession with the connector loaded.

    Parameters
    ----------
    master : str
        Spark master URL, ``local[*]`` by default.
    app_name : str
    **conf
        Extra Spark settings; underscores may stand for dots
        (``spark_sql_shuffle_partitions=4``).

    Returns
    -------
    pyspark.sql.SparkSession
    """
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName(app_name)
    # Spark's console progress bar shows how far long writes and scans are.
    builder = builder.config("spark.ui.showConsoleProgress", "true")
    for key, value in conf.items():
        builder = builder.config(key if "." in key else key.replace("_", "."), str(value))
    return configure(builder).getOrCreate()
