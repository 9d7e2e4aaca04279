"""Reads of a layer with delta files (issue 38, format 7): a 1% box and warm look-ups, merged against
the same tiles compacted.

Run alone (it starts its own local Spark with the bench jar, ``gradle benchJar``, and writes its
layers under ``--work``)::

    PYTHONPATH=python .venv/bin/python bench/delta_reads.py           # writes its section of bench/RESULTS.md
    PYTHONPATH=python .venv/bin/python bench/delta_reads.py --quick   # a small layer, nothing written

The layer: ``side`` × ``side`` tiles of ``tile_bytes`` bytes (1 MiB blocks, bloom filters, the
writer's defaults otherwise), then 10 delta versions, each replacing a random 1% of the keys. No
writer writes deltas yet: each delta version is a layer of those tiles written apart and listed as
deltas by ``io.sfclayer.testing.DeltaVersions`` (the test jar), so each delta spans the whole index
range, as a random append's would. The compacted layer: the merged tiles written afresh.

1% box
    a Spark read of a random square of 1% of the key space (count and summed value lengths: every
    value read), interleaved merged / compacted, medians over the boxes.
warm look-up
    ``ValueReader.getOrNull`` inside the JVM (``LookupTiming``, no transport) on one reader whose
    files are all open (a first pass over every key), random present keys.

Goals (issue 38): with 10 deltas, a 1% box ≤ 1.2× the compacted layer's time, a warm look-up ≤ 1.3×.
"""

import argparse
import datetime as dt
import os
import platform
import random
import shutil
import struct
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import sfclayer  # noqa: E402
from common import open_value_reader  # noqa: E402

__all__ = ["delta_study", "render", "main"]

SECTION = "Reads with delta files (bench/delta_reads.py, issue 38)"
_perf = time.perf_counter


def _tiles(spark, keys, tile_bytes, salt):
    """Tiles at ``keys`` whose ``values`` (a string of ``tile_bytes``) depend on the key and ``salt``."""
    rows = [(int(c), int(r)) for c, r in keys]
    df = spark.createDataFrame(rows, "col int, row int")
    reps = tile_bytes // 64 + 1
    return df.selectExpr("col", "row", f"substring(repeat(sha2(concat(col, ',', row, ',{salt}'), 256), {reps}), 1, "
                                       f"{tile_bytes}) AS values")


def _write(spark, df, path, side, partitions):
    sfclayer.write(df, path, bounds=(0, 0, side - 1, side - 1), block_size="1m", partitions=partitions,
                   quiet=True)


def _pack(keys):
    return b"".join(struct.pack(">iiq", int(c), int(r), 0) for c, r in keys)


def delta_study(spark, work, side=256, tile_bytes=1024, deltas=10, share=0.01, boxes=15, look_ups=3000):
    jvm = spark.sparkContext._jvm
    rng = random.Random(38)
    every = [(c, r) for c in range(side) for r in range(side)]
    merged, compacted = os.path.join(work, "merged"), os.path.join(work, "compacted")
    t = _perf()
    _write(spark, _tiles(spark, every, tile_bytes, 0), merged, side, 4)
    base_s = _perf() - t
    newest = {k: 0 for k in every}
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    for i in range(1, deltas + 1):
        keys = rng.sample(every, int(len(every) * share))
        src = os.path.join(work, f"delta{i}")
        _write(spark, _tiles(spark, keys, tile_bytes, i), src, side, 1)
        jvm.io.sfclayer.testing.DeltaVersions.add(conf, merged, src)
        for k in keys:
            newest[k] = i
    full = sfclayer.read(spark, merged).selectExpr("col", "row", "values")
    t = _perf()
    _write(spark, full, compacted, side, 4)
    compact_s = _perf() - t
    md = sfclayer.open(spark, merged).metadata
    n_deltas = len(md.get("deltas", []))

    def timed_box(path, c0, r0, w):
        t0 = _perf()
        row = sfclayer.read(spark, path, keys=(c0, r0, c0 + w - 1, r0 + w - 1)).selectExpr(
            "count(1) AS n", "sum(length(values)) AS b").collect()[0]
        return _perf() - t0, int(row["n"])

    w = max(1, int(round(side * share ** 0.5)))
    timed_box(merged, 0, 0, w)  # warm both paths up
    timed_box(compacted, 0, 0, w)
    box_m, box_c = [], []
    for _ in range(boxes):
        c0, r0 = rng.randrange(side - w + 1), rng.randrange(side - w + 1)
        sm, nm = timed_box(merged, c0, r0, w)
        sc, nc = timed_box(compacted, c0, r0, w)
        assert nm == nc == w * w, (nm, nc, w)
        box_m.append(sm)
        box_c.append(sc)

    keys = rng.sample(every, min(look_ups, len(every)))
    packed = _pack(keys)
    look = {}
    timing = jvm.io.sfclayer.bench.LookupTiming
    for name, path in (("merged", merged), ("compacted", compacted)):
        reader = open_value_reader(spark, path)
        try:
            jvm.io.sfclayer.lookup.TileAnswers.many(reader, _pack(every))  # every file open, every filter and index read
            timing.timeGets(reader, packed)  # and a first timed pass
            nanos = np.array(list(timing.timeGets(reader, packed)))
            assert (nanos > 0).all(), "a present key was missed"
            look[name] = (np.percentile(nanos, 50) / 1e6, np.percentile(nanos, 99) / 1e6, int(reader.bloomSkips()))
        finally:
            reader.close()
    return {"side": side, "tile_bytes": tile_bytes, "deltas": deltas, "delta_files": n_deltas, "share": share,
            "base_files": int(md["fileCount"]), "base_s": base_s, "compact_s": compact_s, "box_side": w,
            "box_merged": float(np.median(box_m)), "box_compacted": float(np.median(box_c)), "boxes": boxes,
            "look": look, "look_ups": len(keys)}


def render(r, command, seconds):
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    box_ratio = r["box_merged"] / r["box_compacted"]
    lm, lc = r["look"]["merged"], r["look"]["compacted"]
    look_ratio = lm[0] / lc[0]
    lines = [
        f"## {SECTION}", "",
        f"Generated by `{command}` on {now} in {seconds / 60:.1f} min ({platform.machine()}, {os.cpu_count()} cores, "
        f"local filesystem, load average at the end {load:.1f}). Other jobs share the machine: the figures are side "
        "by side in one run, not absolute.", "",
        f"A layer of {r['side']} × {r['side']} tiles of {r['tile_bytes']:,} bytes ({r['base_files']} base files, "
        f"bloom filters), then {r['deltas']} delta versions of {r['share']:.0%} of the keys each at random "
        f"({r['delta_files']} delta files, each spanning the whole index range), built by hand "
        "(io.sfclayer.testing.DeltaVersions: no writer writes deltas yet); the compacted layer is the merged "
        "tiles written afresh.", "",
        "| read | merged (10 deltas) | compacted | merged / compacted | goal |",
        "|---|---:|---:|---:|---|",
        f"| 1% box ({r['box_side']} × {r['box_side']} tiles, Spark, median of {r['boxes']}) | "
        f"{r['box_merged'] * 1e3:.0f} ms | {r['box_compacted'] * 1e3:.0f} ms | {box_ratio:.2f}× | ≤ 1.2×: "
        f"**{'met' if box_ratio <= 1.2 else 'missed'}** |",
        f"| warm look-up p50 ({r['look_ups']:,} present keys, in the JVM) | {lm[0]:.4f} ms | {lc[0]:.4f} ms | "
        f"{look_ratio:.2f}× | ≤ 1.3×: **{'met' if look_ratio <= 1.3 else 'missed'}** |",
        f"| warm look-up p99 | {lm[1]:.4f} ms | {lc[1]:.4f} ms | {lm[1] / lc[1]:.2f}× | |",
        "",
        f"A look-up asks the deltas whose span holds its index, newest first, then the base file: here every "
        f"delta holds every index, so a look-up tests up to {r['deltas']} bloom filters before it finds its tile "
        f"({lm[2]:,} delta files skipped by their filter over the warm-up and timed passes); a box's "
        "partitions each merge the deltas meeting their ranges (one more file opened and seeked per delta).",
        "",
    ]
    return "\n".join(lines)


def write_section(text):
    """Replaces this study's block of RESULTS.md (``deltas``), leaving the others alone."""
    import report

    report.write_section("deltas", text)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a small layer; RESULTS.md untouched")
    ap.add_argument("--work", default="/tmp/sfclayer-bench-deltas")
    args = ap.parse_args(argv)
    args.quick = args.quick or os.environ.get("SFCLAYER_BENCH_QUICK") == "1"
    t0 = _perf()
    spark = sfclayer.session("local[2]", app_name="sfclayer-bench-deltas", **{
        "spark.jars": os.path.join(ROOT, "build", "libs", "sfclayer-bench.jar"),  # gradle benchJar
        "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false", "spark.driver.memory": "4g",
        "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"})
    spark.sparkContext.setLogLevel("WARN")
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work, exist_ok=True)
    try:
        if args.quick:
            results = delta_study(spark, args.work, side=64, tile_bytes=256, boxes=4, look_ups=300)
        else:
            results = delta_study(spark, args.work)
    finally:
        spark.stop()
        shutil.rmtree(args.work, ignore_errors=True)
    text = render(results, "PYTHONPATH=python .venv/bin/python bench/delta_reads.py", _perf() - t0)
    print(text)
    if not args.quick:
        write_section(text)


if __name__ == "__main__":
    main()
