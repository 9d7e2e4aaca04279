"""sfclayer's error hierarchy (the Python side of ``io.sfclayer.SfcLayerException``).

Java exceptions become these in one place, :mod:`sfclayer._jvm`, raised ``from None`` so that a
traceback is a few lines of Python; the Java error is kept on the exception (``java_error``, its
stack as text ``java_stack``) and shown as the cause when the environment sets ``SFCLAYER_DEBUG=1``.
"""

import os as _os

__all__ = [
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


def _debug():
    """Whether ``SFCLAYER_DEBUG`` asks for full tracebacks (Java frames included): any value but
    empty, ``0``, ``false`` or ``no``."""
    return _os.environ.get("SFCLAYER_DEBUG", "").strip().lower() not in ("", "0", "false", "no")


class SfcLayerError(Exception):
    """Base class of every error sfclayer raises on purpose.

    Attributes
    ----------
    java_error : Exception or None
        The py4j/pyspark exception this error was translated from (None for errors raised in Python).
    """

    java_error = None

    @property
    def java_stack(self):
        """The Java error's stack trace as text (None for errors raised in Python)."""
        if self.java_error is None:
            return None
        java = getattr(self.java_error, "java_exception", None)  # py4j's Py4JJavaError
        if java is None:
            java = getattr(self.java_error, "_origin", None)  # pyspark's captured exception
        if java is not None:
            try:
                from pyspark import SparkContext

                return str(getattr(SparkContext._jvm, "org.apache.spark.util.Utils").exceptionString(java))
            except Exception:  # the JVM is gone
                pass
        return str(self.java_error)


class KeyNotFound(SfcLayerError, KeyError):
    """A point look-up found no record for the key.

    Also a :class:`KeyError`, so ``except KeyError`` works as for a dict.
    """

    def __str__(self):  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class KeyOutOfBounds(SfcLayerError, ValueError):
    """A key lies outside the layer's (or the key index's) bounds."""


class InvalidArgument(SfcLayerError, ValueError):
    """A bad option, bound or argument.

    The message names the value and what is allowed, in one pattern, ``<name>: <value> <why>
    (<allowed>)``: ``option <name>: '<value>' ...`` for connector options, ``z2 x: -1 is out of
    range (0..2^31-1)`` for arguments (written down in :mod:`sfclayer._args`).
    """


class InvalidInput(SfcLayerError, ValueError):
    """Input data that cannot be written: null or duplicate keys, unsupported types."""


class LayerNotFound(SfcLayerError, FileNotFoundError):
    """No sfclayer layer at the path."""


class LayerExists(SfcLayerError, FileExistsError):
    """A layer already exists where an errorifexists write was asked for."""


class CorruptLayer(SfcLayerError):
    """Something on disk is not what docs/FORMAT.md says."""


class UnsupportedFormat(CorruptLayer):
    """A layer in a format version this sfclayer does not read (newer than it knows): nothing is known
    to be damaged; a newer sfclayer reads it."""


class ConcurrentUpdate(SfcLayerError):
    """A write lost a race with another: a version committed since it read the layer changed what it
    changed (or replaced the layer). Nothing of the write was published; retrying it is safe."""


class CommitStateUnknown(SfcLayerError):
    """A commit whose outcome is unknown: publishing the version document failed in a way that may
    have taken effect, and reading it back did not tell. The write's data was kept; check the layer's
    history (the message names the version document) before retrying."""


class StorageError(SfcLayerError, OSError):
    """The file system failed: permission denied, a DataNode timed out, a block unreachable.

    The message names the file and the file system's own error; the layer may well be intact.
    """
