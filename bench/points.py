"""Study ``lookup``: point look-ups (cold, warm, over the look-up socket, through py4j, through
Spark against both Parquet layouts) and batches (``get_many``). The measurements are in
lookup_bench.py; this module runs them on each size's layers.

Alone: ``make bench STUDY=lookup`` (writes the layers it reads).
"""

import lookup_bench
from common import scan_metrics

import sfclayer

BATCHES = [
    ("batch_cold", "get_many over the socket, undecoded: random keys, fresh Layer"),
    ("batch_warm", "get_many over the socket, undecoded: random keys, files open"),
    ("batch_hood", "get_many over the socket, undecoded: the warm neighbourhood"),
    ("get_many_python", "Layer.get_many (decoded): random keys, files open"),
    ("batch_py4j", "ValueReader.getMany via py4j, undecoded: random keys, files open"),
]
# Point look-up methods, in display order: (key in the report, label).
POINT_METHODS = [
    ("warm_jvm", "sfclayer ValueReader.get inside the JVM, warm (neighbourhood)"),
    ("warm_socket", "sfclayer raw get (look-up socket), warm (neighbourhood)"),
    ("warm_python", "sfclayer Layer.get, warm (neighbourhood)"),
    ("warm_random_socket", "sfclayer raw get (look-up socket), warm (random keys, files open)"),
    ("warm_py4j", "sfclayer ValueReader.get via py4j, warm (neighbourhood)"),
    ("cold_jvm", "sfclayer ValueReader.get inside the JVM, cold (fresh Layer)"),
    ("cold_socket", "sfclayer raw get (look-up socket), cold (fresh Layer)"),
    ("cold_python", "sfclayer Layer.get, cold (fresh Layer)"),
    ("open", "sfclayer.open (metadata, listing, look-up socket)"),
    ("spark_sfclayer", "sfclayer through Spark (1-tile key box)"),
    ("spark_parquet_zsorted", "Parquet Z-sorted through Spark (col = c AND row = r)"),
    ("spark_parquet_plain", "Parquet plain through Spark (col = c AND row = r)"),
    ("socket_round_trip", "look-up socket round trip (key outside the bounds), for reference"),
    ("py4j_round_trip", "py4j round trip (trivial JVM call), for reference"),
]
SHORT_POINT_LABELS = {
    "warm_jvm": "JVM get, warm nbhd",
    "cold_jvm": "JVM get, cold",
    "warm_socket": "raw get, warm nbhd",
    "warm_python": "Layer.get, warm nbhd",
    "warm_random_socket": "raw get, warm random",
    "warm_py4j": "get via py4j, warm nbhd",
    "cold_socket": "raw get, cold",
    "cold_python": "Layer.get, cold",
    "open": "sfclayer.open",
    "spark_sfclayer": "sfclayer via Spark",
    "spark_parquet_zsorted": "Parquet Z-sorted via Spark",
    "spark_parquet_plain": "Parquet plain via Spark",
    "socket_round_trip": "socket round trip",
    "py4j_round_trip": "py4j round trip",
}


def per_size(ctx, size):
    from sfclayer import curves

    spark, cfg, rng, log = ctx.spark, ctx.cfg, ctx.rng, ctx.log
    paths, md = size.layers()
    entry, side, n = size.entry, size.side, size.n
    ki = curves.key_index_from_json(md["keyIndex"])

    # Point look-ups.
    lk = lookup_bench.lookups(spark, paths["sfclayer"], side, md["fileCount"], cfg, rng)
    keys = lookup_bench.random_keys(rng, side, cfg.point_queries)

    def point(make):
        def run(c, r):
            df_ = make(c, r).select("col", "row", "values")
            rows = df_.collect()
            return len(rows), scan_metrics(df_)
        return run

    from pyspark.sql import functions as F

    lk["spark_sfclayer"] = lookup_bench.spark_point_queries(
        spark, point(lambda c, r: sfclayer.read(spark, paths["sfclayer"], keys=(c, r, c, r))), keys)
    lk["spark_parquet_zsorted"] = lookup_bench.spark_point_queries(
        spark, point(lambda c, r: spark.read.parquet(paths["parquet_zsorted"])
                     .where((F.col("z") == ki.index(c, r)) & (F.col("col") == c) & (F.col("row") == r))), keys)
    lk["spark_parquet_plain"] = lookup_bench.spark_point_queries(
        spark, point(lambda c, r: spark.read.parquet(paths["parquet_plain"])
                     .where((F.col("col") == c) & (F.col("row") == r))), keys)
    entry["lookups"] = lk
    log(f"[{n} tiles] look-ups: warm Layer.get p50 {lk['warm_python']['p50_ms']:.3f} ms, cold "
        f"{lk['cold_python']['p50_ms']:.2f} ms, Parquet Z-sorted {lk['spark_parquet_zsorted']['p50_ms']:.0f} ms")
