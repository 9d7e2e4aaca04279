"""Where a raster layer's zoom levels live: ``PATH/_pyramid/<z>/`` beside ``PATH/_pyramid/pyramid.json``
(the levels and the base version they were built from; docs/FORMAT.md section 8), and the base's own zoom.

Below both :mod:`sfclayer.layer` (``open(zoom=)``, ``read(zoom=)``) and :mod:`sfclayer.pyramids`
(which builds the levels), so neither imports the other for it.
"""

import json

from . import _jvm
from .errors import InvalidArgument, LayerNotFound

__all__ = ["PYRAMID_DIR", "pyramid_levels", "level_path"]

#: The directory of a layer's pyramid levels, inside the layer.
PYRAMID_DIR = "_pyramid"
_DOC = "pyramid.json"


def _join(path, *names):
    return "/".join([path.rstrip("/")] + [str(n) for n in names])


def _base_metadata(spark, path):
    return json.loads(_jvm.layer_metadata_json(spark, path))


def _document(spark, path):
    text = _jvm.read_text(spark, _join(path, PYRAMID_DIR, _DOC))
    return None if text is None else json.loads(text)


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
    md = _base_metadata(spark, path)
    base = _base_zoom(md, path)
    zoom = int(zoom)
    if zoom == base:
        return path
    doc = _document(spark, path)
    if doc is None or zoom not in doc.get("levels", []):
        have = sorted(set(doc["levels"] if doc else []) | {base})
        raise LayerNotFound(f"layer {path} has no zoom level {zoom}; it has {have}"
                            + ("" if doc else " (build the coarser ones with sfclayer pyramid PATH)"))
    if doc.get("baseVersion") != md["version"]:
        raise LayerNotFound(f"the pyramid of {path} was built from version {doc.get('baseVersion')} and the "
                            f"layer is at version {md['version']}: rebuild it with sfclayer pyramid PATH")
    return _join(path, PYRAMID_DIR, zoom)
