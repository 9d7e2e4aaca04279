"""Smoke test of an installed sfclayer, run by the packaging tests in fresh virtualenvs outside the
repository (tests/test_packaging.py): write, read, get, ingest, serve one tile (and with ``--zonal``,
zonal statistics with string zone ids). Prints one JSON line of findings; the tests judge them.

    python packaging_smoke.py WORK_DIR [--zonal]
"""

import json
import sys
import urllib.request

import numpy as np

import sfclayer


def main(tmp, zonal=False):
    import pyspark
    import rasterio
    from rasterio.transform import from_origin

    out = {"sfclayer": sfclayer.__file__, "version": sfclayer.__version__, "jar": sfclayer.jar_path(),
           "pyspark": pyspark.__version__, "numpy": np.__version__}
    spark = sfclayer.session("local[2]", spark_ui_enabled="false", spark_sql_shuffle_partitions="2")
    spark.sparkContext.setLogLevel("ERROR")
    path = f"{tmp}/layer"
    df = spark.range(64).selectExpr("int(id % 8) AS col", "int(id DIV 8) AS row", "id AS value")
    sfclayer.write(df, path, bounds=(0, 0, 7, 7), extent=(0, 0, 8, 8))
    out["read"] = sorted(r["value"] for r in sfclayer.read(spark, path, keys=(2, 2, 4, 3)).collect())
    with sfclayer.open(spark, path) as layer:
        out["get"] = layer.get(3, 2)["value"]
    a = (np.arange(3 * 100 * 120) % 251).astype("uint8").reshape(3, 100, 120)
    tif = f"{tmp}/rgb.tif"
    with rasterio.open(tif, "w", driver="GTiff", width=120, height=100, count=3, dtype="uint8", crs="EPSG:4326",
                       transform=from_origin(5.0, 46.0, 0.01, 0.01)) as d:
        d.write(a)
    grid = sfclayer.ingest(spark, [tif], f"{tmp}/rgb", tms=None, tile_size=32).grid
    tile = sfclayer.read(spark, f"{tmp}/rgb", keys=(0, 0, 0, 0)).collect()[0]
    out["ingested"] = sfclayer.read(spark, f"{tmp}/rgb").count()
    out["tile_equal"] = bool((sfclayer.raster.to_numpy(tile.asDict()) == a[:, :32, :32]).all())
    with sfclayer.serve(spark, [f"rgb={tmp}/rgb"], port=0, log=lambda line: None, background=True) as server:
        z = grid.zoom if getattr(grid, "zoom", None) is not None else 0
        with sfclayer.open(spark, f"{tmp}/rgb") as layer:
            first = next(iter(layer.query(keys=(0, 0, 0, 0))))
        url = f"{server.url}layers/rgb/tiles/{z}/{first['col']}/{first['row']}.png"
        try:
            with urllib.request.urlopen(url, timeout=60) as r:
                out["tile_png"] = r.read()[:8] == b"\x89PNG\r\n\x1a\n"
        except Exception as e:  # the findings say what answered
            out["tile_png"] = f"{url}: {e}"
    if zonal:
        import pandas

        out["pandas"] = pandas.__version__
        zones = spark.createDataFrame([("in", "POLYGON ((5.1 45.2, 5.5 45.2, 5.5 45.9, 5.1 45.9, 5.1 45.2))"),
                                       ("off", "POLYGON ((50 10, 51 10, 51 11, 50 10))")], "zone string, wkt string")
        got = {r["zone"]: (r["band"], r["count"]) for r in sfclayer.zonal_stats(
            spark, f"{tmp}/rgb", zones, stats=["count"], id_column="zone", geometry_column="wkt").collect()
            if r["band"] == 1}
        out["zonal"] = {k: v[1] for k, v in got.items()}
    spark.stop()
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1], "--zonal" in sys.argv[2:])
