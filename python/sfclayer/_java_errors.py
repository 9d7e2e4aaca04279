"""Java-side sfclayer errors as sfclayer's Python ones, whichever transport carried them: py4j's Java
exceptions (classic sessions), Spark Connect's errors (their condition, their server stack trace), and
the look-up socket's and the Connect plugin's error payloads (``"ErrorClass\tmessage"``). Below every
transport (``sfclayer._classic``, ``sfclayer._connect``), which all raise through it."""

import re

from . import errors

__all__ = ["translated", "JavaStack", "error_from_payload", "java_throwable"]

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


def java_throwable(exc):
    """The Java throwable behind a Python exception raised by py4j or pyspark, if any."""
    java = getattr(exc, "java_exception", None)  # py4j.protocol.Py4JJavaError
    if java is None:
        java = getattr(exc, "_origin", None)  # pyspark's CapturedException
    return java


def _sfclayer_error(exc):
    """The sfclayer error equivalent to ``exc``'s Java cause chain, or None."""
    try:
        throwable = java_throwable(exc)
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



def error_from_payload(payload):
    """An sfclayer error from a LookupServer (or Connect plugin) error payload ``"ErrorClass\tmessage"``."""
    cls, _, message = payload.decode("utf-8", "replace").partition("\t")
    return _JAVA_ERRORS.get(cls, errors.SfcLayerError)(_reason(message))
