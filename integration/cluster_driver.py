"""Driver for integration/test_standalone_cluster.py: runs sfclayer against a standalone master, with
the layer on HDFS, in a process of its own (the suite's shared local session stays untouched).

    python integration/cluster_driver.py MASTER_URL HDFS_DIR CONF_JSON

CONF_JSON is extra Spark settings (the HDFS client's). Prints one JSON line of findings, last, and
leaves judging them to the test.
"""

import json
import sys
import time


def main(master, hdfs_dir, extra_conf):
    import sfclayer

    conf = {
        "spark.ui.enabled": "false",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.memory": "512m",
        "spark.executor.memory": "512m",
        "spark.executor.cores": "1",
        "spark.cores.max": "2",
        "spark.sql.shuffle.partitions": "4",
        "spark.task.maxFailures": "1",
        "spark.ui.showConsoleProgress": "false",
    }
    conf.update(extra_conf)
    spark = sfclayer.session(master, app_name="sfclayer-standalone-test", **conf)
    spark.sparkContext.setLogLevel("WARN")
    out = {}
    try:
        sc = spark.sparkContext
        out["master"] = sc.master
        # wait for both workers' executors (block managers: the driver's and one per executor)
        deadline = time.monotonic() + 120
        while sc._jsc.sc().getExecutorMemoryStatus().size() < 3 and time.monotonic() < deadline:
            time.sleep(0.5)
        out["block_managers"] = sc._jsc.sc().getExecutorMemoryStatus().size()

        path = hdfs_dir + "/layer"
        tiles = spark.range(0, 32 * 32).selectExpr(
            "CAST(id % 32 AS INT) AS col", "CAST(id DIV 32 AS INT) AS row", "CAST(id AS INT) AS v",
            "CAST(id * 0.5 AS DOUBLE) AS w")
        sfclayer.write(tiles, path, bounds=(0, 0, 31, 31), extent=(0, 0, 32, 32), block_size="64k",
                       partitions=4)
        # which executors wrote: tasks ran on both workers
        out["count"] = sfclayer.read(spark, path).count()
        box = sfclayer.read(spark, path, bbox=(3.5, 20.5, 7.5, 24.5))  # cols 3..7, rows 7..11
        out["bbox"] = sorted([r.col, r.row, r.v] for r in box.select("col", "row", "v").collect())

        spark.sql(f"CREATE TABLE cluster_layer USING sfclayer LOCATION '{path}'")
        out["sql"] = spark.sql("SELECT count(*) AS n, sum(v) AS s FROM cluster_layer "
                               "WHERE col BETWEEN 10 AND 12 AND row < 4").first().asDict()

        with sfclayer.open(spark, path) as layer:
            out["lookup"] = layer.get(17, 9)
            out["lookup_many"] = layer.get_many([(0, 0), (31, 31)])
        out["files_before_failed_write"] = sorted(
            str(f.getPath().getName()) for f in _fs(spark, path).listStatus(_jpath(spark, path)))

        dup = tiles.union(tiles.where("col = 3 AND row = 3"))
        try:
            sfclayer.write(dup, path, mode="overwrite", bounds=(0, 0, 31, 31), extent=(0, 0, 32, 32), partitions=4)
            out["failed_write"] = "no error"
        except sfclayer.SfcLayerError as e:
            out["failed_write"] = f"{type(e).__name__}: {e}"
        out["files_after_failed_write"] = sorted(
            str(f.getPath().getName()) for f in _fs(spark, path).listStatus(_jpath(spark, path)))
        out["count_after_failed_write"] = sfclayer.read(spark, path).count()
        with sfclayer.open(spark, path) as layer:
            out["lookup_after_failed_write"] = layer.get(3, 3)

        # an append (upsert): replaces one row of tiles, adds nothing outside the bounds' grid
        update = tiles.where("row = 31").selectExpr("col", "row", "v + 100000 AS v", "w")
        sfclayer.write(update, path, mode="append", partitions=2)
        out["count_after_append"] = sfclayer.read(spark, path).count()
        out["row31_after_append"] = sorted(r.v for r in sfclayer.read(spark, path, keys=(0, 31, 31, 31)).collect())
        with sfclayer.open(spark, path) as layer:
            out["lookup_after_append"] = [layer.get(4, 31), layer.get(4, 30)]
    finally:
        spark.stop()
    print(json.dumps(out, default=str), flush=True)


def _jpath(spark, path):
    return spark.sparkContext._jvm.org.apache.hadoop.fs.Path(path)


def _fs(spark, path):
    return _jpath(spark, path).getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3]))
