"""Where a write's time goes (issue 23): sfclayer against plain and Z-sorted Parquet, same cached input.

    PYTHONPATH=python .venv/bin/python bench/write_path.py            # 2^18 tiles of 256 B
    PYTHONPATH=python .venv/bin/python bench/write_path.py --quick    # 2^14 tiles, RESULTS.md untouched

One local[2] session with the bench jar (``gradle benchJar``: ``io.sfclayer.bench.StageTimes``, a
listener summing each stage's task metrics). The input is bench/common.py's tiles, cached and counted
first, so every writer starts from the same memory. Each variant is written ``--repeat`` times; the
table shows the median wall time and, for the last run, each stage's wall time and its tasks' summed
run, CPU, GC and shuffle-write times. sfclayer's variants switch off one part at a time by write
option (compression, bloom filters, format 2's checksums), so each part's cost is a difference.
"""

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, HERE)

import sfclayer  # noqa: E402

__all__ = ["VARIANTS", "run", "render", "main"]

TILE_BYTES = 256

# (label, sfclayer write options or None for a Parquet writer)
VARIANTS = [
    ("Parquet, plain", "parquet"),
    ("Parquet, Z-sorted (repartitionByRange + sortWithinPartitions)", "zparquet"),
    ("sfclayer, default (zstd: a binary column)", {}),
    ("sfclayer, compression none", {"compression": "none"}),
    ("sfclayer, none, no bloom filters", {"compression": "none", "bloom_filter": "false"}),
    ("sfclayer, none, no bloom, format 2 (no checksums)",
     {"compression": "none", "bloom_filter": "false", "format_version": "2"}),
]


def _stages(listener):
    time.sleep(0.3)  # listener events arrive asynchronously
    out = []
    for s in listener.drain():
        d = dict(kv.split("=", 1) for kv in s.split(";"))
        out.append({k: (d[k] if k == "name" else int(d[k])) for k in d})
    return out


def run(spark, log2, repeat, work):
    import common
    from common import with_z

    side = 1 << (log2 // 2)
    n = side * side

    class Cfg:
        tile_bytes, partition_bytes = TILE_BYTES, 64 << 20
    df, parts = common.source(spark, side, Cfg)
    listener = spark._jvm.io.sfclayer.bench.StageTimes()
    spark.sparkContext._jsc.sc().addSparkListener(listener)

    def write(kind, path):
        if kind == "parquet":
            df.write.mode("overwrite").parquet(path)
        elif kind == "zparquet":
            (with_z(df).repartitionByRange(parts, "z").sortWithinPartitions("z")
             .write.mode("overwrite").parquet(path))
        else:
            sfclayer.write(df, path, mode="overwrite", bounds=(0, 0, side - 1, side - 1), partitions=parts, **kind)

    rows = []
    for i, (label, kind) in enumerate(VARIANTS):  # warm-up: each writer's classes and JIT
        write(kind, os.path.join(work, f"warm{i}"))
    _stages(listener)
    for label, kind in VARIANTS:
        times = []
        for _ in range(repeat):
            path = os.path.join(work, "out")
            shutil.rmtree(path, ignore_errors=True)
            _stages(listener)
            t = time.perf_counter()
            write(kind, path)
            times.append(time.perf_counter() - t)
        stages = _stages(listener)
        rows.append({"label": label, "seconds": statistics.median(times), "all": times, "stages": stages})
        print(label, f"{statistics.median(times):.2f} s", [(s["name"][:30], s["wallMs"], s["runMs"]) for s in stages],
              flush=True)
    df.unpersist()
    return {"tiles": n, "partitions": parts, "repeat": repeat, "rows": rows}


def render(rep, command, minutes):
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    plain = rep["rows"][0]["seconds"]
    mb = rep["tiles"] * TILE_BYTES / 1e6
    lines = ["## Where a write's time goes (bench/write_path.py, issue 23)", "",
             f"`{command}` — {minutes:.1f} min, load average at the end {load}. {rep['tiles']:,} tiles of "
             f"{TILE_BYTES} B ({mb:.0f} MB of values), cached and counted before; {rep['partitions']} input "
             f"partitions, local[2]; median of {rep['repeat']} writes. Stages of the last write: wall ms "
             "(tasks' summed run / CPU / GC / shuffle-write ms).", "",
             "| writer | median s | MB/s | × Parquet's speed | stages: wall ms (run / cpu / gc / shuffle write) |",
             "|---|---:|---:|---:|---|"]
    for r in rep["rows"]:
        st = "; ".join(f"{s['tasks']} tasks {s['wallMs']} ({s['runMs']}/{s['cpuMs']}/{s['gcMs']}/{s['shuffleWriteMs']})"
                       for s in r["stages"])
        lines.append(f"| {r['label']} | {r['seconds']:.2f} | {mb / r['seconds']:.0f} | "
                     f"{plain / r['seconds']:.2f}× | {st} |")
    by = {r["label"]: r for r in rep["rows"]}
    z = rep["rows"][1]["seconds"]
    default, none = rep["rows"][2], rep["rows"][3]
    ok = lambda good: "met" if good else "**missed**"  # noqa: E731

    def stage_ms(r, i):
        return r["stages"][i]["wallMs"] if len(r["stages"]) > i else 0
    lines += ["", f"Issue 23's goals in this run: sfclayer (default) at {plain / default['seconds']:.2f}× plain Parquet's "
              f"speed (goal ≥ 0.4×: {ok(plain / default['seconds'] >= 0.4)}), with compression none "
              f"{plain / none['seconds']:.2f}× ({ok(plain / none['seconds'] >= 0.4)}); against Z-sorted Parquet "
              f"{z / default['seconds']:.2f}× and {z / none['seconds']:.2f}× its speed (goal ≥ 1: "
              f"{ok(z / default['seconds'] >= 1)}, {ok(z / none['seconds'] >= 1)}). Where sfclayer's time goes "
              f"(compression none): the map stage (read the cached rows, encode the records, write the shuffle) "
              f"{stage_ms(none, 0)} ms, the write stage (fetch and sort the shuffle, group, frame and checksum, "
              f"write the MapFiles, statistics and bloom filters) {stage_ms(none, 1)} ms, against Parquet's one "
              f"stage of {stage_ms(rep['rows'][0], 0)} ms. Bloom filters cost "
              f"{none['seconds'] - rep['rows'][4]['seconds']:+.2f} s, format 3's checksums and framing "
              f"{rep['rows'][4]['seconds'] - rep['rows'][5]['seconds']:+.2f} s, zstd "
              f"{default['seconds'] - none['seconds']:+.2f} s."]
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", default=os.environ.get("SFCLAYER_BENCH_QUICK") == "1")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    t0 = time.perf_counter()
    spark = sfclayer.session("local[2]", app_name="sfclayer-bench-write-path", **{
        "spark.jars": os.path.join(HERE, "..", "build", "libs", "sfclayer-bench.jar"),
        "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false", "spark.driver.memory": "3g",
        "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
        "spark.sql.shuffle.partitions": "4"})
    spark.sparkContext.setLogLevel("ERROR")
    work = tempfile.mkdtemp(prefix="sfclayer-write-path-")
    try:
        rep = run(spark, 14 if args.quick else 18, args.repeat, work)
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    command = "PYTHONPATH=python .venv/bin/python bench/write_path.py" + (" --quick" if args.quick else "")
    text = render(rep, command, (time.perf_counter() - t0) / 60)
    print(text)
    if not args.quick:
        import report

        report.write_section("write_path", text)


if __name__ == "__main__":
    main()
