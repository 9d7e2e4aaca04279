"""Driver-side box queries (``Layer.query``) against a Spark read, and random look-ups over many files.

Run alone (it starts its own local Spark and writes its layers under ``--work``)::

    .venv/bin/python bench/lookups.py            # both studies, writes its section of bench/RESULTS.md
    .venv/bin/python bench/lookups.py --quick    # small layers, nothing written (a smoke run)

Studies
-------
query
    A 2^16-tile layer (256 x 256 tiles of 2 KiB). Boxes of 10 x 10 = 100 and 32 x 32 = 1,024 tiles at
    random places; each box asked once to warm the files up, then timed: ``list(layer.query(keys=box))``
    (decoded dicts in Python), ``layer.count(keys=box)``, and ``sfclayer.read(spark, path,
    keys=box).collect()`` (a Spark job) on the same box. Medians over the boxes.
random
    A 2^20-tile layer (1024 x 1024 tiles of ~280 bytes) written with 1 MiB blocks: ~300 data files.
    A fresh ``Layer`` answers uniformly random keys with ``Layer.get``; p50/p99 per key, timed in
    Python (socket and decode included) and inside the JVM (``LookupTiming.timeGets``: no transport).
    Each way of opening data files the reader offers is measured in the same run (see RESULTS.md).
"""

import argparse
import datetime as dt
import os
import platform
import shutil
import struct
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

import sfclayer  # noqa: E402

__all__ = ["query_study", "random_study", "main"]

_perf = time.perf_counter
SECTION = "Driver box queries and random look-ups (bench/lookups.py)"


def _ms(seconds):
    a = np.asarray(seconds, dtype=float) * 1e3
    return {"n": int(a.size), "p50": float(np.percentile(a, 50)), "p99": float(np.percentile(a, 99)),
            "mean": float(a.mean())}


def _write_grid(spark, path, side, value_bytes, block_size, partitions, extent=None):
    from pyspark.sql import functions as F

    df = (spark.range(side * side, numPartitions=partitions)
          .select((F.col("id") % side).cast("int").alias("col"),
                  (F.col("id") / side).cast("int").alias("row"))
          .withColumn("values", F.expr(f"substring(unhex(repeat(sha2(cast(col * 7919 + row as string), 256), "
                                       f"{(value_bytes + 31) // 32})), 1, {value_bytes})")))
    t = _perf()
    sfclayer.write(df, path, mode="overwrite", bounds=(0, 0, side - 1, side - 1), block_size=block_size,
                   partitions=partitions, extent=extent)
    return _perf() - t


def query_study(spark, work, side=256, tile_bytes=2048, boxes=7, repeats=5, log=print):
    """Layer.query/count against sfclayer.read(...).collect() on 100- and 1,024-tile boxes."""
    path = os.path.join(work, f"query-{side}")
    _write_grid(spark, path, side, tile_bytes, "32m", 2)
    rng = np.random.default_rng(11)
    out = {"tiles": side * side, "tile_bytes": tile_bytes, "rows": []}
    with sfclayer.open(spark, path) as layer:
        out["files"] = len(layer.metadata["files"])
        for edge in (10, 32):
            q, c, s = [], [], []
            for _ in range(boxes):
                c0, r0 = (int(v) for v in rng.integers(0, side - edge, size=2))
                box = (c0, r0, c0 + edge - 1, r0 + edge - 1)
                got = list(layer.query(keys=box))  # warm-up: the box's files open
                assert len(got) == edge * edge, (box, len(got))
                q.append(min(_timed(lambda: list(layer.query(keys=box))) for _ in range(repeats)))
                c.append(min(_timed(lambda: layer.count(keys=box)) for _ in range(repeats)))
                rows = sfclayer.read(spark, path, keys=box).collect()
                assert len(rows) == edge * edge
                s.append(min(_timed(lambda: sfclayer.read(spark, path, keys=box).collect())
                             for _ in range(max(2, repeats // 2))))
            row = {"tiles": edge * edge, "query_ms": 1e3 * float(np.median(q)),
                   "count_ms": 1e3 * float(np.median(c)), "spark_ms": 1e3 * float(np.median(s))}
            out["rows"].append(row)
            log(f"query {row['tiles']} tiles: Layer.query {row['query_ms']:.2f} ms, count {row['count_ms']:.2f} ms, "
                f"read().collect() {row['spark_ms']:.1f} ms")
    return out


def _timed(fn):
    t = _perf()
    fn()
    return _perf() - t


def _timing(spark):
    """The JVM-side timers (``io.sfclayer.bench.LookupTiming``, in build/libs/sfclayer-bench.jar)."""
    return spark.sparkContext._jvm.io.sfclayer.bench.LookupTiming


def _pack(keys):
    return b"".join(struct.pack(">iiq", int(c), int(r), 0) for c, r in keys)


#: Ways the reader can open data files: name -> sfclayer.open keywords.
OPEN_MODES = {
    "MapFile.Reader, LRU of 16 files (before)": {"cache_size": 16, "_open_mode": "mapfile"},
    "MapFile.Reader, memory-sized LRU": {"_open_mode": "mapfile"},
    "index in the driver, memory-sized LRU (default)": {},
}


def random_study(spark, work, side=1024, tile_bytes=280, keys=3000, block_size="1m", log=print, modes=None):
    """Random-key Layer.get over a layer of ~300 files, for each way of opening data files."""
    path = os.path.join(work, f"random-{side}")
    write_s = _write_grid(spark, path, side, tile_bytes, block_size, 4)
    rng = np.random.default_rng(5)
    sample = list(zip(rng.integers(0, side, size=keys).tolist(), rng.integers(0, side, size=keys).tolist()))
    out = {"tiles": side * side, "tile_bytes": tile_bytes, "block_size": block_size, "keys": keys,
           "write_s": write_s, "rows": []}
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    _timing(spark).timeColdOpens(conf, path, 20)  # JIT warm-up
    with sfclayer.open(spark, path) as layer:
        n = len(layer.metadata["files"])
    raw = np.array(list(_timing(spark).timeColdOpens(conf, path, n)), dtype=float).reshape(-1, 5) / 1e6
    phases = ["MapFile.Reader open (index and data SequenceFile headers)",
              "its first get (index read and inflated, seek, read)",
              "index read alone (done once per file, then kept)",
              "data file open alone", "first get from the kept index"]
    out["cold"] = [{"phase": p, "p50": float(np.percentile(raw[:, k], 50)),
                    "mean": float(raw[:, k].mean())} for k, p in enumerate(phases)]
    for c in out["cold"]:
        log(f"cold open: {c['phase']}: p50 {c['p50']:.3f} ms, mean {c['mean']:.3f} ms")
    for name, kw in (modes or OPEN_MODES).items():
        try:
            with sfclayer.open(spark, path, **kw) as layer:
                out["files"] = len(layer.metadata["files"])
                py = []
                for c, r in sample:
                    t = _perf()
                    layer.get(c, r)
                    py.append(_perf() - t)
                stats = layer.stats()
            with sfclayer.open(spark, path, **kw) as layer:
                nanos = list(_timing(spark).timeGets(layer._reader, _pack(sample)))
                assert all(n >= 0 for n in nanos)
        except TypeError as e:  # a mode this version does not offer
            log(f"random: skipping {name}: {e}")
            continue
        row = {"mode": name, "python": _ms(py), "jvm": _ms([n / 1e9 for n in nanos]), **stats}
        out["rows"].append(row)
        log(f"random {name}: Layer.get p50 {row['python']['p50']:.3f} ms p99 {row['python']['p99']:.3f} ms; "
            f"JVM p50 {row['jvm']['p50']:.3f} ms p99 {row['jvm']['p99']:.3f} ms; {stats}")
    return out


def render(results, command, seconds):
    lines = [f"## {SECTION}", "",
             f"Generated by `{command}` on {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC in "
             f"{seconds / 60:.1f} min ({platform.machine()}, {os.cpu_count()} cores, local filesystem, "
             f"load average at the end {os.getloadavg()[0]:.1f}). Other studies share the machine: figures "
             "are side by side in one run, not absolute.", ""]
    q = results.get("query")
    if q:
        lines += [f"### Box queries on the driver ({q['tiles']:,} tiles of {q['tile_bytes']:,} bytes, "
                  f"{q['files']} files, warm)", "",
                  "Median over 7 random boxes of the best of 5 runs. `Layer.query`: the tiles as decoded "
                  "dicts in Python, streamed over the look-up socket; `sfclayer.read(...).collect()`: "
                  "the same box through a Spark job. Goals: 100 tiles ≤ 10 ms, 1,000 tiles ≤ 50 ms.", "",
                  "| box | Layer.query | Layer.count | read().collect() | × faster |",
                  "|---:|---:|---:|---:|---:|"]
        for r in q["rows"]:
            lines.append(f"| {r['tiles']:,} tiles | {r['query_ms']:.2f} ms | {r['count_ms']:.2f} ms | "
                         f"{r['spark_ms']:.1f} ms | {r['spark_ms'] / r['query_ms']:.0f}× |")
        lines.append("")
    rnd = results.get("random")
    if rnd:
        lines += [f"### Random look-ups over many files ({rnd['tiles']:,} tiles of ~{rnd['tile_bytes']} bytes, "
                  f"{rnd['block_size']} blocks, {rnd.get('files', '?')} files)", "",
                  f"{rnd['keys']:,} uniformly random keys on a fresh `Layer` (cold opens included), "
                  "`Layer.get` timed in Python and the same keys timed inside the JVM on another fresh "
                  "reader. Goals: p50 ≤ 0.3 ms, p99 ≤ 2 ms.", "",
                  "| data files opened by | Layer.get p50 | p99 | JVM p50 | JVM p99 | files opened | open at the end |",
                  "|---|---:|---:|---:|---:|---:|---:|"]
        for r in rnd["rows"]:
            lines.append(f"| {r['mode']} | {r['python']['p50']:.3f} ms | {r['python']['p99']:.3f} ms | "
                         f"{r['jvm']['p50']:.3f} ms | {r['jvm']['p99']:.3f} ms | {r['files_opened']} | "
                         f"{r['open_files']} |")
        lines.append("")
        if rnd.get("cold"):
            lines += ["Where a cold open goes (every file of the layer opened once each way, timed inside the "
                      "JVM, `LookupTiming.timeColdOpens`; the OS page cache is warm):", "",
                      "| phase | p50 | mean |", "|---|---:|---:|"]
            for c in rnd["cold"]:
                lines.append(f"| {c['phase']} | {c['p50']:.3f} ms | {c['mean']:.3f} ms |")
            lines.append("")
    lines += ["The look-up server under abuse (200 connections that never authenticate, garbage after a "
              "valid token, a wrong token, a request stopped midway, a request for 2^31 keys, a client "
              "that never reads) is a test, not a benchmark: `pytest -s tests/test_lookup_server.py -k abuse` "
              "prints the honest clients' p50/p99 during the abuse.", ""]
    extra = results.get("notes")
    if extra:
        lines += [extra, ""]
    return "\n".join(lines)


def write_section(text):
    """Replaces this study's block of RESULTS.md (``lookups``), leaving the others alone."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import report

    report.write_section("lookups", text)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small layers; RESULTS.md untouched")
    ap.add_argument("--only", choices=["query", "random"], help="one study")
    ap.add_argument("--work", default="/tmp/sfclayer-bench-lookups")
    args = ap.parse_args(argv)
    args.quick = args.quick or os.environ.get("SFCLAYER_BENCH_QUICK") == "1"  # bench/run.py --quick
    t0 = _perf()
    spark = sfclayer.session("local[2]", app_name="sfclayer-bench-lookups", **{
        "spark.jars": os.path.join(ROOT, "build", "libs", "sfclayer-bench.jar"),  # gradle benchJar
        "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false", "spark.driver.memory": "4g",
        "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"})
    spark.sparkContext.setLogLevel("WARN")
    os.makedirs(args.work, exist_ok=True)
    results = {}
    try:
        if args.only in (None, "query"):
            results["query"] = query_study(spark, args.work, side=64 if args.quick else 256)
        if args.only in (None, "random"):
            results["random"] = random_study(spark, args.work, side=128 if args.quick else 1024,
                                             keys=300 if args.quick else 3000,
                                             block_size="64k" if args.quick else "1m")
    finally:
        spark.stop()
        shutil.rmtree(args.work, ignore_errors=True)
    text = render(results, "python bench/lookups.py" + (f" --only {args.only}" if args.only else ""), _perf() - t0)
    print(text)
    if not args.quick:
        write_section(text)


if __name__ == "__main__":
    main()
