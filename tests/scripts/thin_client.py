"""A thin Spark Connect client of the test run's Connect server (tests/test_connect.py's thin-client test).

    python thin_client.py URL DIR

With no JVM of its own (the test runs it with JAVA_HOME pointing nowhere, so a py4j gateway could not
even start), it writes, reads, opens, looks up, queries, lists history, vacuums and verifies a layer
under DIR through ``URL`` (``sc://...``), and prints its findings as one JSON line.
"""

import datetime as dt
import json
import sys


def main():
    url, root = sys.argv[1], sys.argv[2]
    try:
        from pyspark import SparkContext
    except ImportError:  # pyspark-client (sfclayer[connect]) has no classic SparkContext at all
        SparkContext = None
    from pyspark.sql import SparkSession

    import sfclayer

    spark = sfclayer.configure(SparkSession.builder.remote(url)).getOrCreate()
    path = f"{root}/thin"
    df = spark.range(64).selectExpr("int(id % 8) AS col", "int(id DIV 8) AS row", "int(id) * 3 AS value")
    sfclayer.write(df, path, bounds=(0, 0, 7, 7), extent=(0, 0, 8, 8))
    sfclayer.write(df.where("col < 2"), path, mode="append", on_existing="replace")
    out = {"read": sfclayer.read(spark, path, keys=(0, 0, 3, 3)).count()}
    with sfclayer.open(spark, path) as layer:
        out["get"] = layer.get(2, 1)["value"]
        out["get_many"] = [t and t["value"] for t in layer.get_many([(1, 1), (9, 9)])]
        out["query"] = sorted(t["value"] for t in layer.query(keys=(0, 0, 1, 1)))
        out["count"] = layer.count(bbox=(0.5, 0.5, 2.5, 2.5))
        try:
            layer.get(9, 9)
        except sfclayer.KeyNotFound as e:
            out["missing"] = type(e).__name__
    out["history"] = [v.operation for v in sfclayer.history(spark, path)]
    report = sfclayer.vacuum(spark, path, retain=dt.timedelta(0), enforce_retention=False)
    out["vacuumed"] = report["versionsRemoved"]
    out["verified"] = sfclayer.verify(spark, path).clean
    out["gateway"] = SparkContext is not None and (SparkContext._gateway is not None
                                                   or SparkContext._active_spark_context is not None)
    out["connect"] = type(spark).__module__
    spark.stop()
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
