"""Pyramid levels read in-process: ``_pyramid/pyramid.json`` (docs/FORMAT.md section 8) through a byte
source, with the rules of :mod:`sfclayer._pyramid_levels` (which reads it through the JVM)."""

from __future__ import annotations

import json

from .._pyramid_levels import PYRAMID_DIR, _DOC_FORMAT, _FIRST_CHECKED, _base_zoom, _checksum, _join
from ..errors import CorruptLayer, InvalidArgument, LayerNotFound
from .documents import VersionLog

__all__ = ["level_read", "pyramid_document"]


def pyramid_document(source, path):
    """The checked pyramid document of the layer at ``path``, or None."""
    where = _join(path, PYRAMID_DIR, "pyramid.json")
    try:
        text = source.read(f"{PYRAMID_DIR}/pyramid.json")
    except FileNotFoundError:
        return None
    advice = f"rebuild the pyramid with sfclayer pyramid {path} --full"
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise CorruptLayer(f"pyramid document {where} is damaged (not JSON: {e}); {advice}") from None
    if not isinstance(doc, dict) or doc.get("format") != "sfclayer-pyramid":
        raise CorruptLayer(f"pyramid document {where} is damaged (not an sfclayer-pyramid document); {advice}")
    fv = int(doc.get("formatVersion", 1))
    if fv > _DOC_FORMAT:
        raise InvalidArgument(f"pyramid document {where} has format version {fv}, newer than this sfclayer reads "
                              f"({_DOC_FORMAT}): upgrade sfclayer")
    if fv >= _FIRST_CHECKED and doc.get("sha256") != _checksum(doc):
        raise CorruptLayer(f"pyramid document {where} is damaged (its sha256 does not match its content); {advice}")
    return doc


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
