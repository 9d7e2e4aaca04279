"""GeoTIFF ingest: rasters onto a standard tile grid, written as a layer of raster tiles.

About 500 lines: the driver's plan, the executors' rendering and the two ways sources reach them
(local files and ``addFile`` on a classic session, ``binaryFile`` on Connect) are one pipeline.

The driver reads only the sources' headers (CRS, transform, size: their footprints) and lists the
target tiles they touch; executors render one target tile at a time from a windowed read of each
source it needs (``rasterio.warp.reproject`` onto the tile's pixel grid, with GDAL's alpha band
saying which of its pixels hold data); tiles without a valid pixel are dropped; then the ordinary
one-shuffle write. So an executor holds a few tiles and windows,
whatever the sources' size.

Sources on Hadoop filesystems (``hdfs://``...), which GDAL cannot read: the driver reads their
headers through Spark's Hadoop client, executors a local copy shipped with ``SparkContext.addFile``;
on Spark Connect, Spark's ``binaryFile`` data source reads them and tasks open their bytes in memory
(:mod:`sfclayer.raster_sources` says why and what it costs).

Target grids (:class:`Grid`): a morecantile tile matrix set at one zoom (the layer's key bounds are
the whole tile matrix, so ``col``/``row`` are the matrix's own column/row: XYZ ``x``/``y`` for
``WebMercatorQuad``; extent and CRS are the matrix's), or ``tms=None``: the first source's own
pixel grid cut into ``tile_size`` tiles from its top-left corner.

Validity is GDAL's: a source pixel holds data unless the source says otherwise, by its nodata value
(missing where every band is nodata), an alpha band or a per-dataset mask (GDAL's mask band,
rasterio's ``dataset_mask``); pixels no source covers are missing. A value is never taken to mean
"missing" by default: a black pixel of an RGB image without nodata is data. Tiles whose validity
the layer's nodata value cannot say on its own carry a mask (:mod:`sfclayer.raster`).

Mosaic rule: sources are drawn in the order given, each over the previous ones, wherever it has a
valid pixel; so where sources overlap **the last one wins**, and missing pixels in a later source
let earlier ones show (as ``gdalwarp`` and ``gdalbuildvrt`` order their inputs).

Examples
--------
>>> import sfclayer
>>> sfclayer.ingest(spark, ["a.tif", "b.tif"], "/tmp/world", tms="WebMercatorQuad")  # doctest: +SKIP
>>> Grid.from_tms("WebMercatorQuad", 2).bounds
(0, 0, 3, 3)
"""

import dataclasses
import functools
import json
import math
import time

import numpy as np

from . import _deploy, _jvm, _progress, raster
from . import layer as _layer
from .errors import InvalidArgument, InvalidInput
from .raster_sources import HADOOP_SCHEMES, Source, _dataset_path, _open_sources, _ship  # noqa: F401 (public here too)

__all__ = ["Grid", "Source", "IngestReport", "ingest", "RESAMPLING", "HADOOP_SCHEMES"]


#: Resampling methods ingest accepts (rasterio.enums.Resampling names).
RESAMPLING = ("nearest", "bilinear", "cubic", "cubic_spline", "lanczos", "average", "mode")

# GDAL's block cache on executors: bounded, so memory does not grow with the sources' size.
_GDAL_CACHEMAX_MB = 64
# GDAL's warp buffer per tile (MB).
_WARP_MEM_MB = 32


@dataclasses.dataclass(frozen=True)
class Grid:
    """A tile grid: ``width`` × ``height`` tiles of ``tile_width`` × ``tile_height`` px over ``extent``.

    Tile ``(col, row)`` covers the box docs/FORMAT.md's georeferencing rule gives for key bounds
    ``(0, 0, width - 1, height - 1)``: row 0 is the top.
    """

    crs: str
    extent: tuple  # xmin, ymin, xmax, ymax of the whole grid
    width: int
    height: int
    tile_width: int
    tile_height: int
    tms: str = None
    zoom: int = None

    @classmethod
    def from_tms(cls, tms, zoom):
        """The grid of a morecantile tile matrix set (name or object) at ``zoom``."""
        t = _tms(tms)
        if not (t.minzoom <= zoom <= t.maxzoom):
            raise InvalidArgument(f"zoom: {zoom} is outside {t.id}'s zooms ({t.minzoom}..{t.maxzoom})")
        m = t.matrix(zoom)
        if getattr(m, "variableMatrixWidths", None):
            raise InvalidArgument(f"tms: {t.id!r} has variable matrix widths at zoom {zoom} (a regular grid)")
        first = t.xy_bounds(0, 0, zoom)
        last = t.xy_bounds(m.matrixWidth - 1, m.matrixHeight - 1, zoom)
        extent = (min(first.left, last.left), min(first.bottom, last.bottom),
                  max(first.right, last.right), max(first.top, last.top))
        return cls(_crs_name(t.rasterio_crs), tuple(float(v) for v in extent), int(m.matrixWidth),
                   int(m.matrixHeight), int(m.tileWidth), int(m.tileHeight), t.id, int(zoom))

    @property
    def bounds(self):
        """The layer's key bounds: ``(0, 0, width - 1, height - 1)``."""
        return (0, 0, self.width - 1, self.height - 1)

    def tile_bounds(self, col, row):
        """``(xmin, ymin, xmax, ymax)`` of tile ``(col, row)`` in the grid's CRS."""
        x0, y0, x1, y1 = self.extent
        tw, th = (x1 - x0) / self.width, (y1 - y0) / self.height
        return (x0 + col * tw, y1 - (row + 1) * th, x0 + (col + 1) * tw, y1 - row * th)

    def tile_transform(self, col, row):
        """The affine transform of tile ``(col, row)``'s pixels."""
        from rasterio.transform import from_bounds

        return from_bounds(*self.tile_bounds(col, row), self.tile_width, self.tile_height)

    def raster_metadata(self, bands, dtype, nodata):
        """The ``raster`` object of the layer's metadata (docs/FORMAT.md, "Raster layers")."""
        return {"tileWidth": self.tile_width, "tileHeight": self.tile_height, "bands": int(bands),
                "dtype": np.dtype(dtype).name, "nodata": _nodata_json(nodata), "tms": self.tms, "zoom": self.zoom}


@dataclasses.dataclass
class IngestReport:
    """What :func:`ingest` did."""

    path: str
    grid: Grid
    sources: list
    candidates: int  # target tiles the footprints touch
    tiles: int  # tiles written (candidates less those without a valid pixel)
    nodata: float  # the layer's nodata value, or None (missing pixels are in the tiles' masks)
    seconds: float


def ingest(spark, sources, path, tms="WebMercatorQuad", zoom=None, resampling="bilinear", tile_size=256,
           nodata=None, mode="errorifexists", plan=None, quiet=None, **write_options):
    """Write raster files as a layer of raster tiles on a standard tile grid.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
    sources : str or list of str
        Raster files or URIs rasterio opens, on the driver and on every executor (local or shared
        paths, ``/vsicurl/``, ``/vsis3/``...), or files on a Hadoop filesystem (``hdfs://``,
        ``viewfs://``...: :data:`HADOOP_SCHEMES`): the driver reads their headers through Spark's
        Hadoop client and each executor a local copy fetched with ``SparkContext.addFile``, so
        executor memory stays bounded as for local files (module :mod:`sfclayer.raster_sources`, "Sources on Hadoop
        filesystems"; Hadoop sources need distinct file names). On Spark Connect, Spark's
        ``binaryFile`` data source reads Hadoop sources and a task holds the whole bytes of those
        its tiles draw from (sources up to some hundred MB). Several sources mosaic into one
        layer: the last wins where they overlap. They must share band count and dtype.
    path : str
        The layer to write (any Hadoop filesystem path).
    tms : str or morecantile.TileMatrixSet or None
        The target tile matrix set (``WebMercatorQuad``, ``WorldCRS84Quad`` or any morecantile
        knows); None keeps the first source's pixel grid (the others must share it).
    zoom : int, optional
        The tile matrix; by default the one closest to the finest source's resolution at its centre.
    resampling : str
        One of :data:`RESAMPLING` (unused with ``tms=None``, which copies pixels).
    tile_size : int
        Tile side in pixels for ``tms=None``; with a tile matrix set it must equal the set's.
    nodata : float, optional
        The value missing pixels hold, recorded as the layer's nodata: by default the first
        source's, else none (missing pixels hold 0, or NaN for floating-point rasters, and the
        tiles that have any carry a mask saying which). It never makes a source's valid pixel
        missing: a valid pixel equal to it stays valid (its tile carries a mask). Tiles without a
        valid pixel are not written.
    mode : {'errorifexists', 'overwrite', 'ignore'}
    plan : callable, optional
        Called with the planned tile count (the target tiles the sources' footprints touch) and the
        grid once they are known, before any Spark job: it may print them, or raise to stop (the CLI
        asks for ``--yes`` above a bound).
    quiet : bool, optional
        Progress (tasks done of total, rate, time left) on stderr: None shows it in a terminal or a
        notebook (``SFCLAYER_QUIET=1`` turns that off), False always, True never (module
        :mod:`sfclayer._progress`).
    **write_options
        Other write options (``key_index``, ``block_size``, ``partitions``, ``compression``...);
        ``bounds``, ``extent``, ``crs`` and ``raster`` come from the grid.

    Returns
    -------
    IngestReport

    Examples
    --------
    >>> r = sfclayer.ingest(spark, "dem.tif", "/tmp/dem", tms="WebMercatorQuad", zoom=12)  # doctest: +SKIP
    >>> r.grid.zoom, r.tiles                                                                 # doctest: +SKIP
    (12, 42)
    """
    t0 = time.perf_counter()
    for fixed in ("bounds", "extent", "crs", "raster"):
        if fixed in write_options:
            raise InvalidArgument(f"write option {fixed}: {write_options[fixed]!r} is set by ingest from the tile grid "
                                  f"(leave it out)")
    if resampling not in RESAMPLING:
        raise InvalidArgument(f"resampling: {resampling!r} is unknown ({', '.join(RESAMPLING)})")
    if zoom is not None and tms is not None:  # at the door: before any source is opened
        from ._args import check_int

        zoom = check_int("zoom", zoom)
        Grid.from_tms(tms, zoom)  # InvalidArgument naming the zoom and the tile matrix set's zooms
    uris = [sources] if isinstance(sources, str) else [str(s) for s in sources]
    if not uris:
        raise InvalidArgument(f"sources: {sources!r} is empty (at least one source raster)")
    _deploy.check_executors(spark, {"rasterio": "spark", "numpy": "spark", "pyarrow": "spark"}, "sfclayer.ingest")
    srcs = _open_sources(spark, uris)
    _ship(spark, srcs)
    first = srcs[0]
    for s in srcs[1:]:
        if (s.bands, s.dtype) != (first.bands, first.dtype):
            raise InvalidInput(f"source {s.uri} has {s.bands} bands of {s.dtype}; {first.uri} has "
                               f"{first.bands} of {first.dtype}: sources of one layer must agree")
    if nodata is None:
        nodata = first.nodata
    nodata = None if nodata is None else float(nodata)

    if tms is None:
        if zoom is not None:
            raise InvalidArgument(f"zoom: {zoom} needs a tile matrix set (give tms, or no zoom: tms=None keeps the "
                                  f"source's own grid)")
        grid, tasks = _native_plan(srcs, int(tile_size))
    else:
        t = _tms(tms)
        z = _zoom_for(t, srcs) if zoom is None else int(zoom)
        grid = Grid.from_tms(t, z)
        if grid.tile_width != tile_size or grid.tile_height != tile_size:
            raise InvalidArgument(f"tile_size: {tile_size} does not fit {grid.tms}'s {grid.tile_width} × "
                                  f"{grid.tile_height} px tiles (leave tile_size at its default)")
        tasks = _tms_plan(t, grid, srcs)

    if plan is not None:
        plan(len(tasks), grid)
    df = _tile_frame(spark, grid, srcs, resampling, first.dtype, nodata, tasks)
    with _progress.track(spark, f"ingest {len(tasks)} tiles", quiet):
        _layer.write(df, path, mode=mode, bounds=grid.bounds, extent=grid.extent, crs=grid.crs,
                     raster=grid.raster_metadata(first.bands, first.dtype, nodata), **write_options)
    # The committed version's count, not the tasks' (a retried task would count twice); on Spark Connect
    # through sfclayer's relation plugin.
    tiles = _layer._tile_count(spark, path, json.loads(_jvm.layer_metadata_json(spark, path, files=0)))
    return IngestReport(path, grid, srcs, len(tasks), tiles, nodata, time.perf_counter() - t0)


# --------------------------------------------------------------------------------------------------
# Driver: grids and the target tiles of the footprints


def _tms(tms):
    import morecantile

    if isinstance(tms, str):
        try:
            return morecantile.tms.get(tms)
        except Exception as e:  # morecantile's InvalidIdentifier
            raise InvalidArgument(f"tms: {tms!r} is an unknown tile matrix set (morecantile knows "
                                  f"{', '.join(morecantile.tms.list())})") from e
    return tms


def _crs_name(crs):
    """``EPSG:3857``, ``OGC:CRS84``, or WKT when the CRS has no authority code."""
    from rasterio.crs import CRS

    crs = CRS.from_user_input(crs)
    auth = crs.to_authority()
    return f"{auth[0]}:{auth[1]}" if auth else crs.to_wkt()


def _nodata_json(nodata):
    if nodata is None:
        return None
    return "NaN" if math.isnan(nodata) else float(nodata)


def _zoom_for(t, srcs):
    """The zoom whose resolution is closest to the finest source's pixel size at its centre."""
    from rasterio.warp import transform

    best = math.inf
    for s in srcs:
        a, _, c, _, e, f = s.transform
        cx, cy = c + a * s.width / 2, f + e * s.height / 2
        xs, ys = transform(s.crs, t.rasterio_crs, [cx, cx + a, cx], [cy, cy, cy + e])
        res = min(math.hypot(xs[1] - xs[0], ys[1] - ys[0]), math.hypot(xs[2] - xs[0], ys[2] - ys[0]))
        best = min(best, res)
    return int(t.zoom_for_res(best))


def _tms_plan(t, grid, srcs):
    """Target tiles ``(col, row, source indexes)`` of the sources' footprints (morecantile's tiles)."""
    from rasterio.warp import transform_bounds

    touched = {}
    for i, s in enumerate(srcs):
        w, so, e, n = transform_bounds(s.crs, "EPSG:4326", *s.bounds, densify_pts=21)
        for tile in t.tiles(w, so, e, n, [grid.zoom]):
            touched.setdefault((tile.x, tile.y), []).append(i)
    return [(c, r, tuple(ix)) for (c, r), ix in sorted(touched.items(), key=lambda kv: (kv[0][1], kv[0][0]))]


def _native_plan(srcs, tile_size):
    """The first source's pixel grid in ``tile_size`` tiles, and the tiles each source covers."""
    from rasterio.crs import CRS

    if tile_size < 1:
        raise InvalidArgument(f"tile_size: {tile_size} is not positive (pixels > 0)")
    first = srcs[0]
    a, _, c0, _, e, f0 = first.transform
    crs0 = CRS.from_wkt(first.crs)
    offsets = []
    for s in srcs:
        sa, _, sc, _, se, sf = s.transform
        dc, dr = (sc - c0) / a, (sf - f0) / e
        if CRS.from_wkt(s.crs) != crs0 or not (math.isclose(sa, a) and math.isclose(se, e)) \
                or abs(dc - round(dc)) > 1e-6 or abs(dr - round(dr)) > 1e-6:
            raise InvalidInput(f"with tms=None every source must share {first.uri}'s CRS and pixel grid; "
                               f"{s.uri} does not (give a tile matrix set to reproject)")
        offsets.append((round(dc), round(dr)))
    # The grid starts at the top-left pixel of all sources together.
    oc = min(dc for dc, _ in offsets)
    orow = min(dr for _, dr in offsets)
    width_px = max(dc + s.width for (dc, _), s in zip(offsets, srcs)) - oc
    height_px = max(dr + s.height for (_, dr), s in zip(offsets, srcs)) - orow
    ncols, nrows = math.ceil(width_px / tile_size), math.ceil(height_px / tile_size)
    x0, y1 = c0 + oc * a, f0 + orow * e
    extent = (x0, y1 + nrows * tile_size * e, x0 + ncols * tile_size * a, y1)
    grid = Grid(_crs_name(crs0), extent, ncols, nrows, tile_size, tile_size)
    touched = {}
    for i, ((dc, dr), s) in enumerate(zip(offsets, srcs)):
        c_lo, r_lo = (dc - oc) // tile_size, (dr - orow) // tile_size
        c_hi, r_hi = (dc - oc + s.width - 1) // tile_size, (dr - orow + s.height - 1) // tile_size
        for r in range(r_lo, r_hi + 1):
            for c in range(c_lo, c_hi + 1):
                touched.setdefault((c, r), []).append(i)
    return grid, [(c, r, tuple(ix)) for (c, r), ix in sorted(touched.items(), key=lambda kv: (kv[0][1], kv[0][0]))]


def _tile_frame(spark, grid, srcs, resampling, dtype, nodata, tasks):
    """The rendered tiles of ``tasks`` as a DataFrame of the raster schema, in slices of consecutive
    tiles, a task each.

    Tiles are rendered one at a time (memory per task does not grow with the slice), so slices are
    large enough to amortise task overhead and many enough to keep every core busy. A slice's tiles
    are neighbours (the plan is in key order), so its task reuses the sources it opened.

    Spark Connect has no RDDs: there the slices are ``spark.range``'s partitions drawn by
    ``mapInArrow`` (the plan travels with the drawing function). Classic sessions keep the RDD of
    tasks: a Python worker that imports pyarrow and pandas for Arrow takes ~300 MB more address
    space (measured: 370 MB against 65 MB), which ``spark.executor.pyspark.memory`` counts, and the
    Arrow path failed tests/test_ingest_memory.py's 600 MB share with 16 MiB tiles.
    """
    slices = max(1, min(len(tasks), max(2 * _cores(spark), len(tasks) // 256)))
    no_rdds = not _jvm.transport(spark).driver_jvm
    if no_rdds and any(s.carried for s in srcs):
        return _carried_tile_frame(spark, grid, srcs, resampling, dtype, nodata, tasks, slices)
    if no_rdds:
        render = functools.partial(_render_batches, grid, srcs, resampling, dtype, nodata, tasks)
        return spark.range(0, len(tasks), 1, slices).mapInArrow(render, raster.spark_schema())
    render = functools.partial(_render_partition, grid, srcs, resampling, dtype, nodata)
    rdd = spark.sparkContext.parallelize(tasks, slices).mapPartitions(render)
    return spark.createDataFrame(rdd, raster.spark_schema(), verifySchema=False)


def _carried_tile_frame(spark, grid, srcs, resampling, dtype, nodata, tasks, slices):
    """:func:`_tile_frame` on Spark Connect with Hadoop sources (``Source.carried``): the slices are
    groups of a DataFrame ``(slice, src, content)`` drawn by ``applyInArrow``, each holding the bytes
    of the Hadoop sources its tiles draw from (a row without any for a slice that needs none), read by
    Spark's binaryFile data source (:mod:`sfclayer.raster_sources`)."""
    from .raster_sources import _contents

    ends = [len(tasks) * k // slices for k in range(slices + 1)]
    pairs = []
    for k in range(slices):
        needs = sorted({i for _, _, ix in tasks[ends[k]:ends[k + 1]] for i in ix if srcs[i].carried})
        pairs += [(k, i) for i in needs] or [(k, -1)]
    contents = _contents(spark, [(i, s.uri) for i, s in enumerate(srcs) if s.carried])
    rows = spark.createDataFrame(pairs, "slice int, src int").join(contents, "src", "left")
    render = functools.partial(_render_slice, grid, srcs, resampling, dtype, nodata, tasks, ends)
    return rows.groupBy("slice").applyInArrow(render, raster.spark_schema())


def _render_slice(grid, srcs, resampling, dtype, nodata, tasks, ends, table):
    """``applyInArrow``'s function: the tiles of one slice, its Hadoop sources opened from the bytes in
    ``table`` (``rasterio.io.MemoryFile``), the others by path."""
    from rasterio.io import MemoryFile

    from ._tile_batches import tile_table

    k = table.column("slice")[0].as_py()
    contents = {}
    for src, content in zip(table.column("src").to_pylist(), table.column("content").to_pylist()):
        if src >= 0:
            if len(content) != srcs[src].length:
                raise InvalidInput(f"{srcs[src].uri} has {len(content)} bytes and had {srcs[src].length} when "
                                   "ingest read its header: it changed during the ingest")
            contents[src] = content
    files = []

    def opener(i):
        if i not in contents:
            import rasterio

            return rasterio.open(_dataset_path(srcs[i]))
        files.append(MemoryFile(contents[i]))
        return files[-1].open()

    try:
        return tile_table(list(_render_partition(grid, srcs, resampling, dtype, nodata, tasks[ends[k]:ends[k + 1]],
                                                 opener)))
    finally:
        for f in files:
            f.close()


def _cores(spark):
    """The cores Spark runs tasks on: the classic context's default parallelism; on Spark Connect the
    server's ``spark.default.parallelism`` or ``local[N]``, else 8 (a Connect client cannot ask the cluster)."""
    return _jvm.transport(spark).cores()


# --------------------------------------------------------------------------------------------------
# Executors: one target tile at a time


def _render_batches(grid, srcs, resampling, dtype, nodata, tasks, batches):
    """``mapInArrow``'s function: the tiles of a slice (``batches`` of positions in ``tasks``) as Arrow
    record batches."""
    from ._tile_batches import tile_batches

    mine = (tasks[i] for b in batches for i in b.column("id").to_pylist())
    return tile_batches(_render_partition(grid, srcs, resampling, dtype, nodata, mine))


def _render_partition(grid, srcs, resampling, dtype, nodata, tasks, opener=None):
    """The tiles of ``tasks``, one at a time, each source opened once (by path, or by ``opener(i)``)."""
    import rasterio

    opener = opener or (lambda i: rasterio.open(_dataset_path(srcs[i])))
    fill = _fill(dtype, nodata)
    open_sets = {}
    try:
        with rasterio.Env(GDAL_CACHEMAX=_GDAL_CACHEMAX_MB):
            for col, row, ix in tasks:
                tile = np.full((srcs[0].bands, grid.tile_height, grid.tile_width), fill, dtype=dtype)
                valid = np.zeros((grid.tile_height, grid.tile_width), dtype=bool)
                for i in ix:
                    ds = open_sets.get(i)
                    if ds is None:
                        ds = open_sets[i] = opener(i)
                    drawn = render_tile(ds, srcs[i], grid, col, row, resampling, fill)
                    if drawn is not None:
                        part, part_valid = drawn
                        tile[:, part_valid] = part[:, part_valid]
                        valid |= part_valid
                if not valid.any():
                    continue
                v = raster.from_numpy(tile, nodata, valid=valid)
                yield (col, row, *(v[k] for k in raster.COLUMNS))
    finally:
        for ds in open_sets.values():
            ds.close()


def _fill(dtype, nodata):
    """What missing pixels hold: the layer's nodata, else NaN (floats) or 0."""
    if nodata is not None:
        return nodata
    return float("nan") if np.dtype(dtype).kind == "f" else 0


def _not_nan(a):
    """(h, w): False where every band is NaN (never valid, whatever GDAL's mask says)."""
    return ~np.isnan(a).all(axis=0) if a.dtype.kind == "f" else np.ones(a.shape[1:], dtype=bool)


def _alpha_band(ds):
    """The 1-based index of ``ds``'s alpha band, or None."""
    from rasterio.enums import ColorInterp

    for i, ci in enumerate(ds.colorinterp, start=1):
        if ci == ColorInterp.alpha:
            return i
    return None


def render_tile(ds, src, grid, col, row, resampling, fill):
    """Tile ``(col, row)`` of ``grid`` drawn from the open dataset ``ds`` alone, or None if it misses it.

    Reads only the window of ``ds`` the tile needs (padded for the resampling kernel).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray) or None
        The pixels ``(bands, h, w)`` (``fill`` where missing) and which of them hold data
        ``(h, w)``: GDAL's validity of the source (its nodata, alpha band or per-dataset mask),
        carried onto the tile by the warper's alpha band. None when the source has nothing there.
    """
    from rasterio.enums import Resampling
    from rasterio.warp import reproject
    from rasterio.windows import Window

    shape = (src.bands, grid.tile_height, grid.tile_width)
    if grid.tms is None:  # the source's own grid: a pixel copy
        a, _, c, _, e, f = src.transform
        x0, _, _, y1 = grid.tile_bounds(col, row)
        c0, r0 = round((x0 - c) / a), round((y1 - f) / e)
        ic0, ir0 = max(c0, 0), max(r0, 0)
        ic1, ir1 = min(c0 + grid.tile_width, src.width), min(r0 + grid.tile_height, src.height)
        if ic0 >= ic1 or ir0 >= ir1:
            return None
        window = Window(ic0, ir0, ic1 - ic0, ir1 - ir0)
        data = ds.read(window=window)
        data_valid = (ds.dataset_mask(window=window) != 0) & _not_nan(data)
        out = np.full(shape, fill, dtype=data.dtype)
        valid = np.zeros(shape[1:], dtype=bool)
        sl = (slice(ir0 - r0, ir1 - r0), slice(ic0 - c0, ic1 - c0))
        out[(slice(None),) + sl] = np.where(data_valid, data, out[(slice(None),) + sl])
        valid[sl] = data_valid
        return out, valid
    # GDAL's warper reads the source window the tile needs, padded for the kernel, itself: from
    # the dataset rather than from an array we cut, so the kernel scale it derives from that
    # window is the one a warp of the whole source would use (identical pixels). Its alpha band
    # says which target pixels got data: the source's nodata, per-dataset mask and (given as
    # src_alpha) alpha band taken into account, and nothing outside the footprint.
    from rasterio import band

    alpha = _alpha_band(ds)
    bands = list(range(1, src.bands + 1))
    out = np.zeros((src.bands if alpha else src.bands + 1,) + shape[1:], dtype=np.dtype(src.dtype))
    kw = {"src_alpha": alpha, "dst_alpha": alpha} if alpha else {"dst_alpha": src.bands + 1}
    if src.nodata is not None:
        kw["src_nodata"] = src.nodata
    reproject(band(ds, bands), out, dst_transform=grid.tile_transform(col, row), dst_crs=grid.crs,
              resampling=Resampling[resampling], warp_mem_limit=_WARP_MEM_MB, **kw)
    data = out[:src.bands]
    valid = (out[(alpha or src.bands + 1) - 1] != 0) & _not_nan(data)
    if not valid.any():
        return None
    data[:, ~valid] = fill
    return data, valid
