"""Pyramid levels read in-process: the newest ``_pyramid/pyramid-<N>.json`` (or the legacy
``_pyramid/pyramid.json``; docs/FORMAT.md section 8) through a byte source, with the rules of
:mod:`sfclayer._pyramid_levels` (which reads it through the JVM, ``io.sfclayer.layer.PyramidDocuments``)."""

from __future__ import annotations

import re

from .._pyramid_levels import PYRAMID_DIR, _checked_document, _join, _pinned, _resolved
from ..errors import StorageError
from .documents import VersionLog

__all__ = ["level_read", "pyramid_document"]

_NUMBERED = re.compile(r"pyramid-(\d{8,})\.json")
_LEGACY = "pyramid.json"
_READ_ATTEMPTS = 5  # as the JVM's: a document removed by a publisher's clean-up after the listing


def _newest_text(source):
    """``(name, text)`` of the newest pyramid document, or ``(None, None)`` when there is none."""
    for attempt in range(_READ_ATTEMPTS):
        numbers = [int(m.group(1)) for name, _size in source.list(PYRAMID_DIR)
                   for m in [_NUMBERED.fullmatch(name.rsplit("/", 1)[-1])] if m]
        name = f"pyramid-{max(numbers):08d}.json" if numbers else _LEGACY
        try:
            return name, source.read(f"{PYRAMID_DIR}/{name}")
        except FileNotFoundError:
            if not numbers and attempt > 0:  # none in two listings (the JVM's rule: one listing made
                return None, None            # during publishes has come back without any on S3Proxy)
    raise StorageError(f"the pyramid documents in {PYRAMID_DIR} kept disappearing between listing and reading "
                       f"({_READ_ATTEMPTS} attempts): are pyramid runs publishing without pause?")


def pyramid_document(source, path):
    """The checked newest pyramid document of the layer at ``path``, or None."""
    name, text = _newest_text(source)
    if text is None:
        return None
    where = _join(path, PYRAMID_DIR, name)
    return _checked_document(text, where, path)


def level_read(source, path, zoom, version=None, as_of=None):
    """``(layer path, version, as_of)`` of zoom level ``zoom`` (the rules of ``_pyramid_levels._level_read``)."""
    md = VersionLog(source, path).current().doc
    return _pinned(*_resolved(md, lambda: pyramid_document(source, path), path, zoom), path, zoom, version, as_of)
