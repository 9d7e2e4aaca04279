"""What every benchmark study shares: the run's configuration, the synthetic tiles, measuring a
query, the machine, the Spark session.

A study module (see studies.py) gets a :class:`Context` (``spark``, ``cfg``, ``work``, ``rng``,
``log``, ``report``) and, per layer size, a ``sizes.Size`` (the layers of one size).
"""

import dataclasses
import json
import math
import os
import platform
import subprocess
import sys
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

_perf = time.perf_counter


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


def open_value_reader(spark, path, cache_size=1024):
    """A JVM ``io.sfclayer.lookup.ValueReader`` of its own on a layer's newest version (the session's
    Hadoop configuration), for the benches that time it without sfclayer.open's shared server."""
    jvm = spark.sparkContext._jvm
    with sfclayer._jvm.translated():
        conf = jvm.io.sfclayer.spark.HadoopConfs.forOptions(spark._jsparkSession, jvm.java.util.HashMap())
        cls = jvm.io.sfclayer.lookup.ValueReader
        return cls.open(conf, path, int(cache_size), cls.DEFAULT_CACHE_BYTES, True, -1, -1)


def open_mapfile_layer(spark, path, cache_size=None, cache_bytes=None):
    """``sfclayer.open(spark, path)`` whose reader opens data files with Hadoop's MapFile.Reader (the index
    read at every open) instead of keeping each file's index in the driver: the way before, for the benches
    that compare the two."""
    from sfclayer.layer import Layer

    class MapFileLayer(Layer):
        def _open(self, version, as_of):
            self._cache = self._cache[:2] + (False,)
            return super()._open(version, as_of)

    return MapFileLayer(spark, path, cache_size, cache_bytes)


def start_lookup_server(spark, reader):
    """A JVM ``LookupServer`` of its own on ``reader``: (server, host, port, token)."""
    with sfclayer._jvm.translated():
        server = spark.sparkContext._jvm.io.sfclayer.lookup.LookupServer(reader)
        return server, str(server.host()), int(server.port()), bytes(server.token())


def layer_metadata(spark, path):
    reader = open_value_reader(spark, path, 1)
    try:
        return json.loads(reader.metadataJson())
    finally:
        reader.close()


@dataclasses.dataclass
class Context:
    """What a study measures with, and the report it adds to."""

    spark: object
    cfg: Config
    work: str
    rng: object
    log: object
    report: dict


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
    # the JVM-side helpers (LookupTiming), built by `make setup` (gradle benchJar)
    bench_jar = os.path.join(ROOT, "build", "libs", "sfclayer-bench.jar")
    spark = sfclayer.session(
        "local[2]", app_name="sfclayer-bench",
        **{"spark.jars": bench_jar,
           "spark.driver.memory": driver_memory,
           "spark.ui.enabled": "false",
           "spark.ui.showConsoleProgress": "false",
           "spark.driver.host": "127.0.0.1",
           "spark.driver.bindAddress": "127.0.0.1",
           "spark.sql.shuffle.partitions": "8"})
    spark.sparkContext.setLogLevel("ERROR")
    return spark
