"""Benchmark of living layers (issue 10): incremental append vs full rewrite, reads after many small
appends before and after compact, planning with a long history. Runs alone:

    .venv/bin/python bench/updates.py [--log2-tiles 18] [--tile-bytes 256] [--versions 100]

and writes its block of bench/RESULTS.md (``report.write_section``; other blocks are kept). Also
``make bench STUDY=updates``. Every ratio is measured side by side in one run, on one SparkSession.
"""

import argparse
import datetime as dt
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "python"), os.path.join(HERE, "..")]

import sfclayer  # noqa: E402
from tests.helpers import document_files  # noqa: E402  (the tests' own reading of a local layer's documents)



def tiles(spark, side, col0, row0, width, height, tile_bytes, mult):
    from pyspark.sql import functions as F

    return (spark.range(width * height)
            .select((F.col("id") % width + col0).cast("int").alias("col"),
                    (F.floor(F.col("id") / width) + row0).cast("int").alias("row"))
            .withColumn("v", F.col("col") * mult + F.col("row"))
            .withColumn("payload", F.expr(f"unhex(repeat(lpad(hex(v), 8, '0'), {max(1, tile_bytes // 4)}))")))


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def metadata(path):
    log = os.path.join(path, "_sfclayer")
    newest = sorted(n for n in os.listdir(log) if n.startswith("v") and n.endswith(".json"))[-1]
    with open(os.path.join(log, newest)) as f:
        doc = json.load(f)
    doc["files"] = document_files(path, doc)  # format 6 lists them in its manifests
    return doc


def bbox_time(spark, path, box, repeat=3):
    times = []
    for _ in range(repeat):
        t, _ = timed(lambda: sfclayer.read(spark, path, keys=box).select("v").count())
        times.append(t)
    return statistics.median(times)


def lookup_time(spark, path, side, n=400, seed=7):
    rng = random.Random(seed)
    keys = [(rng.randrange(side), rng.randrange(side)) for _ in range(n)]
    with sfclayer.open(spark, path, cache_size=4096) as layer:
        for k in keys:  # warm: every file opened once
            layer.get_many([k])
        times = []
        for k in keys:
            t, _ = timed(lambda: layer.get(*k))
            times.append(t)
    return statistics.median(times)


def plan_time(spark, path, box, repeat=20):
    from pyspark.sql import functions as F

    times = []
    for _ in range(repeat):
        c0, r0, c1, r1 = box
        df = (spark.read.format("sfclayer").load(path)
              .where(F.col("col").between(c0, c1) & F.col("row").between(r0, r1)))
        t, _ = timed(lambda: df._jdf.queryExecution().executedPlan())
        times.append(t)
    return statistics.median(times)


def run(spark, work, log2_tiles, tile_bytes, n_versions, log=print):
    side = 1 << (log2_tiles // 2)
    n = side * side
    bounds = (0, 0, side - 1, side - 1)
    # compression none: the layer of the earlier runs, whatever the generic default
    opts = dict(bounds=bounds, block_size="1m", partitions=4, compression="none")
    res = {"tiles": n, "tile_bytes": tile_bytes}

    # 1. append 1% (a box) vs a full rewrite of the layer
    base = os.path.join(work, "base")
    t_full, _ = timed(lambda: sfclayer.write(tiles(spark, side, 0, 0, side, side, tile_bytes, 1000), base, **opts))
    md1 = metadata(base)
    box_side = max(1, int(round((n * 0.01) ** 0.5)))
    b0 = side // 3
    new = tiles(spark, side, b0, b0, box_side, box_side, tile_bytes, 7)
    # warm the update path's classes once (a long-lived application's steady state), elsewhere in the layer
    sfclayer.write(tiles(spark, side, side - 2, side - 2, 1, 1, tile_bytes, 1000), base, mode="append")
    md1 = metadata(base)
    # Spark's fixed cost of a job of the same shape: the same input, shuffled into 4 partitions, counted
    t_job = statistics.median(timed(lambda: new.repartition(4).count())[0] for _ in range(3))
    # copy-on-write: what this block measures (delta appends: bench/deltas.py)
    t_append, _ = timed(lambda: sfclayer.write(new, base, mode="append", partitions=4, append_mode="rewrite"))
    md2 = metadata(base)
    m = md2["operation"]["metrics"]
    removed = {f["dir"] + "/" + f["name"] for f in md1["files"]} - {f["dir"] + "/" + f["name"] for f in md2["files"]}
    removed_bytes = sum(f["dataBytes"] for f in md1["files"] if f["dir"] + "/" + f["name"] in removed)
    new_bytes = (m["tilesInserted"] + m["tilesReplaced"]) * md1["dataBytes"] / md1["recordCount"]
    # the same append again through the shuffle (as every append was before issue 23)
    t_shuffled, _ = timed(lambda: sfclayer.write(new, base, mode="append", partitions=4, small_append_bytes=0,
                                                  append_mode="rewrite"))
    t_rewrite, _ = timed(lambda: sfclayer.write(tiles(spark, side, 0, 0, side, side, tile_bytes, 1000), base,
                                                mode="overwrite", **opts))
    res["append"] = {"box_tiles": box_side * box_side, "append_s": t_append, "first_write_s": t_full,
                     "spark_job_s": t_job, "shuffled_s": t_shuffled,
                     "rewrite_s": t_rewrite, "time_ratio": t_append / t_rewrite,
                     "files": md1["fileCount"], "files_rewritten": len(removed),
                     "bytes_written": m["bytesWritten"], "intersecting_bytes": removed_bytes,
                     "new_bytes": new_bytes, "bytes_ratio": m["bytesWritten"] / (removed_bytes + new_bytes),
                     "layer_bytes": md1["dataBytes"]}
    log(f"append {box_side}x{box_side}: {t_append:.2f} s vs rewrite {t_rewrite:.2f} s; "
        f"{len(removed)}/{md1['fileCount']} files rewritten")

    # 2. reads after 20 small appends, before and after compact, vs a fresh layer of the same tiles
    rng = random.Random(3)
    for i in range(20):
        w = max(1, box_side // 4)
        c, r = rng.randrange(side - w), rng.randrange(side - w)
        sfclayer.write(tiles(spark, side, c, r, w, w, tile_bytes, 11 + i), base, mode="append", partitions=2)
    fresh = os.path.join(work, "fresh")
    sfclayer.write(sfclayer.read(spark, base).select("col", "row", "v", "payload"), fresh, **opts)
    qbox = (side // 5, side // 5, side // 5 + box_side - 1, side // 5 + box_side - 1)
    reads = {"files_after_appends": metadata(base)["fileCount"], "files_fresh": metadata(fresh)["fileCount"]}
    reads["bbox_fresh_s"] = bbox_time(spark, fresh, qbox)
    reads["bbox_appended_s"] = bbox_time(spark, base, qbox)
    reads["get_fresh_ms"] = lookup_time(spark, fresh, side) * 1e3
    reads["get_appended_ms"] = lookup_time(spark, base, side) * 1e3
    sfclayer.compact(spark, base)
    reads["files_compacted"] = metadata(base)["fileCount"]
    reads["bbox_compacted_s"] = bbox_time(spark, base, qbox)
    reads["get_compacted_ms"] = lookup_time(spark, base, side) * 1e3
    res["reads"] = reads
    log(f"reads: {reads}")

    # 3. planning with a long history vs one version (a smaller layer: history length is what matters)
    small_side = 64
    one = os.path.join(work, "one")
    many = os.path.join(work, "many")
    for p in (one, many):
        sfclayer.write(tiles(spark, small_side, 0, 0, small_side, small_side, 64, 1000), p,
                       bounds=(0, 0, small_side - 1, small_side - 1), block_size="64k", partitions=2)
    for i in range(n_versions - 1):
        c, r = (i * 7) % (small_side - 2), (i * 13) % (small_side - 2)
        sfclayer.write(tiles(spark, small_side, c, r, 2, 2, 64, 3 + i), many, mode="append", partitions=1)
    pbox = (10, 10, 30, 30)
    plan_time(spark, one, pbox, repeat=5)  # warm-up
    res["planning"] = {"versions": n_versions, "one_ms": plan_time(spark, one, pbox) * 1e3,
                       "many_ms": plan_time(spark, many, pbox) * 1e3}
    res["planning"]["ratio"] = res["planning"]["many_ms"] / res["planning"]["one_ms"]
    log(f"planning: {res['planning']}")
    return res


def section(res, command):
    a, r, p = res["append"], res["reads"], res["planning"]
    mib = 1 << 20
    lines = [
        "## Updates (living layers)",
        "",
        f"`{command}` — {res['tiles']} tiles of ~{res['tile_bytes']} B, 1 MiB blocks, local filesystem, one run.",
        "",
        "| measure | value | target |",
        "|---|---|---|",
        f"| append a {a['box_tiles']}-tile box (1%): time / full rewrite | {a['append_s']:.2f} s / "
        f"{a['rewrite_s']:.2f} s = **{a['time_ratio']:.3f}×** | ≤ 0.1× |",
        f"| the same append through the shuffle (`smallAppendBytes=0`) / full rewrite | {a['shuffled_s']:.2f} s = "
        f"**{a['shuffled_s'] / a['rewrite_s']:.3f}×** | |",
        f"| the same, less Spark's fixed cost (a shuffle + count of the same input: {a['spark_job_s']:.2f} s) | "
        f"**{max(0.0, a['append_s'] - a['spark_job_s']) / a['rewrite_s']:.3f}×** | |",
        f"| files rewritten by the append | {a['files_rewritten']} of {a['files']} | only intersecting |",
        f"| bytes written / (intersecting files' bytes + new bytes) | {a['bytes_written'] / mib:.2f} MiB / "
        f"({a['intersecting_bytes'] / mib:.2f} + {a['new_bytes'] / mib:.2f}) MiB = **{a['bytes_ratio']:.2f}** "
        f"(layer: {a['layer_bytes'] / mib:.1f} MiB) | ≤ 1.1 |",
        f"| bbox (1%) after 20 small appends / fresh layer | {r['bbox_appended_s']:.3f} s / {r['bbox_fresh_s']:.3f} s "
        f"= **{r['bbox_appended_s'] / r['bbox_fresh_s']:.2f}×** ({r['files_after_appends']} vs {r['files_fresh']} "
        "files) | ≤ 1.2× |",
        f"| bbox after compact / fresh layer | {r['bbox_compacted_s']:.3f} s = "
        f"**{r['bbox_compacted_s'] / r['bbox_fresh_s']:.2f}×** ({r['files_compacted']} files) | ≤ 1.2× |",
        f"| warm look-up p50 after 20 appends / fresh | {r['get_appended_ms']:.3f} ms / {r['get_fresh_ms']:.3f} ms = "
        f"**{r['get_appended_ms'] / r['get_fresh_ms']:.2f}×** | ≤ 1.2× |",
        f"| warm look-up p50 after compact / fresh | {r['get_compacted_ms']:.3f} ms = "
        f"**{r['get_compacted_ms'] / r['get_fresh_ms']:.2f}×** | ≤ 1.2× |",
        f"| bbox planning, {p['versions']} versions / 1 version (median of 20) | {p['many_ms']:.2f} ms / "
        f"{p['one_ms']:.2f} ms = **{p['ratio']:.2f}×** | ≤ 1.2× |",
        "",
        "The append reads and rewrites only the files its box falls in and references the others where "
        "they are; planning reads only the newest version document, found through `_sfclayer/_last_version` "
        "(no directory listing).",
    ]
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    quick = bool(os.environ.get("SFCLAYER_BENCH_QUICK"))  # make bench QUICK=1: a smoke run
    p.add_argument("--log2-tiles", type=int, default=12 if quick else 18)
    p.add_argument("--tile-bytes", type=int, default=256)
    p.add_argument("--versions", type=int, default=10 if quick else 100)
    p.add_argument("--out", default=os.path.join(HERE, "RESULTS.md"))
    args = p.parse_args(argv)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = sfclayer.session("local[2]", app_name="sfclayer-bench-updates", **{
        "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "4", "spark.driver.memory": "2g"})
    spark.sparkContext.setLogLevel("ERROR")
    work = tempfile.mkdtemp(prefix="sfclayer-bench-updates-")
    try:
        res = run(spark, work, args.log2_tiles, args.tile_bytes, args.versions)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    command = "python bench/updates.py" + "".join(f" --{k.replace('_', '-')} {v}" for k, v in vars(args).items()
                                                   if k != "out")
    import report

    report.write_section("updates", section(res, command), path=args.out)
    print(json.dumps(res, indent=2))
    return res


if __name__ == "__main__":
    main()
