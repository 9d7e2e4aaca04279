"""The classic transport: a classic SparkSession's driver reached through py4j, and the driver's loopback
look-up socket (:mod:`sfclayer._lookup`) for tiles. The only module of the package that touches py4j
(the hooks tests and benches use to reach the JVM directly live in tests/helpers.py and bench/common.py)."""

import contextlib
import io
import json
import uuid

from . import errors
from ._java_errors import error_from_payload, java_throwable, translated
from ._lookup import LookupClient
from ._transport import Transport

__all__ = ["ClassicTransport", "connector_version", "lookup_call", "gateway_call"]


class ClassicTransport(Transport):
    """py4j calls to the driver (:class:`io.sfclayer.spark.Operations` for named operations) and its
    loopback look-up socket for the tiles of the layers it opens."""

    driver_jvm = True

    def _call(self, name, args):
        jspark = self.spark._jsparkSession
        with translated():
            answer = _methods(self.spark, "spark.Operations", ("call",))["call"](jspark, name, json.dumps(args))
        return None if answer is None else str(answer)

    def open_layer(self, path, cache_size, cache_bytes, index_in_driver, version, as_of_millis):
        with translated():
            info = json.loads(_lookup_sessions(self.spark)["open"](
                self.spark._jsparkSession, path, int(cache_size), int(cache_bytes), bool(index_in_driver),
                int(version), int(as_of_millis)))
        return info, _guarded(info, lambda: _LayerLookups(self.spark, info),
                              lambda: lookup_call(self.spark, "close", info["handle"]))

    def open_geotrellis(self, catalog, name, zoom, cache_size):
        # one py4j call (it reads the attributes once and answers them with the handle); look-ups,
        # queries and counts then go through the driver's look-up socket
        opened = json.loads(gateway_call(self.spark, "openLookup", catalog, name, int(zoom), int(cache_size)))
        return opened["info"], _guarded(opened, lambda: _GeoTrellisLookups(self.spark, opened),
                                        lambda: gateway_call(self.spark, "closeLookup", int(opened["handle"])))

    def cores(self):
        return self.spark.sparkContext.defaultParallelism

    def describe_jobs(self, text):
        self.spark.sparkContext.setJobDescription(text)

    def hadoop_opener(self):
        return _hadoop_opener(self.spark)

    def hadoop_file_status(self, path):
        return _hadoop_file_status(self.spark, path)

    def follow_progress(self, tracker):
        return _status_poller(self.spark, tracker)

    def console_bar_on(self):
        return self.spark.sparkContext.getConf().get("spark.ui.showConsoleProgress", "false").lower() == "true"


_PROGRESS_POLL = 0.25  # seconds between two looks at the status tracker (a few py4j calls each)


@contextlib.contextmanager
def _status_poller(spark, tracker):
    from ._polling import polled

    sc = spark.sparkContext
    group = sc.getLocalProperty("spark.jobGroup.id")
    ours = group is None
    if ours:
        group = f"sfclayer-{uuid.uuid4().hex[:12]}"
        sc.setLocalProperty("spark.jobGroup.id", group)
    status = sc._jsc.sc().statusTracker()  # the JVM's: one py4j call per question
    before = set(status.getJobIdsForGroup(group))  # a caller's group may hold earlier jobs
    ended = set()  # jobs whose last counts the tracker has: not asked again

    def poll():
        for job in status.getJobIdsForGroup(group):
            if job in before or job in ended:
                continue
            info = status.getJobInfo(job)
            if info.isEmpty():
                continue
            if str(info.get().status()) in ("SUCCEEDED", "FAILED"):
                ended.add(job)
            rows = []
            for sid in info.get().stageIds():
                stage = status.getStageInfo(sid)
                if stage.isEmpty() or stage.get().submissionTime() <= 0:  # pending, or skipped
                    continue
                s = stage.get()
                rows.append((sid, s.numCompletedTasks(), s.numTasks()))
            tracker.stages(job, rows)

    try:
        with polled(poll, _PROGRESS_POLL, last=True):  # the gateway closing with the session stops the bar
            yield
    finally:
        if ours:
            sc.setLocalProperty("spark.jobGroup.id", None)


def _guarded(info, make, close):
    """``make()``, the reader closed on the driver (``close()``) if it fails."""
    try:
        return make()
    except BaseException:
        close()
        raise


class _LayerLookups(LookupClient):
    """A layer reader's requests: tiles on the driver's socket, its document and counters through py4j,
    and closing it closes the reader on the driver (``io.sfclayer.lookup.LookupSessions``)."""

    def __init__(self, spark, info):
        super().__init__(info["host"], info["port"], bytes.fromhex(info["token"]), error_from_payload)
        self._spark, self._handle = spark, int(info["handle"])

    def metadata_json(self):
        return str(lookup_call(self._spark, "metadataJson", self._handle))

    def stats(self):
        return json.loads(str(lookup_call(self._spark, "stats", self._handle)))

    def close(self):
        super().close()
        lookup_call(self._spark, "close", self._handle)


class _GeoTrellisLookups(LookupClient):
    """A GeoTrellis reader's requests (``io.sfclayer.spark.GeoTrellisCommands``): as :class:`_LayerLookups`."""

    def __init__(self, spark, opened):
        super().__init__(opened["host"], opened["port"], bytes.fromhex(opened["token"]), error_from_payload)
        self._spark, self._handle = spark, int(opened["handle"])

    def index(self, col, row, millis):
        return int(gateway_call(self._spark, "index", self._handle, int(col), int(row), int(millis)))

    def close(self):
        try:
            super().close()
        finally:
            gateway_call(self._spark, "closeLookup", self._handle)


def connector_version(jvm):
    """``(version, jar)`` of the connector classes a driver JVM (``SparkContext._jvm``) loaded: its jar's
    ``Implementation-Version`` (None without one) and location; None when it has no sfclayer classes."""
    try:
        cls = jvm.org.apache.spark.util.Utils.classForName("io.sfclayer.SfcLayerException", False, False)
    except Exception:  # py4j.protocol.Py4JJavaError: ClassNotFoundException
        return None
    version = cls.getPackage().getImplementationVersion() if cls.getPackage() is not None else None
    source = cls.getProtectionDomain().getCodeSource()
    where = str(source.getLocation()) if source is not None else "on the class path"
    if version is None and where.endswith(".jar"):  # a class loader that does not define packages from manifests
        jar = jvm.java.util.jar.JarFile(jvm.java.io.File(jvm.java.net.URI(where)))
        try:
            manifest = jar.getManifest()
            version = manifest.getMainAttributes().getValue("Implementation-Version") if manifest else None
        finally:
            jar.close()
    return (None if version is None else str(version)), where


#: Static methods looked up once per gateway (py4j spends a round trip on every attribute of a class it
#: resolves; sfclayer.open, as sfclayer.geotrellis.open, is meant to cost one). ``open``: SparkLookups'.
_LOOKUP_METHODS = ("close", "reader", "metadataJson", "stats")
_GEOTRELLIS_METHODS = ("openLookup", "closeLookup", "index")  # spark.GeoTrellisCommands


def _methods(spark, cls_name, names):
    """``{name: JavaMember}`` of class ``io.sfclayer.<cls_name>``'s static ``names``, kept on the gateway."""
    gateway = spark.sparkContext._gateway
    kept = vars(gateway).setdefault("_sfclayer_methods", {})  # getattr(gateway) would ask the JVM
    if cls_name not in kept:
        cls = getattr(getattr(gateway.jvm.io.sfclayer, cls_name.split(".")[0]), cls_name.split(".")[1])
        kept[cls_name] = {name: getattr(cls, name) for name in names}
    return kept[cls_name]


def _lookup_sessions(spark):
    methods = _methods(spark, "lookup.LookupSessions", _LOOKUP_METHODS)
    if "open" not in methods:
        methods["open"] = spark.sparkContext._gateway.jvm.io.sfclayer.spark.SparkLookups.open
    return methods


def lookup_call(spark, method, handle):
    """``LookupSessions.<method>(handle)``: ``close``, ``reader`` (the JVM ValueReader), ``metadataJson``, ``stats``."""
    with translated():
        return _lookup_sessions(spark)[method](int(handle))


def _hadoop_path(spark, path):
    jvm = spark.sparkContext._jvm
    p = jvm.org.apache.hadoop.fs.Path(path)
    return p, p.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())



def _hadoop_file_status(spark, path):
    """``(length, modification time in ms)`` of a file on any Hadoop filesystem.

    Raises
    ------
    InvalidInput
        If there is no such file (or it is a directory).
    StorageError
        If the file system failed (the file may well be there).
    """
    p, fs = _hadoop_path(spark, path)
    try:
        st = fs.getFileStatus(p)
    except Exception as e:
        java = java_throwable(e)
        if java is None:
            raise
        if not spark.sparkContext._jvm.java.lang.Class.forName("java.io.FileNotFoundException").isInstance(java):
            raise errors.StorageError(f"cannot open {path}: {_first_line(e)}") from e
        raise errors.InvalidInput(f"cannot open {path}: no such file ({_first_line(e)})") from e
    if st.isDirectory():
        raise errors.InvalidInput(f"cannot open {path}: it is a directory")
    return int(st.getLen()), int(st.getModificationTime())


def _first_line(e):
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


def _hadoop_opener(spark):
    """A rasterio ``opener`` (rasterio >= 1.4) reading files through the driver JVM's Hadoop
    filesystems (``hdfs://``...): ``opener(path, mode)`` returns a seekable binary file object whose
    reads are positioned reads of a Hadoop input stream. For the driver only (headers: a few reads
    of a few KB each); executors' Python workers have no JVM to call."""
    def opener(path, mode="rb"):
        if "r" not in mode or "+" in mode or "w" in mode:
            raise errors.InvalidArgument(f"{path}: Hadoop files are opened for reading only, not {mode!r}")
        try:
            length, _ = _hadoop_file_status(spark, path)
        except errors.InvalidInput as e:  # what rasterio expects of a missing file
            raise FileNotFoundError(str(e)) from e
        p, fs = _hadoop_path(spark, path)
        return _HadoopFile(spark, fs.open(p), length, path)
    return opener


class _HadoopFile(io.RawIOBase):
    """A read-only, seekable view of a Hadoop input stream (see :func:`hadoop_opener`)."""

    def __init__(self, spark, stream, length, name):
        super().__init__()
        self._utils = spark.sparkContext._jvm.org.apache.commons.io.IOUtils
        self._stream, self._length, self._pos, self.name = stream, length, 0, name

    def readable(self):
        return True

    def seekable(self):
        return True

    def tell(self):
        return self._pos

    def seek(self, offset, whence=io.SEEK_SET):
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._length}[whence]
        if base + offset < 0:
            raise ValueError(f"negative seek position {base + offset} in {self.name}")
        self._pos = base + offset
        return self._pos

    def read(self, size=-1):
        n = self._length - self._pos if size is None or size < 0 else min(size, self._length - self._pos)
        if n <= 0:
            return b""
        with translated():
            self._stream.seek(self._pos)
            data = bytes(self._utils.toByteArray(self._stream, int(n)))
        self._pos += len(data)
        return data

    def readinto(self, b):
        data = self.read(len(b))
        b[:len(data)] = data
        return len(data)

    def close(self):
        if not self.closed:
            try:
                self._stream.close()
            finally:
                super().close()





def gateway_call(spark, method, *args):
    """``io.sfclayer.spark.GeoTrellisCommands.<method>(spark, *args)``, translating errors."""
    with translated():
        return _methods(spark, "spark.GeoTrellisCommands", _GEOTRELLIS_METHODS)[method](spark._jsparkSession, *args)

