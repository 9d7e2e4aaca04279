"""Zonal statistics and geometry reads (issue 24), standing alone (not a study of run.py):

    .venv/bin/python bench/zonal.py [--size 4096] [--zones 1000,10000] [--out /tmp/bench-zonal]

Writes a synthetic float32 raster of ``size × size`` pixels (smooth terrain, a nodata corner) as a
GeoTIFF, ingests it on its own grid in 256 px tiles (Spark local[2]), then times, for each zone count,
``sfclayer.zonal_stats(...).collect()`` against rasterstats (and exactextract, when installed) on the
GeoTIFF in one process, checking that their counts and means agree; and a thin diagonal polygon's read
against its bounding box's (records read, seconds). Prints a Markdown table.
"""

import argparse
import os
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))


def terrain(size, seed=1):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:size, 0:size] / size
    a = (1000 + 400 * np.sin(6 * x) * np.cos(4 * y) + 50 * rng.standard_normal((size, size))).astype("float32")
    a[(x + y) > 1.8] = -9999.0
    return a


def random_zones(n, bounds, seed=2):
    import shapely

    rng = np.random.default_rng(seed)
    w, s, e, nn = bounds
    cx = rng.uniform(w, e, n)
    cy = rng.uniform(s, nn, n)
    r = rng.uniform(0.002, 0.02, n) * (e - w)
    return [shapely.Point(x, y).buffer(rr, quad_segs=4) for x, y, rr in zip(cx, cy, r)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--zones", default="1000,10000")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    import rasterstats
    import shapely

    import sfclayer
    from raster_sources import write_geotiff

    out = args.out or tempfile.mkdtemp(prefix="bench-zonal-")
    os.makedirs(out, exist_ok=True)
    bounds = (0.0, 0.0, 10.0, 10.0)
    tif = write_geotiff(os.path.join(out, "terrain.tif"), terrain(args.size)[np.newaxis], bounds, nodata=-9999.0)
    spark = sfclayer.session("local[2]", spark_sql_shuffle_partitions=8)
    spark.sparkContext.setLogLevel("ERROR")
    layer = os.path.join(out, "layer")
    t = time.perf_counter()
    sfclayer.ingest(spark, [tif], layer, tms=None, tile_size=256, mode="overwrite")
    print(f"ingest {args.size}² px: {time.perf_counter() - t:.1f} s")
    rows = ["| zones | sfclayer local[2] (s) | rasterstats (s) | exactextract (s) | counts equal | max mean diff |",
            "|---|---|---|---|---|---|"]
    for n in (int(v) for v in args.zones.split(",")):
        zones = random_zones(n, bounds)
        t = time.perf_counter()
        got = {r["id"]: r for r in sfclayer.zonal_stats(spark, layer, zones, stats=("count", "mean")).collect()}
        t_spark = time.perf_counter() - t
        t = time.perf_counter()
        want = rasterstats.zonal_stats(zones, tif, stats=["count", "mean"], nodata=-9999.0)
        t_rs = time.perf_counter() - t
        t_ee = "not installed"
        try:
            from exactextract import exact_extract

            import geopandas

            import rasterio

            with rasterio.open(tif) as src:  # exactextract compares the zones' CRS with the raster's
                crs = src.crs
            t = time.perf_counter()
            exact_extract(tif, geopandas.GeoDataFrame(geometry=zones, crs=crs), ["count", "mean"], output="pandas")
            t_ee = f"{time.perf_counter() - t:.2f}"
        except ImportError:
            pass
        same = all(got[i]["count"] == w["count"] for i, w in enumerate(want))
        diff = max((abs(got[i]["mean"] - w["mean"]) for i, w in enumerate(want) if w["count"]), default=0.0)
        rows.append(f"| {n} | {t_spark:.2f} | {t_rs:.2f} | {t_ee} | {same} | {diff:.2g} |")
    thin = shapely.LineString([(0.1, 0.1), (9.9, 9.9)]).buffer(0.005)
    for label, kw in (("thin diagonal polygon", {"geometry": thin}), ("its bbox", {"bbox": thin.bounds})):
        df = sfclayer.read(spark, layer, **kw).select("col", "row")
        t = time.perf_counter()
        n = len(df.collect())
        m = dict(spark._jvm.io.sfclayer.spark.SfcLayerMetrics.of(df._jdf))
        rows.append(f"| {label} | {time.perf_counter() - t:.2f} s | tiles {n} | records read {m.get('recordsRead')} | "
                    f"files read {m.get('filesRead')} | |")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
