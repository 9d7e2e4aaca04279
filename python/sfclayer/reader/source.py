"""Byte sources: where the in-process reader gets a layer's bytes.

This is the contract between the reader (formats, caches, Layer backend) and the
storage it reads from.  One :class:`ByteSource` serves one layer root; every path
it takes is relative to that root and ``/``-separated (``"_versions/v3.json"``,
``"data/part-00000/index"``).  Implementations must be thread-safe (a tile server
calls one source from many threads) and fork-safe (a worker process inherits the
object and must not share a socket or file handle with its parent: reopen lazily,
e.g. from ``os.register_at_fork(after_in_child=...)``).

Optional beyond the protocol: ``list_dirs(prefix) -> list[str]``, the sub-directories directly under
``prefix``; only format 1 versions need it (their files are found by listing ``dataDir``), and a source
without it refuses those versions with a clear error.

``open_source("file:/x")`` and plain paths give a :class:`LocalSource`; any other
scheme (``s3://``, ``gs://``, ``az://``, ``memory://`` ...) is dispatched to
``sfclayer.reader.objectstore.open_objectstore(url, **options)``.  ``hdfs:`` stays
on the JVM path and is refused here with that advice.
"""

from __future__ import annotations

import os
from typing import Protocol, runtime_checkable
from urllib.parse import unquote, urlparse

__all__ = ["ByteSource", "LocalSource", "open_source", "local_path"]


@runtime_checkable
class ByteSource(Protocol):
    """Random access to the objects under one layer root (thread-safe, fork-safe)."""

    def read(self, path: str) -> bytes:
        """The whole object; ``FileNotFoundError`` naming it if absent."""

    def read_range(self, path: str, start: int, length: int) -> bytes:
        """Exactly ``length`` bytes from ``start``, or fewer at end of object.

        ``FileNotFoundError`` if absent."""

    def size(self, path: str) -> int:
        """The object's length in bytes; ``FileNotFoundError`` if absent."""

    def list(self, prefix: str) -> list[tuple[str, int]]:
        """``(name, size)`` of the objects directly under directory ``prefix``.

        ``name`` is relative to ``prefix`` (no ``/`` in it: sub-directories are not
        listed); an absent directory lists as ``[]``.  Order is unspecified."""

    def exists(self, path: str) -> bool:
        """Whether the object exists."""


class LocalSource:
    """A layer root on the local file system.

    Each call opens its file (``os.pread`` on a fresh descriptor), so the source
    holds no handle a thread or a forked child could share.
    """

    __slots__ = ("root", "url")

    def __init__(self, root: str) -> None:
        self.root = os.path.abspath(root)
        self.url = "file://" + self.root

    def _abs(self, path: str) -> str:
        return os.path.join(self.root, *path.split("/")) if path else self.root

    def read(self, path: str) -> bytes:
        with open(self._abs(path), "rb") as f:
            return f.read()

    def read_range(self, path: str, start: int, length: int) -> bytes:
        fd = os.open(self._abs(path), os.O_RDONLY)
        try:
            return os.pread(fd, length, start)
        finally:
            os.close(fd)

    def size(self, path: str) -> int:
        return os.stat(self._abs(path)).st_size

    def list(self, prefix: str) -> list[tuple[str, int]]:
        try:
            entries = os.scandir(self._abs(prefix.rstrip("/")))
        except (FileNotFoundError, NotADirectoryError):
            return []
        out = []
        with entries:
            for e in entries:
                try:
                    if e.is_file():
                        out.append((e.name, e.stat().st_size))
                except FileNotFoundError:  # removed since the listing (a writer's clean-up): not there
                    pass
        return out

    def exists(self, path: str) -> bool:
        return os.path.exists(self._abs(path))

    def list_dirs(self, prefix: str) -> list[str]:
        """Names of the directories directly under ``prefix`` (optional in the contract: see the module)."""
        try:
            entries = os.scandir(self._abs(prefix.rstrip("/")))
        except (FileNotFoundError, NotADirectoryError):
            return []
        with entries:
            return [e.name for e in entries if e.is_dir()]

    def __repr__(self) -> str:
        return f"LocalSource({self.root!r})"


def local_path(url: str) -> str | None:
    """The local path a ``file:`` URL or plain path names, else None."""
    if "://" not in url and not url.startswith("file:"):
        if len(url) > 1 and url[1] == ":" or ":" not in url.split("/")[0]:
            return url
        return None
    p = urlparse(url)
    if p.scheme == "file":
        return unquote(p.path)
    return None


def open_source(url: str, **options) -> ByteSource:
    """The byte source for the layer root ``url``.

    Parameters
    ----------
    url : str
        A plain path, a ``file:`` URL, or an object-store URL (``s3://bucket/key``...).
    **options
        Passed to the object-store implementation (credentials, region, endpoint...);
        a local path takes none.
    """
    path = local_path(url)
    if path is not None:
        if options:
            raise TypeError(f"a local layer takes no storage options: {sorted(options)}")
        return LocalSource(path)
    scheme = urlparse(url).scheme.lower()
    if scheme in ("hdfs", "viewfs", "webhdfs"):
        from ..errors import InvalidArgument

        raise InvalidArgument(
            f"path: {url!r} is on HDFS, which is read through Spark (sfclayer.open(spark, path)); "
            "the in-process reader reads local files and object stores")
    from .objectstore import open_objectstore  # the object-store helper's module
    return open_objectstore(url, **options)
