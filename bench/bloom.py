"""Bloom filters per data file (issue 16, seed 003): does a look-up miss get faster?

Run alone (it starts its own local Spark with the bench jar, ``gradle benchJar``, and writes its
layers under ``--work``)::

    PYTHONPATH=python .venv/bin/python bench/bloom.py           # writes its section of bench/RESULTS.md
    PYTHONPATH=python .venv/bin/python bench/bloom.py --quick   # a small layer, nothing written

The layer: a 1024 x 1024 key space (2^20 keys) of which a random 10% hold a tile (~1 KiB), written
with 1 MiB blocks, twice in the same run: with bloom filters (``bloom_filter=True``, fpp 0.01) and
without. A *miss* is a key absent from the layer (every one lies inside some file's index range, so
without a filter its file must be opened and searched). Timed inside the JVM (no transport), with
and without filters side by side:

cold, new reader
    each miss on a new ``ValueReader`` (opening it is not timed): nothing of the file is in memory.
    The reader reads no index in the background (``indexInDriver`` false) so the timed miss runs
    alone; without a filter the miss reads the file's index, opens its data file and reads a record,
    with one it reads the file's ``bloom`` sidecar.
cold file, after the preload
    a default reader once its background preload has read every file's index and filter, with one
    open file at a time: one miss per file, in random order, each on a file not open (without a
    filter: a data-file open and a read; with one: the kept filter, nothing opened).
warm
    one reader with every file open and every filter read, then random misses.
hits, cold new reader / hits, warm
    present keys, as in the first and third case: what filters cost look-ups that find their tile
    (cold: the sidecar is read besides the index and the data).

The default follows the issue's rule: bloom filters become the default only when the cold miss
(new reader) gets at least 2x faster at the median; the verdict is written with the figures.
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

__all__ = ["bloom_study", "render", "main"]

SECTION = "Bloom filters per data file (bench/bloom.py)"
_perf = time.perf_counter


def _pack(keys):
    return b"".join(struct.pack(">iiq", int(c), int(r), 0) for c, r in keys)


def _ms(nanos):
    a = np.abs(np.asarray(nanos, dtype=float)) / 1e6
    return {"n": int(a.size), "p50": float(np.percentile(a, 50)), "p99": float(np.percentile(a, 99)),
            "mean": float(a.mean())}


def _write(spark, path, present, side, tile_bytes, block_size, bloom):
    from pyspark.sql import functions as F

    cols, rows = np.nonzero(present.reshape(side, side).T)  # present[row * side + col]
    df = (spark.createDataFrame([(int(c), int(r)) for c, r in zip(cols, rows)], "col int, row int")
          .repartition(4)
          .withColumn("values", F.expr(f"substring(unhex(repeat(sha2(cast(col * 7919 + row as string), 256), "
                                       f"{(tile_bytes + 31) // 32})), 1, {tile_bytes})")))
    t = _perf()
    sfclayer.write(df, path, mode="overwrite", bounds=(0, 0, side - 1, side - 1), block_size=block_size,
                   partitions=4, bloom_filter=bloom)
    return _perf() - t


def _sidecar_bytes(path):
    total = 0
    for d, _, names in os.walk(path):
        if "bloom" in names:
            total += os.path.getsize(os.path.join(d, "bloom"))
    return total


def bloom_study(spark, work, side=1024, share=0.1, tile_bytes=1024, block_size="1m", cold_keys=300,
                warm_keys=3000, log=print):
    """Misses cold and warm, with and without bloom filters, on one sparse layer written both ways."""
    jvm = spark.sparkContext._jvm
    timing = jvm.io.sfclayer.bench.LookupTiming
    VR = jvm.io.sfclayer.lookup.ValueReader
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    rng = np.random.default_rng(16)
    present = rng.random(side * side) < share
    absent_ids = np.flatnonzero(~present)
    present_ids = np.flatnonzero(present)

    def keys_of(ids):
        return [(int(i % side), int(i // side)) for i in ids]

    out = {"side": side, "tiles": int(present.sum()), "tile_bytes": tile_bytes, "block_size": block_size,
           "rows": {}, "layers": {}}
    paths = {}
    _write(spark, os.path.join(work, "warm-up"), np.arange(64 * 64) % 10 == 0, 64, 64, "64k", True)
    for name, bloom in (("without", False), ("with", True)):
        path = os.path.join(work, f"bloom-{name}")
        paths[name] = path
        write_s = _write(spark, path, present, side, tile_bytes, block_size, bloom)
        with sfclayer.open(spark, path) as layer:
            files = layer.metadata["files"]
            key_index = layer.key_index
        out["layers"][name] = {"write_s": write_s, "files": len(files), "bloom_bytes": _sidecar_bytes(path),
                               "data_bytes": sum(f["dataBytes"] for f in files),
                               "starts": [f["firstIndex"] for f in files]}
        log(f"layer {name} filters: {len(files)} files, written in {write_s:.1f} s, "
            f"{out['layers'][name]['bloom_bytes']:,} bytes of filters")
    absent_index = np.asarray(key_index.index_array(absent_ids % side, absent_ids // side), dtype=np.int64)
    # JIT warm-up on both layers (not timed)
    for path in paths.values():
        timing.timeColdGets(conf, path, _pack(keys_of(rng.choice(absent_ids, 50))), False)
    cold = keys_of(rng.choice(absent_ids, cold_keys, replace=False))
    warm = keys_of(rng.choice(absent_ids, warm_keys, replace=False))
    hits = keys_of(rng.choice(present_ids, min(warm_keys, present_ids.size), replace=False))
    n = len(cold)
    rows = {}
    for name, path in paths.items():
        # cold, new reader; interleaving the two layers would not change what each miss does
        raw = list(timing.timeColdGets(conf, path, _pack(cold), False))
        n = len(cold)
        assert all(t <= 0 for t in raw[:n]), "a miss key was found"
        rows[("cold, new reader", name)] = {**_ms(raw[:n]), "opened": int(sum(raw[n:]))}
        raw = list(timing.timeColdGets(conf, path, _pack(hits[:cold_keys]), False))
        assert all(t >= 0 for t in raw[:n]), "a present key was missed"
        rows[("hits, cold new reader", name)] = {**_ms(raw[:n]), "opened": int(sum(raw[n:]))}
        # cold file, kept index: wait for the background preload of every index, one open file at a time
        reader = VR.open(conf, path, 1, VR.DEFAULT_CACHE_BYTES, True)
        try:
            files = out["layers"][name]["files"]
            deadline = _perf() + 300
            while (reader.indexesKept() < files or (name == "with" and reader.filtersKept() < files)) \
                    and _perf() < deadline:
                time.sleep(0.05)
            starts = np.array(out["layers"][name]["starts"], dtype=np.int64)
            file_of = np.searchsorted(starts, absent_index, side="right") - 1
            first_absent = {}
            for pos in rng.permutation(absent_ids.size):
                first_absent.setdefault(int(file_of[pos]), int(absent_ids[pos]))
            per_file = keys_of([first_absent[int(i)] for i in rng.permutation(files) if int(i) in first_absent])
            before = reader.filesOpened()
            nanos = list(timing.timeGets(reader, _pack(per_file)))
            rows[("cold file, after the preload", name)] = {**_ms(nanos), "opened": int(reader.filesOpened() - before)}
        finally:
            reader.close()
        # warm: every file open, every filter read
        reader = VR.open(conf, path, 4096, 1 << 30, True)
        try:
            timing.timeGets(reader, _pack(per_file))
            timing.timeGets(reader, _pack(keys_of(rng.choice(present_ids, 2000))))
            timing.timeGets(reader, _pack(warm))
            before = reader.filesOpened()
            nanos = list(timing.timeGets(reader, _pack(warm)))
            rows[("warm", name)] = {**_ms(nanos), "opened": int(reader.filesOpened() - before)}
            nanos = list(timing.timeGets(reader, _pack(hits)))
            assert all(t >= 0 for t in nanos), "a present key was missed"
            rows[("hits, warm", name)] = {**_ms(nanos), "opened": 0}
            out["layers"][name]["bloom_skips"] = int(reader.bloomSkips())
        finally:
            reader.close()
    for (case, name), r in rows.items():
        log(f"{case} {name} filters: p50 {r['p50']:.4f} ms p99 {r['p99']:.4f} ms, {r['opened']} files opened "
            f"over {r['n']} look-ups")
    out["rows"] = [{"case": case, "without": rows[(case, "without")], "with": rows[(case, "with")]}
                   for case in ("cold, new reader", "cold file, after the preload", "warm", "hits, cold new reader",
                                "hits, warm")]
    cold_row = out["rows"][0]
    out["cold_speedup"] = cold_row["without"]["p50"] / cold_row["with"]["p50"]
    out["default"] = out["cold_speedup"] >= 2.0
    out["code_default"] = bool(jvm.io.sfclayer.layer.LayerWriteOptions.DEFAULT_BLOOM_FILTER)
    return out


def render(results, command, seconds):
    r = results
    lw, lo = r["layers"]["with"], r["layers"]["without"]
    lines = [f"## {SECTION}", "",
             f"Generated by `{command}` on {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC in "
             f"{seconds / 60:.1f} min ({platform.machine()}, {os.cpu_count()} cores, local filesystem, "
             f"load average at the end {os.getloadavg()[0]:.1f}). Other jobs share the machine: the figures are "
             "side by side in one run, not absolute.", "",
             f"A sparse layer: {r['tiles']:,} tiles of {r['tile_bytes']:,} bytes at random places in a "
             f"{r['side']} × {r['side']} key space (10% present), {r['block_size']} blocks, written twice: "
             f"{lo['files']} files without filters ({lo['write_s']:.1f} s), {lw['files']} with "
             f"({lw['write_s']:.1f} s; filters {lw['bloom_bytes'] / 1024:.0f} KiB in all, "
             f"{lw['bloom_bytes'] / max(1, lw['data_bytes']):.2%} of the data, fpp 0.01). Misses are absent "
             "keys inside files' ranges; times are one `ValueReader.getOrNull` inside the JVM "
             "(`LookupTiming`; the OS page cache is warm). See the module's docstring for each case.", "",
             "| miss | without p50 | p99 | with p50 | p99 | × faster (p50) | files opened without / with |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for row in r["rows"]:
        a, b = row["without"], row["with"]
        lines.append(f"| {row['case']} ({a['n']:,} look-ups) | {a['p50']:.4f} ms | {a['p99']:.4f} ms | "
                     f"{b['p50']:.4f} ms | {b['p99']:.4f} ms | {a['p50'] / b['p50']:.2f}× | "
                     f"{a['opened']} / {b['opened']} |")
    verdict = (f"**Verdict: a cold miss (new reader) got {r['cold_speedup']:.2f}× faster at the median"
               + (", at least 2×: bloom filters are the default** (`bloomFilter` defaults to true)."
                  if r["default"] else
                  ", short of 2×: bloom filters stay off by default** (`bloomFilter=true` turns them on)."))
    lines += ["", "Write times are in the order written (the first large write of a run also warms Spark up): not a "
              "comparison; a filter costs the writer one hash per index as it appends it, and one small file per "
              "data file. A look-up that finds its tile pays for filters only on a file it has not read before (one "
              "more small read: the sidecar), and the default reader reads filters in the background with the "
              "indexes, so once it has (\"cold file, after the preload\") a miss opens nothing at all.",
              "", verdict, ""]
    if r["default"] != r["code_default"]:
        lines += [f"**The code disagrees: `LayerWriteOptions.DEFAULT_BLOOM_FILTER` is {str(r['code_default']).lower()}; "
                  "flip it (and the README's option table) to follow this measurement.**", ""]
    return "\n".join(lines)


def write_section(text):
    """Replaces this study's block of RESULTS.md (``bloom``), leaving the others alone."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import report

    report.write_section("bloom", text)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a small layer; RESULTS.md untouched")
    ap.add_argument("--work", default="/tmp/sfclayer-bench-bloom")
    args = ap.parse_args(argv)
    args.quick = args.quick or os.environ.get("SFCLAYER_BENCH_QUICK") == "1"  # bench/run.py --quick
    t0 = _perf()
    spark = sfclayer.session("local[2]", app_name="sfclayer-bench-bloom", **{
        "spark.jars": os.path.join(ROOT, "build", "libs", "sfclayer-bench.jar"),  # gradle benchJar
        "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false", "spark.driver.memory": "4g",
        "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"})
    spark.sparkContext.setLogLevel("WARN")
    os.makedirs(args.work, exist_ok=True)
    try:
        if args.quick:
            results = bloom_study(spark, args.work, side=128, tile_bytes=512, block_size="64k", cold_keys=50,
                                  warm_keys=300)
        else:
            results = bloom_study(spark, args.work)
    finally:
        spark.stop()
        shutil.rmtree(args.work, ignore_errors=True)
    text = render(results, "PYTHONPATH=python .venv/bin/python bench/bloom.py", _perf() - t0)
    print(text)
    if not args.quick:
        write_section(text)


if __name__ == "__main__":
    main()
