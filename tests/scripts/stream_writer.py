"""The streaming writer tests/test_streaming_kills.py kills (issue 38).

    python stream_writer.py ROOT BATCHES ROWS

Runs two Structured Streaming queries side by side in its own Spark application (local[2]), each from
Spark's ``rate-micro-batch`` source (``rowsPerBatch`` ROWS, a 100 ms trigger: rate-limited, and
deterministic: batch ``b`` holds the source values ``b*ROWS .. (b+1)*ROWS - 1`` whenever and however
often it runs), until batch BATCHES - 1 of each is in its checkpoint; later batches are empty (values
of BATCHES*ROWS on are filtered out) and publish nothing:

* ``sink``: ``writeStream.format("sfclayer")`` into ROOT/sink-layer, checkpoint ROOT/sink-ckpt, each
  batch a delta append (``appendMode=delta``) and an automatic compaction after every third
  (``compactAfterDeltas=3``), which runs inside the batch's commit;
* ``foreach``: ``foreachBatch`` appends with the write options ``txnAppId``/``txnVersion`` into
  ROOT/foreach-layer, checkpoint ROOT/foreach-ckpt (copy-on-write appends, the default for a layer this small).

Value ``v`` is tile :func:`tile_of` ``(v)`` with the value columns ``v``, ``batch`` and ``payload``
(:func:`payload_of`); tiles repeat across batches (257 keys), so a batch written twice or out of order
changes what a layer holds. One process for both queries: a Spark application's start costs seconds of
CPU, which a test killing it again and again pays at every start.

Prints (flushed) ``ready`` once its Spark application is up, then waits for a line on stdin before it
starts the queries (a test starts the next writer while it kills this one), then ``started <name>
<queryId>`` for each, ``batch <name> <id> <outcome> <version>`` per batch it finished (``outcome``: the
sink's metric, ``written`` from foreachBatch), and ``done`` before a clean exit. With the test jar on
the class path (``$SFCLAYER_TEST_JAR``) Spark's checkpoints go through
io.sfclayer.testing.StallingCheckpointFileManager, which holds back the checkpoint commit whose path
ends as the file ``$SFCLAYER_TEST_STALL_FILE`` says (``/sink-ckpt/commits/3``): the moment after the
layer's commit and before the checkpoint's, where the test kills the process; and local files go
through io.sfclayer.testing.StallingCommitFs, which stalls once at the first file created whose path
holds what ``$SFCLAYER_TEST_COMMIT_STALL_FILE`` says (``/sink-layer/_sfclayer/.tmp-``: inside the sink's
commit, before its document is published; ``/sink-layer/_sfclayer/_last_version``: after).
"""

import os
import sys
import time

KEYS = 257   # distinct tiles: a prime, so any 257 consecutive values map to distinct keys
STEP = 7919  # value v -> key (v * STEP) % KEYS
GRID = 64
BOUNDS = "0,0,63,63"
APP_ID = "stream-kills"
QUERIES = ("sink", "foreach")
# a short-lived JVM: the C1 compiler alone halves the CPU a Spark application's start takes
JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def tile_of(v):
    """The (col, row) value ``v`` of the source becomes."""
    k = (v * STEP) % KEYS
    return k % GRID, k // GRID


def payload_of(v):
    """Value ``v``'s payload: its 8 big-endian bytes 32 times (256 bytes)."""
    return v.to_bytes(8, "big") * 32


def main():
    root, batches, rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    import sfclayer
    from pyspark.sql import functions as F

    conf = {"spark.ui.enabled": "false", "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
            "spark.sql.shuffle.partitions": "2", "spark.sql.streaming.numRecentProgressUpdates": "1000",
            "spark.driver.extraJavaOptions": JAVA_OPTIONS}
    if os.environ.get("SFCLAYER_TEST_JAR"):
        conf["spark.jars"] = os.environ["SFCLAYER_TEST_JAR"]
        conf["spark.sql.streaming.checkpointFileManagerClass"] = "io.sfclayer.testing.StallingCheckpointFileManager"
    spark = sfclayer.session("local[2]", app_name="sfclayer-stream-writer", **conf)
    spark.sparkContext.setLogLevel("ERROR")
    if os.environ.get("SFCLAYER_TEST_JAR"):
        # set once the session (and the test jar on its class path) is up: spark-submit resolves its jars
        # through this setting already, before the jar is there
        hadoop = spark.sparkContext._jsc.hadoopConfiguration()
        hadoop.set("fs.file.impl", "io.sfclayer.testing.StallingCommitFs")
        hadoop.set("fs.file.impl.disable.cache", "true")
    key = (F.col("value") * STEP) % KEYS

    def tiles():
        return (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", rows).option("numPartitions", 2)
                .load().where(F.col("value") < batches * rows)
                .select((key % GRID).cast("int").alias("col"), F.floor(key / GRID).cast("int").alias("row"),
                        F.col("value").alias("v"), F.floor(F.col("value") / rows).cast("int").alias("batch"),
                        F.expr("unhex(repeat(lpad(hex(value), 16, '0'), 32))").alias("payload")))

    def start(name):
        out = (tiles().writeStream.queryName(name).option("checkpointLocation", os.path.join(root, f"{name}-ckpt"))
               .trigger(processingTime="100 milliseconds"))
        layer = os.path.join(root, f"{name}-layer")
        if name == "sink":
            # its batches as delta files, folded in by an automatic compaction after every third
            return (out.format("sfclayer").option("bounds", BOUNDS).option("appendMode", "delta")
                    .option("compactAfterDeltas", 3).start(layer))

        def write(df, batch_id):
            if batch_id >= batches:
                return  # the source's values end: nothing to write (an empty append would still be a version)
            (df.write.format("sfclayer").mode("append").option("bounds", BOUNDS)
             .option("txnAppId", APP_ID).option("txnVersion", batch_id).save(layer))

        return out.foreachBatch(write).start()

    print("ready", flush=True)
    if not sys.stdin.readline():
        return  # the test ended without needing this writer
    queries = {name: start(name) for name in QUERIES}
    for name, q in queries.items():
        print("started", name, q.id, flush=True)
    seen = {name: -1 for name in QUERIES}
    while any(seen[n] < batches - 1 for n in QUERIES):
        for name, q in queries.items():
            for p in q.recentProgress:
                if p["batchId"] > seen[name] and "sink" in p:
                    seen[name] = p["batchId"]
                    metrics = p["sink"].get("metrics") or {}
                    print("batch", name, seen[name], metrics.get("outcome", "written"),
                          metrics.get("version") or "-", flush=True)
            if not q.isActive:
                print("failed", name, str(q.exception()).splitlines()[0], flush=True)
                sys.exit(1)
        time.sleep(0.05)
    for q in queries.values():
        q.stop()
    spark.stop()
    print("done", flush=True)


if __name__ == "__main__":
    main()
