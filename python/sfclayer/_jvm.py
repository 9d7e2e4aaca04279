"""The only module that touches py4j (and Spark's errors): JVM calls, and Java errors turned into
sfclayer's, on classic and Spark Connect sessions alike. About 500 lines on purpose: every JVM call
of the package is here, so that no other module touches py4j."""

import io
import re
import sys

from . import errors

__all__ = ["is_connect", "require_classic", "translated", "open_value_reader", "open_lookup", "lookup_client",
           "lookup_call", "reader_call", "start_lookup_server", "server_call",
           "error_from_payload", "command", "read_text", "take_lease", "release_lease", "verify_layer",
           "pyramid_document", "publish_pyramid_document", "layer_metadata_json", "restore_document", "rebuild_manifests",
           "hadoop_opener", "hadoop_file_status", "connector_version", "JavaStack"]  # what the rest of sfclayer uses

# The error table: every io.sfclayer.SfcLayerException class and its Python class
# (tests/test_tables.py checks it against the jar).
_JAVA_ERRORS = {
    "io.sfclayer.SfcLayerException": errors.SfcLayerError,
    "io.sfclayer.SfcLayerException$KeyNotFound": errors.KeyNotFound,
    "io.sfclayer.SfcLayerException$KeyOutOfBounds": errors.KeyOutOfBounds,
    "io.sfclayer.SfcLayerException$InvalidArgument": errors.InvalidArgument,
    "io.sfclayer.SfcLayerException$InvalidInput": errors.InvalidInput,
    "io.sfclayer.SfcLayerException$LayerNotFound": errors.LayerNotFound,
    "io.sfclayer.SfcLayerException$LayerExists": errors.LayerExists,
    "io.sfclayer.SfcLayerException$CorruptLayer": errors.CorruptLayer,
    "io.sfclayer.SfcLayerException$UnsupportedFormat": errors.UnsupportedFormat,
    "io.sfclayer.SfcLayerException$ConcurrentUpdate": errors.ConcurrentUpdate,
    "io.sfclayer.SfcLayerException$CommitStateUnknown": errors.CommitStateUnknown,
    "io.sfclayer.SfcLayerException$StorageError": errors.StorageError,
}

# The same classes by Spark error condition (SfcLayerException.getCondition()): what a Spark Connect
# client gets instead of a Java class (tests/test_connect.py checks it against the jar).
_CONDITIONS = {
    "SFCLAYER_ERROR": errors.SfcLayerError,
    "SFCLAYER_KEY_NOT_FOUND": errors.KeyNotFound,
    "SFCLAYER_KEY_OUT_OF_BOUNDS": errors.KeyOutOfBounds,
    "SFCLAYER_INVALID_ARGUMENT": errors.InvalidArgument,
    "SFCLAYER_INVALID_INPUT": errors.InvalidInput,
    "SFCLAYER_LAYER_NOT_FOUND": errors.LayerNotFound,
    "SFCLAYER_LAYER_EXISTS": errors.LayerExists,
    "SFCLAYER_CORRUPT_LAYER": errors.CorruptLayer,
    "SFCLAYER_UNSUPPORTED_FORMAT": errors.UnsupportedFormat,
    "SFCLAYER_CONCURRENT_UPDATE": errors.ConcurrentUpdate,
    "SFCLAYER_COMMIT_STATE_UNKNOWN": errors.CommitStateUnknown,
    "SFCLAYER_STORAGE_ERROR": errors.StorageError,
}

# "io.sfclayer.SfcLayerException$KeyNotFound: <message>" in a Connect error's server stack trace (its
# "Caused by:" lines) or message: how an sfclayer error wrapped in Spark's (a failed task) reaches a
# Connect client, whose exception carries only the outermost error's condition.
# An error thrown while the server plans a relation (sfclayer's Connect plugin) reads
# "(io.sfclayer.SfcLayerException$InvalidArgument) <message>".
_JAVA_ERROR_TEXT = re.compile(r"\(?(io\.sfclayer\.SfcLayerException(?:\$\w+)?)(?:: ?|\) )([^\n]*)")


def is_connect(spark):
    """Whether ``spark`` (a SparkSession) is a Spark Connect session: no py4j gateway behind it."""
    return type(spark).__module__.startswith("pyspark.sql.connect.")


def _entry_point():
    """The outermost sfclayer function on the stack (``sfclayer.open``): the one the user called."""
    name, frame = None, sys._getframe(1)
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module == "sfclayer" or module.startswith("sfclayer."):
            name = getattr(frame.f_code, "co_qualname", frame.f_code.co_name)  # Python 3.11+
        frame = frame.f_back
    return f"sfclayer.{name}" if name else "this sfclayer function"


def require_classic(spark, what=None):
    """Raise :class:`~sfclayer.errors.InvalidArgument` if ``spark`` is a Spark Connect session.

    For functions that call the driver's JVM through py4j (or RDDs), which a Connect client has not:
    a clear error naming the function (``what``, else the sfclayer function the caller called)
    instead of pyspark's ``JVM_ATTRIBUTE_NOT_SUPPORTED``.
    """
    if is_connect(spark):
        raise errors.InvalidArgument(
            f"spark: a Spark Connect session is not supported by {what or _entry_point()} yet (it needs the "
            "driver's JVM through py4j; use a classic SparkSession, e.g. sfclayer.session(), or plain Spark "
            "reads, writes and CALL sfclayer.system.* procedures, which work on Connect)")


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


def _jvm_of(spark):
    require_classic(spark)
    return spark.sparkContext._jvm


def _java_throwable(exc):
    """The Java throwable behind a Python exception raised by py4j or pyspark, if any."""
    java = getattr(exc, "java_exception", None)  # py4j.protocol.Py4JJavaError
    if java is None:
        java = getattr(exc, "_origin", None)  # pyspark's CapturedException
    return java


def _sfclayer_error(exc):
    """The sfclayer error equivalent to ``exc``'s Java cause chain, or None."""
    try:
        throwable = _java_throwable(exc)
        seen = 0
        while throwable is not None and seen < 20:
            name = throwable.getClass().getName()
            if name in _JAVA_ERRORS:
                return _JAVA_ERRORS[name](_reason(str(throwable.getMessage())))
            cause = throwable.getCause()
            if cause is None or cause.equals(throwable):
                break
            throwable = cause
            seen += 1
    except Exception:  # the JVM may be gone; keep the original error then
        return None
    return _connect_error(exc) if throwable is None else None


def _connect_error(exc):
    """The sfclayer error a Spark Connect client's exception stands for: by its error condition, else
    by the first sfclayer Java class named in its server stack trace or message; or None."""
    condition = getattr(exc, "getCondition", None)
    condition = condition() if callable(condition) else None
    trace = getattr(exc, "getStackTrace", None)
    texts = [str(exc)] + ([trace() or ""] if callable(trace) else [])
    found = None
    for text in texts:
        found = found or _JAVA_ERROR_TEXT.search(text)
    if condition in _CONDITIONS:
        message = found.group(2) if found and _JAVA_ERRORS.get(found.group(1)) is _CONDITIONS[condition] \
            else _plain_message(exc)
        return _CONDITIONS[condition](_reason(message))
    if found and found.group(1) in _JAVA_ERRORS:
        return _JAVA_ERRORS[found.group(1)](_reason(found.group(2)))
    return None


def _reason(message):
    """A Java sfclayer error's message without its ``[SFCLAYER_...]`` condition in front (getMessage() has
    it, as Spark's own errors do, so that pyspark's captured exceptions show it)."""
    return _CONDITION_PREFIX.sub("", message, count=1)


_CONDITION_PREFIX = re.compile(r"^\[SFCLAYER_[A-Z_]+\] ")


def _plain_message(exc):
    """A Connect exception's message without Spark's decorations (``[CONDITION] ... SQLSTATE: ...``)."""
    get = getattr(exc, "getMessage", None)
    text = get() if callable(get) else str(exc)
    text = re.sub(r"^\[[A-Z_.]+\] ", "", text.split("\n\nJVM stacktrace:")[0]).strip()
    return re.sub(r" SQLSTATE: \w+$", "", text)


class translated:
    """Re-raise Java-side sfclayer errors as the matching :mod:`sfclayer.errors` class (``with translated():``).

    ``raise ... from None``: a traceback of a few Python frames and one line, not py4j's chain of
    Java frames; the Java error stays on the exception (``java_error``, ``java_stack``), and
    ``SFCLAYER_DEBUG=1`` chains it as the cause, printed in full. A class, not a generator: one frame
    in the traceback, not contextlib's two.
    """

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if exc is None or isinstance(exc, errors.SfcLayerError) or not isinstance(exc, Exception):
            return False
        mine = _sfclayer_error(exc)
        if mine is None:
            return False
        mine.java_error = exc
        if errors._debug():  # pyspark's captured exceptions print no Java frames: the stack as the cause
            raise mine from JavaStack(mine.java_stack)
        raise mine from None


class JavaStack(Exception):
    """The Java stack trace of an sfclayer error (its text), its cause when ``SFCLAYER_DEBUG=1``."""


def open_value_reader(spark, path, cache_size=None, cache_bytes=None, index_in_driver=True, version=-1,
                      as_of_millis=-1, options=None):
    """A JVM ``io.sfclayer.lookup.ValueReader`` on the layer at ``path`` (None: the reader's defaults):
    the newest version, or ``version`` (>= 1), or the newest committed at or before ``as_of_millis``
    (>= 0).

    Its Hadoop configuration is the session's, as Spark's file sources make it: settings given with
    ``spark.conf.set("spark.hadoop.…")`` at run time count, and so do Hadoop ``options`` (``fs.*``).
    """
    jvm = _jvm_of(spark)
    jmap = jvm.java.util.HashMap()
    for key, value in (options or {}).items():
        jmap.put(str(key), str(value))
    cls = jvm.io.sfclayer.lookup.ValueReader
    with translated():
        conf = jvm.io.sfclayer.spark.HadoopConfs.forOptions(spark._jsparkSession, jmap)
        size = cls.DEFAULT_CACHE_SIZE if cache_size is None else cache_size
        nbytes = cls.DEFAULT_CACHE_BYTES if cache_bytes is None else cache_bytes
        return cls.open(conf, path, int(size), int(nbytes), bool(index_in_driver), int(version),
                        int(as_of_millis))


#: Static methods looked up once per gateway (py4j spends a round trip on every attribute of a class it
#: resolves; sfclayer.open, as sfclayer.geotrellis.open, is meant to cost one). ``open``: SparkLookups'.
_LOOKUP_METHODS = ("close", "reader", "metadataJson")
_GEOTRELLIS_METHODS = ("layers", "info", "openLookup", "closeLookup", "index")  # spark.GeoTrellisCommands


def _methods(spark, cls_name, names):
    """``{name: JavaMember}`` of class ``io.sfclayer.<cls_name>``'s static ``names``, kept on the gateway."""
    require_classic(spark)
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


def open_lookup(spark, path, cache_size=None, cache_bytes=None, index_in_driver=True, version=-1, as_of_millis=-1):
    """Opens a reader on the driver's shared look-up server (``io.sfclayer.lookup.LookupSessions``) in
    one py4j call: a dict with its ``handle``, the server's ``host``, ``port``, the reader's ``token``
    (hex), and the pinned ``version``, ``keyIndex`` and ``tileSchema`` (JSON text)."""
    import json

    size = 1024 if cache_size is None else cache_size  # ValueReader.DEFAULT_CACHE_SIZE
    nbytes = (256 << 20) if cache_bytes is None else cache_bytes  # ValueReader.DEFAULT_CACHE_BYTES
    if is_connect(spark):  # the server's relation plugin opens it: no host or port, answers come as relations
        from . import _connect

        with translated():
            text = _connect.request_text(spark, "open", path=path, cacheSize=int(size), cacheBytes=int(nbytes),
                                         indexInDriver=bool(index_in_driver), version=int(version),
                                         asOfMillis=int(as_of_millis))
        return json.loads(text)
    with translated():
        answer = _lookup_sessions(spark)["open"](spark._jsparkSession, path, int(size), int(nbytes),
                                                 bool(index_in_driver), int(version), int(as_of_millis))
    return json.loads(answer)


def lookup_client(spark, info):
    """The look-up client of a reader :func:`open_lookup` opened: a ``LookupClient`` on the driver's socket,
    or on a Spark Connect session a ``ConnectLookupClient`` (the relation plugin), with the same requests."""
    if is_connect(spark):
        from ._connect import ConnectLookupClient

        return ConnectLookupClient(spark, info["handle"], info["token"], error_from_payload, translated)
    from ._lookup import LookupClient

    return LookupClient(info["host"], info["port"], bytes.fromhex(info["token"]), error_from_payload)


def lookup_call(spark, method, handle):
    """``LookupSessions.<method>(handle)``: ``close``, ``reader`` (the JVM ValueReader), ``metadataJson``."""
    with translated():
        return _lookup_sessions(spark)[method](int(handle))


def command(spark, name, *args):
    """Call ``io.sfclayer.spark.SfcLayerCommands.<name>(spark, *args)``; its JSON answer, parsed.

    On a Spark Connect session, ``history``, ``compact`` and ``delete`` run as the catalog's SQL procedures
    instead (registered as ``sfclayer`` if the session has no such catalog), ``vacuum``, ``repair`` and
    ``deleteKeys`` through sfclayer's relation plugin (sfclayer._connect), with the same answers.
    """
    import json

    if is_connect(spark):
        from . import _connect

        if name in _connect.PROCEDURES:  # as the catalog's SQL procedure of the same name
            with translated():
                return _connect.procedure(spark, name, *args)
        if name in _connect.PLUGIN_COMMANDS:
            return json.loads(_plugin_command(spark, name, **dict(zip(_connect.PLUGIN_COMMANDS[name], args))))
    jvm = _jvm_of(spark)
    with translated():
        answer = getattr(jvm.io.sfclayer.spark.SfcLayerCommands, name)(spark._jsparkSession, *args)
    return json.loads(answer)


def _plugin_command(spark, name, **args):
    from . import _connect

    with translated():
        return _connect.request_text(spark, "command", name=name, **args)


def verify_layer(spark, path, version=None):
    """The JSON report of ``io.sfclayer.spark.VerifyJob`` on a layer version (newest by default)."""
    if is_connect(spark):
        return _plugin_command(spark, "verify", path=path, version=int(version or 0))
    jvm = _jvm_of(spark)
    with translated():
        return str(jvm.io.sfclayer.spark.VerifyJob.report(spark._jsparkSession, path, int(version or 0)))


def layer_metadata_json(spark, path, version=None, files=None):
    """The version document of one version of a layer (the newest when ``version`` is None), as JSON text.

    Its ``files`` hold every data file (read from every manifest of a format 6 version) when ``files``
    is None, else at most ``files`` of them, the first in index order (0: no ``files`` field): what
    callers that need only the document's other fields ask for, so a layer of millions of files
    answers from its version document alone.
    """
    limit = -1 if files is None else int(files)
    if is_connect(spark):
        return _plugin_command(spark, "layerMetadata", path=path, version=-1 if version is None else int(version),
                               files=limit)
    jvm = _jvm_of(spark)
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    with translated():
        layer = jvm.io.sfclayer.layer.Layer
        opened = layer.open(conf, path) if version is None else layer.open(conf, path, int(version), -1)
        return str(opened.documentJson(limit))


def restore_document(spark, path):
    """``io.sfclayer.layer.LayerRepair.restoreDocument``: a new version restoring the newest readable one."""
    if is_connect(spark):
        return _plugin_command(spark, "restoreDocument", path=path)
    jvm = _jvm_of(spark)
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    with translated():
        return str(jvm.io.sfclayer.layer.LayerRepair.restoreDocument(conf, path))


def rebuild_manifests(spark, path):
    """``io.sfclayer.layer.ManifestRepair.run``: the newest version again with its damaged manifests rebuilt."""
    if is_connect(spark):
        return _plugin_command(spark, "rebuildManifests", path=path)
    jvm = _jvm_of(spark)
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    with translated():
        return str(jvm.io.sfclayer.layer.ManifestRepair.run(conf, path))


def reader_call(reader, method, *args):
    """Call ``method`` on a JVM value reader, translating errors."""
    with translated():
        return getattr(reader, method)(*args)


def _error_from_java(payload):
    """An sfclayer error from a LookupServer error payload ``"ErrorClass\tmessage"``."""
    cls, _, message = payload.decode("utf-8", "replace").partition("\t")
    return _JAVA_ERRORS.get(cls, errors.SfcLayerError)(_reason(message))


def start_lookup_server(spark, reader, max_connections=None, auth_timeout_ms=None, io_timeout_ms=None,
                        bind_host=None):
    """Starts a JVM ``LookupServer`` on ``reader``: (server, host, port, token).

    Limits left as None take the server's defaults; ``bind_host`` (a loopback address such as
    ``"::1"``) defaults to the JVM's loopback address.
    """
    jvm = _jvm_of(spark)
    cls = jvm.io.sfclayer.lookup.LookupServer
    with translated():
        if max_connections is None and auth_timeout_ms is None and io_timeout_ms is None and bind_host is None:
            server = cls(reader)
        else:
            bind = (jvm.java.net.InetAddress.getByName(bind_host) if bind_host is not None
                    else jvm.java.net.InetAddress.getLoopbackAddress())
            server = cls(reader, bind,
                         int(max_connections or cls.DEFAULT_MAX_CONNECTIONS),
                         int(auth_timeout_ms or cls.DEFAULT_AUTH_TIMEOUT_MILLIS),
                         int(io_timeout_ms or cls.DEFAULT_IO_TIMEOUT_MILLIS))
        return server, str(server.host()), int(server.port()), bytes(server.token())


def server_call(server, method, *args):
    """Call ``method`` on a JVM look-up server, translating errors."""
    with translated():
        return getattr(server, method)(*args)


def error_from_payload(payload):
    """An sfclayer error from a LookupServer error payload ``"ErrorClass\tmessage"``."""
    return _error_from_java(payload)


def _hadoop_path(spark, path):
    jvm = _jvm_of(spark)
    p = jvm.org.apache.hadoop.fs.Path(path)
    return p, p.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())


def read_text(spark, path):
    """The UTF-8 text of a small file on any Hadoop filesystem, or None if there is none."""
    if is_connect(spark):
        return _plugin_command(spark, "readText", path=path)
    p, fs = _hadoop_path(spark, path)
    if not fs.exists(p):
        return None
    jvm = _jvm_of(spark)
    stream = fs.open(p)
    try:
        data = jvm.org.apache.commons.io.IOUtils.toByteArray(stream)
    finally:
        stream.close()
    return bytes(data).decode("utf-8")


def pyramid_document(spark, directory):
    """The newest pyramid document in ``directory`` (``io.sfclayer.layer.PyramidDocuments.newest``): a dict
    of ``number`` (0: the legacy ``pyramid.json``, -1: none), ``name`` and ``text``."""
    import json

    if is_connect(spark):
        return json.loads(_plugin_command(spark, "pyramidDocument", path=directory))
    jvm = _jvm_of(spark)
    with translated():
        return json.loads(str(jvm.io.sfclayer.spark.SfcLayerCommands.pyramidDocument(spark._jsparkSession, directory)))


def publish_pyramid_document(spark, directory, number, text):
    """Publish pyramid document ``number`` unless another holds the name: whether it was published."""
    if is_connect(spark):
        return _plugin_command(spark, "publishPyramidDocument", path=directory, number=int(number),
                               text=text) == "true"
    jvm = _jvm_of(spark)
    with translated():
        return bool(jvm.io.sfclayer.spark.SfcLayerCommands.publishPyramidDocument(
            spark._jsparkSession, directory, int(number), text))


def take_lease(spark, path, what):
    """``io.sfclayer.layer.Lease.take``: the token of the lease at ``path`` (ConcurrentUpdate if held)."""
    if is_connect(spark):
        return _plugin_command(spark, "takeLease", path=path, what=what)
    jvm = _jvm_of(spark)
    with translated():
        return str(jvm.io.sfclayer.layer.Lease.take(spark.sparkContext._jsc.hadoopConfiguration(), path, what))


def release_lease(spark, path, token):
    """``io.sfclayer.layer.Lease.release``: whether ``token`` still held the lease at ``path``."""
    if is_connect(spark):
        return _plugin_command(spark, "releaseLease", path=path, token=token) == "true"
    jvm = _jvm_of(spark)
    with translated():
        return bool(jvm.io.sfclayer.layer.Lease.release(spark.sparkContext._jsc.hadoopConfiguration(), path, token))


def hadoop_file_status(spark, path):
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
        java = _java_throwable(e)
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


def hadoop_opener(spark):
    """A rasterio ``opener`` (rasterio >= 1.4) reading files through the driver JVM's Hadoop
    filesystems (``hdfs://``...): ``opener(path, mode)`` returns a seekable binary file object whose
    reads are positioned reads of a Hadoop input stream. For the driver only (headers: a few reads
    of a few KB each); executors' Python workers have no JVM to call."""
    def opener(path, mode="rb"):
        if "r" not in mode or "+" in mode or "w" in mode:
            raise errors.InvalidArgument(f"{path}: Hadoop files are opened for reading only, not {mode!r}")
        try:
            length, _ = hadoop_file_status(spark, path)
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


def geotrellis(spark, method, *args):
    """Call ``io.sfclayer.spark.GeoTrellisCommands.<method>(spark, *args)`` (sfclayer.geotrellis), translating errors."""
    with translated():
        return _methods(spark, "spark.GeoTrellisCommands", _GEOTRELLIS_METHODS)[method](spark._jsparkSession, *args)
