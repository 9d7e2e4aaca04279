"""What verifying every record costs: bbox scans and look-ups on a checked layer vs an unchecked one.

The same tiles are written twice: format 3 (every record carries a CRC32C that every read checks,
the index file's CRC32C and the data file's length are checked when a file is opened) and format 2
(the format before checksums, written with the ``formatVersion=2`` write option and read by the
same reader with the checks off). Each workload runs on both side by side, in alternating order,
and the section "Integrity: the cost of checking every record" of bench/RESULTS.md gets the medians.

::

    .venv/bin/python bench/integrity.py                 # 2^16 tiles of 2 KiB (about 3 min on 2 cores)
    .venv/bin/python bench/integrity.py --side 64       # a quick run
"""

import argparse
import datetime as dt
import os
import random
import shutil
import statistics
import struct
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))

import sfclayer  # noqa: E402

SECTION = "## Integrity: the cost of checking every record"
TILE_BYTES = 2048


def session():
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = sfclayer.session(
        "local[2]", app_name="sfclayer-bench-integrity", spark_ui_enabled="false",
        spark_ui_showConsoleProgress="false", spark_driver_host="127.0.0.1", spark_driver_bindAddress="127.0.0.1",
        spark_driver_memory="4g", spark_sql_shuffle_partitions="4",
        **{"spark.jars": os.path.join(ROOT, "build", "libs", "sfclayer-bench.jar")})  # LookupTiming (gradle benchJar)
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def tiles(spark, side):
    from pyspark.sql import functions as F

    n = side * side
    return (spark.range(n, numPartitions=4)
            .select((F.col("id") % side).cast("int").alias("col"), (F.col("id") / side).cast("int").alias("row"),
                    F.expr(f"unhex(repeat(lpad(hex(id * 2654435761), 16, '0'), {TILE_BYTES // 8}))").alias("values"))
            .cache())


def bbox_query(spark, path, box):
    from pyspark.sql import functions as F

    t0 = time.perf_counter()
    row = (sfclayer.read(spark, path, keys=box)
           .agg(F.count("*").alias("n"), F.sum(F.length("values")).alias("b")).collect()[0])
    return time.perf_counter() - t0, row["n"]


def lookups(layer, keys):
    """Seconds per look-up, timed inside the JVM (no transport)."""
    packed = b"".join(struct.pack(">iiq", c, r, 0) for c, r in keys)
    timing = layer._spark.sparkContext._jvm.io.sfclayer.bench.LookupTiming
    return [abs(n) / 1e9 for n in timing.timeGets(layer._reader, packed)]


def run(side, boxes, rounds, n_lookups, work):
    load_start = os.getloadavg()
    spark = session()
    df = tiles(spark, side)
    df.count()
    paths = {"format 2 (no checks)": os.path.join(work, "v2"), "format 3 (checked)": os.path.join(work, "v3")}
    write_s = {}
    for i in range(2):  # twice: the first pass warms the JVM up
        for (name, path), fv in zip(paths.items(), (2, 3)):
            shutil.rmtree(path, ignore_errors=True)
            t0 = time.perf_counter()
            sfclayer.write(df, path, bounds=(0, 0, side - 1, side - 1), format_version=fv)
            write_s[name] = time.perf_counter() - t0
    rng = random.Random(42)
    w = max(2, side // 4)
    box_list = []
    for _ in range(boxes):
        c0, r0 = rng.randrange(side - w), rng.randrange(side - w)
        box_list.append((c0, r0, c0 + w - 1, r0 + w - 1))
    names = list(paths)
    for name in names:  # warm-up query per layout
        bbox_query(spark, paths[name], box_list[0])
    scan = {n: [] for n in names}
    tiles_in = {}
    for rnd in range(rounds):
        for i, box in enumerate(box_list):
            order = names if (i + rnd) % 2 == 0 else names[::-1]
            for name in order:
                s, n = bbox_query(spark, paths[name], box)
                scan[name].append(s)
                tiles_in[name] = n
    full = {n: [] for n in names}
    for rnd in range(rounds):
        for name in (names if rnd % 2 == 0 else names[::-1]):
            full[name].append(bbox_query(spark, paths[name], (0, 0, side - 1, side - 1))[0])
    keys = [(rng.randrange(side), rng.randrange(side)) for _ in range(n_lookups)]
    looks = {n: [] for n in names}
    layers = {n: sfclayer.open(spark, paths[n], cache_size=64) for n in names}
    try:
        for name in names:
            lookups(layers[name], keys)  # warm: every file open, the JIT done
        for rnd in range(rounds):
            for name in (names if rnd % 2 == 0 else names[::-1]):
                looks[name].extend(lookups(layers[name], keys))
    finally:
        for layer in layers.values():
            layer.close()
    md = {n: sfclayer.open(spark, paths[n]).metadata for n in names}
    spark.stop()
    return {"load": (load_start, os.getloadavg()), "side": side, "names": names, "write": write_s, "scan": scan, "full": full, "looks": looks,
            "box_tiles": w * w, "md": md, "boxes": boxes, "rounds": rounds, "n_lookups": n_lookups}


def section(r, command):
    a, b = r["names"]
    n = r["side"] ** 2
    lines = [SECTION, ""]
    lines.append(f"Generated by `{command}` on {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC "
                 f"(bench/integrity.py). {n:,} tiles of {TILE_BYTES:,} bytes, written twice: "
                 f"{r['md'][a]['fileCount']} files each; format 3 records carry a CRC32C every read checks, "
                 "format 2 is the same layout without checks (read by the same code with the checks off). "
                 "Both run side by side, in alternating order; medians. Machine: "
                 f"{os.cpu_count()} cores, load average (1 min) {r['load'][0][0]:.1f} at start, "
                 f"{r['load'][1][0]:.1f} at end (other work shared the machine: ratios are what counts).")
    lines.append("")
    lines.append("| workload | format 2 (no checks) | format 3 (checked) | checked / unchecked |")
    lines.append("|---|---:|---:|---:|")

    def row(label, xa, xb, unit):
        lines.append(f"| {label} | {xa:,.0f} {unit} | {xb:,.0f} {unit} | {xb / xa:.3f}× |")

    sa, sb = statistics.median(r["scan"][a]), statistics.median(r["scan"][b])
    row(f"bbox scan, {r['box_tiles']:,}-tile boxes ({r['boxes']} boxes × {r['rounds']} rounds), tiles/s",
        r["box_tiles"] / sa, r["box_tiles"] / sb, "")
    fa, fb = statistics.median(r["full"][a]), statistics.median(r["full"][b])
    row(f"full scan ({r['rounds']} rounds), tiles/s", n / fa, n / fb, "")
    la, lb = statistics.median(r["looks"][a]), statistics.median(r["looks"][b])
    row(f"warm look-up, median ({r['n_lookups']:,} random keys × {r['rounds']}, timed in the JVM), look-ups/s",
        1 / la, 1 / lb, "")
    ta, tb = sum(r["looks"][a]), sum(r["looks"][b])
    row("warm look-up, all look-ups, look-ups/s", len(r["looks"][a]) / ta, len(r["looks"][b]) / tb, "")
    row("write (second of two), tiles/s", n / r["write"][a], n / r["write"][b], "")
    lines.append("")
    lines.append("Throughput ratios above 0.95× meet the goal (checks cost under 5%). A look-up reads the record "
                 "it returns and those before it within one index interval, each checked; a scan checks every "
                 "record it reads. CRC32C runs on the CPU's crc32 instruction (java.util.zip.CRC32C).")
    return "\n".join(lines) + "\n"


def write_section(text, results_md):
    """Replace (or add) this study's block of RESULTS.md; every other block stays."""
    sys.path.insert(0, HERE)
    import report

    report.write_section("integrity", text, results_md)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--side", type=int, default=256, help="tiles per side (default 256: 2^16 tiles)")
    p.add_argument("--boxes", type=int, default=9)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--lookups", type=int, default=2000)
    p.add_argument("--out", default=os.path.join(HERE, "RESULTS.md"))
    args = p.parse_args(argv)
    work = tempfile.mkdtemp(prefix="sfclayer-bench-integrity-")
    try:
        r = run(args.side, args.boxes, args.rounds, args.lookups, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    command = ".venv/bin/python bench/integrity.py" + ("" if argv is None and len(sys.argv) == 1 else
                                                      " " + " ".join(argv if argv is not None else sys.argv[1:]))
    text = section(r, command)
    print(text)
    write_section(text, args.out)
    return r


if __name__ == "__main__":
    main()
