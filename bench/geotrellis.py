"""GeoTrellis catalogs (issue 22), standing alone (not a study of run.py):

    .venv/bin/python bench/geotrellis.py [--side 256] [--boxes 7] [--lookups 2000] [--cold 20] [--out DIR]
                                         [--write-results]

GeoTrellis 3.7.1 (integration/geotrellis, its own JVM, Spark 3.5 ``local[2]``) writes one layer of
``side²`` 32 × 32 int16 tiles (65,536 by default; ZSpatialKeyIndex, 8 partitions) into a temporary
catalog. On that catalog, the same random key boxes (0.1 %, 1 %, 10 % of the layer) and look-ups run
through GeoTrellis' own ``HadoopLayerReader`` / ``HadoopValueReader`` in its JVM, and through
``sfclayer.geotrellis.read`` / ``open`` (Spark 4 ``local[2]``, this process); then
``sfclayer.geotrellis.convert`` copies the layer into an sfclayer layer. Every box is a count of its
tiles plus the sum of their value bytes (every tile decoded, nothing shipped); the two sides' tile
counts must agree. Prints a Markdown table; ``--write-results`` also puts it in bench/RESULTS.md.

Without ``sfclayer.geotrellis`` (issue 22's reader) the sfclayer column says so and the GeoTrellis
column is still measured.
"""

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
GENERATE = os.path.join(ROOT, "integration", "geotrellis", "generate.sh")
TILE, LAYOUT_ROWS = 0.1, 256  # the bench layout: 256 x 256 tiles of 0.1° (integration/geotrellis Layouts.bench)
FRACTIONS = (0.001, 0.01, 0.1)


def gt(*args):
    """Run the GeoTrellis JVM; its JSON lines on stdout."""
    # 6 GiB: the write's sort of 65,536 tiles dies of OutOfMemoryError in generate.sh's default 2 GiB
    env = dict(os.environ, GT_MASTER="local[2]", GT_XMX=os.environ.get("GT_XMX", "6g"))
    p = subprocess.run(["bash", GENERATE, "run", *args], env=env, capture_output=True, text=True)
    if p.returncode:
        sys.stderr.write(p.stderr[-4000:])
        raise SystemExit(f"GeoTrellis JVM failed: {' '.join(args)}")
    return [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]


def key_boxes(side, n, rng):
    """``n`` random square key boxes per fraction: (fraction, (c0, r0, c1, r1))."""
    out = []
    for f in FRACTIONS:
        s = max(1, round(math.sqrt(f) * side))
        for _ in range(n):
            c0, r0 = int(rng.integers(0, side - s + 1)), int(rng.integers(0, side - s + 1))
            out.append((f, (c0, r0, c0 + s - 1, r0 + s - 1)))
    return out


def bbox_of(box):
    """The map box selecting exactly key box ``box`` (a quarter tile inside its edges: sfclayer's boxes count
    touching tiles). Row 0 is the top of the layout."""
    c0, r0, c1, r1 = box
    q, top = TILE / 4, LAYOUT_ROWS * TILE
    return (c0 * TILE + q, top - (r1 + 1) * TILE + q, (c1 + 1) * TILE - q, top - r0 * TILE - q)


def sfclayer_side(spark, catalog, boxes, side, lookups, cold, rng):
    """sfclayer.geotrellis on the catalog: per box (seconds, tiles, records read); look-up times."""
    from pyspark.sql import functions as F

    import sfclayer.geotrellis as sgt

    def run(box):
        t = time.perf_counter()  # built from scratch, as GeoTrellis' query reads the attributes each time
        df = sgt.read(spark, catalog, "bench", 0, bbox=bbox_of(box))
        q = df.agg(F.count(F.lit(1)).alias("n"), F.sum(F.length("pixels")).alias("b"))
        row = q.collect()[0]
        seconds = time.perf_counter() - t
        metrics = dict(spark._jvm.io.sfclayer.spark.SfcLayerMetrics.of(q._jdf))  # of the query that ran
        return seconds, int(row["n"]), int(metrics.get("recordsRead", -1))

    run(boxes[0][1])  # JIT, untimed
    out = {"boxes": [run(b) for _, b in boxes]}
    keys = [(int(c), int(r)) for c, r in rng.integers(0, side, size=(lookups + cold, 2))]

    def cold_lookup(c, r, forget):
        if forget:  # untimed: nothing parsed carried over from the last reader, as on GeoTrellis' side
            spark._jvm.io.sfclayer.geotrellis.GtRecordCodec.clearSchemas()
        t = time.perf_counter()
        with sgt.open(spark, catalog, "bench", 0) as layer:
            layer.get(c, r)
        return time.perf_counter() - t

    # interleaved, so that both rows see the JVM equally warmed up
    colds, reopens = [], []
    for (c, r), (c2, r2) in zip(keys[:cold], keys[cold:2 * cold]):
        colds.append(cold_lookup(c, r, True))
        reopens.append(cold_lookup(c2, r2, False))
    with sgt.open(spark, catalog, "bench", 0) as layer:
        for c, r in keys[cold:cold + 200]:
            layer.get(c, r)  # warm-up, untimed
        warm = []
        for c, r in keys[cold:]:
            t = time.perf_counter()
            layer.get(c, r)
            warm.append(time.perf_counter() - t)
    out.update(cold=colds, reopen=reopens, warm=warm)
    return out


def convert_side(spark, catalog, dest):
    import sfclayer.geotrellis as sgt

    shutil.rmtree(dest, ignore_errors=True)  # a reused --out keeps the last run's
    t = time.perf_counter()
    sgt.convert(spark, catalog, "bench", 0, dest)
    return time.perf_counter() - t


def _ms(s):
    return f"{s * 1000:.1f} ms" if s < 1 else f"{s:.2f} s"


def render(args, side, write, gboxes, gcold, gwarm, sfc, conv, load, command, missing):
    n = side * side
    lines = [f"## GeoTrellis catalogs (issue 22): sfclayer.geotrellis against GeoTrellis' own readers", "",
             f"`{command}` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average before/after: "
             f"{load[0]} / {load[1]}. One layer of {n:,} tiles of 32 × 32 int16 written by GeoTrellis 3.7.1's "
             f"`HadoopLayerWriter` (ZSpatialKeyIndex, 8 partitions, {write['seconds']:.1f} s on Spark 3.5 local[2]); "
             f"both sides read that catalog on the local file system, each in its own JVM with Spark local[2] "
             f"(GeoTrellis: Spark 3.5, sfclayer: Spark 4.3). Boxes: median of {args.boxes} random square key boxes "
             f"per share, each `count` + sum of value bytes (every tile decoded, nothing shipped); GeoTrellis: "
             f"`HadoopLayerReader.query(...).where(Intersects(KeyBounds))`, sfclayer: `sfclayer.geotrellis.read(..., "
             f"bbox=)` of the same tiles. Look-ups: random keys; cold = a new `HadoopValueReader` / "
             f"`sfclayer.geotrellis.open` + first `get` + close per key (each side reads and parses the attributes, "
             f"lists the layer's files, opens one MapFile and reads its index per key; sfclayer's one JVM-wide cache, "
             f"parsed Avro schemas by their text, is emptied before each key, untimed, as each new GeoTrellis reader starts "
             f"with its own empty caches; the OS page cache is warm on both sides); reopen = as cold on as many other keys, each right after a cold one, with that "
             f"cache kept (GeoTrellis column: its cold figure, it has no such cache); warm = one reader, after 200 "
             f"untimed.", "",
             "| query | GeoTrellis 3.7.1 | sfclayer.geotrellis | × (GeoTrellis / sfclayer) | sfclayer records read per tile |",
             "|---|---:|---:|---:|---:|"]
    ratios = []  # (row, GeoTrellis time / sfclayer time)
    for f in FRACTIONS:
        g = [b for b in gboxes if b["share"] == f]
        gmed = statistics.median(b["seconds"] for b in g)
        tiles = g[0]["tiles"]
        if sfc:
            s = [sfc["boxes"][j] for j, b in enumerate(gboxes) if b["share"] == f]
            smed = statistics.median(x[0] for x in s)
            rr = statistics.median(x[2] / max(x[1], 1) for x in s)
            ratios.append((f"box {f * 100:g} %", gmed / smed))
            lines.append(f"| box {f * 100:g} % ({tiles:,} tiles) | {_ms(gmed)} | {_ms(smed)} | {gmed / smed:.1f}× | {rr:.2f} |")
        else:
            lines.append(f"| box {f * 100:g} % ({tiles:,} tiles) | {_ms(gmed)} | {missing} | | |")
    for label, gv, key in (("cold look-up (median)", gcold, "cold"), ("reopen look-up (median)", gcold, "reopen"),
                           ("warm look-up (median)", gwarm, "warm")):
        if not gv:
            continue
        gm = statistics.median(gv)
        if sfc and sfc.get(key):
            sm = statistics.median(sfc[key])
            ratios.append((label.split(" (")[0], gm / sm))
            lines.append(f"| {label}, {len(gv)} keys | {gm * 1000:.2f} ms | {sm * 1000:.2f} ms | {gm / sm:.1f}× | |")
        else:
            lines.append(f"| {label}, {len(gv)} keys | {gm * 1000:.2f} ms | {missing} | | |")
    if conv is not None:
        mb = n * 2048 / 1e6
        lines.append(f"| `convert` to an sfclayer layer | | {conv:.1f} s ({n / conv:,.0f} tiles/s, {mb / conv:.1f} MB/s) | | |")
    else:
        lines.append(f"| `convert` to an sfclayer layer | | {missing} | | |")
    if ratios:
        slower = [f"{name} ({r:.1f}×)" for name, r in ratios if r < 1.0]
        lines += ["", f"sfclayer.geotrellis is faster than GeoTrellis on {len(ratios) - len(slower)} of "
                  f"{len(ratios)} rows" + (f"; not on: {', '.join(slower)}." if slower else ".")]
    if max(load[0][0], load[1][0]) > 3:
        lines += ["", f"Measured on a busy machine (1-minute load {load[0][0]} to {load[1][0]} on 2 cores): "
                  "rerun the command on a quiet one for figures to quote."]
    if not sfc:
        lines += ["", "The sfclayer column was not measured: this checkout has no `sfclayer.geotrellis` (issue 22's "
                  "reader); rerun the command above where it is."]
    return "\n".join(lines) + "\n"


def main():
    import numpy as np

    ap = argparse.ArgumentParser()
    ap.add_argument("--side", type=int, default=256, help="tiles per side (256: 65,536 tiles)")
    ap.add_argument("--boxes", type=int, default=7, help="random boxes per share")
    ap.add_argument("--lookups", type=int, default=2000)
    ap.add_argument("--cold", type=int, default=20)
    ap.add_argument("--seed", type=int, default=20261125)
    ap.add_argument("--out", default=None, help="work directory (default: a temporary one, removed)")
    ap.add_argument("--write-results", action="store_true", help="put the table in bench/RESULTS.md")
    args = ap.parse_args()
    command = "python bench/geotrellis.py " + " ".join(sys.argv[1:])
    load0 = tuple(round(v, 2) for v in os.getloadavg())
    work = args.out or tempfile.mkdtemp(prefix="bench-geotrellis-")
    catalog = os.path.join(work, "catalog")
    try:
        side = args.side
        if not os.path.exists(os.path.join(catalog, "_attributes")):
            write = gt("bench-write", catalog, str(side), "8")[0]
            with open(os.path.join(work, "write.json"), "w") as f:
                json.dump(write, f)
        else:
            with open(os.path.join(work, "write.json")) as f:
                write = json.load(f)
        rng = np.random.default_rng(args.seed)
        boxes = key_boxes(side, args.boxes, rng)
        res = gt("bench-read", catalog, "boxes=" + ";".join(",".join(map(str, b)) for _, b in boxes),
                 f"lookups={args.lookups}", f"cold={args.cold}", f"seed={args.seed}")
        gboxes = [dict(r, share=boxes[i][0]) for i, r in enumerate(x for x in res if x["what"] == "box")]
        gcold = [r["seconds"] for r in res if r["what"] == "cold"]
        gwarm = next((r["seconds"] for r in res if r["what"] == "warm"), [])
        sfc = conv = None
        missing = "–"
        try:
            import sfclayer.geotrellis  # noqa: F401 (issue 22's reader)
        except ImportError:
            missing = "not measured"
        else:
            import sfclayer

            spark = sfclayer.session("local[2]", spark_sql_shuffle_partitions=8)
            spark.sparkContext.setLogLevel("ERROR")
            sfc = sfclayer_side(spark, "file://" + os.path.abspath(catalog), boxes, side, args.lookups, args.cold, rng)
            for (f, b), g, s in zip(boxes, gboxes, sfc["boxes"]):
                if g["tiles"] != s[1]:
                    raise SystemExit(f"box {b}: GeoTrellis returned {g['tiles']} tiles, sfclayer {s[1]}")
            conv = convert_side(spark, "file://" + os.path.abspath(catalog), os.path.join(work, "converted"))
        load1 = tuple(round(v, 2) for v in os.getloadavg())
        text = render(args, side, write, gboxes, gcold, gwarm, sfc, conv, (load0, load1), command, missing)
        print(text)
        if args.write_results:
            import report

            report.write_section("geotrellis", text)
    finally:
        if args.out is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
