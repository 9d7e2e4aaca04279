"""Pyramid levels read in-process: the newest ``_pyramid/pyramid-<N>.json`` (or the legacy
``_pyramid/pyramid.json``; docs/FORMAT.md section 8) through a byte source, with the rules of
:mod:`sfclayer._pyramid_levels` (which reads it through the JVM, ``io.sfclayer.layer.PyramidDocuments``)."""

from __future__ import annotations

import re

from .._pyramid_levels import PYRAMID_DIR, _base_zoom, _checked_document, _join
from ..errors import InvalidArgument, LayerNotFound, StorageError
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
    """``(layer path, version, as_of)`` of zoom level ``zoom`` (as ``_pyramid_levels._level_read``)."""
    md = VersionLog(source, path).current().doc
    base = _base_zoom(md, path)
    zoom = int(zoom)
    if zoom == base:
        return path, version, as_of
    doc = pyramid_document(source, path)
    if doc is None or zoom not in doc.get("levels", []):
        have = sorted(set(doc["levels"] if doc else []) | {base})
        raise LayerNotFound(f"layer {path} has no zoom level {zoom}; it has {have}"
                            + ("" if doc else " (build the coarser ones with sfclayer pyramid PATH)"))
    if doc.get("baseVersion") != md["version"]:
        raise LayerNotFound(f"the pyramid of {path} was built from version {doc.get('baseVersion')} and the "
                            f"layer is at version {md['version']}: rebuild it with sfclayer pyramid PATH")
    if as_of is not None:
        raise InvalidArgument(f"as_of: zoom level {zoom} of {path} is a pyramid level, which holds only the base's "
                              f"newest version ({md['version']}); give version= or read the base zoom")
    if version is not None and int(version) != int(doc["baseVersion"]):
        raise InvalidArgument(f"version: {version} is not the version of {path} its pyramid was built from "
                              f"({doc['baseVersion']}): zoom level {zoom} exists only for that version (version "
                              f"{version} can be read at the base zoom {base})")
    pinned = (doc.get("levelVersions") or {}).get(str(zoom))
    return _join(path, PYRAMID_DIR, zoom), pinned, None
