"""Pyramids: the coarser zoom levels of a raster layer on a quadtree tile matrix set.

Level ``z`` is built from level ``z + 1`` (the base, at ``PATH``, first): each parent tile
``(c, r)`` is its four children ``(2c..2c+1, 2r..2r+1)`` side by side, downsampled 2 × 2 → 1
(GeoTrellis' ``Pyramid.upLevels``). Every level is an ordinary layer at ``PATH/_pyramid/<z>/``
(readers of the base never look into ``_pyramid/``), and ``PATH/_pyramid/pyramid.json`` lists the
levels and the base version they were built from::

    {"format": "sfclayer-pyramid", "formatVersion": 1, "tms": "WebMercatorQuad",
     "baseZoom": 5, "baseVersion": 1, "levels": [0, 1, 2, 3, 4], "resampling": "average"}

Downsampling of each 2 × 2 block (a pixel is valid when any band differs from nodata, or is not NaN):

* ``average``: the mean of the block's valid pixels, per band (rounded half to even for integer
  types); nodata when none is valid;
* ``nearest``: the block's top-left pixel;
* ``mode``: per band, the most frequent value among the valid pixels (ties: the first in block order
  top-left, top-right, bottom-left, bottom-right); nodata when none is valid.

Examples
--------
>>> import numpy as np
>>> downsample(np.array([[[1, 3], [5, 7]]], "uint8"), 0, "average").tolist()
[[[4]]]
>>> downsample(np.array([[[0, 3], [0, 0]]], "uint8"), 0, "average").tolist()   # 0 is nodata
[[[3]]]
"""

import datetime as _dt
import functools
import json
import math
import time

import numpy as np

from . import _jvm, raster
from .errors import InvalidArgument, LayerNotFound

__all__ = ["pyramid", "pyramid_levels", "level_path", "downsample", "DOWNSAMPLING", "PYRAMID_DIR"]

#: The directory of a layer's pyramid levels, inside the layer.
PYRAMID_DIR = "_pyramid"
#: Downsampling methods of :func:`pyramid`.
DOWNSAMPLING = ("average", "nearest", "mode")
_DOC = "pyramid.json"


def _join(path, *names):
    return "/".join([path.rstrip("/")] + [str(n) for n in names])


def _base_metadata(spark, path):
    reader = _jvm.open_value_reader(spark, path, 1)
    try:
        return json.loads(_jvm.reader_call(reader, "metadataJson"))
    finally:
        _jvm.reader_call(reader, "close")


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
        If the layer is not a raster layer on a tile matrix set (no zoom).
    """
    md = _base_metadata(spark, path)
    zoom = _base_zoom(md, path)
    doc = _document(spark, path)
    levels = set(doc["levels"]) if doc and doc.get("baseVersion") == md["version"] else set()
    return sorted(levels | {zoom})


def _base_zoom(md, path):
    r = md.get("raster")
    if not r or r.get("zoom") is None:
        raise InvalidArgument(f"path: {path!r} has no zoom level (only raster layers ingested onto a tile "
                              "matrix set, sfclayer.ingest with a tms, have zoom levels)")
    return int(r["zoom"])


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


def pyramid(spark, path, min_zoom=0, resampling="average", log=None, **write_options):
    """Build the coarser zoom levels of a raster layer, each from the level below.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
    path : str
        A layer written by :func:`sfclayer.ingest` onto a quadtree tile matrix set
        (``WebMercatorQuad``, ``WorldCRS84Quad``...).
    min_zoom : int
        The coarsest level to build.
    resampling : {'average', 'nearest', 'mode'}
        How a 2 × 2 block becomes one pixel (module docstring).
    log : callable, optional
        Called as ``log(zoom, seconds)`` after each level is written.
    **write_options
        Write options of every level (``key_index``, ``block_size``, ``compression``...).

    Returns
    -------
    list of int
        The levels built, coarsest first.

    Examples
    --------
    >>> sfclayer.pyramid(spark, "/tmp/world")             # doctest: +SKIP
    [0, 1, 2, 3]
    >>> sfclayer.read(spark, "/tmp/world", zoom=1).count()  # doctest: +SKIP
    4
    """
    from . import layer as _layer
    from .ingestion import Grid, _tms

    if resampling not in DOWNSAMPLING:
        raise InvalidArgument(f"resampling: {resampling!r} is unknown for a pyramid ({', '.join(DOWNSAMPLING)})")
    md = _base_metadata(spark, path)
    base = _base_zoom(md, path)
    r = md["raster"]
    t = _tms(r["tms"])
    min_zoom = int(min_zoom)
    if not (max(t.minzoom, 0) <= min_zoom <= base):
        raise InvalidArgument(f"min_zoom: {min_zoom} is out of range ({max(t.minzoom, 0)}..{base}, the base zoom)")
    nodata = r.get("nodata")
    nodata = float("nan") if nodata == "NaN" else nodata
    built = []
    child_path, child = path, Grid.from_tms(t, base)
    for z in range(base - 1, min_zoom - 1, -1):
        started = time.perf_counter()
        grid = Grid.from_tms(t, z)
        if (child.width, child.height) != (2 * grid.width, 2 * grid.height) or \
                (child.tile_width, child.tile_height) != (grid.tile_width, grid.tile_height) or \
                not np.allclose(child.extent, grid.extent):
            raise InvalidArgument(f"tms: {t.id!r} is not a quadtree between zooms {z} and {z + 1} (a pyramid needs one)")
        df = _layer.read(spark, child_path).select(*raster.spark_schema().fieldNames())
        parents = df.rdd.map(_to_parent).groupByKey().flatMap(
            functools.partial(_parent_tile, grid, r["bands"], r["dtype"], nodata, resampling))
        out = spark.createDataFrame(parents, raster.spark_schema(), verifySchema=False)
        level = _join(path, PYRAMID_DIR, z)
        sc = spark.sparkContext
        sc.setJobDescription(f"sfclayer: pyramid level {z} of {path}")
        try:
            _layer.write(out, level, mode="overwrite", bounds=grid.bounds, extent=grid.extent, crs=grid.crs,
                         raster=grid.raster_metadata(r["bands"], r["dtype"], nodata), **write_options)
        finally:
            sc.setJobDescription(None)
        built.append(z)
        child_path, child = level, grid
        if log is not None:
            log(z, time.perf_counter() - started)
    doc = {"format": "sfclayer-pyramid", "formatVersion": 1, "tms": t.id, "baseZoom": base,
           "baseVersion": md["version"], "levels": sorted(built), "resampling": resampling,
           "createdAt": _dt.datetime.now(_dt.timezone.utc).isoformat()}
    _jvm.write_text(spark, _join(path, PYRAMID_DIR, _DOC), json.dumps(doc, indent=2))
    return sorted(built)


def _to_parent(row):
    return (row["col"] // 2, row["row"] // 2), (row["col"] % 2, row["row"] % 2, bytes(row["pixels"]),
                                                 row["width"], row["height"], row["bands"], row["dtype"])


def _parent_tile(grid, bands, dtype, nodata, resampling, item):
    (col, row), children = item
    th, tw = grid.tile_height, grid.tile_width
    # Without a nodata value, missing children are zeros that `present` keeps out of the reduction.
    block = np.full((bands, 2 * th, 2 * tw), 0 if nodata is None else nodata, dtype=dtype)
    present = np.zeros((2 * th, 2 * tw), dtype=bool)
    for dx, dy, pixels, width, height, b, dt in children:
        a = raster.to_numpy({"pixels": pixels, "width": width, "height": height, "bands": b, "dtype": dt})
        block[:, dy * th:(dy + 1) * th, dx * tw:(dx + 1) * tw] = a
        present[dy * th:(dy + 1) * th, dx * tw:(dx + 1) * tw] = True
    parent = downsample(block, nodata, resampling, present=present)
    if raster.is_empty(parent, nodata):
        return
    v = raster.from_numpy(parent, nodata)
    yield (col, row, v["pixels"], v["width"], v["height"], v["bands"], v["dtype"], v["nodata"])


def downsample(block, nodata, resampling="average", present=None):
    """``(bands, 2h, 2w)`` → ``(bands, h, w)``, each 2 × 2 block to one pixel (module docstring).

    Parameters
    ----------
    block : numpy.ndarray
    nodata : float or None
    resampling : {'average', 'nearest', 'mode'}
    present : numpy.ndarray, optional
        ``(2h, 2w)`` booleans: False where the block has no data at all (a missing child tile), so
        those pixels count as invalid even when the layer has no nodata value. Without nodata, a
        parent pixel with no valid pixel under it is 0.
    """
    a = np.asarray(block)
    b, h2, w2 = a.shape
    h, w = h2 // 2, w2 // 2
    if resampling == "nearest":
        return a[:, 0:2 * h:2, 0:2 * w:2].copy()
    if nodata is None:
        fill = np.nan if a.dtype.kind == "f" else None
    else:
        fill = nodata
    invalid = np.isnan(a) if a.dtype.kind == "f" else np.zeros(a.shape, dtype=bool)
    if nodata is not None and not math.isnan(nodata):
        invalid |= a == a.dtype.type(nodata)
    valid = ~invalid.all(axis=0)  # (2h, 2w)
    if present is not None:
        valid &= present
    # (bands, h, w, 4): the four pixels of each block, in block order.
    quad = a[:, :2 * h, :2 * w].reshape(b, h, 2, w, 2).transpose(0, 1, 3, 2, 4).reshape(b, h, w, 4)
    vq = valid[:2 * h, :2 * w].reshape(h, 2, w, 2).transpose(0, 2, 1, 3).reshape(h, w, 4)
    n = vq.sum(axis=-1)
    if resampling == "average":
        sums = np.where(vq[None], quad.astype(np.float64), 0.0).sum(axis=-1)
        mean = sums / np.maximum(n, 1)
        out = np.rint(mean) if a.dtype.kind in "iub" else mean
        out = out.astype(a.dtype)
    elif resampling == "mode":
        same = (quad[..., :, None] == quad[..., None, :]) & vq[None, :, :, None, :]
        counts = np.where(vq[None], same.sum(axis=-1), -1)
        pick = counts.argmax(axis=-1)
        out = np.take_along_axis(quad, pick[..., None], axis=-1)[..., 0]
    else:
        raise InvalidArgument(f"resampling: {resampling!r} is unknown for a pyramid ({', '.join(DOWNSAMPLING)})")
    if fill is not None:
        out[:, n == 0] = fill
    return out
