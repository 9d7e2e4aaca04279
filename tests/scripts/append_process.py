"""One writer process for the two-process tests (tests/test_concurrency.py).

    python append_process.py PATH COL0 ROW0 SIDE MULT BARRIER_DIR NAME [FAIL_PARTITION]

Starts its own Spark application (local[2,2]: a failed task is retried once), waits until every
process named in BARRIER_DIR/expect is ready, then appends a SIDE x SIDE box of tiles at
(COL0, ROW0) with v = col * MULT + row, holding its write back 3 s (a test filesystem from the
test jar, $SFCLAYER_TEST_JAR) so the processes' read-to-commit windows overlap. Prints one JSON line: {"ok": true, "failedTasks": N} or {"ok": false, "error": class, "message"}.
With FAIL_PARTITION, the first attempt of that write task fails after writing its files.
"""

import json
import os
import sys
import time


def main():
    path, col0, row0, side, mult, barrier, name = sys.argv[1:8]
    fail = sys.argv[8] if len(sys.argv) > 8 else None
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    import sfclayer
    from pyspark.sql import functions as F

    spark = sfclayer.session("local[2,2]", app_name=f"sfclayer-writer-{name}", **{
        "spark.jars": os.environ["SFCLAYER_TEST_JAR"],  # its fault-injecting filesystem
        "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
        "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
        "spark.sql.shuffle.partitions": "4"})
    spark.sparkContext.setLogLevel("ERROR")
    hconf = spark.sparkContext._jsc.hadoopConfiguration()
    # the test filesystem of the test jar (io.sfclayer.testing.Faults) injects the faults
    hconf.set("fs.file.impl", "io.sfclayer.testing.FaultLocalFileSystem")
    hconf.set("fs.file.impl.disable.cache", "true")
    hconf.set("sfclayer.test.stallFirstFileMillis", "3000")
    if fail is not None:
        hconf.set("sfclayer.test.failFirstAttemptOfPartition", fail)
    col0, row0, side, mult = int(col0), int(row0), int(side), int(mult)
    df = (spark.range(side * side)
          .select((F.col("id") % side + col0).cast("int").alias("col"),
                  (F.floor(F.col("id") / side) + row0).cast("int").alias("row"))
          .withColumn("v", F.col("col") * mult + F.col("row"))
          .withColumn("payload", F.expr("unhex(repeat(lpad(hex(v), 8, '0'), 4))")))
    open(os.path.join(barrier, name), "w").close()
    expected = open(os.path.join(barrier, "expect")).read().split()
    deadline = time.time() + 120
    while not all(os.path.exists(os.path.join(barrier, n)) for n in expected) and time.time() < deadline:
        time.sleep(0.05)
    try:
        # through the shuffle: its write tasks are what the fault fails and Spark retries (a small
        # append would otherwise merge on the driver)
        sfclayer.write(df, path, mode="append", partitions=4, small_append_bytes=0)
        tracker = spark.sparkContext.statusTracker()
        failed = 0
        for job in tracker.getJobIdsForGroup(None):
            for stage in tracker.getJobInfo(job).stageIds:
                info = tracker.getStageInfo(stage)
                failed += info.numFailedTasks if info else 0
        print(json.dumps({"ok": True, "failedTasks": failed}))
    except sfclayer.SfcLayerError as e:
        print(json.dumps({"ok": False, "error": type(e).__name__, "message": str(e)}))
    spark.stop()


if __name__ == "__main__":
    main()
