"""Benchmark of delta appends (issue 38, docs/FORMAT.md section 11): a one-tile append and a 1 % append
as delta files against a full rewrite of the layer, the same as copy-on-write, and a one-tile append's
independence of the layer's size. Runs alone:

    .venv/bin/python bench/deltas.py [--log2-tiles 18] [--tile-bytes 1024] [--small 10000] [--large 1000000]

and writes its block of bench/RESULTS.md (``report.write_section``; other blocks are kept). Every ratio is
measured side by side in one run, on one SparkSession.
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

import sfclayer  # noqa: E402

__all__ = ["run", "section", "main"]


def tiles(spark, col0, row0, width, height, tile_bytes, mult):
    """A box of tiles computed by Spark (a range: Spark estimates its size, so a small one skips the shuffle)."""
    from pyspark.sql import functions as F

    return (spark.range(width * height)
            .select((F.col("id") % width + col0).cast("int").alias("col"),
                    (F.floor(F.col("id") / width) + row0).cast("int").alias("row"))
            .withColumn("v", F.col("col") * mult + F.col("row"))
            .withColumn("payload", F.expr(f"unhex(repeat(lpad(hex(v), 8, '0'), {max(1, tile_bytes // 4)}))")))


def local_tile(spark, col, row, tile_bytes, mult):
    """One tile as a local relation (pandas through Arrow): written on the driver without a Spark job."""
    import pandas as pd

    v = col * mult + row
    payload = bytes.fromhex(f"{v:08x}" * max(1, tile_bytes // 4))
    pdf = pd.DataFrame({"col": pd.Series([col], dtype="int32"), "row": pd.Series([row], dtype="int32"),
                        "v": pd.Series([v], dtype="int32"), "payload": [payload]})
    return spark.createDataFrame(pdf)


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def newest(path):
    log = os.path.join(path, "_sfclayer")
    name = sorted(n for n in os.listdir(log) if n.startswith("v") and n.endswith(".json"))[-1]
    with open(os.path.join(log, name)) as f:
        return json.load(f)


def median_of(fn, repeat):
    return statistics.median(timed(fn)[0] for _ in range(repeat))


def one_tile_times(spark, path, side, tile_bytes, repeat, start):
    """Median times of one-tile appends: local (no job), by a Spark range (one job), copy-on-write."""
    no_auto = dict(compact_after_deltas=0)
    k = [start]

    def nxt():
        k[0] += 1
        return (k[0] * 7919) % side, (k[0] * 104729) % side

    def local():
        c, r = nxt()
        sfclayer.write(local_tile(spark, c, r, tile_bytes, 3), path, mode="append", **no_auto)

    def ranged():
        c, r = nxt()
        sfclayer.write(tiles(spark, c, r, 1, 1, tile_bytes, 3), path, mode="append", **no_auto)

    def rewrite():
        c, r = nxt()
        sfclayer.write(tiles(spark, c, r, 1, 1, tile_bytes, 3), path, mode="append", append_mode="rewrite")

    local()  # warm-up of each path's classes
    ranged()
    out = {"local_s": median_of(local, repeat), "range_s": median_of(ranged, repeat)}
    out["delta"] = newest(path)["operation"].get("delta", False)
    out["rewrite_s"] = median_of(rewrite, max(1, repeat // 2))
    return out


def run(spark, work, log2_tiles, tile_bytes, small, large, repeat=7, log=print):
    side = 1 << (log2_tiles // 2)
    n = side * side
    opts = dict(bounds=(0, 0, side - 1, side - 1), block_size="1m", partitions=4, compression="none")
    res = {"tiles": n, "tile_bytes": tile_bytes}
    base = os.path.join(work, "base")
    full = lambda mode: sfclayer.write(tiles(spark, 0, 0, side, side, tile_bytes, 1000), base, mode=mode, **opts)
    res["first_write_s"], _ = timed(lambda: full("errorifexists"))
    res["rewrite_s"], _ = timed(lambda: full("overwrite"))
    res["files"] = newest(base)["fileCount"]
    log(f"{n} tiles: full rewrite {res['rewrite_s']:.2f} s ({res['files']} files)")

    res["one"] = one_tile_times(spark, base, side, tile_bytes, repeat, 0)
    log(f"one tile: {res['one']}")
    res["compact_deltas"] = 8
    for i in range(res["compact_deltas"]):
        sfclayer.write(local_tile(spark, (i * 31) % side, (i * 17) % side, tile_bytes, 5), base, mode="append",
                       compact_after_deltas=0)
    res["compact_s"], _ = timed(lambda: sfclayer.compact(spark, base))

    # 1 %: a box of n/100 tiles, as deltas (auto) and copy-on-write
    box = max(1, int(round((n * 0.01) ** 0.5)))
    b0 = side // 3
    pct = lambda mult, **o: sfclayer.write(tiles(spark, b0, b0, box, box, tile_bytes, mult), base, mode="append",
                                           partitions=4, compact_after_deltas=0, **o)
    pct(5, append_mode="delta")  # warm-up
    sfclayer.compact(spark, base)
    res["pct_delta_s"], _ = timed(lambda: pct(7, append_mode="delta"))
    res["pct_bytes"] = newest(base)["operation"]["metrics"]["bytesWritten"]
    sfclayer.compact(spark, base)
    res["pct_auto_s"], _ = timed(lambda: pct(8))
    doc = newest(base)
    res["pct_auto_delta"] = doc["operation"].get("delta", False)
    sfclayer.compact(spark, base)
    res["pct_rewrite_s"], _ = timed(lambda: pct(9, append_mode="rewrite"))
    res["pct_rewrite_bytes"] = newest(base)["operation"]["metrics"]["bytesWritten"]
    res["pct_tiles"] = box * box
    log(f"1 %: delta {res['pct_delta_s']:.2f} s, auto {res['pct_auto_s']:.2f} s, "
        f"copy-on-write {res['pct_rewrite_s']:.2f} s")

    # a one-tile append's independence of the layer's size (64-byte tiles: the size, not the bytes), the two
    # layers' appends interleaved so that the machine's load drifts alike over both
    res["size"] = {}
    paths = {}
    for count in (small, large):
        s = int(round(count ** 0.5))
        paths[count] = (os.path.join(work, f"n{count}"), s)
        sfclayer.write(tiles(spark, 0, 0, s, s, 64, 1000), paths[count][0], bounds=(0, 0, s - 1, s - 1),
                       block_size="1m", partitions=4, compression="none")
        res["size"][count] = {"tiles": s * s, "local": [], "range": []}
    for i in range(2 * repeat + 2):
        for count, (p, s) in paths.items():
            c, r = (i * 7919) % s, (i * 104729) % s
            t_local, _ = timed(lambda: sfclayer.write(local_tile(spark, c, r, 64, 3), p, mode="append",
                                                      compact_after_deltas=0))
            t_range, _ = timed(lambda: sfclayer.write(tiles(spark, r, c, 1, 1, 64, 3), p, mode="append",
                                                      compact_after_deltas=0))
            if i >= 2:  # warm-up
                res["size"][count]["local"].append(t_local)
                res["size"][count]["range"].append(t_range)
    for count, (p, s) in paths.items():
        z = res["size"][count]
        z["local_s"], z["range_s"] = statistics.median(z.pop("local")), statistics.median(z.pop("range"))
        z["files"] = newest(p)["fileCount"]
        log(f"{s * s} tiles: {z}")
    return res


def section(res, command):
    o, s = res["one"], res["size"]
    small, large = sorted(s)
    rw = res["rewrite_s"]
    mib = 1 << 20
    lines = [
        "## Delta appends (format 7)",
        "",
        f"`{command}` — {res['tiles']} tiles of ~{res['tile_bytes']} B, 1 MiB blocks ({res['files']} files), local "
        "filesystem, `local[2]`, one run, medians of 7 appends (of 2 × 7 interleaved ones for the layer-size comparison). **The machine was loaded** (2 cores shared with "
        "other sessions' builds and tests): absolute times are high and noisy, the ratios are side by side.",
        "",
        "| measure | value | target |",
        "|---|---|---|",
        f"| full rewrite (overwrite) of the layer | {rw:.2f} s | |",
        f"| one-tile append, local DataFrame (pandas via Arrow: a local relation, no Spark job) / full rewrite | "
        f"{o['local_s'] * 1e3:.0f} ms = **{o['local_s'] / rw:.4f}×** | ≤ 0.02× |",
        f"| one-tile append, `spark.range` DataFrame (one small job to collect it) / full rewrite | "
        f"{o['range_s'] * 1e3:.0f} ms = **{o['range_s'] / rw:.4f}×** | |",
        f"| one-tile append copy-on-write (`appendMode=rewrite`) / full rewrite | {o['rewrite_s'] * 1e3:.0f} ms = "
        f"**{o['rewrite_s'] / rw:.4f}×** | (before) |",
        f"| 1 % append ({res['pct_tiles']} tiles) as delta files (`appendMode=delta`) / full rewrite | "
        f"{res['pct_delta_s']:.2f} s = **{res['pct_delta_s'] / rw:.3f}×**, {res['pct_bytes'] / mib:.1f} MiB written | "
        "≤ 0.05× |",
        f"| the same, `appendMode=auto` (chose {'deltas' if res['pct_auto_delta'] else 'copy-on-write'}) / full "
        f"rewrite | {res['pct_auto_s']:.2f} s = **{res['pct_auto_s'] / rw:.3f}×** | |",
        f"| the same copy-on-write / full rewrite | {res['pct_rewrite_s']:.2f} s = "
        f"**{res['pct_rewrite_s'] / rw:.3f}×**, {res['pct_rewrite_bytes'] / mib:.1f} MiB written | |",
        f"| one-tile local append on {s[large]['tiles']} / on {s[small]['tiles']} tiles (64 B) | "
        f"{s[large]['local_s'] * 1e3:.0f} ms / {s[small]['local_s'] * 1e3:.0f} ms = "
        f"**{s[large]['local_s'] / s[small]['local_s']:.2f}×** | ≤ 1.5× |",
        f"| the same by a `spark.range` DataFrame | {s[large]['range_s'] * 1e3:.0f} ms / "
        f"{s[small]['range_s'] * 1e3:.0f} ms = **{s[large]['range_s'] / s[small]['range_s']:.2f}×** | |",
        f"| `compact` folding {res['compact_deltas']} one-tile deltas | {res['compact_s']:.2f} s | |",
        "",
        "A delta append writes only its own tiles (one small file on the driver for a local DataFrame) and a "
        "version document; it never reads a base file. `appendMode=auto` writes deltas when the base files "
        "the tiles fall into hold more than `deltaRewriteRatio` (4) × their bytes: always for a one-tile "
        "append here; for the 1 % box, whose tiles fill most of the 1 MiB files they fall into, it is a "
        "near thing either way. What is left of a one-tile local append is the commit's file operations "
        "(this machine's Hadoop has no native library: each create or mkdir on the local filesystem forks a "
        "`chmod`, ~5-8 ms) and the version document.",
    ]
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    quick = bool(os.environ.get("SFCLAYER_BENCH_QUICK"))
    p.add_argument("--log2-tiles", type=int, default=12 if quick else 18)
    p.add_argument("--tile-bytes", type=int, default=1024)
    p.add_argument("--small", type=int, default=10_000)
    p.add_argument("--large", type=int, default=40_000 if quick else 1_000_000)
    p.add_argument("--out", default=os.path.join(HERE, "RESULTS.md"))
    args = p.parse_args(argv)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = sfclayer.session("local[2]", app_name="sfclayer-bench-deltas", **{
        "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "4", "spark.driver.memory": "2g",
        "spark.sql.execution.arrow.pyspark.enabled": "true"})
    spark.sparkContext.setLogLevel("ERROR")
    work = tempfile.mkdtemp(prefix="sfclayer-bench-deltas-")
    try:
        res = run(spark, work, args.log2_tiles, args.tile_bytes, args.small, args.large)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    command = "python bench/deltas.py" + "".join(f" --{k.replace('_', '-')} {v}" for k, v in vars(args).items()
                                                  if k != "out")
    import report

    report.write_section("deltas", section(res, command), path=args.out)
    print(json.dumps(res, indent=2, default=str))
    return res


if __name__ == "__main__":
    main()
