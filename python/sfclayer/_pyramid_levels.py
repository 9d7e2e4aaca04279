"""Where a raster layer's zoom levels live: ``PATH/_pyramid/<z>/`` beside the pyramid documents
``PATH/_pyramid/pyramid-<N>.json`` (the newest lists the levels and the base version they were built
from; docs/FORMAT.md section 8), and the base's own zoom.

Below both :mod:`sfclayer.layer` (``open(zoom=)``, ``read(zoom=)``) and :mod:`sfclayer.pyramids`
(which builds the levels), so neither imports the other for it.
"""

import hashlib
import json

from . import _jvm
from .errors import CorruptLayer, InvalidArgument, LayerNotFound

__all__ = ["PYRAMID_DIR", "pyramid_levels", "level_path"]

#: The directory of a layer's pyramid levels, inside the layer.
PYRAMID_DIR = "_pyramid"
#: The pyramid document's format: 2 has levels with the mask column; 3 adds ``levelVersions`` and ``sha256``;
#: 4 is published as numbered documents ``pyramid-<N>.json`` (io.sfclayer.layer.PyramidDocuments), no longer
#: as the single ``pyramid.json`` (documents of versions 1 to 3 still read, from ``pyramid.json``).
_DOC_FORMAT = 4
_FIRST_CHECKED = 3


def _join(path, *names):
    return "/".join([path.rstrip("/")] + [str(n) for n in names])


def _base_metadata(spark, path):
    return json.loads(_jvm.layer_metadata_json(spark, path, files=0))


def _checksum(doc):
    """SHA-256 of a pyramid document without its ``sha256`` field, in one canonical JSON form."""
    body = {k: v for k, v in doc.items() if k != "sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()


def _document(spark, path):
    """The newest pyramid document, checked (formatVersion 3 on: its ``sha256``); None when there is none."""
    return _numbered_document(spark, path)[1]


def _numbered_document(spark, path):
    """``(number, document)``: the newest pyramid document and its number (0: the legacy ``pyramid.json``;
    ``(-1, None)`` when there is none), checked as :func:`_document` says."""
    directory = _join(path, PYRAMID_DIR)
    try:
        found = _jvm.pyramid_document(spark, directory)
    except CorruptLayer as e:  # a filesystem's own checksum (Hadoop's local .crc sidecar) found damage
        raise CorruptLayer(f"pyramid document {e} ; rebuild the pyramid with sfclayer pyramid {path} --full") from None
    where = _join(directory, found["name"])
    text = found["text"]
    if text is None:
        return -1, None
    return int(found["number"]), _checked_document(text, where, path)


def _checked_document(text, where, path):
    """The pyramid document ``text`` (read from ``where``, of the layer at ``path``), checked: JSON, an
    sfclayer-pyramid document, a format this sfclayer reads, its ``sha256`` from formatVersion 3 on. Shared
    by the JVM path and the in-process reader (:mod:`sfclayer.reader.pyramid`)."""
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


def pyramid_levels(spark, path):
    """The zoom levels of a raster layer: its pyramid's and its own, ascending.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
    path : str
        The base layer.

    Returns
    -------
    list of int

    Raises
    ------
    InvalidArgument
        If the layer is not a raster layer.
    """
    md = _base_metadata(spark, path)
    zoom = _base_zoom(md, path)
    doc = _document(spark, path)
    levels = set(doc["levels"]) if doc and doc.get("baseVersion") == md["version"] else set()
    return sorted(levels | {zoom})


def _base_zoom(md, path):
    """The base's zoom: its tile matrix's, or for its own grid ``ceil(log2(max(cols, rows)))``."""
    r = md.get("raster")
    if not r:
        raise InvalidArgument(f"path: {path!r} has no zoom levels: it is not a raster layer (one written by "
                              "sfclayer.ingest or with a raster description)")
    if r.get("zoom") is not None:
        return int(r["zoom"])
    ki = md["keyIndex"]
    side = max(ki["colMax"] - ki["colMin"] + 1, ki["rowMax"] - ki["rowMin"] + 1)
    return max(0, (side - 1).bit_length())  # ceil(log2(side))


def level_path(spark, path, zoom):
    """The layer holding zoom level ``zoom`` of the raster layer at ``path`` (``path`` itself for its own).

    Raises
    ------
    LayerNotFound
        If the pyramid has no such level, or was built from an older version of the base.
    """
    return _level(spark, path, zoom)[0]


def _level_read(spark, path, zoom, version=None, as_of=None):
    """``(layer, version, as_of)`` to read zoom level ``zoom`` of the base's version ``version`` (or
    as of ``as_of``): the base's own arguments at its zoom; at a pyramid level, the level's version
    the pyramid document pins (None for a version 1 document: the level's newest).

    A pyramid holds its levels for one base version only (its ``baseVersion``, the newest): a
    level of another base version is refused rather than read from the wrong base.

    Raises
    ------
    InvalidArgument
        If ``version`` is not the base version the pyramid was built from, or ``as_of`` is given
        for a pyramid level.
    LayerNotFound
        As :func:`level_path`.
    """
    return _pinned(*_level(spark, path, zoom), path, zoom, version, as_of)


def _pinned(layer, doc, md, path, zoom, version, as_of):
    """:func:`_level_read`'s answer from :func:`_resolved`'s (shared with the in-process reader)."""
    if doc is None:  # the base's own zoom: its versions are the base's
        return layer, version, as_of
    if as_of is not None:
        raise InvalidArgument(f"as_of: zoom level {zoom} of {path} is a pyramid level, which holds only the base's "
                              f"newest version ({md['version']}); give version= or read the base zoom")
    if version is not None and int(version) != int(doc["baseVersion"]):
        raise InvalidArgument(f"version: {version} is not the version of {path} its pyramid was built from "
                              f"({doc['baseVersion']}): zoom level {zoom} exists only for that version (version "
                              f"{version} can be read at the base zoom {_base_zoom(md, path)})")
    pinned = (doc.get("levelVersions") or {}).get(str(int(zoom)))
    return layer, pinned, None


def _level(spark, path, zoom):
    """``(layer path, pyramid document or None at the base zoom, base metadata)``."""
    from ._args import check_int

    zoom = check_int("zoom", zoom)  # not int(): 1.5, "3" or True would name another level
    return _resolved(_base_metadata(spark, path), lambda: _document(spark, path), path, zoom)


def _resolved(md, document, path, zoom):
    """:func:`_level`'s answer from the base's metadata ``md`` and ``document()``, the newest pyramid
    document (read only above the base zoom); shared with the in-process reader."""
    from ._args import check_int

    zoom = check_int("zoom", zoom)
    base = _base_zoom(md, path)
    if zoom == base:
        return path, None, md
    doc = document()
    if doc is None or zoom not in doc.get("levels", []):
        have = sorted(set(doc["levels"] if doc else []) | {base})
        raise LayerNotFound(f"layer {path} has no zoom level {zoom}; it has {have}"
                            + ("" if doc else " (build the coarser ones with sfclayer pyramid PATH)"))
    if doc.get("baseVersion") != md["version"]:
        raise LayerNotFound(f"the pyramid of {path} was built from version {doc.get('baseVersion')} and the "
                            f"layer is at version {md['version']}: rebuild it with sfclayer pyramid PATH")
    return _join(path, PYRAMID_DIR, zoom), doc, md
