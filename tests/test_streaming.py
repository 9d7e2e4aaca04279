"""Structured Streaming into a layer, exactly once (issue 38): ``df.writeStream.format("sfclayer")``
commits each micro-batch as one version recording (query id, batch id); a batch replayed after the
query died between the layer's commit and its checkpoint is recognised and not written twice.
``foreachBatch`` users get the same through the write options ``txnAppId``/``txnVersion``.

A kill between the commit and the checkpoint is what deleting the checkpoint's last ``commits/N`` file
leaves behind (Spark then re-runs batch N with the same data and id); ``stop()`` while a batch runs
interrupts it wherever it is. The reference is a dict model of the tiles, batch order wins.
"""

import glob
import json
import os
import random
import time
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.errors import StreamingQueryException

import sfclayer

SCHEMA = "col int, row int, value binary"
BOUNDS = "0,0,63,63"


def _add_batch(src, n, rng, model, size=64):
    """Adds source file number ``n`` (one micro-batch: maxFilesPerTrigger 1) of 20 tiles; updates ``model``."""
    keys = rng.sample([(c, r) for c in range(64) for r in range(64)], 20)
    values = [bytes([n % 256]) * (size - 8) + c.to_bytes(4, "big") + r.to_bytes(4, "big") for c, r in keys]
    table = pa.table({"col": pa.array([k[0] for k in keys], pa.int32()),
                      "row": pa.array([k[1] for k in keys], pa.int32()),
                      "value": pa.array(values, pa.binary())})
    tmp = os.path.join(src, f".tmp-{n}")
    pq.write_table(table, tmp)
    final = os.path.join(src, f"batch-{n:04d}.parquet")
    os.rename(tmp, final)
    os.utime(final, (1_000_000_000 + n, 1_000_000_000 + n))  # the file source takes files oldest first
    model.update(dict(zip(keys, values)))


@pytest.fixture
def dirs(tmp_path):
    """A stream's directories: ``src`` (its source files, created empty), ``layer`` and ``ckpt`` (its checkpoint)."""
    os.makedirs(tmp_path / "src")
    return SimpleNamespace(src=str(tmp_path / "src"), layer=str(tmp_path / "layer"), ckpt=str(tmp_path / "ckpt"))


def _start(spark, dirs, bounds=BOUNDS):
    """The stream from ``dirs.src`` (a file a batch) into ``dirs.layer``, started (with no bounds when None)."""
    w = (spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(dirs.src)
         .writeStream.format("sfclayer").option("checkpointLocation", dirs.ckpt))
    if bounds is not None:
        w = w.option("bounds", bounds)
    return w.start(dirs.layer)


def _drain(q):
    """Runs query ``q`` until its source is consumed, stops it; returns its recent progress."""
    q.processAllAvailable()
    progress = q.recentProgress
    q.stop()
    return progress


def _documents(layer):
    return [json.load(open(p)) for p in sorted(glob.glob(os.path.join(layer, "_sfclayer", "v*.json")))]


def _committed_batches(ckpt):
    """How many batches Spark's checkpoint says it committed (its ``commits/N`` files: 0..N)."""
    return 1 + max(int(n) for n in os.listdir(os.path.join(ckpt, "commits")) if n.isdigit())


def _forget_last_commit(ckpt):
    """The checkpoint as a kill between the layer's commit and the checkpoint's leaves it; returns the batch id."""
    last = max(int(n) for n in os.listdir(os.path.join(ckpt, "commits")) if n.isdigit())
    for name in (str(last), f".{last}.crc"):
        p = os.path.join(ckpt, "commits", name)
        if os.path.exists(p):
            os.remove(p)
    return last


def _wait_for_batch(q, batch, timeout=120):
    """Waits until the query reported batch ``batch`` (or stopped); the condition, not a fixed sleep."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(p["batchId"] >= batch for p in q.recentProgress) or not q.isActive:
            return
        time.sleep(0.05)
    raise AssertionError(f"batch {batch} not reached in {timeout} s: {q.lastProgress}")


def _layer_tiles(spark, layer):
    return {(r["col"], r["row"]): bytes(r["value"]) for r in sfclayer.read(spark, layer).collect()}


def test_every_tile_exactly_once_across_kills_and_vacuum(spark, dirs):
    rng = random.Random(38)
    src, layer, ckpt = dirs.src, dirs.layer, dirs.ckpt
    model, n = {}, 0
    query_ids, replays = set(), []
    # rounds: drain and stop / stop while a batch runs / drain, then forget the last checkpoint commit
    for kind in ["replay", "stop-mid", "replay", "stop-mid"]:
        for _ in range(rng.randint(2, 3)):
            _add_batch(src, n, rng, model)
            n += 1
        q = _start(spark, dirs)
        query_ids.add(q.id)
        if kind == "stop-mid":
            _wait_for_batch(q, rng.randint(0, n - 1))
            q.stop()  # interrupts whatever runs: a task, the commit, the checkpoint
        else:
            _drain(q)
            if kind == "replay":
                replays.append(_forget_last_commit(ckpt))
    _drain(_start(spark, dirs))

    assert len(query_ids) == 1  # the checkpoint keeps the query's id across restarts
    qid = query_ids.pop()
    assert _layer_tiles(spark, layer) == model
    docs = _documents(layer)
    # one version per batch, each batch once and in order, all of this query. Batches are counted from
    # Spark's own commit log, not from the files: a file source restarted after a stop in the middle of a
    # batch may plan two files as one batch (CI saw 11 files in 10 versions, every tile there), so the
    # batches are Spark's to choose and the sink's to commit once each
    batches = _committed_batches(ckpt)
    assert batches <= n
    assert [d["operation"]["transaction"] for d in docs] == [{"appId": qid, "txnVersion": b} for b in range(batches)]
    assert [d["version"] for d in docs] == list(range(1, batches + 1))
    assert docs[-1]["transactions"] == {qid: batches - 1}
    assert len(replays) == 2

    # vacuum keeps the pairs (only the newest document is left), and a replay after it is still refused
    sfclayer.vacuum(spark, layer, retain=0, enforce_retention=False)
    assert len(_documents(layer)) == 1
    replayed = _forget_last_commit(ckpt)
    progress = _drain(_start(spark, dirs))
    assert [p["sink"]["metrics"]["outcome"] for p in progress if p["batchId"] == replayed] == ["skipped"]
    docs = _documents(layer)
    assert len(docs) == 1 and docs[0]["version"] == batches and docs[0]["transactions"] == {qid: batches - 1}
    assert _layer_tiles(spark, layer) == model
    # the in-process reader (no JVM) reads a layer whose documents carry transactions
    local = sfclayer.open(layer)
    try:
        assert {(t["col"], t["row"]): bytes(t["value"]) for t in local.query()} == model
    finally:
        local.close()


def test_foreach_batch_with_txn_options_skips_a_repeated_batch(spark, tmp_path):
    layer = str(tmp_path / "layer")
    rows = lambda b: spark.createDataFrame([(b, 0, bytes([b]) * 8), (b, 1, bytes([b]) * 8)], SCHEMA)

    def write(df, app, batch):
        (df.write.format("sfclayer").mode("append").option("bounds", BOUNDS)
         .option("txnAppId", app).option("txnVersion", batch).save(layer))

    write(rows(0), "app", 0)
    write(rows(1), "app", 1)
    write(rows(1), "app", 1)       # the same batch again: skipped
    write(rows(9), "app", 0)       # an older batch: skipped (its data is not looked at)
    write(rows(2), "other", 0)     # another application's batch 0: written
    docs = _documents(layer)
    assert [(d["operation"]["name"], d["operation"]["transaction"]) for d in docs] == [
        ("write", {"appId": "app", "txnVersion": 0}), ("append", {"appId": "app", "txnVersion": 1}),
        ("append", {"appId": "other", "txnVersion": 0})]
    assert docs[-1]["transactions"] == {"app": 1, "other": 0}
    history = sfclayer.history(spark, layer)
    assert [v.transaction for v in history] == [d["operation"]["transaction"] for d in docs]
    assert sfclayer.history(layer) == history  # in-process, the same
    called = spark.sql(f"CALL sfclayer.system.history('{layer}')").collect()
    assert [(r.transaction.app_id, r.transaction.txn_version) for r in called] == [("app", 0), ("app", 1), ("other", 0)]
    assert set(_layer_tiles(spark, layer)) == {(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)}
    # a plain append in between carries the pairs forward
    rows(5).write.format("sfclayer").mode("append").save(layer)
    assert _documents(layer)[-1]["transactions"] == {"app": 1, "other": 0}
    with pytest.raises(Exception, match="txnAppId and txnVersion go together"):
        rows(3).write.format("sfclayer").mode("append").option("txnAppId", "app").save(layer)


def test_foreach_batch_replay_through_a_real_stream(spark, dirs):
    rng = random.Random(7)
    model = {}
    for b in range(2):
        _add_batch(dirs.src, b, rng, model)

    def sink(df, batch_id):
        (df.write.format("sfclayer").mode("append").option("bounds", BOUNDS)
         .option("txnAppId", "fb-query").option("txnVersion", batch_id).save(dirs.layer))

    def run():
        _drain(spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(dirs.src)
               .writeStream.foreachBatch(sink).option("checkpointLocation", dirs.ckpt).start())

    run()
    _forget_last_commit(dirs.ckpt)
    run()
    docs = _documents(dirs.layer)
    assert [d["operation"]["transaction"]["txnVersion"] for d in docs] == [0, 1]
    assert _layer_tiles(spark, dirs.layer) == model


def test_each_commit_reports_where_its_time_went(spark, dirs):
    """sink.metrics split a batch's commit: opening the layer, publishing the version, the compaction it started."""
    rng = random.Random(7)
    model = {}
    for b in range(3):
        _add_batch(dirs.src, b, rng, model)
    progress = [p for p in _drain(_start(spark, dirs)) if p["numInputRows"] > 0]
    metrics = [p["sink"]["metrics"] for p in progress]
    assert [m["outcome"] for m in metrics] == ["committed"] * 3, metrics
    for m in metrics:
        parts = [float(m[k]) for k in ("openMs", "publishMs", "compactMs")]
        assert all(x >= 0 for x in parts) and parts[1] > 0, m
        # publishing and compacting are parts of the commit (which rounds down); openMs is the batch's opens
        # of the layer, its writer factory's (before the job) and its commit's probe
        assert parts[1] + parts[2] <= int(m["commitMs"]) + 1, m
    assert float(metrics[-1]["openMs"]) > 0, metrics  # the layer existed: the batch opened it
    assert _layer_tiles(spark, dirs.layer) == model


def test_a_new_layer_needs_bounds(spark, dirs):
    _add_batch(dirs.src, 0, random.Random(1), {})
    q = _start(spark, dirs, bounds=None)
    with pytest.raises(StreamingQueryException, match="give option bounds"):
        q.awaitTermination(120)
    assert not os.path.exists(os.path.join(dirs.layer, "_sfclayer"))
