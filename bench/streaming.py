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
"""

import argparse
import json
import os
import random
import shutil
import statistics
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


def run_query(spark, work, name, batches, batch_tiles, tile_bytes, order, warmup, block_size):
    src, layer, ckpt = (os.path.join(work, name, d) for d in ("src", "layer", "ckpt"))
    write_sources(src, batches, batch_tiles, tile_bytes, order)
    q = (spark.readStream.schema("col int, row int, value binary").option("maxFilesPerTrigger", 1).parquet(src)
         .writeStream.format("sfclayer").option("checkpointLocation", ckpt)
         .option("bounds", f"0,0,{SIDE - 1},{SIDE - 1}").option("blockSize", block_size).start(layer))
    t0 = time.perf_counter()
    q.processAllAvailable()
    wall = time.perf_counter() - t0
    progress = [p for p in q.recentProgress if p["numInputRows"] > 0]
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
    }


def section(res, command, load):
    rows = []
    for r in res:
        rows.append(f"| {r['order']} | {r['batches']} | {r['versions']} | **{r['tilesPerSecondSteady']:,}** "
                    f"| {r['tilesPerSecondWall']:,} | {r['batchMsMedian']:.0f} / {r['batchMsP90']:.0f} ms "
                    f"| {r['firstHalfMs']:.0f} → {r['secondHalfMs']:.0f} ms | {r['commitMsMedian']:.0f} ms "
                    f"| **{r['commitShareMedian']:.0%}** |")
    return "\n".join([
        "## Streaming sink",
        "",
        f"`{command}` — a streaming query (`writeStream.format(\"sfclayer\")`, one version per micro-batch, exactly"
        " once), micro-batches of 1,000 tiles of 1 KiB from a Parquet file source (one file a batch), `local[2]`,"
        f" local filesystem, 4 MiB blocks. Load average (1, 5, 15 min) at start {load[0]}, at end {load[1]} (the"
        " machine is shared: figures are lower bounds).",
        "",
        "| keys of each batch | batches | versions | tiles/s, steady | tiles/s, wall (with start-up) "
        "| batch median / p90 | batch, first → second half | commit median | commit's share of a batch |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        *rows,
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
        " directory and version document) costs a batch.",
        "",
    ])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batches", type=int, default=40)
    p.add_argument("--batch-tiles", type=int, default=1000)
    p.add_argument("--tile-bytes", type=int, default=1024)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--runs", default="curve,curve-nosync,random",
                   help="key orders (curve, random), '-nosync' for a run without fsync")
    p.add_argument("--out", default=os.path.join(HERE, "RESULTS.md"))
    args = p.parse_args(argv)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = sfclayer.session("local[2]", app_name="sfclayer-bench-streaming", **{
        "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "2", "spark.driver.memory": "2g"})
    spark.sparkContext.setLogLevel("ERROR")
    work = tempfile.mkdtemp(prefix="sfclayer-bench-streaming-")
    load0 = tuple(round(x, 2) for x in os.getloadavg())
    try:
        res = []
        for run in args.runs.split(","):
            order, _, nosync = run.partition("-")
            # sfclayer.sync=false (no fsync of files, directories, documents): what durability costs a batch
            spark.sparkContext._jsc.hadoopConfiguration().set("sfclayer.sync", "false" if nosync else "true")
            r = run_query(spark, work, run, args.batches, args.batch_tiles, args.tile_bytes, order, args.warmup, "4m")
            r["order"] = order + (" (no fsync)" if nosync else "")
            res.append(r)
        spark.sparkContext._jsc.hadoopConfiguration().unset("sfclayer.sync")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load1 = tuple(round(x, 2) for x in os.getloadavg())
    command = "python bench/streaming.py" + "".join(f" --{k.replace('_', '-')} {v}" for k, v in vars(args).items()
                                                     if k != "out")
    import report

    report.write_section("streaming", section(res, command, (load0, load1)), path=args.out)
    print(json.dumps(res, indent=2))
    return res


if __name__ == "__main__":
    main()
