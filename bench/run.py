"""sfclayer benchmarks, one command: ``make bench`` (``.venv/bin/python bench/run.py``).

Writes the same synthetic tiles as an sfclayer layer, as Parquet written plainly and as Parquet
sorted by the same Z index, then runs bounding-box queries (about 0.1 %, 1 % and 10 % of the layer),
point look-ups (cold and warm, from Python and through the JVM), batch look-ups, and the MapFile
index-interval trade-off, side by side, and writes ``RESULTS.md`` and ``results.png``.

    .venv/bin/python bench/run.py                      # the default run (2^14, 2^16, 2^18 tiles)
    .venv/bin/python bench/run.py --quick              # a small run, a minute or two
    .venv/bin/python bench/run.py --sizes 12,14 --out /tmp/bench

See bench/README.md for what each number means.
"""

import argparse
import dataclasses
import datetime as dt
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if HERE not in sys.path:
    sys.path.insert(0, HERE)
try:
    import sfclayer  # noqa: F401
except ImportError:  # run from a checkout without the package installed
    sys.path.insert(0, os.path.join(ROOT, "python"))

import numpy as np  # noqa: E402

import sfclayer  # noqa: E402
from sfclayer import curves  # noqa: E402

import lookup_bench  # noqa: E402

_perf = time.perf_counter

# The comparators of the bounding-box table, in display order.
COMPARATORS = ["sfclayer", "parquet_zsorted", "parquet_plain", "sfclayer_fullscan"]
LABELS = {
    "sfclayer": "sfclayer (ranges pushed down)",
    "parquet_zsorted": "Parquet, Z-sorted",
    "parquet_plain": "Parquet, plain",
    "sfclayer_fullscan": "sfclayer full scan + Spark filter",
}
WRITERS = ["sfclayer", "parquet_plain", "parquet_zsorted"]
WRITER_LABELS = {
    "sfclayer": "sfclayer",
    "parquet_plain": "Parquet, plain",
    "parquet_zsorted": "Parquet, Z-sorted (range shuffle + sort)",
}
BATCHES = [
    ("batch_cold", "get_many over the socket, undecoded: random keys, fresh Layer"),
    ("batch_warm", "get_many over the socket, undecoded: random keys, files open"),
    ("batch_hood", "get_many over the socket, undecoded: the warm neighbourhood"),
    ("get_many_python", "Layer.get_many (decoded): random keys, files open"),
    ("batch_py4j", "ValueReader.getMany via py4j, undecoded: random keys, files open"),
]
# Point look-up methods, in display order: (key in the report, label).
POINT_METHODS = [
    ("warm_jvm", "sfclayer ValueReader.get inside the JVM, warm (neighbourhood)"),
    ("warm_socket", "sfclayer raw get (look-up socket), warm (neighbourhood)"),
    ("warm_python", "sfclayer Layer.get, warm (neighbourhood)"),
    ("warm_random_socket", "sfclayer raw get (look-up socket), warm (random keys, files open)"),
    ("warm_py4j", "sfclayer ValueReader.get via py4j, warm (neighbourhood)"),
    ("cold_jvm", "sfclayer ValueReader.get inside the JVM, cold (fresh Layer)"),
    ("cold_socket", "sfclayer raw get (look-up socket), cold (fresh Layer)"),
    ("cold_python", "sfclayer Layer.get, cold (fresh Layer)"),
    ("open", "sfclayer.open (metadata, listing, look-up socket)"),
    ("spark_sfclayer", "sfclayer through Spark (1-tile key box)"),
    ("spark_parquet_zsorted", "Parquet Z-sorted through Spark (col = c AND row = r)"),
    ("spark_parquet_plain", "Parquet plain through Spark (col = c AND row = r)"),
    ("socket_round_trip", "look-up socket round trip (key outside the bounds), for reference"),
    ("py4j_round_trip", "py4j round trip (trivial JVM call), for reference"),
]
SHORT_POINT_LABELS = {
    "warm_jvm": "JVM get, warm nbhd",
    "cold_jvm": "JVM get, cold",
    "warm_socket": "raw get, warm nbhd",
    "warm_python": "Layer.get, warm nbhd",
    "warm_random_socket": "raw get, warm random",
    "warm_py4j": "get via py4j, warm nbhd",
    "cold_socket": "raw get, cold",
    "cold_python": "Layer.get, cold",
    "open": "sfclayer.open",
    "spark_sfclayer": "sfclayer via Spark",
    "spark_parquet_zsorted": "Parquet Z-sorted via Spark",
    "spark_parquet_plain": "Parquet plain via Spark",
    "socket_round_trip": "socket round trip",
    "py4j_round_trip": "py4j round trip",
}


@dataclasses.dataclass
class Config:
    """What one run measures; ``DEFAULT``, ``QUICK`` and ``SMOKE`` below."""

    sizes: tuple = (2 ** 14, 2 ** 16, 2 ** 18)  # tiles per layer (square grids)
    tile_side: int = 32  # tiles are tile_side x tile_side int16 samples
    fractions: tuple = (0.001, 0.01, 0.1)  # bbox area / layer area
    boxes: int = 7  # random boxes per fraction (median reported)
    fullscan_boxes: int = 3  # of those, how many the full scan runs (its cost is box-independent)
    cold: int = 100  # cold look-ups (each on a fresh Layer)
    warm_region: int = 32  # warm look-ups: a region of warm_region^2 tiles
    warm_random: int = 2000  # warm look-ups at random keys
    rtt_calls: int = 300
    batch: int = 1000  # keys per get_many batch
    cache_size: int = 16  # Layer cache (sfclayer's default)
    point_queries: int = 25  # point queries through Spark per comparator
    intervals: tuple = (1, 4, 16, 128)
    interval_size: int = 2 ** 16  # layer size of the index-interval study
    interval_rounds: int = 5  # the study's measurements interleave the layers in this many rounds
    partition_bytes: int = 64 << 20  # input partition size (write tasks)
    zsorted_row_group: int = 16 << 20  # Parquet Z-sorted: parquet.block.size
    zsorted_page_rows: int = 1024  # Parquet Z-sorted: parquet.page.row.count.limit
    seed: int = 20240917
    warmup: bool = True  # a tiny untimed write of each layout first (JIT, class loading)
    py4j_gets: int = 200  # warm look-ups through py4j (slow for big tiles)
    tile_study_sides: tuple = (32, 64, 128, 256)  # tile-size study: 2, 8, 32 and 128 KiB tiles
    tile_study_tiles: int = 2 ** 10  # tiles per layer of the tile-size study
    tile_study_region: int = 16

    @property
    def tile_bytes(self):
        return 2 * self.tile_side * self.tile_side


DEFAULT = Config()
QUICK = Config(sizes=(2 ** 10, 2 ** 12), boxes=3, fullscan_boxes=1, cold=20, warm_random=200, rtt_calls=100,
               batch=500, point_queries=5, interval_size=2 ** 12, interval_rounds=3, warm_region=16, py4j_gets=50,
               tile_study_tiles=2 ** 8, tile_study_region=8)
SMOKE = Config(sizes=(2 ** 8,), tile_side=8, fractions=(0.01, 0.1), boxes=1, fullscan_boxes=1, cold=3,
               warm_region=8, warm_random=20, rtt_calls=10, batch=40, point_queries=1, intervals=(4, 128),
               interval_size=2 ** 8, interval_rounds=2, warmup=False, py4j_gets=8, tile_study_sides=(8, 48),
               tile_study_tiles=2 ** 6, tile_study_region=4)


# ----------------------------------------------------------------------------------------------
# Data

def grid_side(n):
    return max(2, int(round(math.sqrt(n))))


def tile_pool(tile_bytes, k=64, seed=1):
    """``k`` DEM-like int16 tiles (a ramp plus noise), each ``tile_bytes - 8`` bytes."""
    rng = np.random.default_rng(seed)
    samples = (tile_bytes - 8) // 2
    width = max(1, int(math.sqrt(samples)))
    out = []
    for i in range(k):
        ramp = 500 + 40 * i + np.arange(samples) // width * 3 + np.arange(samples) % width
        noise = rng.integers(-64, 64, size=samples)
        out.append((i, (ramp + noise).astype(">i2").tobytes()))
    return out


def source(spark, side, cfg):
    """A cached DataFrame (col int, row int, values binary) of side x side tiles in row-major order.

    Every tile has ``cfg.tile_bytes`` of binary values: one of 64 DEM-like int16 tiles chosen by a
    hash of the tile id, with the id in its last 8 bytes so that no two tiles are equal (no
    dictionary encoding or compression shortcut for Parquet).
    """
    from pyspark.sql import functions as F

    n = side * side
    parts = max(2, math.ceil(n * cfg.tile_bytes / cfg.partition_bytes))
    # The pool is a constant array (no Python worker, no join): element k + 1 for the hash k.
    pool = F.array(*[F.lit(bytearray(b)) for _, b in tile_pool(cfg.tile_bytes)])
    df = (spark.range(0, n, 1, parts)
          .select((F.col("id") % side).cast("int").alias("col"),
                  (F.col("id") / side).cast("int").alias("row"),
                  F.concat(F.element_at(pool, (F.pmod(F.xxhash64("id"), F.lit(64)) + 1).cast("int")),
                           F.unhex(F.lpad(F.hex("id"), 16, "0"))).alias("values")))
    df = df.persist()
    assert df.count() == n
    return df, parts


def with_z(df, col_min=0, row_min=0):
    """``df`` with a column ``z``: the Z2 index of (col, row) computed in Spark SQL with bit
    spreading, equal to sfclayer's Z key index (checked after each write)."""
    from pyspark.sql import functions as F

    masks = [(16, 0x0000FFFF0000FFFF), (8, 0x00FF00FF00FF00FF), (4, 0x0F0F0F0F0F0F0F0F),
             (2, 0x3333333333333333), (1, 0x5555555555555555)]
    cols = df.columns
    df = df.withColumn("_zx", (F.col("col") - col_min).cast("long")).withColumn("_zy", (F.col("row") - row_min).cast("long"))
    for shift, mask in masks:
        for c in ("_zx", "_zy"):
            df = df.withColumn(c, F.col(c).bitwiseOR(F.shiftleft(F.col(c), shift)).bitwiseAND(F.lit(mask)))
    return df.select(*cols, F.col("_zx").bitwiseOR(F.shiftleft(F.col("_zy"), 1)).alias("z"))


# ----------------------------------------------------------------------------------------------
# Measuring queries

def _children(plan):
    kids = plan.children()
    return [kids.apply(i) for i in range(kids.size())]


def scan_metrics(df):
    """Metrics of the scans of an executed DataFrame: sfclayer's custom metrics (through
    ``SfcLayerMetrics.of``) and, for file sources, "number of output rows" / "number of files read"
    of the FileSourceScanExec nodes. Keys: records_read, files_read (+ sfclayer's own names)."""
    jvm = df.sparkSession.sparkContext._jvm
    out = {}
    sfc = dict(jvm.io.sfclayer.spark.SfcLayerMetrics.of(df._jdf))
    if sfc:
        out.update({k: int(v) for k, v in sfc.items()})
        out["records_read"] = out.get("recordsRead", 0)
        out["files_read"] = out.get("filesRead", 0)
        return out
    todo = [df._jdf.queryExecution().executedPlan()]
    rows = files = 0
    while todo:
        p = todo.pop()
        name = p.getClass().getSimpleName()
        if name == "AdaptiveSparkPlanExec":
            todo.append(p.executedPlan())
            continue
        if name.endswith("QueryStageExec"):
            todo.append(p.plan())
            continue
        if name == "FileSourceScanExec":
            m = p.metrics()
            if m.contains("numOutputRows"):
                rows += int(m.apply("numOutputRows").value())
            if m.contains("numFiles"):
                files += int(m.apply("numFiles").value())
        todo.extend(_children(p))
    out["records_read"] = rows
    out["files_read"] = files
    return out


def timed_query(spark, make_df):
    """Build and run an aggregate query; (seconds, tiles, value bytes, scan metrics)."""
    from pyspark.sql import functions as F

    t = _perf()
    df = make_df().agg(F.count(F.lit(1)).alias("n"), F.sum(F.length("values")).alias("b"))
    row = df.collect()[0]
    seconds = _perf() - t
    metrics = scan_metrics(df)
    return seconds, int(row["n"]), int(row["b"] or 0), metrics


def comparators(spark, paths, key_index):
    """Query builders for a key box (c0, r0, c1, r1), by comparator name."""
    from pyspark.sql import functions as F

    def box_filter(df, c0, r0, c1, r1):
        return df.where(F.col("col").between(c0, c1) & F.col("row").between(r0, r1))

    def sfc(c0, r0, c1, r1):
        return sfclayer.read(spark, paths["sfclayer"], keys=(c0, r0, c1, r1))

    def pq_plain(c0, r0, c1, r1):
        return box_filter(spark.read.parquet(paths["parquet_plain"]), c0, r0, c1, r1)

    def pq_sorted(c0, r0, c1, r1):
        # col/row predicates, plus the box corners' Z interval: Z is monotone in col and in row.
        zlo, zhi = key_index.index(c0, r0), key_index.index(c1, r1)
        df = spark.read.parquet(paths["parquet_zsorted"]).where(F.col("z").between(zlo, zhi))
        return box_filter(df, c0, r0, c1, r1)

    def fullscan(c0, r0, c1, r1):
        # abs() of a key cannot be pushed to the source (Spark simplifies `col + 0` to `col`, so not
        # that): every file is read and Spark filters. Keys are >= 0, so the answer is the same.
        df = spark.read.format("sfclayer").load(paths["sfclayer"])
        return df.where(f"abs(col) BETWEEN {c0} AND {c1} AND abs(row) BETWEEN {r0} AND {r1}")

    return {"sfclayer": sfc, "parquet_zsorted": pq_sorted, "parquet_plain": pq_plain, "sfclayer_fullscan": fullscan}


def random_boxes(rng, side, fraction, count):
    """``count`` square key boxes covering about ``fraction`` of a side x side grid."""
    w = max(1, min(side, int(round(side * math.sqrt(fraction)))))
    out = []
    for _ in range(count):
        c0 = int(rng.integers(0, side - w + 1))
        r0 = int(rng.integers(0, side - w + 1))
        out.append((c0, r0, c0 + w - 1, r0 + w - 1))
    return w, out


# ----------------------------------------------------------------------------------------------
# Writing

def dir_stats(path, names=("part-",)):
    """(bytes, files) of a local directory tree, checksum files excluded; files counted by name
    prefix (Parquet part files; for a layer, its data files are counted from metadata)."""
    total = files = 0
    for dirpath, _, fnames in os.walk(path):
        for f in fnames:
            if f.endswith(".crc") or f.startswith("."):
                continue
            total += os.path.getsize(os.path.join(dirpath, f))
            if any(f.startswith(n) for n in names):
                files += 1
    return total, files


def layer_metadata(spark, path):
    reader = sfclayer._jvm.open_value_reader(spark, path, 1)
    try:
        return json.loads(reader.metadataJson())
    finally:
        reader.close()


def write_all(spark, df, side, parts, work, cfg):
    """Write the three layouts; returns (paths, {writer: stats}, the layer's metadata)."""
    n = side * side
    logical = n * cfg.tile_bytes
    paths = {w: os.path.join(work, w) for w in WRITERS}
    out = {}

    t = _perf()
    sfclayer.write(df, paths["sfclayer"], mode="overwrite", bounds=(0, 0, side - 1, side - 1),
                   partitions=parts)
    out["sfclayer"] = {"seconds": _perf() - t}

    t = _perf()
    df.write.mode("overwrite").parquet(paths["parquet_plain"])
    out["parquet_plain"] = {"seconds": _perf() - t}

    t = _perf()
    (with_z(df)
       .repartitionByRange(parts, "z").sortWithinPartitions("z")
       .write.mode("overwrite")
       .option("parquet.block.size", str(cfg.zsorted_row_group))
       .option("parquet.page.row.count.limit", str(cfg.zsorted_page_rows))
       .parquet(paths["parquet_zsorted"]))
    out["parquet_zsorted"] = {"seconds": _perf() - t}

    md = layer_metadata(spark, paths["sfclayer"])
    assert md["recordCount"] == n, md["recordCount"]
    for w in WRITERS:
        s = out[w]
        s["tiles_per_s"] = n / s["seconds"]
        s["mb_per_s"] = logical / s["seconds"] / 1e6
        s["disk_bytes"], s["files"] = dir_stats(paths[w])
    out["sfclayer"]["files"] = md["fileCount"]
    out["sfclayer"]["block_size"] = md["blockSize"]
    out["sfclayer"]["index_interval"] = md["indexInterval"]

    # The Spark Z expression agrees with sfclayer's Z key index.
    ki = curves.key_index_from_json(md["keyIndex"])
    sample = spark.read.parquet(paths["parquet_zsorted"]).select("col", "row", "z").limit(64).collect()
    bad = [(r["col"], r["row"]) for r in sample if r["z"] != ki.index(r["col"], r["row"])]
    assert not bad, f"Spark's z column disagrees with sfclayer's Z index at {bad[:4]}"
    return paths, out, md


# ----------------------------------------------------------------------------------------------
# One size

def bench_size(spark, n, cfg, work, rng, log):
    side = grid_side(n)
    n = side * side
    entry = {"tiles": n, "side": side, "tile_bytes": cfg.tile_bytes}
    t = _perf()
    df, parts = source(spark, side, cfg)
    entry["partitions"] = parts
    log(f"[{n} tiles] generated and cached in {_perf() - t:.1f} s ({parts} partitions)")

    size_dir = os.path.join(work, f"n{n}")
    paths, entry["writes"], md = write_all(spark, df, side, parts, size_dir, cfg)
    entry["sfclayer_files"] = md["fileCount"]
    log(f"[{n} tiles] writes: " + ", ".join(f"{w} {s['seconds']:.1f} s" for w, s in entry["writes"].items()))
    ki = curves.key_index_from_json(md["keyIndex"])
    builders = comparators(spark, paths, ki)

    # JIT/class-loading warm-up: one untimed query per comparator.
    for name in COMPARATORS if cfg.warmup else ():
        timed_query(spark, lambda: builders[name](0, 0, 1, 1))

    entry["bbox"] = []
    for fraction in cfg.fractions:
        w, boxes = random_boxes(rng, side, fraction, cfg.boxes)
        res = {name: {"times": [], "records_read": [], "files_read": [], "bytes_read": [], "returned": []}
               for name in COMPARATORS}
        for i, box in enumerate(boxes):
            # rotate the order so no comparator always runs right after another's reads
            order = COMPARATORS[i % len(COMPARATORS):] + COMPARATORS[:i % len(COMPARATORS)]
            for name in order:
                if name == "sfclayer_fullscan" and i >= cfg.fullscan_boxes:
                    continue
                seconds, count, nbytes, metrics = timed_query(spark, lambda: builders[name](*box))
                assert count == w * w, f"{name} returned {count} tiles for box {box}, expected {w * w}"
                assert nbytes == count * cfg.tile_bytes, (name, nbytes)
                r = res[name]
                r["times"].append(seconds)
                r["records_read"].append(metrics["records_read"])
                r["files_read"].append(metrics["files_read"])
                r["bytes_read"].append(metrics.get("bytesRead", float("nan")))
                r["returned"].append(count)
        summary = {}
        for name, r in res.items():
            summary[name] = {
                "median_s": float(np.median(r["times"])),
                "times": r["times"],
                "returned": float(np.median(r["returned"])),
                "records_read": float(np.median(r["records_read"])),
                "files_read": float(np.median(r["files_read"])),
                "mb_read": float(np.median(r["bytes_read"])) / 1e6,
            }
        total_files = {"sfclayer": md["fileCount"], "sfclayer_fullscan": md["fileCount"],
                       "parquet_plain": entry["writes"]["parquet_plain"]["files"],
                       "parquet_zsorted": entry["writes"]["parquet_zsorted"]["files"]}
        for name in COMPARATORS:
            summary[name]["files_total"] = total_files[name]
        entry["bbox"].append({"fraction": fraction, "box_side": w, "tiles": w * w,
                              "actual_fraction": w * w / n, "results": summary})
        log(f"[{n} tiles] bbox {fraction:.1%}: " + ", ".join(
            f"{name} {summary[name]['median_s'] * 1e3:.0f} ms" for name in COMPARATORS))

    # Point look-ups.
    lk = lookup_bench.lookups(spark, paths["sfclayer"], side, md["fileCount"], cfg, rng)
    keys = lookup_bench.random_keys(rng, side, cfg.point_queries)

    def point(make):
        def run(c, r):
            df_ = make(c, r).select("col", "row", "values")
            rows = df_.collect()
            return len(rows), scan_metrics(df_)
        return run

    from pyspark.sql import functions as F

    lk["spark_sfclayer"] = lookup_bench.spark_point_queries(
        spark, point(lambda c, r: sfclayer.read(spark, paths["sfclayer"], keys=(c, r, c, r))), keys)
    lk["spark_parquet_zsorted"] = lookup_bench.spark_point_queries(
        spark, point(lambda c, r: spark.read.parquet(paths["parquet_zsorted"])
                     .where((F.col("z") == ki.index(c, r)) & (F.col("col") == c) & (F.col("row") == r))), keys)
    lk["spark_parquet_plain"] = lookup_bench.spark_point_queries(
        spark, point(lambda c, r: spark.read.parquet(paths["parquet_plain"])
                     .where((F.col("col") == c) & (F.col("row") == r))), keys)
    entry["lookups"] = lk
    log(f"[{n} tiles] look-ups: warm Layer.get p50 {lk['warm_python']['p50_ms']:.3f} ms, cold "
        f"{lk['cold_python']['p50_ms']:.2f} ms, Parquet Z-sorted {lk['spark_parquet_zsorted']['p50_ms']:.0f} ms")

    intervals = None
    if n == grid_side(cfg.interval_size) ** 2:
        intervals = bench_intervals(spark, df, side, parts, size_dir, paths["sfclayer"], md, cfg, rng, log)
    df.unpersist()
    return entry, intervals, size_dir


def bench_intervals(spark, df, side, parts, size_dir, main_path, main_md, cfg, rng, log):
    """The index-interval study: the same tiles written with each interval, measured side by side."""
    paths, writes = [], []
    for interval in cfg.intervals:
        if interval == main_md["indexInterval"]:
            paths.append(main_path)
            writes.append(None)
            continue
        path = os.path.join(size_dir, f"sfclayer-interval-{interval}")
        t = _perf()
        sfclayer.write(df, path, mode="overwrite", bounds=(0, 0, side - 1, side - 1), partitions=parts,
                       index_interval=interval)
        writes.append(_perf() - t)
        paths.append(path)
    results = lookup_bench.interval_study(spark, paths, side, cfg, rng)
    for interval, r, w in zip(cfg.intervals, results, writes):
        assert r["interval"] == interval, (r["interval"], interval)
        r["write_s"] = w
        log(f"[intervals] {interval}: index {r['index_bytes'] / 1024:.1f} KiB, cold p50 "
            f"{r['cold_socket']['p50_ms']:.2f} ms, warm random p50 {r['warm_random_socket']['p50_ms']:.3f} ms")
    return {"tiles": side * side, "results": results}


def bench_tile_sizes(spark, cfg, work, rng, log):
    """The tile-size study: small layers of growing tiles, warm and cold look-ups per transport."""
    side = grid_side(cfg.tile_study_tiles)
    out = []
    for tile_side in cfg.tile_study_sides:
        c = dataclasses.replace(cfg, tile_side=tile_side)
        df, parts = source(spark, side, c)
        path = os.path.join(work, f"tiles-{c.tile_bytes}")
        sfclayer.write(df, path, mode="overwrite", bounds=(0, 0, side - 1, side - 1), partitions=parts)
        df.unpersist()
        r = lookup_bench.tile_size_point(spark, path, side, c.tile_bytes, cfg, rng)
        shutil.rmtree(path, ignore_errors=True)
        out.append(r)
        log(f"[tile size] {c.tile_bytes} B: Layer.get warm p50 {r['warm_python']['p50_ms']:.3f} ms, "
            f"py4j {r['warm_py4j']['p50_ms']:.3f} ms")
    return {"tiles": side * side, "results": out}


# ----------------------------------------------------------------------------------------------
# Machine and report

def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def machine_info(spark):
    cpu = ""
    for line in _read("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem = ""
    for line in _read("/proc/meminfo").splitlines():
        if line.startswith("MemTotal"):
            mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    jvm = spark.sparkContext._jvm
    try:
        commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, timeout=10).stdout.strip()
    except Exception:
        commit = ""
    import pyarrow
    import pyspark

    return {
        "cpu": cpu or platform.processor(),
        "cores": os.cpu_count(),
        "ram": mem,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "java": str(jvm.System.getProperty("java.vm.name")) + " " + str(jvm.System.getProperty("java.version")),
        "spark": pyspark.__version__,
        "hadoop": str(jvm.org.apache.hadoop.util.VersionInfo.getVersion()),
        "parquet": _parquet_version(jvm),
        "numpy": np.__version__,
        "pyarrow": pyarrow.__version__,
        "sfclayer": sfclayer.__version__ + (f" (git {commit})" if commit else ""),
        "driver_memory": spark.sparkContext.getConf().get("spark.driver.memory", "1g"),
        "master": spark.sparkContext.master,
    }


def _parquet_version(jvm):
    try:
        return str(jvm.org.apache.parquet.Version.FULL_VERSION).split(" (")[0].replace("parquet-mr version ", "")
    except Exception:
        return "?"


def loadavg():
    try:
        return tuple(round(x, 2) for x in os.getloadavg())
    except OSError:
        return None


def run(spark, cfg, work, log=print):
    """Run every benchmark of ``cfg`` with ``spark``, files under ``work``; returns the report."""
    rng = np.random.default_rng(cfg.seed)
    os.makedirs(work, exist_ok=True)
    report = {
        "config": dataclasses.asdict(cfg),
        "machine": machine_info(spark),
        "started": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "loadavg_start": loadavg(),
        "sizes": [],
        "intervals": None,
        "tile_sizes": None,
    }
    t0 = _perf()
    # Warm-up: a tiny write of each layout so the first size is not charged for JIT/class loading.
    if cfg.warmup:
        wdf, wparts = source(spark, 16, cfg)
        write_all(spark, wdf, 16, wparts, os.path.join(work, "warmup"), cfg)
        wdf.unpersist()
        shutil.rmtree(os.path.join(work, "warmup"), ignore_errors=True)

    for n in cfg.sizes:
        entry, intervals, size_dir = bench_size(spark, n, cfg, work, rng, log)
        report["sizes"].append(entry)
        if intervals is not None:
            report["intervals"] = intervals
        shutil.rmtree(size_dir, ignore_errors=True)
    if report["intervals"] is None and cfg.intervals:
        # interval_size is not among the sizes: a separate layer for the study
        side = grid_side(cfg.interval_size)
        df, parts = source(spark, side, cfg)
        size_dir = os.path.join(work, "intervals")
        paths, _, md = write_all(spark, df, side, parts, size_dir, cfg)
        report["intervals"] = bench_intervals(spark, df, side, parts, size_dir, paths["sfclayer"], md, cfg, rng, log)
        df.unpersist()
        shutil.rmtree(size_dir, ignore_errors=True)
    if cfg.tile_study_sides:
        report["tile_sizes"] = bench_tile_sizes(spark, cfg, work, rng, log)
    report["seconds"] = _perf() - t0
    report["loadavg_end"] = loadavg()
    return report


# ----------------------------------------------------------------------------------------------
# Rendering

def _fmt_s(s):
    if s != s:  # nan
        return "–"
    if s >= 10:
        return f"{s:.1f} s"
    if s >= 1:
        return f"{s:.2f} s"
    return f"{s * 1e3:.0f} ms" if s >= 0.01 else f"{s * 1e3:.1f} ms"


def _fmt_ms(ms):
    if ms != ms:
        return "–"
    if ms >= 100:
        return f"{ms:.0f}"
    if ms >= 10:
        return f"{ms:.1f}"
    if ms >= 1:
        return f"{ms:.2f}"
    return f"{ms:.3f}"


def _fmt_ratio(x):
    if x != x:
        return "–"
    return f"{x:.0f}×" if x >= 100 else f"{x:.1f}×" if x >= 10 else f"{x:.2f}×"


def _fmt_n(n):
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return f"2^{int(math.log2(n))}"
    if n >= 1 << 10 and (n & (n - 1)) == 0:
        return f"2^{int(math.log2(n))}"
    return f"{n:,}"


def _fmt_mb(mb):
    return "–" if mb != mb else f"{mb:.2f}" if mb < 1 else f"{mb:.1f}"


def _mib(b):
    return f"{b / (1 << 20):.1f}"


def render_markdown(report, command):
    m = report["machine"]
    cfg = report["config"]
    lines = []
    add = lines.append
    add("# sfclayer benchmark results")
    add("")
    add(f"Generated by `{command}` (bench/run.py) on {report['started']}, in {report['seconds'] / 60:.1f} min. "
        "Do not edit by hand: rerun the command. What each number means: [README.md](README.md).")
    add("")
    add("## Machine")
    add("")
    add("| | |")
    add("|---|---|")
    add(f"| CPU | {m['cpu']}, {m['cores']} cores |")
    add(f"| RAM | {m['ram']} |")
    add(f"| OS | {m['os']} |")
    add(f"| versions | Python {m['python']}, {m['java']}, Spark {m['spark']}, Hadoop {m['hadoop']}, "
        f"Parquet {m['parquet']}, numpy {m['numpy']}, sfclayer {m['sfclayer']} |")
    add(f"| Spark | `{m['master']}`, driver memory {m['driver_memory']}, local filesystem |")
    add(f"| load average (1, 5, 15 min) | at start {report['loadavg_start']}, at end {report['loadavg_end']} |")
    add("")
    add(f"Tiles: {cfg['tile_side']}×{cfg['tile_side']} int16 = {2 * cfg['tile_side'] ** 2:,} bytes of binary "
        f"values each, square grids, one value column `values`. Each bbox figure is the median of "
        f"{cfg['boxes']} random boxes (the full scan: {cfg['fullscan_boxes']}), each query built from scratch and "
        "run as `count(*), sum(length(values))` so every value is read but none is shipped to Python. "
        f"Parquet Z-sorted: `z` computed in Spark SQL, range-partitioned and sorted by it, row groups of "
        f"{cfg['zsorted_row_group'] >> 20} MiB, pages of at most {cfg['zsorted_page_rows']} rows; queried with "
        "`col`/`row` BETWEEN plus `z` BETWEEN the box corners' indexes. Parquet plain: Spark's defaults, input "
        "order (row-major).")
    add("")

    # Writes
    add("## Write throughput")
    add("")
    add("| tiles | layout | time | × sfclayer | tiles/s | MB/s | on disk (MiB) | files |")
    add("|---:|---|---:|---:|---:|---:|---:|---:|")
    for e in report["sizes"]:
        base = e["writes"]["sfclayer"]["seconds"]
        for w in WRITERS:
            s = e["writes"][w]
            add(f"| {_fmt_n(e['tiles'])} | {WRITER_LABELS[w]} | {_fmt_s(s['seconds'])} | "
                f"{_fmt_ratio(s['seconds'] / base)} | {s['tiles_per_s']:,.0f} | {s['mb_per_s']:.1f} | "
                f"{_mib(s['disk_bytes'])} | {s['files']} |")
    add("")
    add("MB/s counts the tiles' value bytes (10^6 bytes). sfclayer's files roll at the filesystem block "
        f"size ({report['sizes'][0]['writes']['sfclayer'].get('block_size', 0) >> 20} MiB on the local "
        "filesystem); every write is one shuffle sorted by index (Parquet plain: no shuffle).")
    add("")

    # Bbox
    add("## Bounding-box queries")
    add("")
    add("Median time per query; × sfclayer = time / sfclayer's time; read/returned = records the scan "
        "produced per tile in the answer (sfclayer: its `recordsRead` metric; Parquet: the scan's "
        "\"number of output rows\", after row-group and page pruning); files = files read / files in "
        "the layout; MB read = sfclayer's `bytesRead` metric (stored group bytes read; Parquet has no "
        "comparable meter: Hadoop's filesystem statistics miss its vectored reads).")
    add("")
    add("| tiles | box (share) | layout | median | × sfclayer | read/returned | files | MB read |")
    add("|---:|---|---|---:|---:|---:|---:|---:|")
    for e in report["sizes"]:
        for b in e["bbox"]:
            base = b["results"]["sfclayer"]["median_s"]
            for name in COMPARATORS:
                r = b["results"][name]
                add(f"| {_fmt_n(e['tiles'])} | {b['box_side']}² = {b['tiles']:,} ({b['actual_fraction']:.2%}) | "
                    f"{LABELS[name]} | {_fmt_s(r['median_s'])} | {_fmt_ratio(r['median_s'] / base)} | "
                    f"{r['records_read'] / max(r['returned'], 1):.1f} | {r['files_read']:.0f}/{r['files_total']} | "
                    f"{_fmt_mb(r['mb_read'])} |")
    add("")

    # Point look-ups
    add("## Point look-ups")
    add("")
    add("Latency per look-up in milliseconds. *warm (neighbourhood)*: a "
        f"{cfg['warm_region']}×{cfg['warm_region']} region visited viewport by viewport, a second time; "
        "*warm (random keys, files open)*: random keys with every data file open; *cold*: a fresh `Layer` "
        "and its first `get` (opens the file and reads its index; the OS page cache is warm). "
        "*Layer.get*: over the Layer's look-up socket, decoded to a dict in Python; *raw get*: the same "
        "socket, the record's bytes undecoded; *via py4j*: `ValueReader.get` through py4j, undecoded. "
        "Through Spark: one job per key (`collect` of one row), a fresh DataFrame each time.")
    add("")
    header = "| method | " + " | ".join(f"{_fmt_n(e['tiles'])} p50 | p99" for e in report["sizes"]) + \
             " | × warm Layer.get (p50, largest) |"
    add(header)
    add("|---|" + "---:|---:|" * len(report["sizes"]) + "---:|")
    last = report["sizes"][-1]["lookups"]
    ref = last["warm_python"]["p50_ms"]
    for key, label in POINT_METHODS:
        cells = []
        for e in report["sizes"]:
            s = e["lookups"][key]
            cells.append(f"{_fmt_ms(s['p50_ms'])} | {_fmt_ms(s['p99_ms'])}")
        add(f"| {label} | " + " | ".join(cells) + f" | {_fmt_ratio(last[key]['p50_ms'] / ref)} |")
    add("")
    add("Records read per point query through Spark (median) and files read: " + "; ".join(
        f"{_fmt_n(e['tiles'])}: " + ", ".join(
            f"{lab} {e['lookups'][k]['records_read']:,.0f} rec / {e['lookups'][k]['files_read']:.0f} files"
            for k, lab in (("spark_sfclayer", "sfclayer"), ("spark_parquet_zsorted", "Z-sorted"),
                           ("spark_parquet_plain", "plain")))
        for e in report["sizes"]) + ".")
    add("")
    add("### Batch look-ups (`get_many`)")
    add("")
    add("| tiles | batch | keys | time | µs/key | keys/s | MB/s |")
    add("|---:|---|---:|---:|---:|---:|---:|")
    for e in report["sizes"]:
        lk = e["lookups"]
        for key, label in BATCHES:
            b = lk[key]
            add(f"| {_fmt_n(e['tiles'])} | {label} | {b['keys']:,} | {_fmt_s(b['seconds'])} | "
                f"{b['us_per_key']:.1f} | {b['keys_per_s']:,.0f} | {b['mb_per_s']:.1f} |")
    add("")
    add("One request per batch; the JVM sorts the keys by index and walks each file once. Over the socket "
        "and undecoded, µs/key is the JVM's look-up cost plus a memory copy: the closest figure to a "
        "JVM-internal one (there is no JVM-side timing helper). MB/s counts record bytes.")
    add("")

    ts = report.get("tile_sizes")
    if ts:
        add("### Tile size (Python to JVM transport)")
        add("")
        add(f"Layers of {_fmt_n(ts['tiles'])} tiles of each size; warm = a {cfg['tile_study_region']}×"
            f"{cfg['tile_study_region']} neighbourhood, second pass; p50 (p99) in ms.")
        add("")
        add("| tile | Layer.get, warm | raw get (socket), warm | ValueReader.get via py4j, warm | "
            "py4j ÷ socket | get_many (socket), µs/tile | Layer.get, cold |")
        add("|---:|---:|---:|---:|---:|---:|---:|")
        for r in ts["results"]:
            add(f"| {r['tile_bytes'] / 1024:,.0f} KiB | {_fmt_ms(r['warm_python']['p50_ms'])} "
                f"({_fmt_ms(r['warm_python']['p99_ms'])}) | {_fmt_ms(r['warm_socket']['p50_ms'])} "
                f"({_fmt_ms(r['warm_socket']['p99_ms'])}) | {_fmt_ms(r['warm_py4j']['p50_ms'])} "
                f"({_fmt_ms(r['warm_py4j']['p99_ms'])}) | "
                f"{_fmt_ratio(r['warm_py4j']['p50_ms'] / r['warm_socket']['p50_ms'])} | "
                f"{r['batch_socket']['us_per_key']:.0f} | {_fmt_ms(r['cold_python']['p50_ms'])} |")
        add("")

    # Intervals
    iv = report.get("intervals")
    if iv:
        add("## Index interval (look-up trade-off)")
        add("")
        add(f"The same {_fmt_n(iv['tiles'])}-tile layer written with each `indexInterval`; look-ups raw over the "
            "look-up socket (undecoded), latencies in ms, the same keys on every layer, measured in "
            f"{cfg['interval_rounds']} interleaved rounds; get_many: {cfg['batch']:,} random keys, files open. Index heap = entries × "
            f"{lookup_bench.INDEX_ENTRY_HEAP_BYTES} B (LongWritable + reference + long position, as "
            "MapFile.Reader holds them), for all files open; an estimate, not a measurement.")
        add("")
        add("| interval | index on disk (KiB) | index entries | index heap, all files (KiB) | scan after seek, max (KiB) "
            "| cold p50 | cold p99 | warm nbhd p50 | warm nbhd p99 | warm random p50 | warm random p99 "
            "| get_many µs/key | write |")
        add("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in iv["results"]:
            add(f"| {r['interval']} | {r['index_bytes'] / 1024:.1f} | {r['index_entries']:,} | "
                f"{r['index_heap_bytes'] / 1024:.0f} | {r['scan_bytes_max'] / 1024:.0f} | "
                f"{_fmt_ms(r['cold_socket']['p50_ms'])} | "
                f"{_fmt_ms(r['cold_socket']['p99_ms'])} | {_fmt_ms(r['warm_socket']['p50_ms'])} | "
                f"{_fmt_ms(r['warm_socket']['p99_ms'])} | {_fmt_ms(r['warm_random_socket']['p50_ms'])} | "
                f"{_fmt_ms(r['warm_random_socket']['p99_ms'])} | {r['batch_warm']['us_per_key']:.1f} | "
                f"{_fmt_s(r['write_s']) if r['write_s'] is not None else '(main layer)'} |")
        add("")
    add("## Interpretation")
    add("")
    for para in interpret(report):
        add(para)
        add("")
    add("![results](results.png)")
    add("")
    return "\n".join(lines)


def interpret(report):
    """A few sentences drawn from the figures (so they stay true when the numbers change)."""
    out = []
    big = report["sizes"][-1]
    n = _fmt_n(big["tiles"])
    bb = big["bbox"]
    parts = []
    for b in bb:
        r = b["results"]
        base = r["sfclayer"]["median_s"]
        parts.append(f"{b['actual_fraction']:.1%} box: Z-sorted Parquet {_fmt_ratio(r['parquet_zsorted']['median_s'] / base)}, "
                     f"plain Parquet {_fmt_ratio(r['parquet_plain']['median_s'] / base)}, full scan "
                     f"{_fmt_ratio(r['sfclayer_fullscan']['median_s'] / base)} sfclayer's time")
    sfc = [b["results"]["sfclayer"]["median_s"] for e in report["sizes"] for b in e["bbox"]]
    out.append(f"**Bounding boxes.** At {n} tiles: " + "; ".join(parts) + ". "
               + _amplification_sentence(bb)
               + f" Across all sizes and boxes sfclayer's medians stay between {_fmt_s(min(sfc))} and "
               f"{_fmt_s(max(sfc))}: at these sizes a query's time is mostly Spark's fixed cost of planning and "
               "running a job, which every comparator pays; the records read are what grows with the layer.")
    lk = big["lookups"]
    pq = lk["spark_parquet_zsorted"]["p50_ms"]
    out.append(
        f"**Point look-ups.** A warm `Layer.get` takes {_fmt_ms(lk['warm_python']['p50_ms'])} ms at the median "
        f"(p99 {_fmt_ms(lk['warm_python']['p99_ms'])} ms), of which a round trip on the look-up socket is "
        f"{_fmt_ms(lk['socket_round_trip']['p50_ms'])} ms and the look-up itself, timed inside the JVM, "
        f"{_fmt_ms(lk['warm_jvm']['p50_ms'])} ms (p99 {_fmt_ms(lk['warm_jvm']['p99_ms'])} ms; cold "
        f"{_fmt_ms(lk['cold_jvm']['p50_ms'])} ms); a cold one (new `Layer`: file open and index read) "
        f"{_fmt_ms(lk['cold_python']['p50_ms'])} ms, after {_fmt_ms(lk['open']['p50_ms'])} ms for `sfclayer.open`. The same tile through Spark from Z-sorted Parquet takes "
        f"{_fmt_ms(pq)} ms ({_fmt_ratio(pq / lk['warm_python']['p50_ms'])} a warm `Layer.get`, "
        f"{_fmt_ratio(pq / lk['cold_python']['p50_ms'])} a cold one), from plain Parquet "
        f"{_fmt_ms(lk['spark_parquet_plain']['p50_ms'])} ms. In batches over the look-up socket, "
        f"{lk['batch_warm']['us_per_key']:.0f} µs per random key with the files open "
        f"({lk['batch_warm']['keys_per_s']:,.0f} keys/s); through py4j the same batch costs "
        f"{lk['batch_py4j']['us_per_key']:.0f} µs per key." + _tile_sentence(report.get("tile_sizes")))
    w = big["writes"]
    out.append(
        f"**Writes.** At {n} tiles sfclayer writes {w['sfclayer']['mb_per_s']:.0f} MB/s "
        f"({w['sfclayer']['tiles_per_s']:,.0f} tiles/s): {_fmt_ratio(w['sfclayer']['seconds'] / w['parquet_plain']['seconds'])} "
        f"the time of a plain Parquet write (no shuffle) and "
        f"{_fmt_ratio(w['sfclayer']['seconds'] / w['parquet_zsorted']['seconds'])} that of the Z-sorted Parquet write "
        "(the same one shuffle and sort).")
    iv = report.get("intervals")
    if iv:
        out.append(_interval_sentence(iv))
    la, lb = report.get("loadavg_start"), report.get("loadavg_end")
    if la and lb and max(la[0], lb[0]) > (report["machine"]["cores"] or 1):
        out.append(f"**Caveat.** The machine was shared while this ran (load average {la[0]} at the start, "
                   f"{lb[0]} at the end, on {report['machine']['cores']} cores): absolute times are inflated and "
                   "noisy; the ratios, taken on the same boxes in rotating order, and the records/bytes read are the "
                   "figures to rely on.")
    return out


def _tile_sentence(ts):
    if not ts or len(ts["results"]) < 2:
        return ""
    small, big = ts["results"][0], ts["results"][-1]
    return (f" By tile size: a warm `Layer.get` of a {small['tile_bytes'] / 1024:.0f} KiB tile takes "
            f"{_fmt_ms(small['warm_python']['p50_ms'])} ms and of a {big['tile_bytes'] / 1024:.0f} KiB one "
            f"{_fmt_ms(big['warm_python']['p50_ms'])} ms over the look-up socket, against "
            f"{_fmt_ms(small['warm_py4j']['p50_ms'])} and {_fmt_ms(big['warm_py4j']['p50_ms'])} ms (undecoded) "
            "through py4j, whose base64, multi-write replies stall on delayed ACKs once they pass a few KiB.")


def _amplification_sentence(bb):
    b = bb[0]
    r = b["results"]
    def amp(name):
        return r[name]["records_read"] / max(r[name]["returned"], 1)
    return (f"For the smallest box, sfclayer reads {amp('sfclayer'):.1f} records per tile returned "
            f"({r['sfclayer']['files_read']:.0f} of {r['sfclayer']['files_total']} files), Z-sorted Parquet "
            f"{amp('parquet_zsorted'):.1f}, plain Parquet {amp('parquet_plain'):.1f}, the full scan "
            f"{amp('sfclayer_fullscan'):.0f}.")


def _interval_sentence(iv):
    rs = iv["results"]
    by = {r["interval"]: r for r in rs}

    def seq(f):
        return "/".join(f(r) for r in rs)

    jvm = seq(lambda r: f"{r['batch_warm']['us_per_key']:.1f}")
    scan = seq(lambda r: f"{r['scan_bytes_max'] / 1024:.0f}")
    warm = seq(lambda r: _fmt_ms(r["warm_random_socket"]["p50_ms"]))
    cold = seq(lambda r: _fmt_ms(r["cold_socket"]["p50_ms"]))
    heap = seq(lambda r: f"{r['index_heap_bytes'] / 1024:.0f}")
    text = (f"**Index interval.** On {_fmt_n(iv['tiles'])} tiles, at intervals {seq(lambda r: str(r['interval']))}: "
            f"the JVM's look-up cost (get_many, per key) is {jvm} µs, growing with the bytes a look-up reads after "
            f"its seek ({scan} KiB at most); a single warm get over the socket takes {warm} ms (its round trip "
            f"hides small differences); a cold get, which reads the file's whole index, {cold} ms; and the indexes "
            f"take {heap} KiB of heap with every file open. ")
    # The default stands unless another interval is at least as good on every measure (the JVM's
    # per-key cost within the larger interquartile range of the two over the rounds, a warm get and a
    # cold get within 10 %) and better on one of them.
    def spread(r):
        rounds = r.get("batch_rounds_us_per_key") or [r["batch_warm"]["us_per_key"]]
        return float(np.percentile(rounds, 75) - np.percentile(rounds, 25))

    def no_worse(a, b):
        """a is at least as good as b on every measure."""
        return (a["batch_warm"]["us_per_key"] <= b["batch_warm"]["us_per_key"] + max(spread(a), spread(b))
                and a["warm_random_socket"]["p50_ms"] <= 1.1 * b["warm_random_socket"]["p50_ms"]
                and a["cold_socket"]["p50_ms"] <= 1.1 * b["cold_socket"]["p50_ms"])

    if 4 not in by:
        return text
    d = by[4]
    better = [r for r in rs if r is not d and no_worse(r, d) and not no_worse(d, r)]
    if better:
        b = min(better, key=lambda r: r["cold_socket"]["p50_ms"])
        return text + (f"Interval {b['interval']} is at least as good as the default 4 on every measure here and better "
                       f"on one, so these figures support {b['interval']} for tiles of this size (the scan after a seek "
                       f"grows with the tile size: {b['scan_bytes_max'] / 1024:.0f} KiB against "
                       f"{d['scan_bytes_max'] / 1024:.0f} KiB at 4 here).")
    parts = []
    for r in rs:
        if r is d:
            continue
        dj = r["batch_warm"]["us_per_key"] - d["batch_warm"]["us_per_key"]
        dc = r["cold_socket"]["p50_ms"] - d["cold_socket"]["p50_ms"]
        parts.append(f"{r['interval']} {'saves' if dj < 0 else 'costs'} {abs(dj):.1f} µs per warm look-up in the JVM "
                     f"and {'saves' if dc < 0 else 'costs'} {abs(dc):.1f} ms per cold one, at "
                     f"{r['index_heap_bytes'] / max(d['index_heap_bytes'], 1):.2g}× the heap")
    return text + ("No interval is at least as good as the default 4 on every measure, so these figures support "
                   "keeping 4: against it, " + "; ".join(parts) + ". (Ties: JVM costs within their interquartile "
                   "range over the rounds, warm and cold gets within 10 %.)")


def plot(report, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    big = report["sizes"][-1]
    fig, axes = plt.subplots(2, 2, figsize=(14, 10))
    colors = {"sfclayer": "C0", "parquet_zsorted": "C1", "parquet_plain": "C2", "sfclayer_fullscan": "C3"}

    ax = axes[0][0]
    width = 0.8 / len(COMPARATORS)
    xs = np.arange(len(big["bbox"]))
    for i, name in enumerate(COMPARATORS):
        ys = [b["results"][name]["median_s"] for b in big["bbox"]]
        bars = ax.bar(xs + (i - (len(COMPARATORS) - 1) / 2) * width, ys, width, color=colors[name], label=LABELS[name])
        for bar, b in zip(bars, big["bbox"]):
            ratio = b["results"][name]["median_s"] / b["results"]["sfclayer"]["median_s"]
            ax.annotate(f"{ratio:.1f}×", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                        ha="center", va="bottom", fontsize=7)
    ax.set_xticks(xs)
    ax.set_xticklabels([f"{b['actual_fraction']:.1%} ({b['tiles']:,} tiles)" for b in big["bbox"]], fontsize=8)
    ax.set_ylabel("median query time (s)")
    ax.set_title(f"Bounding-box queries ({_fmt_n(big['tiles'])} tiles; × sfclayer's time)")
    ax.set_ylim(0, ax.get_ylim()[1] * 1.35)
    ax.legend(fontsize=8, loc="upper left", ncol=2)
    ax.grid(True, axis="y", alpha=0.3)

    ax = axes[0][1]
    for name in COMPARATORS:
        xs = [b["actual_fraction"] * 100 for b in big["bbox"]]
        ys = [b["results"][name]["records_read"] / max(b["results"][name]["returned"], 1) for b in big["bbox"]]
        ax.plot(xs, ys, "o-", color=colors[name], label=LABELS[name])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("box area (% of layer)")
    ax.set_ylabel("records read per tile returned")
    ax.set_title(f"Read amplification ({_fmt_n(big['tiles'])} tiles)")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)

    ax = axes[1][0]
    lk = big["lookups"]
    methods = [(k, lab) for k, lab in POINT_METHODS if k not in ("open",)]
    ys = np.arange(len(methods))
    p50 = [lk[k]["p50_ms"] for k, _ in methods]
    p99 = [lk[k]["p99_ms"] for k, _ in methods]
    ax.barh(ys - 0.2, p50, height=0.4, label="p50", color="C0")
    ax.barh(ys + 0.2, p99, height=0.4, label="p99", color="C9")
    ax.set_yticks(ys)
    ax.set_yticklabels([SHORT_POINT_LABELS.get(k, lab) for k, lab in methods], fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("latency (ms)")
    ax.set_title(f"Point look-ups ({_fmt_n(big['tiles'])} tiles)")
    ax.legend(fontsize=8)
    ax.grid(True, axis="x", which="both", alpha=0.3)

    ax = axes[1][1]
    iv = report.get("intervals")
    if iv:
        xs = [r["interval"] for r in iv["results"]]
        ax.plot(xs, [r["cold_socket"]["p50_ms"] for r in iv["results"]], "o-", color="C3", label="cold p50")
        ax.plot(xs, [r["warm_random_socket"]["p50_ms"] for r in iv["results"]], "s-", color="C0",
                label="warm random p50")
        ax.plot(xs, [r["warm_socket"]["p50_ms"] for r in iv["results"]], "^-", color="C2", label="warm neighbourhood p50")
        ax.plot(xs, [r["batch_warm"]["us_per_key"] / 1e3 for r in iv["results"]], "d--", color="C4",
                label="get_many per key (JVM cost)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("indexInterval")
        ax.set_ylabel("look-up latency (ms)")
        ax2 = ax.twinx()
        ax2.bar(xs, [r["index_heap_bytes"] / 1024 for r in iv["results"]],
                width=[x * 0.35 for x in xs], alpha=0.25, color="grey", label="index heap (KiB)")
        ax2.set_yscale("log")
        ax2.set_ylabel("index heap, all files (KiB)")
        h1, l1 = ax.get_legend_handles_labels()
        h2, l2 = ax2.get_legend_handles_labels()
        ax.legend(h1 + h2, l1 + l2, fontsize=8)
        ax.set_title(f"Index interval ({_fmt_n(iv['tiles'])} tiles)")
        ax.grid(True, which="both", alpha=0.3)
    fig.suptitle(f"sfclayer benchmarks — {report['machine']['cpu']}, {report['machine']['cores']} cores, "
                 f"{report['started']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_outputs(report, out_dir, command):
    os.makedirs(out_dir, exist_ok=True)
    md_path = os.path.join(out_dir, "RESULTS.md")
    with open(md_path, "w") as f:
        f.write(render_markdown(report, command))
    plot(report, os.path.join(out_dir, "results.png"))
    return md_path


# ----------------------------------------------------------------------------------------------
# Command line

def parse_sizes(text):
    """'14,16,18' (powers of two, values up to 40) or tile counts '16384,65536'."""
    out = []
    for part in text.split(","):
        v = int(part.strip())
        out.append(2 ** v if v <= 40 else v)
    return tuple(out)


def make_session(driver_memory="6g"):
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = sfclayer.session(
        "local[2]", app_name="sfclayer-bench",
        **{"spark.driver.memory": driver_memory,
           "spark.ui.enabled": "false",
           "spark.ui.showConsoleProgress": "false",
           "spark.driver.host": "127.0.0.1",
           "spark.driver.bindAddress": "127.0.0.1",
           "spark.sql.shuffle.partitions": "8"})
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", help="layer sizes: powers of two (14,16,18) or tile counts")
    p.add_argument("--quick", action="store_true", help="a small, fast run (2^10 and 2^12 tiles)")
    p.add_argument("--out", default=HERE, help="where RESULTS.md and results.png go (default: bench/)")
    p.add_argument("--work", help="scratch directory for the layers (default: a temporary directory)")
    p.add_argument("--json", help="also write the raw report as JSON here")
    p.add_argument("--intervals", help="index intervals to compare, e.g. 1,4,16,128")
    p.add_argument("--interval-size", help="tiles of the index-interval layer (power of two or count)")
    args = p.parse_args(argv)

    cfg = QUICK if args.quick else DEFAULT
    if args.sizes:
        cfg = dataclasses.replace(cfg, sizes=parse_sizes(args.sizes))
    if args.intervals:
        cfg = dataclasses.replace(cfg, intervals=tuple(int(x) for x in args.intervals.split(",")))
    if args.interval_size:
        cfg = dataclasses.replace(cfg, interval_size=parse_sizes(args.interval_size)[0])
    args_text = " ".join(sys.argv[1:] if argv is None else argv)
    command = ".venv/bin/python bench/run.py" + (f" {args_text}" if args_text else " (= make bench)")

    work = args.work or tempfile.mkdtemp(prefix="sfclayer-bench-")
    spark = make_session()
    t = _perf()
    try:
        report = run(spark, cfg, work, log=lambda s: print(f"{_perf() - t:7.1f}s  {s}", flush=True))
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    report["command"] = command
    path = write_outputs(report, args.out, command)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1, default=float)
    spark.stop()
    print(f"wrote {path} and results.png in {report['seconds'] / 60:.1f} min")


if __name__ == "__main__":
    main()
