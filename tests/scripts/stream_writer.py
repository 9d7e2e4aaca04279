"""The streaming writer tests/test_streaming_kills.py kills (issue 38).

    python stream_writer.py LAYER CHECKPOINT BATCHES ROWS [sink|foreach]

Runs one Structured Streaming query in its own Spark application (local[2]) from Spark's
``rate-micro-batch`` source (``rowsPerBatch`` ROWS, a 100 ms trigger: rate-limited, and
deterministic: batch ``b`` holds the source values ``b*ROWS .. (b+1)*ROWS - 1`` whenever and however
often it runs) into LAYER with the checkpoint CHECKPOINT, until batch BATCHES - 1 is in the checkpoint;
later batches are empty (values of BATCHES*ROWS on are filtered out) and publish nothing. Value ``v``
is tile :func:`tile_of` ``(v)`` with the value columns ``v``, ``batch`` and ``payload`` (:func:`payload_of`);
tiles repeat across batches (257 keys), so a batch written twice or out of order changes what the
layer holds. ``sink`` writes with ``writeStream.format("sfclayer")``, ``foreach`` with ``foreachBatch``
and the write options ``txnAppId``/``txnVersion``.

Prints (flushed) ``ready`` once its Spark application is up, then waits for a line on stdin before it
starts the query (a test starts the next writer while it kills this one: Spark's start takes
seconds), then ``started <queryId>``, then ``batch <id> <outcome> <version>`` per batch it finished
(``outcome``: the sink's metric, or ``written`` from foreachBatch), and ``done`` before a clean exit.
With the test jar on the class path (``$SFCLAYER_TEST_JAR``) Spark's checkpoint goes through
io.sfclayer.testing.StallingCheckpointFileManager, which holds the checkpoint's ``commits/<b>`` back
while the file ``$SFCLAYER_TEST_STALL_FILE`` names ``b``: the moment after the layer's commit and before the
checkpoint's, where the test kills it.
"""

import os
import sys
import time

KEYS = 257   # distinct tiles: a prime, so any 257 consecutive values map to distinct keys
STEP = 7919  # value v -> key (v * STEP) % KEYS
GRID = 64
BOUNDS = "0,0,63,63"
APP_ID = "stream-kills"


def tile_of(v):
    """The (col, row) value ``v`` of the source becomes."""
    k = (v * STEP) % KEYS
    return k % GRID, k // GRID


def payload_of(v):
    """Value ``v``'s payload: its 8 big-endian bytes 32 times (256 bytes)."""
    return v.to_bytes(8, "big") * 32


def main():
    layer, ckpt, batches, rows = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    mode = sys.argv[5] if len(sys.argv) > 5 else "sink"
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    import sfclayer
    from pyspark.sql import functions as F

    conf = {"spark.ui.enabled": "false", "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
            "spark.sql.shuffle.partitions": "2", "spark.sql.streaming.numRecentProgressUpdates": "1000"}
    if os.environ.get("SFCLAYER_TEST_JAR"):
        conf["spark.jars"] = os.environ["SFCLAYER_TEST_JAR"]
        conf["spark.sql.streaming.checkpointFileManagerClass"] = "io.sfclayer.testing.StallingCheckpointFileManager"
    spark = sfclayer.session("local[2]", app_name="sfclayer-stream-writer", **conf)
    spark.sparkContext.setLogLevel("ERROR")
    key = (F.col("value") * STEP) % KEYS
    tiles = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", rows).option("numPartitions", 2).load()
             .where(F.col("value") < batches * rows)
             .select((key % GRID).cast("int").alias("col"), F.floor(key / GRID).cast("int").alias("row"),
                     F.col("value").alias("v"), F.floor(F.col("value") / rows).cast("int").alias("batch"),
                     F.expr("unhex(repeat(lpad(hex(value), 16, '0'), 32))").alias("payload")))
    print("ready", flush=True)
    if not sys.stdin.readline():
        return  # the test ended without needing this writer
    out = tiles.writeStream.option("checkpointLocation", ckpt).trigger(processingTime="100 milliseconds")
    if mode == "sink":
        q = out.format("sfclayer").option("bounds", BOUNDS).start(layer)
    else:
        def write(df, batch_id):
            if batch_id >= batches:
                return  # the source's values end: nothing to write (an empty append would still be a version)
            (df.write.format("sfclayer").mode("append").option("bounds", BOUNDS)
             .option("txnAppId", APP_ID).option("txnVersion", batch_id).save(layer))

        q = out.foreachBatch(write).start()
    print("started", q.id, flush=True)
    seen = -1
    while True:
        progress = q.recentProgress
        for p in progress:
            if p["batchId"] > seen and p["numInputRows"] >= 0 and "sink" in p:
                seen = p["batchId"]
                metrics = p["sink"].get("metrics") or {}
                print("batch", seen, metrics.get("outcome", "written"), metrics.get("version", "-") or "-", flush=True)
        if seen >= batches - 1 or not q.isActive:
            break
        time.sleep(0.05)
    if q.exception() is not None:
        print("failed", str(q.exception()).splitlines()[0], flush=True)
        sys.exit(1)
    q.stop()
    spark.stop()
    print("done", flush=True)


if __name__ == "__main__":
    main()
