"""A thread-safe LRU sized in bytes, and the fork hook that resets every lock after ``fork()``."""

from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict

__all__ = ["ByteLRU", "after_fork"]

_FORK_HOOKS: "weakref.WeakSet" = weakref.WeakSet()


class ByteLRU:
    """Values with a size in bytes; the least recently used go once the total passes ``max_bytes``.

    ``get`` and ``put`` take one lock for a dictionary operation each (never around I/O or decoding),
    so concurrent readers contend briefly. After ``fork()`` the child starts with a fresh lock (the
    parent's may have been held by another thread) and keeps the entries (copy-on-write pages).
    """

    def __init__(self, max_bytes: int):
        self.max_bytes = int(max_bytes)
        self.nbytes = 0
        self.hits = 0
        self.misses = 0
        self._d: "OrderedDict[object, tuple[object, int]]" = OrderedDict()
        self._lock = threading.Lock()
        _FORK_HOOKS.add(self)

    def get(self, key, default=None):
        with self._lock:
            hit = self._d.get(key)
            if hit is None:
                self.misses += 1
                return default
            self._d.move_to_end(key)
            self.hits += 1
            return hit[0]

    def put(self, key, value, nbytes: int):
        if nbytes > self.max_bytes:
            return value
        with self._lock:
            old = self._d.pop(key, None)
            if old is not None:
                self.nbytes -= old[1]
            self._d[key] = (value, nbytes)
            self.nbytes += nbytes
            while self.nbytes > self.max_bytes and self._d:
                _, (_, n) = self._d.popitem(last=False)
                self.nbytes -= n
        return value

    def grow(self, key, delta: int):
        """Counts ``delta`` more bytes for ``key`` (a value that grew in place), evicting as ``put`` does."""
        with self._lock:
            hit = self._d.get(key)
            if hit is None:
                return
            self._d[key] = (hit[0], hit[1] + delta)
            self.nbytes += delta
            while self.nbytes > self.max_bytes and len(self._d) > 1:
                _, (_, n) = self._d.popitem(last=False)
                self.nbytes -= n

    def clear(self):
        with self._lock:
            self._d.clear()
            self.nbytes = 0

    def __len__(self):
        return len(self._d)

    def _reset_after_fork(self):
        self._lock = threading.Lock()


def after_fork(obj) -> None:
    """Registers ``obj._reset_after_fork()`` to run in a forked child (weakly: it may be collected)."""
    _FORK_HOOKS.add(obj)


def _run_fork_hooks():
    for obj in list(_FORK_HOOKS):
        obj._reset_after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_run_fork_hooks)
