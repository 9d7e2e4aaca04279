"""The only module that touches py4j: JVM calls, and Java errors turned into sfclayer's."""

import contextlib

from . import errors

__all__ = ["translated", "open_value_reader"]

_JAVA_ERRORS = {
    "io.sfclayer.SfcLayerException": errors.SfcLayerError,
    "io.sfclayer.SfcLayerException$KeyNotFound": errors.KeyNotFound,
    "io.sfclayer.SfcLayerException$KeyOutOfBounds": errors.KeyOutOfBounds,
    "io.sfclayer.SfcLayerException$InvalidArgument": errors.InvalidArgument,
    "io.sfclayer.SfcLayerException$InvalidInput": errors.InvalidInput,
    "io.sfclayer.SfcLayerException$LayerNotFound": errors.LayerNotFound,
    "io.sfclayer.SfcLayerException$LayerExists": errors.LayerExists,
    "io.sfclayer.SfcLayerException$CorruptLayer": errors.CorruptLayer,
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


def open_value_reader(spark, path, cache_size):
    """A JVM ``io.sfclayer.lookup.ValueReader`` on the layer at ``path``."""
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    with translated():
        return jvm.io.sfclayer.lookup.ValueReader.open(conf, path, int(cache_size))


def reader_call(reader, method, *args):
    """Call ``method`` on a JVM value reader, translating errors."""
    with translated():
        return getattr(reader, method)(*args)
