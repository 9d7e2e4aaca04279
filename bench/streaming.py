"""Benchmark of the Structured Streaming sink (issue 38): a query of micro-batches of 1,000 tiles of
1 KiB into a layer, the tiles/s it sustains and the share of each batch its commit takes. Runs alone:

    .venv/bin/python bench/streaming.py [--batches 40] [--batch-tiles 1000] [--tile-bytes 1024]

and writes its block of bench/RESULTS.md (``report.write_section``; other blocks are kept).

The source is a directory of Parquet files, one per micro-batch (``maxFilesPerTrigger`` 1), written
before the query starts, so the query runs as fast as the sink lets it (a rate-limited source could only
show the rate it was given). Tiles arrive as a swath does, each batch the next 1,000 keys along the
layer's Z curve (a 256 × 256 grid), so a batch's copy-on-write merge meets one or two files; a second
run puts every batch's keys at random over the grid, where each batch rewrites most of the layer (the
cost that delta files, the other part of issue 38, are for). Per batch, from the query's progress:
``triggerExecution`` (the batch, end to end, checkpoint included) and the sink's ``commitMs`` (the
driver's merge and version commit); the first ``--warmup`` batches are left out. A run without fsync
(``sfclayer.sync=false``, not a setting for data one keeps) shows what durability costs a batch.

Where a batch's time goes: the medians of the query progress' ``durationMs`` parts (``latestOffset``:
the source's listing and its own log; ``queryPlanning``; ``walCommit``: the offset log; ``addBatch``:
the Spark job that encodes the tiles plus the sink's commit; ``commitOffsets``: the commit log) and of
the sink's own metrics (``openMs``, ``publishMs``, ``compactMs``). A ``-tuned`` run adds the Spark
settings the README recommends (a checkpoint file manager without FileContext's per-call
overhead); ``rate`` runs the ``rate-micro-batch`` source (exactly ``--batch-tiles`` rows a batch, no
file listing or source log), to show the sink with the least source work.

``--before-jar`` runs every configuration twice, alternating, each in its own Spark driver: with that
jar and with this tree's (``SFCLAYER_JAR``), so both see the same load.
"""

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

import sfclayer  # noqa: E402

SIDE = 256


def _morton(i):
    """(col, row) of Z index ``i`` (bits interleaved: col even, row odd)."""
    col = row = 0
    for b in range(16):
        col |= ((i >> (2 * b)) & 1) << b
        row |= ((i >> (2 * b + 1)) & 1) << b
    return col, row


def write_sources(src, batches, batch_tiles, tile_bytes, order, seed=38):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = random.Random(seed)
    keys = [_morton(i) for i in range(SIDE * SIDE)]
    if order == "random":
        rng.shuffle(keys)
    payload = os.urandom(tile_bytes + 4096)
    os.makedirs(src)
    for b in range(batches):
        ks = keys[(b * batch_tiles) % len(keys):][:batch_tiles]
        values = [payload[(c * 7 + r) % 4096:][:tile_bytes] for c, r in ks]
        t = pa.table({"col": pa.array([k[0] for k in ks], pa.int32()), "row": pa.array([k[1] for k in ks], pa.int32()),
                      "value": pa.array(values, pa.binary())})
        p = os.path.join(src, f"batch-{b:05d}.parquet")
        pq.write_table(t, p, compression="none")
        os.utime(p, (1_000_000_000 + b, 1_000_000_000 + b))


# Spark settings a streaming user sets (README, "Streaming writes, exactly once"): Spark's default checkpoint manager on the
# local filesystem goes through Hadoop's FileContext (a readlink per path it touches, a chmod per file).
TUNED = {"spark.sql.streaming.checkpointFileManagerClass":
         "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"}

PARTS = ["latestOffset", "getBatch", "queryPlanning", "walCommit", "addBatch", "commitOffsets"]


def rate_frame(spark, batch_tiles, tile_bytes):
    """``rate-micro-batch`` rows as tiles: row-major keys over the grid, ``tile_bytes`` of payload."""
    from pyspark.sql import functions as F

    v = F.col("value") % (SIDE * SIDE)
    return (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", batch_tiles)
            .option("numPartitions", 1).load()
            .select((v % SIDE).cast("int").alias("col"), (v / SIDE).cast("int").alias("row"),
                    F.expr(f"unhex(repeat(lpad(hex(value), 16, '0'), {tile_bytes // 8}))").alias("value")))


def run_query(spark, work, name, batches, batch_tiles, tile_bytes, order, warmup, block_size):
    src, layer, ckpt = (os.path.join(work, name, d) for d in ("src", "layer", "ckpt"))
    if order == "rate":
        df = rate_frame(spark, batch_tiles, tile_bytes)
    else:
        write_sources(src, batches, batch_tiles, tile_bytes, order)
        df = spark.readStream.schema("col int, row int, value binary").option("maxFilesPerTrigger", 1).parquet(src)
    q = (df.writeStream.format("sfclayer").option("checkpointLocation", ckpt)
         .option("bounds", f"0,0,{SIDE - 1},{SIDE - 1}").option("blockSize", block_size).start(layer))
    t0 = time.perf_counter()
    if order == "rate":  # an endless source: until it has made the batches
        while True:
            done = [p for p in q.recentProgress if p["numInputRows"] > 0]
            if len(done) >= batches or q.exception() is not None:
                break
            time.sleep(0.05)
    else:
        q.processAllAvailable()
    wall = time.perf_counter() - t0
    progress = [p for p in q.recentProgress if p["numInputRows"] > 0][:batches]
    q.stop()
    if len(progress) != batches or any(p["sink"]["metrics"].get("outcome") != "committed" for p in progress):
        raise SystemExit(f"{name}: {len(progress)} of {batches} batches committed: {progress[-1:]}")
    steady = progress[warmup:]
    trig = [p["durationMs"]["triggerExecution"] for p in steady]
    commit = [int(p["sink"]["metrics"]["commitMs"]) for p in steady]
    versions = len([n for n in os.listdir(os.path.join(layer, "_sfclayer")) if n.startswith("v") and n.endswith(".json")])
    return {
        "order": order, "batches": batches, "versions": versions,
        "tilesPerSecondSteady": round(len(steady) * batch_tiles / (sum(trig) / 1000)),
        "tilesPerSecondWall": round(batches * batch_tiles / wall),
        "batchMsMedian": statistics.median(trig), "batchMsP90": sorted(trig)[int(0.9 * (len(trig) - 1))],
        "commitMsMedian": statistics.median(commit),
        "commitShareMedian": round(statistics.median(c / t for c, t in zip(commit, trig)), 3),
        "addBatchMsMedian": statistics.median(p["durationMs"].get("addBatch", 0) for p in steady),
        "firstHalfMs": statistics.median(trig[:len(trig) // 2]), "secondHalfMs": statistics.median(trig[len(trig) // 2:]),
        "partsMs": {k: statistics.median(p["durationMs"].get(k, 0) for p in steady) for k in PARTS},
        "sinkMs": {k: statistics.median(float(p["sink"]["metrics"].get(k, "nan")) for p in steady)
                   for k in ("openMs", "publishMs", "compactMs")},
    }


LABELS = {"curve": "curve", "random": "random", "rate": "rate source"}


def _label(run):
    order, _, flags = run.partition("-")
    extra = [{"nosync": "no fsync", "tuned": "Spark tuned"}[f] for f in flags.split("-") if f]
    return LABELS[order] + (f" ({', '.join(extra)})" if extra else "")


def _ms(x):
    return "–" if x != x else f"{x:.0f}"  # nan: a sink that does not report it (the code before)


def section(res, command, load, notes=""):
    rows, parts = [], []
    for r in res:
        who = f"| {r['code']} " if "code" in r else ""
        rows.append(f"| {_label(r['run'])} {who}| {r['batches']} | {r['versions']} | **{r['tilesPerSecondSteady']:,}** "
                    f"| {r['tilesPerSecondWall']:,} | {r['batchMsMedian']:.0f} / {r['batchMsP90']:.0f} ms "
                    f"| {r['firstHalfMs']:.0f} → {r['secondHalfMs']:.0f} ms | {r['commitMsMedian']:.0f} ms "
                    f"| **{r['commitShareMedian']:.0%}** |")
        pm, sm = r["partsMs"], r["sinkMs"]
        rest = r["batchMsMedian"] - sum(pm.values())
        parts.append(f"| {_label(r['run'])} {who}| {r['batchMsMedian']:.0f} | {pm['latestOffset']:.0f} | {pm['getBatch']:.0f} "
                     f"| {pm['queryPlanning']:.0f} | {pm['walCommit']:.0f} | {pm['addBatch'] - r['commitMsMedian']:.0f} "
                     f"| {r['commitMsMedian']:.0f} ({_ms(sm['openMs'])} / {_ms(sm['publishMs'])} / {_ms(sm['compactMs'])}) "
                     f"| {pm['commitOffsets']:.0f} | {rest:.0f} |")
    code_h, code_a = ("| code ", "|---") if any("code" in r for r in res) else ("", "")
    return "\n".join([
        "## Streaming sink",
        "",
        f"`{command}` — a streaming query (`writeStream.format(\"sfclayer\")`, one version per micro-batch, exactly"
        " once), micro-batches of 1,000 tiles of 1 KiB from a Parquet file source (one file a batch; `rate`: the"
        " `rate-micro-batch` source, 1,000 rows a batch, row-major keys), `local[2]`,"
        f" local filesystem, 4 MiB blocks. Load average (1, 5, 15 min) at start {load[0]}, at end {load[1]} (the"
        " machine is shared: figures are lower bounds).",
        "",
        f"| keys of each batch {code_h}| batches | versions | tiles/s, steady | tiles/s, wall (with start-up) "
        "| batch median / p90 | batch, first → second half | commit median | commit's share of a batch |",
        f"|---{code_a}|---:|---:|---:|---:|---:|---:|---:|---:|",
        *rows,
        "",
        "Where a batch's milliseconds go (medians of the steady batches' query progress `durationMs`; a batch is"
        " their sum plus Spark's own bookkeeping, the last column): the source's `latestOffset` (the file source"
        " lists its directory and writes its own log), `getBatch`, `queryPlanning`, `walCommit` (the offset log),"
        " the micro-batch's Spark job (`addBatch` less the sink's commit), the sink's commit (in brackets"
        " `sink.metrics` openMs / publishMs / compactMs: the batch's opening of the layer, by the writer factory"
        " before the job and the commit, publishing the version, the compaction the commit started),"
        " `commitOffsets` (the commit log).",
        "",
        f"| run {code_h}| batch | latestOffset | getBatch | queryPlanning | walCommit | Spark job | sink commit (open / publish / compact) "
        "| commitOffsets | rest |",
        f"|---{code_a}|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        *parts,
        "",
        "Steady: the batches after the warm-up, by the query's own `triggerExecution` times (checkpoint"
        " included). The commit (`commitMs` in the query progress' `sink.metrics`) is the driver's merge of the"
        " batch into the files it falls in plus the version's commit; the rest of a batch is Spark's: planning,"
        " the task that encodes the tiles, the offset and commit logs. The goal is ≥ 5,000 tiles/s on 2 cores."
        " Each batch is an append whose auto rule (docs/FORMAT.md section 11) writes it as a delta file on the"
        " driver when rewriting the files it falls into would cost more than 4 times its bytes (random keys meet"
        " every file: once the layer holds 4 batches; keys along the curve never: the one or two files they"
        " meet hold at most 4 MiB, so those are rewritten on the driver), and when 10 delta versions have piled up the commit compacts them right after its own"
        " (`compactAfterDeltas`, default 10: the p90 and the versions"
        " beyond the batches). \"no fsync\": `sfclayer.sync=false`, what durability (fsync of each file,"
        " directory and version document) costs a batch. \"Spark tuned\": "
        + ", ".join(f"`{k}={v.rsplit('.', 1)[-1]}`" for k, v in TUNED.items()) + " (README, \"Streaming writes, exactly once\").",
        "",
        *([notes, ""] if notes else []),
    ])


def _child(args):
    """One configuration in this process (a Spark driver of its own): its result as JSON on stdout."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    order, _, flags = args.child.partition("-")
    flags = flags.split("-")
    spark = sfclayer.session("local[2]", app_name="sfclayer-bench-streaming", **{
        "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "2", "spark.driver.memory": "2g", **(TUNED if "tuned" in flags else {})})
    spark.sparkContext.setLogLevel("ERROR")
    # sfclayer.sync=false (no fsync of files, directories, documents): what durability costs a batch
    spark.sparkContext._jsc.hadoopConfiguration().set("sfclayer.sync", "false" if "nosync" in flags else "true")
    work = tempfile.mkdtemp(prefix="sfclayer-bench-streaming-")
    try:
        r = run_query(spark, work, args.child, args.batches, args.batch_tiles, args.tile_bytes, order, args.warmup, "4m")
    finally:
        shutil.rmtree(work, ignore_errors=True)
        spark.stop()
    r["run"] = args.child
    print("RESULT " + json.dumps(r), flush=True)


def _spawn(args, run, jar):
    env = dict(os.environ)
    if jar:
        env["SFCLAYER_JAR"] = jar
    cmd = [sys.executable, os.path.abspath(__file__), "--child", run, "--batches", str(args.batches),
           "--batch-tiles", str(args.batch_tiles), "--tile-bytes", str(args.tile_bytes), "--warmup", str(args.warmup)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise SystemExit(f"{run} ({jar or 'this tree'}) failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batches", type=int, default=40)
    p.add_argument("--batch-tiles", type=int, default=1000)
    p.add_argument("--tile-bytes", type=int, default=1024)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--runs", default="curve,curve-nosync,random,curve-tuned,rate-tuned",
                   help="key orders (curve, random, rate), '-nosync' for a run without fsync, '-tuned' for the"
                        " recommended Spark settings")
    p.add_argument("--before-jar", default=None, help="also run every configuration with this jar, alternating")
    p.add_argument("--notes", default="", help="a paragraph kept under the tables")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--out", default=os.path.join(HERE, "RESULTS.md"))
    args = p.parse_args(argv)
    if args.child:
        return _child(args)
    load0 = tuple(round(x, 2) for x in os.getloadavg())
    res = []
    for run in args.runs.split(","):
        for code, jar in ([("before", args.before_jar)] if args.before_jar else []) + [("after" if args.before_jar else None, None)]:
            r = _spawn(args, run, jar)
            if code:
                r["code"] = code
            res.append(r)
            print(json.dumps({k: r[k] for k in ("run", "tilesPerSecondSteady", "batchMsMedian", "commitMsMedian")}
                             | ({"code": code} if code else {})), flush=True)
    load1 = tuple(round(x, 2) for x in os.getloadavg())
    command = "python bench/streaming.py" + "".join(f" --{k.replace('_', '-')} {v}" for k, v in vars(args).items()
                                                     if k not in ("out", "child", "notes", "before_jar") and v is not None)
    if args.before_jar:
        command += " --before-jar <the jar of main before the change>"
    import report

    report.write_section("streaming", section(res, command, (load0, load1), args.notes), path=args.out)
    print(json.dumps(res, indent=2))
    return res


if __name__ == "__main__":
    main()
