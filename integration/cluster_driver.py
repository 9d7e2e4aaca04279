"""Driver for integration/test_standalone_cluster.py: runs sfclayer against a standalone master, with
the layer on HDFS, in a process of its own (the suite's shared local session stays untouched).

    python integration/cluster_driver.py MASTER_URL HDFS_DIR CONF_JSON [speculation EVENT_LOG_DIR]

CONF_JSON is extra Spark settings (the HDFS client's). Prints one JSON line of findings, last, and
leaves judging them to the test. With ``speculation``, a second application runs a write and an
append with ``spark.speculation`` on and the first attempt of one task per job stalled on purpose
(``sfclayer.test.slowFirstAttemptOfPartition`` of the test filesystem io.sfclayer.testing.FaultHdfs),
and reports Spark's own event log of its task attempts next to the version documents, the files on
disk and the data.
"""

import datetime as dt
import glob
import json
import os
import sys
import time

BASE_CONF = {
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


def _session(master, extra_conf, app_name, **more):
    import sfclayer

    conf = dict(BASE_CONF)
    conf.update(extra_conf)
    conf.update(more)
    spark = sfclayer.session(master, app_name=app_name, **conf)
    spark.sparkContext.setLogLevel("WARN")
    # wait for both workers' executors (block managers: the driver's and one per executor)
    sc = spark.sparkContext
    deadline = time.monotonic() + 120
    while sc._jsc.sc().getExecutorMemoryStatus().size() < 3 and time.monotonic() < deadline:
        time.sleep(0.5)
    return spark


def main(master, hdfs_dir, extra_conf):
    import sfclayer

    spark = _session(master, extra_conf, "sfclayer-standalone-test")
    out = {}
    try:
        sc = spark.sparkContext
        out["master"] = sc.master
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


def speculation(master, hdfs_dir, extra_conf, event_dir):
    """A write and an append whose stalled first attempts are overtaken by speculative copies."""
    import sfclayer

    test_jar = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build", "libs",
                            "sfclayer-bench.jar")
    spark = _session(master, extra_conf, "sfclayer-speculation-test", **{
        # the stalled attempts: a test filesystem of the test jar (io.sfclayer.testing.Faults)
        "spark.jars": test_jar,
        "spark.hadoop.fs.hdfs.impl": "io.sfclayer.testing.FaultHdfs",  # set before any HDFS client is cached
        # a client per job's configuration: a cached one would keep the first step's fault settings
        "spark.hadoop.fs.hdfs.impl.disable.cache": "true",
        "spark.speculation": "true",
        "spark.speculation.interval": "50ms",
        "spark.speculation.quantile": "0.5",
        "spark.speculation.multiplier": "1.5",
        "spark.speculation.minTaskRuntime": "500ms",
        # judge by runtime alone: a stalled task's record rate is only known at heartbeats
        "spark.speculation.efficiency.enabled": "false",
        "spark.locality.wait": "0s",
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": "file://" + event_dir,
        "spark.eventLog.compress": "false",
        "spark.eventLog.rolling.enabled": "false",
    })
    out = {"steps": []}
    hconf = spark.sparkContext._jsc.hadoopConfiguration()
    path = hdfs_dir + "/speculated"
    tiles = spark.range(0, 32 * 32).selectExpr(
        "CAST(id % 32 AS INT) AS col", "CAST(id DIV 32 AS INT) AS row", "CAST(id AS INT) AS v")
    try:
        # (the mode, the DataFrame, the task whose first attempt stalls)
        steps = [("overwrite", tiles, 1),
                 ("append", tiles.where("row BETWEEN 8 AND 23").selectExpr("col", "row", "v + 100000 AS v"), 2)]
        for mode, df, slow in steps:
            hconf.set("sfclayer.test.slowFirstAttemptOfPartition", str(slow))
            hconf.set("sfclayer.test.slowFirstAttemptMillis", "120000")  # until killed, on a busy machine too
            t0 = time.monotonic()
            # small_append_bytes=0: the append goes through the shuffle, whose task attempts this checks
            sfclayer.write(df, path, mode=mode, bounds=(0, 0, 31, 31), block_size="64k", partitions=4,
                           small_append_bytes=0)
            seconds = time.monotonic() - t0
            hconf.unset("sfclayer.test.slowFirstAttemptOfPartition")
            version = sfclayer.history(spark, path)[-1].version
            out["steps"].append({"mode": mode, "slow": slow, "seconds": seconds,
                                 "version": _document(spark, path, version), "on_disk": _mapfiles(spark, path)})
        out["data"] = sorted([r.col, r.row, r.v] for r in sfclayer.read(spark, path).collect())
        with sfclayer.open(spark, path) as layer:
            out["lookups"] = [layer.get(5, 3)["v"], layer.get(5, 9)["v"]]
        _wait_for_idle_executors(spark)  # the killed attempts have ended
        out["before_vacuum"] = _mapfiles(spark, path)
        out["vacuum"] = sfclayer.vacuum(spark, path, retain=dt.timedelta(0), enforce_retention=False)
        out["after_vacuum"] = _mapfiles(spark, path)
        out["newest"] = _document(spark, path, sfclayer.history(spark, path)[-1].version)
        out["data_after_vacuum"] = sorted([r.col, r.row, r.v] for r in sfclayer.read(spark, path).collect())
    finally:
        spark.stop()
    out["tasks"] = _task_attempts(event_dir)
    print(json.dumps(out, default=str), flush=True)


def _document(spark, path, version):
    """A version document, as JSON."""
    text = spark.read.text(f"{path}/_sfclayer/v{version:08d}.json", wholetext=True).first().value
    return json.loads(text)


def _mapfiles(spark, path):
    """Every data file (MapFile directory) under the layer, as dir/name ids, e.g. data-x/attempt-7/part-r-00001-0."""
    fs, root = _fs(spark, path), _jpath(spark, path)
    out = []

    def walk(p, rel):
        for st in fs.listStatus(p):
            name = st.getPath().getName()
            if st.isDirectory() and name.startswith("part-"):
                out.append(f"{rel}/{name}")
            elif st.isDirectory() and name != "_sfclayer":
                walk(st.getPath(), f"{rel}/{name}" if rel else name)

    walk(root, "")
    return sorted(out)


def _wait_for_idle_executors(spark, timeout=60):
    tracker = spark.sparkContext._jsc.sc().statusTracker()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(e.numRunningTasks() == 0 for e in tracker.getExecutorInfos()):
            return
        time.sleep(0.2)


def _task_attempts(event_dir):
    """From Spark's event log: every task attempt of the sfclayer jobs, by job description."""
    (log,) = [p for p in glob.glob(os.path.join(event_dir, "*")) if not p.endswith(".inprogress")]
    stages, attempts = {}, []
    with open(log) as f:
        for line in f:
            e = json.loads(line)
            if e["Event"] == "SparkListenerJobStart":
                description = (e.get("Properties") or {}).get("spark.job.description") or ""
                for stage in e["Stage IDs"]:
                    stages[stage] = description
            elif e["Event"] == "SparkListenerTaskEnd" and stages.get(e["Stage ID"], "").startswith("sfclayer: "):
                info = e["Task Info"]
                attempts.append({"job": stages[e["Stage ID"]], "stage": e["Stage ID"], "index": info["Index"],
                                 "attempt": info["Attempt"], "taskId": info["Task ID"],
                                 "speculative": info["Speculative"], "host": info["Host"],
                                 "reason": e["Task End Reason"]["Reason"]})
    return attempts


if __name__ == "__main__":
    if len(sys.argv) > 4 and sys.argv[4] == "speculation":
        speculation(sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[5])
    else:
        main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3]))
