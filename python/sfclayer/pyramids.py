"""Pyramids: the coarser zoom levels of a raster layer, on a quadtree tile matrix set or on its
source's own grid (levels halving the resolution from the same top-left corner, zoom 0 one tile).

Level ``z`` is built from level ``z + 1`` (the base, at ``PATH``, first): each parent tile
``(c, r)`` is its four children ``(2c..2c+1, 2r..2r+1)`` side by side, downsampled 2 × 2 → 1
(GeoTrellis' ``Pyramid.upLevels``). Every level is an ordinary layer at ``PATH/_pyramid/<z>/``
(readers of the base never look into ``PATH/_pyramid/``), and the newest pyramid document
``PATH/_pyramid/pyramid-<N>.json`` (a new number per change, published like a version document, never
replaced) lists the levels, the base version they were built from, each level's version and a checksum::

    {"format": "sfclayer-pyramid", "formatVersion": 4, "tms": "WebMercatorQuad",
     "baseZoom": 5, "baseVersion": 1, "levels": [0, 1, 2, 3, 4], "resampling": "average",
     "levelVersions": {"0": 1, ...}, "sha256": "..."}

One :func:`pyramid` run at a time: a run holds the lease ``PATH/_pyramid/.lease`` (another fails
with :class:`sfclayer.ConcurrentUpdate`), and publishes the document next to the one it read at its
start only if no other run did (an atomic create-if-absent of the next number).

After appends and deletes on the base, :func:`pyramid` updates the levels in place, rewriting only
the parents of the changed tiles (docs/FORMAT.md, "Updating a pyramid").

Downsampling of each 2 × 2 block (valid pixels as :mod:`sfclayer.raster` says: the tile's mask, else
its nodata value; a missing child's pixels are invalid):

* ``average``: the mean of the block's valid pixels, per band (rounded half to even for integer
  types); missing (invalid) when none is valid;
* ``nearest``: the block's top-left pixel, valid when it is;
* ``mode``: per band, the most frequent value among the valid pixels (ties: the first in block order
  top-left, top-right, bottom-left, bottom-right); missing when none is valid.

A parent pixel is valid when its value came from a valid pixel; parents carry a mask where their
nodata value cannot say so on its own (a valid black parent of a layer without nodata).

Examples
--------
>>> import numpy as np
>>> downsample(np.array([[[1, 3], [5, 7]]], "uint8"), 0, "average").tolist()
[[[4]]]
>>> downsample(np.array([[[0, 3], [0, 0]]], "uint8"), 0, "average").tolist()   # 0 is nodata
[[[3]]]
"""

import contextlib
import datetime as _dt
import functools
import json
import logging
import time
import warnings

import numpy as np

from . import _jvm, _progress, raster
from . import layer as _layer
from .ingestion import Grid, _tms
from ._pyramid_changes import _boxes_condition, _changed_base_keys, _merge_boxes, _sql
from ._pyramid_levels import (  # noqa: F401 (level_path, pyramid_levels, PYRAMID_DIR: public here too)
    _DOC_FORMAT, PYRAMID_DIR, _base_metadata, _base_zoom, _checksum, _document, _join, _numbered_document,
    level_path, pyramid_levels)
from .errors import ConcurrentUpdate, InvalidArgument, LayerNotFound, StorageError

__all__ = ["pyramid", "pyramid_levels", "level_path", "downsample", "DOWNSAMPLING", "PYRAMID_DIR"]

# pyramid.json's first format whose levels carry the raster mask column (an update appends to them);
# documents are written in _DOC_FORMAT (3: with levelVersions and sha256, _pyramid_levels).
_DOC_VERSION = 2
#: Downsampling methods of :func:`pyramid`.
DOWNSAMPLING = ("average", "nearest", "mode")
_LOG = logging.getLogger(__name__)
_LEASE = ".lease"


def _level_grids(md, path):
    """``(base zoom, grid(z))``: the base's zoom and the grid of any coarser level ``z``.

    On a tile matrix set, the matrix at ``z`` (checked to be a quadtree step). On the base's own
    grid (GeoTrellis' floating layout), level ``z`` keeps the top-left corner and doubles the tile's
    size in map units at each step, ``ceil(n / 2)`` tiles a side, down to one tile at level 0.
    """
    base = _base_zoom(md, path)
    r = md["raster"]
    if r.get("tms") is not None:
        t = _tms(r["tms"])

        def grid(z):
            g, child = Grid.from_tms(t, z), Grid.from_tms(t, z + 1)
            if (child.width, child.height) != (2 * g.width, 2 * g.height) or \
                    (child.tile_width, child.tile_height) != (g.tile_width, g.tile_height) or \
                    not np.allclose(child.extent, g.extent):
                raise InvalidArgument(f"{t.id} is not a quadtree between zooms {z} and {z + 1}; no pyramid over it")
            return g
        return base, grid, max(t.minzoom, 0)
    ki, e = md["keyIndex"], md.get("extent")
    if not e:
        raise InvalidArgument(f"raster layer {path} has no extent; its levels could not be placed")
    cols, rows = ki["colMax"] - ki["colMin"] + 1, ki["rowMax"] - ki["rowMin"] + 1
    tw, th = (e["xmax"] - e["xmin"]) / cols, (e["ymax"] - e["ymin"]) / rows

    def grid(z):
        s = 1 << (base - z)
        w, h = -(-cols // s), -(-rows // s)
        extent = (e["xmin"], e["ymax"] - h * s * th, e["xmin"] + w * s * tw, e["ymax"])
        return Grid(md.get("crs"), extent, w, h, int(r["tileWidth"]), int(r["tileHeight"]), None, z)
    return base, grid, 0


def pyramid(spark, path, min_zoom=None, resampling=None, log=None, full=False, note=None, quiet=None,
            **write_options):
    """Build the coarser zoom levels of a raster layer, each from the level below; or bring them up
    to date with the base's newest version, rewriting only the parents of the changed tiles.

    When the pyramid was built (with the same ``min_zoom`` and ``resampling``) from an older version
    ``v`` of the base, the update is incremental: the base tiles that differ between ``v`` and the
    newest version ``w`` (inserted, replaced or deleted) are found by comparing, in Spark, only the
    data files ``w`` added or dropped since ``v`` (their key boxes come from the files' statistics);
    then, level by level, only their parents are recomputed from the level below and upserted
    (an append), and parents left without any valid pixel are deleted, so every other data file of
    a level stays as it was. An update starts from each level's version the pyramid document pins
    (what an interrupted run appended since is restored away first, as a new level version), so it
    equals a full rebuild whenever it is run. A full rebuild happens instead when there is no
    pyramid, when ``v``'s version document is gone (vacuumed), when a pinned level version is gone,
    when a version since ``v`` overwrote the base or most of its data files changed, when its grid or
    raster description changed, with another ``min_zoom`` or ``resampling`` than the pyramid's, or
    with ``full=True``; ``note`` says which.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
    path : str
        A layer written by :func:`sfclayer.ingest`: on a quadtree tile matrix set
        (``WebMercatorQuad``, ``WorldCRS84Quad``...), or on its source's own grid (``tms=None``;
        base zoom ``ceil(log2(max(cols, rows)))``, level 0 one tile: docs/FORMAT.md section 8).
    min_zoom : int, optional
        The coarsest level to build: by default the existing pyramid's, else the tile matrix set's
        first (0).
    resampling : {'average', 'nearest', 'mode'}, optional
        How a 2 × 2 block becomes one pixel (module docstring): by default the existing pyramid's,
        else ``average``.
    log : callable, optional
        Called as ``log(zoom, seconds)`` after each level is written.
    full : bool
        Rebuild every level even when an incremental update is possible.
    note : callable, optional
        Called with one sentence saying what the call does: an incremental update (from which base
        version, how many changed tiles) or a full build and why. The sentence also goes to the
        ``sfclayer.pyramids`` logger.
    quiet : bool, optional
        Each level's progress (tasks done of total, rate, time left) on stderr: None shows it in a terminal or a
        notebook (``SFCLAYER_QUIET=1`` turns that off), False always, True never (module
        :mod:`sfclayer._progress`).
    **write_options
        Write options of every level (``key_index``, ``block_size``, ``compression``...) on a full
        build; an incremental update keeps each level's.

    Returns
    -------
    list of int
        The levels built or updated, coarsest first (empty when the pyramid was up to date).

    Examples
    --------
    >>> sfclayer.pyramid(spark, "/tmp/world")             # doctest: +SKIP
    [0, 1, 2, 3]
    >>> sfclayer.read(spark, "/tmp/world", zoom=1).count()  # doctest: +SKIP
    4
    """
    if resampling is not None and resampling not in DOWNSAMPLING:
        raise InvalidArgument(f"resampling: {resampling!r} is unknown for a pyramid ({', '.join(DOWNSAMPLING)})")
    if min_zoom is not None:
        from ._args import check_int

        min_zoom = check_int("min_zoom", min_zoom)  # its range (the layer's zooms) once the layer is read
    _base_zoom(_base_metadata(spark, path), path)  # not a raster layer: refused before anything is written
    # One run at a time: two runs from different base versions could otherwise leave parents of the
    # older one under a document claiming the newer.
    with _leased(spark, path, f"build the pyramid of {path}"):
        return _run(spark, path, min_zoom, resampling, log, full, note, quiet, write_options)


@contextlib.contextmanager
def _leased(spark, path, what):
    """Runs the block under the pyramid lease of the layer at ``path`` (FORMAT.md section 8).

    The release (retried once in the JVM) that still fails leaves the lease: the block's own failure
    is what is raised, and a block that succeeded (its levels and document are published) returns with
    a warning naming the lease file; the next run says the lease was left by a finished run.
    """
    lease = _join(path, PYRAMID_DIR, _LEASE)
    token = _jvm.take_lease(spark, lease, what)
    ok = False
    try:
        yield
        ok = True
    finally:
        try:
            _jvm.release_lease(spark, lease, token)
        except StorageError as e:
            _LOG.warning("%s", e)
            if ok:
                warnings.warn(str(e), RuntimeWarning, stacklevel=3)


def _run(spark, path, min_zoom, resampling, log, full, note, quiet, write_options):
    """:func:`pyramid` under its lease."""
    md = _base_metadata(spark, path)
    base, grid_at, lowest = _level_grids(md, path)
    number, doc = _numbered_document(spark, path)
    if min_zoom is None:
        min_zoom = min(doc["levels"], default=base) if doc else lowest
    if resampling is None:
        resampling = doc.get("resampling", "average") if doc else "average"
    min_zoom = int(min_zoom)
    if not (lowest <= min_zoom <= base):
        raise InvalidArgument(f"min_zoom: {min_zoom} is out of range ({lowest}..{base}, the base zoom)")

    def say(message):
        _LOG.info("pyramid of %s: %s", path, message)
        if note is not None:
            note(message)

    r = md["raster"]
    wanted = list(range(min_zoom, base))
    changed = None  # the base keys to carry up; None: rebuild every level
    if full:
        say("full rebuild (asked for)")
    elif doc is None:
        say("full build (no pyramid yet)")
    elif doc.get("formatVersion", 1) < _DOC_VERSION:
        say("full rebuild (the levels were written before validity masks)")
    elif sorted(doc.get("levels", [])) != wanted or doc.get("resampling") != resampling:
        say(f"full rebuild (the pyramid has levels {doc.get('levels')} by {doc.get('resampling')}; "
            f"asked for {wanted} by {resampling})")
    else:
        changed, why = _changed_base_keys(spark, path, int(doc["baseVersion"]), md)
        if changed and not doc.get("levelVersions"):
            changed, why = None, (f"full rebuild: the pyramid document (format {doc.get('formatVersion', 1)}) does "
                                  "not say which version of each level holds it, so an update could start from "
                                  "levels an interrupted run left half done")
        elif changed:
            resumed = _resume_levels(spark, path, doc)
            if resumed is not None:
                changed, why = None, resumed
        say(why)
    level_versions = dict((doc or {}).get("levelVersions") or {}) if changed is not None else {}
    if changed is not None and not changed:
        if doc["baseVersion"] != md["version"] or "levelVersions" not in doc:
            _write_document(spark, path, number, doc, md["version"], "incremental", {},
                            level_versions or _level_versions(spark, path, doc["levels"]))
        return []
    nodata = r.get("nodata")
    nodata = float("nan") if nodata == "NaN" else nodata
    built, counts = [], {}
    child_path, child_version = path, md["version"]
    for z in range(base - 1, min_zoom - 1, -1):
        started = time.perf_counter()
        grid = grid_at(z)
        level = _join(path, PYRAMID_DIR, z)
        desc = grid.raster_metadata(r["bands"], r["dtype"], nodata)
        tile = functools.partial(_parent_tile, grid, r["bands"], r["dtype"], nodata, resampling)
        _describe_jobs(spark, f"sfclayer: pyramid level {z} of {path}")
        try:
            with _progress.track(spark, f"pyramid level {z}", quiet):
                if changed is None:
                    out = _parents(_children(spark, child_path, child_version, None), tile)
                    _layer.write(out, level, mode="overwrite", bounds=grid.bounds, extent=grid.extent, crs=grid.crs,
                                 raster=desc, **write_options)
                else:
                    changed = {(c // 2, rw // 2) for c, rw in changed}
                    counts[z] = _update_level(spark, level, _children(spark, child_path, child_version, changed),
                                              changed, tile)
        finally:
            _describe_jobs(spark, None)
        built.append(z)
        level_versions[str(z)] = int(_base_metadata(spark, level)["version"])
        child_path, child_version = level, level_versions[str(z)]
        if log is not None:
            log(z, time.perf_counter() - started)
    if changed is None:
        doc = {"format": "sfclayer-pyramid", "formatVersion": _DOC_VERSION, "tms": r.get("tms"), "baseZoom": base,
               "levels": sorted(built), "resampling": resampling}
    _write_document(spark, path, number, doc, md["version"], "full" if changed is None else "incremental",
                    counts, level_versions)
    return sorted(built)


def _resume_levels(spark, path, doc):
    """Bring every level back to the version the document pins, so an update starts from the levels of
    the document's ``baseVersion`` whatever an interrupted run appended since (FORMAT.md section 8).

    A level whose newest version is not the pinned one gets a new version restoring it (nothing is
    copied). Returns None when every level is at its pinned content, else why a full rebuild is needed
    instead (a pinned version was vacuumed).
    """
    for z in sorted(doc["levels"]):
        level, pinned = _join(path, PYRAMID_DIR, z), int(doc["levelVersions"][str(z)])
        if int(_base_metadata(spark, level)["version"]) == pinned:
            continue
        try:
            _jvm.command(spark, "restore", level, pinned, None)
        except LayerNotFound as e:
            return (f"full rebuild: level {z} holds changes of an interrupted run after its version {pinned}, "
                    f"which the pyramid was built with, and that version cannot be restored ({e})")
    return None


def _describe_jobs(spark, text):
    """Name the Spark UI's jobs of a level (classic sessions only: Spark Connect has no job descriptions)."""
    _jvm.transport(spark).describe_jobs(text)


def _level_versions(spark, path, levels):
    return {str(z): int(_base_metadata(spark, _join(path, PYRAMID_DIR, z))["version"]) for z in levels}


def _write_document(spark, path, started_from, doc, base_version, kind, counts, level_versions):
    """Publish the pyramid document as the next numbered document after ``started_from`` (the number of
    the one this run read, -1: none): refused with :class:`ConcurrentUpdate` when another run took it."""
    doc = dict(doc, formatVersion=_DOC_FORMAT, baseVersion=base_version,
               createdAt=_dt.datetime.now(_dt.timezone.utc).isoformat(), levelVersions=level_versions,
               lastUpdate={"kind": kind, "parents": {str(z): n for z, n in counts.items()}})
    doc["sha256"] = _checksum(doc)
    number = max(int(started_from), 0) + 1
    if not _jvm.publish_pyramid_document(spark, _join(path, PYRAMID_DIR), number, json.dumps(doc, indent=2)):
        now = _document(spark, path)
        raise ConcurrentUpdate(f"pyramid of {path}: its document changed while this run built the levels (another "
                               f"run wrote base version {(now or {}).get('baseVersion')}); this run's levels may be "
                               f"mixed with it: run sfclayer pyramid {path} --full")


def _children(spark, path, version, parents):
    """The raster tiles of ``path`` (at ``version``), or only the children of ``parents``."""
    df = _layer.read(spark, path, version=version)
    if "mask" not in df.columns:  # written before masks: validity is the nodata value's
        df = df.withColumn("mask", _sql(spark).lit(None).cast("binary"))
    df = df.select(*raster.spark_schema().fieldNames())
    if parents is None:
        return df
    kids = [(2 * c, 2 * r, 2 * c + 1, 2 * r + 1) for c, r in parents]
    df = df.where(_boxes_condition(spark, _merge_boxes(kids)))  # pushed down: prunes files
    keys = spark.createDataFrame(sorted(parents), "pc int, pr int")
    return df.join(_sql(spark).broadcast(keys), (_sql(spark).floor(df["col"] / 2) == keys["pc"]) &
                   (_sql(spark).floor(df["row"] / 2) == keys["pr"]), "left_semi")


def _update_level(spark, level, children, parents, tile):
    """Upsert the parents recomputed from ``children`` into ``level`` and delete those left empty.

    Returns ``{"written": n, "deleted": m}``.
    """
    from pyspark import StorageLevel

    out = _parents(children, tile).persist(StorageLevel.MEMORY_AND_DISK)  # read for its keys, then written
    try:
        written = {(x["col"], x["row"]) for x in out.select("col", "row").collect()}
        if written:
            _layer.write(out, level, mode="append")
    finally:
        out.unpersist()
    gone = parents - written
    if gone:
        keys = spark.createDataFrame(sorted(gone), "col int, row int")
        pruned = _layer.read(spark, level).where(_boxes_condition(spark, _merge_boxes([(c, r, c, r) for c, r in gone])))
        present = [(x["col"], x["row"]) for x in pruned.select("col", "row")
                   .join(keys, ["col", "row"], "left_semi").collect()]
        if present:
            boxes = ";".join(",".join(str(v) for v in b) for b in _merge_boxes([(c, r, c, r) for c, r in present]))
            _jvm.command(spark, "deleteKeys", level, boxes)
        gone = set(present)
    return {"written": len(written), "deleted": len(gone)}


def _parents(children, tile):
    """The parent tiles of the raster tiles ``children``: grouped by parent key, each group drawn by
    ``tile`` (:func:`_parent_tile`) in ``applyInArrow`` (DataFrame operations only, no RDDs)."""
    f = _sql(children.sparkSession)
    keyed = children.withColumn("pc", f.floor(f.col("col") / 2).cast("int")) \
        .withColumn("pr", f.floor(f.col("row") / 2).cast("int"))
    return keyed.groupBy("pc", "pr").applyInArrow(functools.partial(_parent_table, tile), raster.spark_schema())


_CHILD_COLUMNS = ("pc", "pr", "col", "row") + raster.COLUMNS


def _parent_table(tile, children):
    """``applyInArrow``'s function: one parent's children (an Arrow table) to the parent (0 or 1 rows)."""
    from ._tile_batches import rows, tile_table

    items = [(col % 2, row % 2, pixels, width, height, bands, dtype, nodata, mask)
             for _, _, col, row, pixels, width, height, bands, dtype, nodata, mask in rows(children, _CHILD_COLUMNS)]
    pc, pr = children.column("pc")[0].as_py(), children.column("pr")[0].as_py()
    return tile_table(list(tile(((pc, pr), items))))


def _parent_tile(grid, bands, dtype, nodata, resampling, item):
    (col, row), children = item
    th, tw = grid.tile_height, grid.tile_width
    fill = nodata if nodata is not None else (np.nan if np.dtype(dtype).kind == "f" else 0)
    block = np.full((bands, 2 * th, 2 * tw), fill, dtype=dtype)
    valid = np.zeros((2 * th, 2 * tw), dtype=bool)  # a missing child's pixels are invalid
    for dx, dy, pixels, width, height, b, dt, child_nodata, mask in children:
        child = {"pixels": pixels, "width": width, "height": height, "bands": b, "dtype": dt,
                 "nodata": child_nodata, "mask": mask}
        a = raster.to_numpy(child)
        block[:, dy * th:(dy + 1) * th, dx * tw:(dx + 1) * tw] = a
        valid[dy * th:(dy + 1) * th, dx * tw:(dx + 1) * tw] = raster.valid_mask(child, a)
    parent, parent_valid = downsample(block, nodata, resampling, valid=valid, with_valid=True)
    if not parent_valid.any():
        return
    v = raster.from_numpy(parent, nodata, valid=parent_valid)
    yield (col, row, *(v[k] for k in raster.COLUMNS))


def downsample(block, nodata, resampling="average", present=None, valid=None, with_valid=False):
    """``(bands, 2h, 2w)`` → ``(bands, h, w)``, each 2 × 2 block to one pixel (module docstring).

    Parameters
    ----------
    block : numpy.ndarray
    nodata : float or None
        The value invalid pixels hold (and, without ``valid``, the one that makes them invalid).
        Parent pixels with no valid pixel under them get it (NaN for floats, 0 for integers, when
        None).
    resampling : {'average', 'nearest', 'mode'}
    present : numpy.ndarray, optional
        ``(2h, 2w)`` booleans: False where the block has no data at all (a missing child tile), so
        those pixels count as invalid even when the layer has no nodata value.
    valid : numpy.ndarray, optional
        ``(2h, 2w)`` booleans: which pixels hold data (:func:`sfclayer.raster.valid_mask`), instead
        of ``nodata``'s rule (and ``present``).
    with_valid : bool
        Also return the parent's validity ``(h, w)``.
    """
    a = np.asarray(block)
    b, h2, w2 = a.shape
    h, w = h2 // 2, w2 // 2
    if valid is None:
        valid = raster.valid_mask({"nodata": nodata}, a)
        if present is not None:
            valid &= present
    valid = np.asarray(valid, dtype=bool)
    if resampling == "nearest":
        out, out_valid = a[:, 0:2 * h:2, 0:2 * w:2].copy(), valid[0:2 * h:2, 0:2 * w:2].copy()
        return (out, out_valid) if with_valid else out
    if nodata is None:
        fill = np.nan if a.dtype.kind == "f" else 0
    else:
        fill = nodata
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
    out[:, n == 0] = fill
    return (out, n > 0) if with_valid else out
