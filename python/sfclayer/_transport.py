"""The one seam between sfclayer and a Spark driver: the :class:`Transport` interface, its table of
named operations (:data:`OPERATIONS`), and nothing that knows how a request travels.

Its implementations sit beside it: :class:`sfclayer._classic.ClassicTransport` (py4j and the driver's
loopback look-up socket) and :class:`sfclayer._connect.ConnectTransport` (Spark Connect's plugins);
:func:`sfclayer._jvm.transport` chooses one once per session. The in-process reader is a third, with no
session (:class:`sfclayer.reader.layer.InProcessTransport`): ``sfclayer.open(path)`` and
``sfclayer.open(spark, path)`` both open with :meth:`Transport.opener`. No other module asks which kind
of session it has (tests/test_structure.py): it asks the transport for what it needs.
"""

import json

from . import errors

__all__ = ["OPERATIONS", "REGISTERED", "Transport", "arguments", "answer", "in_process"]

# The named operations of the driver (io.sfclayer.spark.Operations): their arguments in order, each
# (name, type) with type string | long | boolean, a trailing "?" where it may be None; and the kind of
# their answer. The jar's io/sfclayer/spark/operations.json is the same table (tests/test_structure.py).
OPERATIONS = {
    "history": ((("path", "string"),), "json"),
    "delete": ((("path", "string"), ("keys", "string?"), ("bbox", "string?"), ("time", "string?")), "json"),
    "compact": ((("path", "string"),), "json"),
    "vacuum": ((("path", "string"), ("retainMillis", "long"), ("dryRun", "boolean"),
                ("enforceRetention", "boolean")), "json"),
    "vacuumProgress": ((("path", "string"),), "json"),
    "repair": ((("path", "string"), ("version", "long"), ("damagedNames", "string"), ("dropped", "string")), "json"),
    "deleteKeys": ((("path", "string"), ("keys", "string")), "json"),
    "restore": ((("path", "string"), ("version", "long"), ("asOf", "string?")), "json"),
    "verify": ((("path", "string"), ("version", "long")), "text"),
    "layerMetadata": ((("path", "string"), ("version", "long"), ("files", "long")), "text"),
    "restoreDocument": ((("path", "string"),), "text"),
    "rebuildManifests": ((("path", "string"),), "text"),
    "pyramidDocument": ((("path", "string"),), "json"),
    "publishPyramidDocument": ((("path", "string"), ("number", "long"), ("text", "string")), "boolean"),
    "takeLease": ((("path", "string"), ("what", "string")), "text"),
    "releaseLease": ((("path", "string"), ("token", "string")), "boolean"),
    "readText": ((("path", "string"),), "text"),
    "geotrellisLayers": ((("catalog", "string"),), "json"),
    "geotrellisInfo": ((("catalog", "string"), ("name", "string"), ("zoom", "long")), "json"),
}

_TYPES = {"string": str, "long": int, "boolean": bool}

#: What the modules building on this one register here (they import it, so it cannot import them):
#: ``"layer"``, :class:`sfclayer.layer.Layer` (a layer read through a driver's transport);
#: ``"in-process"``, the in-process reader's transport (sfclayer.reader.layer).
REGISTERED = {}


def in_process():
    """The transport of layers read in this process, without Spark (:mod:`sfclayer.reader`)."""
    return REGISTERED["in-process"]


def arguments(name, args):
    """Operation ``name``'s positional ``args`` by name, each of its table type (None kept where allowed)."""
    if name not in OPERATIONS:
        raise errors.InvalidArgument(f"sfclayer operation: unknown operation {name!r}")
    params = OPERATIONS[name][0]
    if len(args) != len(params):
        raise errors.InvalidArgument(f"sfclayer operation {name}: {len(args)} arguments, expected {len(params)} "
                                     f"({', '.join(p for p, _ in params)})")
    out = {}
    for (param, kind), value in zip(params, args):
        if value is None and kind.endswith("?"):
            out[param] = None
        elif value is None:
            raise errors.InvalidArgument(f"sfclayer operation {name}: argument {param} is None")
        else:
            out[param] = _TYPES[kind.rstrip("?")](value)
    return out


def answer(name, text):
    """Operation ``name``'s answer (text) as its kind: parsed JSON, the text itself, or a bool."""
    kind = OPERATIONS[name][1]
    if kind == "json":
        return None if text is None else json.loads(text)
    if kind == "boolean":
        return str(text) == "true"
    return None if text is None else str(text)


class Transport:
    """How sfclayer reaches a session's driver: named operations, readers opened for look-ups, and what
    the session offers a Python client (its column functions, RDDs, the driver's JVM).

    Subclasses implement :meth:`_call`, :meth:`open_layer` and :meth:`open_geotrellis`; the defaults of
    the rest are a remote client's (no driver JVM in this process).
    """

    #: Whether this process calls the driver's JVM itself (py4j): RDDs, Hadoop files opened through it.
    driver_jvm = False

    def __init__(self, spark):
        self.spark = spark

    def call(self, name, *args):
        """Run the driver's operation ``name`` (:data:`OPERATIONS`) with positional ``args``; its answer."""
        return answer(name, self._call(name, arguments(name, args)))

    def _call(self, name, args):
        """The answer text of operation ``name`` with ``args`` by name, sfclayer's errors raised."""
        raise NotImplementedError

    def opener(self):
        """What ``sfclayer.open`` calls to open a layer through this transport: ``opener(path, cache_size=,
        cache_bytes=, version=, as_of=, zoom=, storage_options=)`` returns a :class:`~sfclayer.layer.Layer`
        (handed out rather than called here: an error's traceback stays as short as it was). A driver's
        transport opens a Layer reading through :meth:`open_layer`; ``storage_options`` is for in-process
        reads only."""
        import functools

        return functools.partial(REGISTERED["layer"], self.spark)

    def history(self, path):
        """The layer's retained versions, oldest first, as the driver's ``history`` operation answers them."""
        return self.call("history", path)

    def open_layer(self, path, cache_size, cache_bytes, index_in_driver, version, as_of_millis):
        """Opens a reader on an sfclayer layer: ``(info, client)``, ``info`` a dict (``handle``, ``version``,
        ``keyIndex``, ``tileSchema``), ``client`` answering ``get``, ``get_many``, ``query``, ``count``,
        ``metadata_json``, ``stats`` and ``close`` (which closes the reader on the driver)."""
        raise NotImplementedError

    def open_geotrellis(self, catalog, name, zoom, cache_size):
        """Opens a GeoTrellis layer for look-ups: ``(info, client)``, ``info`` the layer's attributes,
        ``client`` as :meth:`open_layer`'s, with ``index(col, row, millis)`` (GeoTrellis' index of a key)."""
        raise NotImplementedError

    def functions(self):
        """The column functions module of this kind of session (``pyspark.sql.functions`` builds one kind
        of column or the other by the process's mode, not the session's: a process may hold both)."""
        from pyspark.sql import functions

        return functions

    def cores(self):
        """The cores Spark runs tasks on, as far as this client can tell."""
        raise NotImplementedError

    def describe_jobs(self, text):
        """Names the Spark UI's next jobs, where the session has job descriptions."""

    def resolved(self, df):
        """``df`` with its plan analysed now (a missing table or layer fails here, not at the first action)."""
        return df

    def follow_progress(self, tracker):
        """A context manager that feeds ``tracker`` (:class:`sfclayer._progress.Tracker`) the stages of the
        Spark jobs run inside it, as the session reports them; none where it reports nothing."""
        import contextlib

        return contextlib.nullcontext()

    def console_bar_on(self):
        """Whether the session draws Spark's own console progress bar (sfclayer's would overwrite it)."""
        return False

    def hadoop_opener(self):
        """A rasterio opener of Hadoop files through the driver's JVM (:attr:`driver_jvm` sessions only)."""
        raise self._no_driver_jvm()

    def hadoop_file_status(self, path):
        """``(length, modification ms)`` of a Hadoop file (:attr:`driver_jvm` sessions only)."""
        raise self._no_driver_jvm()

    def _no_driver_jvm(self, what=None):
        return errors.InvalidArgument(
            f"spark: a Spark Connect session is not supported by {what or _entry_point()} yet (it needs the "
            "driver's JVM through py4j; use a classic SparkSession, e.g. sfclayer.session(), or plain Spark "
            "reads, writes and CALL sfclayer.system.* procedures, which work on Connect)")


def _entry_point():
    """The outermost sfclayer function on the stack (``sfclayer.open``): the one the user called."""
    import sys

    name, frame = None, sys._getframe(1)
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module == "sfclayer" or module.startswith("sfclayer."):
            name = getattr(frame.f_code, "co_qualname", frame.f_code.co_name)  # Python 3.11+
        frame = frame.f_back
    return f"sfclayer.{name}" if name else "this sfclayer function"
