"""The Spark path against Spark's floor, count push-down and pruning by file statistics (issue 16).

    PYTHONPATH=python .venv/bin/python bench/spark_path.py            # 2^18 and 2^10 tiles
    PYTHONPATH=python .venv/bin/python bench/spark_path.py --quick    # 2^14 and 2^10 tiles

Writes the block "spark_path" of bench/RESULTS.md (other blocks kept); ``make bench STUDY=spark_path``.
Every figure is a median over repeated runs, measured side by side in one session; the floor is
Spark's own one-row query ``spark.range(1).agg(sum)``. A query's time is split into building the
DataFrame (opening the layer: its version document), planning (pushdown, range decomposition, file
pruning: ``executedPlan``) and execution (the job).
"""

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, HERE)

import report as results  # noqa: E402  (bench/report.py: RESULTS.md block by block)
import sfclayer  # noqa: E402

SECTION = "## Spark path and file statistics"
TILE_BYTES = 256


def make_session():
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = sfclayer.session("local[2]", app_name="sfclayer-bench-spark-path",
                             **{"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
                                "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
                                "spark.sql.shuffle.partitions": "4"})
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def write_layer(spark, path, side, block_size=None):
    """side x side tiles: an ``elev`` (double) growing with the row, and TILE_BYTES of binary."""
    from pyspark.sql import functions as F

    df = (spark.range(0, side * side, 1, 4)
          .select((F.col("id") % side).cast("int").alias("col"), (F.col("id") / side).cast("int").alias("row"),
                  ((F.col("id") / side).cast("int") * 10.0 + F.col("id") % 7).alias("elev"),
                  F.expr(f"unhex(repeat(lpad(hex(id), 16, '0'), {TILE_BYTES // 8}))").alias("values")))
    # compression none: the layer of the earlier runs (76 files of 1 MiB), whatever the generic default
    w = df.write.format("sfclayer").mode("overwrite").option("compression", "none")
    if block_size:
        w = w.option("blockSize", str(block_size))
    w.save(path)


def timed(fn, repeat):
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def metrics(spark, df):
    return dict(spark._jvm.io.sfclayer.spark.SfcLayerMetrics.of(df._jdf))


def phases(spark, make_df, repeat):
    """Median seconds of (build, plan, execute, total), and the last run's metrics."""
    rows = []
    m = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        df = make_df()
        t1 = time.perf_counter()
        df._jdf.queryExecution().executedPlan()
        t2 = time.perf_counter()
        df.collect()
        t3 = time.perf_counter()
        rows.append((t1 - t0, t2 - t1, t3 - t2, t3 - t0))
        m = metrics(spark, df)
    return tuple(statistics.median(r[i] for r in rows) for i in range(4)), m


def run(spark, big, repeat, work):
    from pyspark.sql import functions as F

    side = int(round(big ** 0.5))
    big_path = os.path.join(work, "big")
    small_path = os.path.join(work, "small")
    t = time.perf_counter()
    write_layer(spark, big_path, side, block_size=1 << 20)
    write_secs = time.perf_counter() - t
    write_layer(spark, small_path, 32)
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()

    def read(path, **kw):
        return sfclayer.read(spark, path, **kw)

    box = max(1, int(round(side * 0.1)))  # 10% of a side: 1% of the tiles
    c0 = side // 3
    rows = []

    def floor():
        spark.range(1).agg(F.sum("id")).collect()

    for _ in range(3):  # warm up the JVM on every path
        floor()
        read(big_path, keys=(c0, c0, c0 + box - 1, c0 + box - 1)).collect()
        read(small_path, keys=(3, 3, 3, 3)).collect()
    floor_s = timed(floor, repeat)
    floor_phases, _ = phases(spark, lambda: spark.range(1).agg(F.sum("id")), repeat)
    rows.append(("Spark floor: `spark.range(1).agg(sum)`", floor_phases[:3], floor_s, None, ""))

    def box_df():
        return read(big_path, keys=(c0, c0, c0 + box - 1, c0 + box - 1))
    (b, p, e, tot), m = phases(spark, box_df, repeat)
    rows.append((f"1% box ({box}² tiles) of {side * side:,}, collect", (b, p, e), tot, m, ""))

    def box_count_df():
        return box_df().groupBy().count()
    (b, p, e, tot), m = phases(spark, box_count_df, repeat)
    rows.append((f"count(*) of that box", (b, p, e), tot, m, ""))

    def all_count_df():
        return read(big_path).groupBy().count()
    (b, p, e, tot), m = phases(spark, all_count_df, repeat)
    rows.append((f"count(*) of the whole layer", (b, p, e), tot, m, ""))

    def value_df():
        return read(big_path).where(F.col("elev") >= (side - side // 100) * 10.0).select("col", "row", "elev")
    (b, p, e, tot), m = phases(spark, value_df, repeat)
    rows.append(("value predicate `elev >= …` (top 1% of rows)", (b, p, e), tot, m, ""))

    def tile_df():
        return read(small_path, keys=(3, 3, 3, 3))
    (b, p, e, tot), m = phases(spark, tile_df, repeat)
    rows.append(("1-tile box of a 1,024-tile layer", (b, p, e), tot, m, ""))

    def do_open():
        sfclayer.open(spark, big_path).close()
    open_s = timed(do_open, repeat)
    rows.append(("`sfclayer.open` + close", None, open_s, None, ""))

    def layer_open():
        jvm.io.sfclayer.layer.Layer.open(conf, big_path)
    lo = timed(layer_open, repeat)
    rows.append(("JVM `Layer.open` (list log, cached document), via py4j", None, lo, None, ""))

    doc = sorted(f for f in os.listdir(os.path.join(big_path, "_sfclayer")) if f.endswith(".json"))[-1]
    with open(os.path.join(big_path, "_sfclayer", doc), "rb") as f:
        doc_bytes = bytearray(f.read())
    jbytes = jvm.java.util.Arrays.copyOf(doc_bytes, len(doc_bytes))

    def parse_doc():
        jvm.io.sfclayer.format.LayerMetadata.fromJsonBytes(jbytes, "bench")
    rows.append((f"parse the version document ({len(doc_bytes) / 1024:.0f} KiB; uncached), via py4j", None,
                 timed(parse_doc, repeat), None, ""))
    from py4j.java_gateway import get_field
    key_index = get_field(jvm.io.sfclayer.layer.Layer.open(conf, big_path).metadata(), "keyIndex")
    qbox = jvm.io.sfclayer.curve.QueryBox.of(c0, c0, c0 + box - 1, c0 + box - 1)

    def decompose():
        key_index.ranges(qbox, 20000)
    rows.append(("range decomposition of the 1% box, via py4j", None, timed(decompose, repeat), None, ""))

    def py4j_noop():
        jvm.java.lang.System.nanoTime()
    rows.append(("py4j round trip (floor of any driver call)", None, timed(py4j_noop, repeat), None, ""))
    from py4j.java_gateway import get_field
    md = jvm.io.sfclayer.layer.Layer.open(conf, big_path).metadata()
    return {"rows": rows, "floor": floor_s, "floor_phases": floor_phases, "files": get_field(md, "fileCount"), "tiles": side * side, "write_s": write_secs,
            "repeat": repeat}


def render(report, command):
    def ms(s):
        return "–" if s is None else f"{s * 1000:.1f} ms"

    lines = [SECTION, "",
             f"`{command}`. Layer: {report['tiles']:,} tiles ({TILE_BYTES}-byte values, an `elev` double growing "
             f"with the row), 1 MiB blocks: {report['files']} files. Medians of {report['repeat']} runs in one "
             "session, after warm-up. build = `sfclayer.read` (opens the version: log listing, document), "
             "plan = `executedPlan` (pushdown, ranges, pruning by name and statistics), exec = the job. "
             "Metrics from `SfcLayerMetrics.of`.", "",
             "| query | build | plan | exec | total | × floor | files read | pruned name/stats | from stats | bytes read |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, ph, tot, m, _ in report["rows"]:
        b, p, e = ph if ph else (None, None, None)
        if m:
            mm = (f"{m.get('filesRead', 0)} | {m.get('filesPrunedByName', 0)}/{m.get('filesPrunedByStats', 0)} | "
                  f"{m.get('filesCountedFromStats', 0)} | {m.get('bytesRead', 0):,}")
        else:
            mm = "| | |"
        lines.append(f"| {name} | {ms(b)} | {ms(p)} | {ms(e)} | {ms(tot)} | {tot / report['floor']:.2f}× | {mm} |")
    lines += ["", *interpret(report)]
    return "\n".join(lines) + "\n"


def interpret(report):
    """Where the 1% box's time above the floor goes, and issue 16's goals against this run."""
    rows = {name.split(" (")[0].split(",")[0]: (ph, tot, m) for name, ph, tot, m, _ in report["rows"]}
    fb, fp, fe = report["floor_phases"][:3]
    (bb, bp, be), btot, bm = rows["1% box"]
    _, ttot, _ = rows["1-tile box of a 1"]
    _, otot, _ = rows["`sfclayer.open` + close"]
    floor = report["floor"]
    ok = lambda good: "met" if good else "**missed**"  # noqa: E731
    return [
        f"Where the 1% box's {1e3 * (btot - floor):.0f} ms above the floor go (phase by phase against the "
        f"floor's own): building the DataFrame {1e3 * (bb - fb):+.0f} ms (`sfclayer.read`: argument checks, "
        f"the table's schema and version through py4j), planning {1e3 * (bp - fp):+.0f} ms (pushdown, range "
        f"decomposition, pruning), the job {1e3 * (be - fe):+.0f} ms ({bm.get('filesRead', 0)} files read by one task, one "
        "after the other (a scan expected to read at most 4 MiB is one task; a larger one a task per file), "
        "each file opened and sought through its ranges, against the floor's one-row job).",
        "",
        f"Issue 16's goals in this run: 1% box ≤ 1.2× the floor: {btot / floor:.2f}×, {ok(btot <= 1.2 * floor)}; "
        f"1-tile box under 100 ms: {1e3 * ttot:.0f} ms, {ok(ttot < 0.1)}; `sfclayer.open` (+ close) under 5 ms: "
        f"{1e3 * otot:.1f} ms, {ok(otot < 0.005)}.",
    ]


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", default=os.environ.get("SFCLAYER_BENCH_QUICK") == "1")
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--out", default=results.RESULTS)
    args = ap.parse_args(argv)
    spark = make_session()
    work = tempfile.mkdtemp(prefix="sfclayer-spark-path-")
    try:
        report = run(spark, 2 ** 14 if args.quick else 2 ** 18, args.repeat, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    command = "PYTHONPATH=python .venv/bin/python bench/spark_path.py" + (" --quick" if args.quick else "")
    text = render(report, command)
    print(text)
    results.write_section("spark_path", text, args.out)


if __name__ == "__main__":
    main()
