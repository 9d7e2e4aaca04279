"""sfclayer's error hierarchy (the Python side of ``io.sfclayer.SfcLayerException``).

Java exceptions become these in one place, :mod:`sfclayer._jvm`.
"""

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


class SfcLayerError(Exception):
    """Base class of every error sfclayer raises on purpose."""


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
