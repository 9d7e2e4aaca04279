"""A spark-submit job for integration/test_packaging_cluster.py: the connector from ``--packages``, the
package shipped by ``sfclayer.configure`` to workers whose Python lacks sfclayer. Writes and reads a
layer, ingests a GeoTIFF (Python on the executors), and prints one JSON line of findings.

    spark-submit --packages io.sfclayer:sfclayer-spark_2.13:<v> ... packaging_job.py WORK_DIR
"""

import json
import sys

import numpy as np


def main(work):
    import rasterio
    from pyspark.sql import SparkSession
    from rasterio.transform import from_origin

    import sfclayer
    from sfclayer import _jvm

    spark = sfclayer.configure(SparkSession.builder.appName("sfclayer-packaging")).getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    out = {"connector": _jvm.connector_version(spark.sparkContext._jvm),
           "spark.jars": spark.conf.get("spark.jars", ""), "master": spark.sparkContext.master}
    df = spark.range(256).selectExpr("int(id % 16) AS col", "int(id DIV 16) AS row", "id AS value")
    sfclayer.write(df, f"file://{work}/layer", bounds=(0, 0, 15, 15), extent=(0, 0, 16, 16))
    out["count"] = sfclayer.read(spark, f"file://{work}/layer").count()
    out["bbox"] = sorted(r["value"] for r in sfclayer.read(spark, f"file://{work}/layer", bbox=(10.5, 10.5, 12.5, 12.5))
                         .collect())

    def where(_):
        import os
        import sys

        try:
            import sfclayer as mine
            found = mine.__file__
        except ImportError as e:
            found = f"ImportError: {e}"
        return [(sys.executable, found, os.getpid())]

    out["executors"] = sorted(set(spark.sparkContext.parallelize(range(4), 4).mapPartitions(where).map(
        lambda t: (t[0], t[1])).collect()))
    from sfclayer import _deploy
    from sfclayer.errors import SfcLayerError

    try:  # executors whose Python lacks a module a feature needs: refused before the feature's job
        _deploy.check_executors(spark, {"sfclayer_absent_module": "geo"}, "a feature")
        out["refused"] = None
    except SfcLayerError as e:
        out["refused"] = str(e)
    a = (np.arange(60 * 70) % 200).astype("uint8").reshape(1, 60, 70)
    tif = f"{work}/dem.tif"
    with rasterio.open(tif, "w", driver="GTiff", width=70, height=60, count=1, dtype="uint8", crs="EPSG:4326",
                       transform=from_origin(5.0, 46.0, 0.01, 0.01)) as d:
        d.write(a)
    sfclayer.ingest(spark, [tif], f"file://{work}/dem", tms=None, tile_size=32)
    tile = sfclayer.read(spark, f"file://{work}/dem", keys=(1, 0, 1, 0)).collect()[0]
    out["ingested"] = sfclayer.read(spark, f"file://{work}/dem").count()
    out["tile_equal"] = bool((sfclayer.raster.to_numpy(tile.asDict())[0] == a[0, :32, 32:64]).all())
    spark.stop()
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
