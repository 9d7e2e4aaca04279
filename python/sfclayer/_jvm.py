"""The only module that touches py4j: JVM calls, and Java errors turned into sfclayer's."""

import contextlib
import socket
import struct
import threading

from . import errors

__all__ = ["translated", "open_value_reader", "reader_call", "LookupClient", "command", "read_text", "write_text",
           "verify_layer", "layer_metadata_json", "restore_document"]  # what layer, maintenance, pyramids, integrity use

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
    "io.sfclayer.SfcLayerException$ConcurrentUpdate": errors.ConcurrentUpdate,
    "io.sfclayer.SfcLayerException$StorageError": errors.StorageError,
}


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
                return _JAVA_ERRORS[name](str(throwable.getMessage()))
            cause = throwable.getCause()
            if cause is None or cause.equals(throwable):
                break
            throwable = cause
            seen += 1
    except Exception:  # the JVM may be gone; keep the original error then
        return None
    return None


@contextlib.contextmanager
def translated():
    """Re-raise Java-side sfclayer errors as the matching :mod:`sfclayer.errors` class."""
    try:
        yield
    except errors.SfcLayerError:
        raise
    except Exception as exc:
        mine = _sfclayer_error(exc)
        if mine is None:
            raise
        raise mine from exc


def open_value_reader(spark, path, cache_size, version=-1, as_of_millis=-1, options=None):
    """A JVM ``io.sfclayer.lookup.ValueReader`` on the layer at ``path``: the newest version, or
    ``version`` (>= 1), or the newest committed at or before ``as_of_millis`` (>= 0).

    Its Hadoop configuration is the session's, as Spark's file sources make it: settings given with
    ``spark.conf.set("spark.hadoop.…")`` at run time count, and so do Hadoop ``options`` (``fs.*``).
    """
    jvm = spark.sparkContext._jvm
    jmap = jvm.java.util.HashMap()
    for key, value in (options or {}).items():
        jmap.put(str(key), str(value))
    with translated():
        conf = jvm.io.sfclayer.spark.HadoopConfs.forOptions(spark._jsparkSession, jmap)
        return jvm.io.sfclayer.lookup.ValueReader.open(conf, path, int(cache_size), int(version), int(as_of_millis))


def command(spark, name, *args):
    """Call ``io.sfclayer.spark.SfcLayerCommands.<name>(spark, *args)``; its JSON answer, parsed."""
    import json

    jvm = spark.sparkContext._jvm
    with translated():
        answer = getattr(jvm.io.sfclayer.spark.SfcLayerCommands, name)(spark._jsparkSession, *args)
    return json.loads(answer)


def verify_layer(spark, path, version=None):
    """The JSON report of ``io.sfclayer.layer.LayerVerifier`` on a layer version (newest by default)."""
    jvm = spark.sparkContext._jvm
    with translated():
        return str(jvm.io.sfclayer.layer.LayerVerifier.report(spark._jsparkSession, path, int(version or 0)))


def layer_metadata_json(spark, path, version):
    """The version document of one version of a layer, as JSON text."""
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    with translated():
        md = jvm.io.sfclayer.layer.Layer.open(conf, path, int(version), -1).metadata()
        return bytes(md.toJsonBytes()).decode("utf-8")


def restore_document(spark, path):
    """``io.sfclayer.layer.LayerRepair.restoreDocument``: a new version restoring the newest readable one."""
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    with translated():
        return str(jvm.io.sfclayer.layer.LayerRepair.restoreDocument(conf, path))


def reader_call(reader, method, *args):
    """Call ``method`` on a JVM value reader, translating errors."""
    with translated():
        return getattr(reader, method)(*args)


def _error_from_java(payload):
    """An sfclayer error from a LookupServer error payload ``"ErrorClass\tmessage"``."""
    cls, _, message = payload.decode("utf-8", "replace").partition("\t")
    return _JAVA_ERRORS.get(cls, errors.SfcLayerError)(message)


class LookupClient:
    """Look-ups through the JVM's ``io.sfclayer.lookup.LookupServer``, a loopback socket.

    py4j moves a tile as base64 text in several writes, which Nagle's algorithm and delayed ACKs
    turn into ~40 ms per tile above a few KiB; this socket moves it in one write. One connection
    per Python thread, so concurrent callers don't wait on each other.
    """

    def __init__(self, spark, reader):
        jvm = spark.sparkContext._jvm
        with translated():
            self._server = jvm.io.sfclayer.lookup.LookupServer(reader)
            self._port = int(self._server.port())
            self._token = bytes(self._server.token())
        self._local = threading.local()
        self._sockets = []
        self._lock = threading.Lock()

    def _conn(self):
        conn = getattr(self._local, "conn", None)
        if conn is None:
            sock = socket.create_connection(("127.0.0.1", self._port))
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.sendall(self._token)
            conn = (sock, sock.makefile("rb", buffering=1 << 16))
            self._local.conn = conn
            with self._lock:
                self._sockets.append(conn)
        return conn

    @staticmethod
    def _read_answer(stream):
        """One response: record bytes, None for a missing key; raises for an error."""
        head = stream.read(4)
        if len(head) < 4:
            raise errors.SfcLayerError("the JVM's look-up server closed the connection")
        (n,) = struct.unpack(">i", head)
        if n == -1:
            return None
        if n == -2:
            (m,) = struct.unpack(">i", stream.read(4))
            raise _error_from_java(stream.read(m))
        return stream.read(n)

    def get(self, col, row, time_micros):
        """The encoded tile record at the key, or None."""
        sock, stream = self._conn()
        sock.sendall(struct.pack(">biiq", 71, col, row, time_micros))  # 71 = 'G'
        return self._read_answer(stream)

    def get_many(self, packed_keys):
        """Records (or None) for keys packed as big-endian (int col, int row, long time)."""
        n = len(packed_keys) // 16
        sock, stream = self._conn()
        sock.sendall(struct.pack(">bi", 77, n) + packed_keys)  # 77 = 'M'
        out = []
        error = None
        for _ in range(n):
            try:
                out.append(self._read_answer(stream))
            except errors.SfcLayerError as e:  # read every answer before raising
                error = e
        if error is not None:
            raise error
        return out

    def close(self):
        with self._lock:
            for sock, stream in self._sockets:
                stream.close()
                sock.close()
            self._sockets = []
        with translated():
            self._server.close()


def _hadoop_path(spark, path):
    jvm = spark.sparkContext._jvm
    p = jvm.org.apache.hadoop.fs.Path(path)
    return p, p.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())


def read_text(spark, path):
    """The UTF-8 text of a small file on any Hadoop filesystem, or None if there is none."""
    p, fs = _hadoop_path(spark, path)
    if not fs.exists(p):
        return None
    jvm = spark.sparkContext._jvm
    stream = fs.open(p)
    try:
        data = jvm.org.apache.commons.io.IOUtils.toByteArray(stream)
    finally:
        stream.close()
    return bytes(data).decode("utf-8")


def write_text(spark, path, text):
    """Write a small UTF-8 file on any Hadoop filesystem, replacing it whole: written beside it,
    then renamed over it, so readers see the old text or the new one."""
    p, fs = _hadoop_path(spark, path)
    jvm = spark.sparkContext._jvm
    tmp = jvm.org.apache.hadoop.fs.Path(p.getParent(), "." + p.getName() + ".tmp")
    out = fs.create(tmp, True)
    try:
        out.write(bytearray(text.encode("utf-8")))
    finally:
        out.close()
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    rename = jvm.org.apache.hadoop.fs.Options.Rename
    how = spark.sparkContext._gateway.new_array(rename, 1)
    how[0] = rename.OVERWRITE
    jvm.org.apache.hadoop.fs.FileContext.getFileContext(p.toUri(), conf).rename(tmp, p, how)
