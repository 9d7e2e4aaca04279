"""The layer reader: filters and bbox become key boxes, SFC ranges and pruned files; results are exact."""

import datetime as dt
import os
import random
import re
import shutil

import pytest
from py4j.java_gateway import get_field
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sfclayer.errors import CorruptLayer, InvalidArgument, LayerNotFound
from tests import helpers

# A non-square grid whose bounds do not start at 0, sparsely filled, with an extent whose tile size
# is not a binary fraction (so envelope edges are rounded doubles).
BOUNDS = (5, -7, 44, 22)  # cols 5..44 (40), rows -7..22 (30)
EXTENT = (-73.5, 40.2, -72.1, 41.0)
FILL = 0.35

VALUES = T.StructType([
    T.StructField("v", T.IntegerType(), False),
    T.StructField("name", T.StringType(), True),
    T.StructField("w", T.DoubleType(), True),
])
SPATIAL_SCHEMA = T.StructType([T.StructField("col", T.IntegerType(), False),
                               T.StructField("row", T.IntegerType(), False)] + VALUES.fields)

T0 = dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)
DAY_US = 86_400_000_000
T0_US = int(T0.timestamp()) * 1_000_000


def micros(t):
    return int((t - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) / dt.timedelta(microseconds=1))


def envelope(col, row, bounds=BOUNDS, extent=EXTENT):
    """Tile envelope as the format defines it (the same double arithmetic as TileGrid)."""
    c0, r0, c1, r1 = bounds
    tw = (extent[2] - extent[0]) / (c1 - c0 + 1)
    th = (extent[3] - extent[1]) / (r1 - r0 + 1)
    xmin = extent[0] + (col - c0) * tw
    ymax = extent[3] - (row - r0) * th
    return (xmin, ymax - th, xmin + tw, ymax)


def spatial_rows(seed):
    rnd = random.Random(seed)
    rows = []
    for c in range(BOUNDS[0], BOUNDS[2] + 1):
        for r in range(BOUNDS[1], BOUNDS[3] + 1):
            if rnd.random() < FILL:
                rows.append((c, r, c * 1000 + r, None if rnd.random() < 0.2 else f"t{c}_{r}", rnd.random()))
    return rows


def write(df, path, **options):
    w = df.write.format("sfclayer").mode("overwrite")
    for k, v in options.items():
        w = w.option(k, str(v))
    w.save(path)
    return path


def read(spark, path, **options):
    r = spark.read.format("sfclayer")
    for k, v in options.items():
        r = r.option(k, str(v))
    return r.load(path)


def metrics(spark, df):
    return dict(spark._jvm.io.sfclayer.spark.SfcLayerMetrics.of(df._jdf))


def scan_description(df):
    plan = df._jdf.queryExecution().executedPlan().toString()
    return plan


def spark_filters_after_scan(df):
    """Whether Spark still evaluates a Filter over the scan (i.e. some filter was not handled exactly)."""
    plan = df._jdf.queryExecution().executedPlan().toString()
    return any(re.match(r"^[\s:+\-*()\d]*Filter ", line) for line in plan.splitlines())


def keyed(rows, n_keys=2):
    return {tuple(r[:n_keys]): tuple(r) for r in rows}


# ---------------------------------------------------------------- layers, written once per module

@pytest.fixture(scope="module")
def layers(spark, tmp_path_factory):
    """The same sparse, non-square layer under each 2D key index (two of them compressed)."""
    base = tmp_path_factory.mktemp("read")
    rows = spatial_rows(1)
    df = spark.createDataFrame(rows, SPATIAL_SCHEMA).repartition(3)
    bounds = ",".join(map(str, BOUNDS))
    extent = ",".join(map(str, EXTENT))
    out = {}
    for kind, compression in [("z", "none"), ("hilbert", "zstd"), ("rowmajor", "deflate")]:
        out[kind] = write(df, str(base / kind), keyIndex=kind, bounds=bounds, extent=extent, blockSize="64k",
                          partitions=4, indexInterval=2, compression=compression)
    return rows, out


@pytest.fixture(scope="module")
def z3_layer(spark, tmp_path_factory):
    """A space-time layer: several times per tile, many in the same day bin (so groups hold several keys)."""
    rnd = random.Random(2)
    rows = []
    for c in range(0, 20):
        for r in range(3, 18):
            if rnd.random() < 0.5:
                for h in sorted(rnd.sample(range(0, 10 * 24), 3)):
                    rows.append((c, r, T0 + dt.timedelta(hours=h), c * 100 + r))
    schema = T.StructType([T.StructField("col", T.IntegerType(), False), T.StructField("row", T.IntegerType(), False),
                           T.StructField("time", T.TimestampType(), False),
                           T.StructField("v", T.IntegerType(), False)])
    path = write(spark.createDataFrame(rows, schema), str(tmp_path_factory.mktemp("read") / "z3"),
                 bounds="0,3,19,17", timeBounds="2020-01-01T00:00:00Z,2020-01-10T23:59:59Z",
                 timeResolution="1 day", blockSize="64k", partitions=3)
    return [(c, r, micros(t), v) for c, r, t, v in rows], path


@pytest.fixture(scope="module")
def big_layer(spark, tmp_path_factory):
    """100,000 tiles of one int over 400 x 250 keys, in many small files."""
    df = spark.range(100_000).select((F.col("id") % 400).cast("int").alias("col"),
                                     (F.col("id") / 400).cast("int").alias("row"),
                                     F.col("id").cast("int").alias("v"))
    return write(df, str(tmp_path_factory.mktemp("read") / "big"), bounds="0,0,399,249", blockSize="64k",
                 partitions=4, extent="0,0,4000,2500")


# ---------------------------------------------------------------- exact results

def random_key_box(rnd):
    """A box over the bounds, sometimes reaching past them or missing them entirely."""
    c0 = rnd.randint(BOUNDS[0] - 8, BOUNDS[2] + 2)
    r0 = rnd.randint(BOUNDS[1] - 8, BOUNDS[3] + 2)
    return c0, r0, c0 + rnd.randint(0, 25), r0 + rnd.randint(0, 20)


@pytest.mark.parametrize("kind", ["z", "hilbert", "rowmajor"])
def test_random_key_boxes_match_brute_force(spark, layers, kind):
    rows, paths = layers
    df = read(spark, paths[kind])
    rnd = random.Random(kind)
    for _ in range(8):
        c0, r0, c1, r1 = random_key_box(rnd)
        q = df.where(F.col("col").between(c0, c1) & (F.col("row") >= r0) & (F.col("row") <= r1))
        want = {r: r + envelope(r[0], r[1]) for r in rows if c0 <= r[0] <= c1 and r0 <= r[1] <= r1}
        got = {tuple(x) for x in q.collect()}
        assert got == set(want.values()), (kind, (c0, r0, c1, r1))
        assert not spark_filters_after_scan(q)


@pytest.mark.parametrize("kind", ["z", "hilbert"])
def test_envelope_filters_and_bbox_match_brute_force(spark, layers, kind):
    rows, paths = layers
    rnd = random.Random("env" + kind)
    for i in range(4):
        if i % 2:  # a box exactly on tile edges: touching tiles count
            a = envelope(rnd.randint(5, 44), rnd.randint(-7, 22))
            b = envelope(rnd.randint(5, 44), rnd.randint(-7, 22))
            x0, x1 = sorted([a[0], b[2]])
            y0, y1 = sorted([a[1], b[3]])
        else:
            x0 = rnd.uniform(EXTENT[0] - 0.1, EXTENT[2])
            y0 = rnd.uniform(EXTENT[1] - 0.1, EXTENT[3])
            x1, y1 = x0 + rnd.uniform(0, 0.5), y0 + rnd.uniform(0, 0.3)
        want = set()
        for r in rows:
            e = envelope(r[0], r[1])
            if e[2] >= x0 and e[0] <= x1 and e[3] >= y0 and e[1] <= y1:
                want.add(r[:3])
        by_filter = read(spark, paths[kind]).where(
            (F.col("xmax") >= x0) & (F.col("xmin") <= x1) & (F.col("ymax") >= y0) & (F.col("ymin") <= y1))
        assert {tuple(x) for x in by_filter.select("col", "row", "v").collect()} == want
        assert not spark_filters_after_scan(by_filter)
        by_option = read(spark, paths[kind], bbox=f"{x0!r},{y0!r},{x1!r},{y1!r}")
        assert {tuple(x) for x in by_option.select("col", "row", "v").collect()} == want
        # one-sided and strict envelope conditions, mixed with key conditions
        strict = read(spark, paths[kind]).where((F.col("xmin") > x0) & (F.col("ymax") < y1) & (F.col("col") != 20))
        want = {r[:2] for r in rows if envelope(r[0], r[1])[0] > x0 and envelope(r[0], r[1])[3] < y1 and r[0] != 20}
        assert {tuple(x) for x in strict.select("col", "row").collect()} == want


def test_ors_ins_nots_and_untranslatable_parts(spark, layers):
    rows, paths = layers
    df = read(spark, paths["z"])
    cases = [
        ("(col IN (6, 9, 10) AND row < 0) OR row BETWEEN 10 AND 12",
         lambda c, r, v: (c in (6, 9, 10) and r < 0) or 10 <= r <= 12, False),
        ("NOT (col BETWEEN 10 AND 40) AND row != 3", lambda c, r, v: not 10 <= c <= 40 and r != 3, False),
        ("(col = 7 AND v % 2 = 0) OR row = 3", lambda c, r, v: (c == 7 and v % 2 == 0) or r == 3, True),
        # pushed as a superset (cols 7 and rows 3), which Spark finishes
        ("(col = 7 AND v > 7010) OR row = 3", lambda c, r, v: (c == 7 and v > 7010) or r == 3, True),
        ("col = 12 OR v > 30000", lambda c, r, v: c == 12 or v > 30000, True),
        ("col IN (" + ",".join(str(c) for c in range(5, 45, 2)) + ") AND row IN (-7, 0, 1, 2, 22)",
         lambda c, r, v: c % 2 == 1 and r in (-7, 0, 1, 2, 22), False),
    ]
    for where, pred, spark_filters in cases:
        q = df.where(where).select("col", "row", "v")
        assert {tuple(x) for x in q.collect()} == {r[:3] for r in rows if pred(*r[:3])}, where
        assert spark_filters_after_scan(q) == spark_filters, where
    assert "boxes=[cols 7..7, rows -7..22; cols 5..44, rows 3..3]" in scan_description(
        df.where("(col = 7 AND v > 7010) OR row = 3"))


def test_space_time_boxes_and_time_ranges_match_brute_force(spark, z3_layer):
    rows, path = z3_layer
    df = read(spark, path)
    rnd = random.Random(3)
    java8 = spark.conf.get("spark.sql.datetime.java8API.enabled")
    try:
        for i in range(8):
            # java.sql.Timestamp filter values, then java.time.Instant ones
            spark.conf.set("spark.sql.datetime.java8API.enabled", str(i % 2 == 1).lower())
            c0, r0 = rnd.randint(-2, 18), rnd.randint(0, 16)
            c1, r1 = c0 + rnd.randint(0, 8), r0 + rnd.randint(0, 8)
            t0 = T0 + dt.timedelta(minutes=rnd.randint(-600, 12 * 24 * 60))
            t1 = t0 + dt.timedelta(minutes=rnd.randint(0, 4 * 24 * 60))
            q = (df.where(F.col("col").between(c0, c1) & F.col("row").between(r0, r1)
                          & (F.col("time") >= F.lit(t0)) & (F.col("time") < F.lit(t1)))
                 .select("col", "row", F.unix_micros("time").alias("t"), "v"))
            want = {r for r in rows if c0 <= r[0] <= c1 and r0 <= r[1] <= r1 and micros(t0) <= r[2] < micros(t1)}
            assert {tuple(x) for x in q.collect()} == want, (c0, r0, c1, r1, t0, t1)
            assert not spark_filters_after_scan(q)
    finally:
        spark.conf.set("spark.sql.datetime.java8API.enabled", java8)
    # a time-only filter, and a time range before the layer's
    q = df.where(F.col("time") == F.lit(dt.datetime.fromtimestamp(rows[0][2] / 1e6, dt.timezone.utc)))
    assert sorted(tuple(x)[:2] for x in q.collect()) == sorted(r[:2] for r in rows if r[2] == rows[0][2])
    q = df.where(F.col("time") < F.lit(T0))
    assert q.count() == 0
    assert "files=0/" in scan_description(q)


def test_projection_and_metadata_columns(spark, layers):
    rows, paths = layers
    want = {r[:2]: r for r in rows if 10 <= r[0] <= 20 and 0 <= r[1] <= 5}
    layer = spark._jvm.io.sfclayer.layer.Layer.open(spark._jsc.hadoopConfiguration(), paths["hilbert"])
    key_index = get_field(layer.metadata(), "keyIndex")
    df = read(spark, paths["hilbert"]).where("col BETWEEN 10 AND 20 AND row BETWEEN 0 AND 5")
    got = df.select("name", "row", "_sfc_index", "col", "_file").collect()
    assert len(got) == len(want)
    for name, row, index, col, file in got:
        assert name == want[(col, row)][3]
        assert index == key_index.index(col, row)
        first = int(os.path.basename(file).rsplit("-", 1)[1])
        assert first <= index and os.path.isdir(file.replace("file:", ""))
    assert df.select("w").count() == len(want)
    assert df.count() == len(want)
    # no columns at all (count) and only envelope columns
    assert {tuple(x) for x in df.select("ymax", "xmin").collect()} == {
        (envelope(c, r)[3], envelope(c, r)[0]) for c, r in want}


# ---------------------------------------------------------------- planning, pruning, amplification

def test_explain_and_read_amplification_of_a_small_box(spark, big_layer):
    n_files = len(helpers.data_files(big_layer))
    assert n_files >= 40
    df = read(spark, big_layer)
    q = df.where("col BETWEEN 181 AND 220 AND row BETWEEN 100 AND 124")  # 40 x 25: 1% of the layer
    explain = scan_description(q)
    m = re.search(r"sfclayer \S+ v\d+ \[z\] boxes=\[cols 181\.\.220, rows 100\.\.124\] ranges=(\d+) files=(\d+)/(\d+) "
                  r"pushed=\[(.*)\]", explain)
    assert m, explain
    assert int(m.group(3)) == n_files
    assert "GreaterThanOrEqual(col,181)" in m.group(4) and "LessThanOrEqual(row,124)" in m.group(4)
    got = q.collect()
    assert sorted(r.v for r in got) == sorted(r * 400 + c for c in range(181, 221) for r in range(100, 125))
    st = metrics(spark, q)
    assert st["recordsReturned"] == 1000
    assert st["filesRead"] == int(m.group(2)) <= n_files // 10
    assert st["rangesRead"] >= int(m.group(1))
    assert st["groupsRead"] <= 1000 * 1.03, st
    assert st["recordsRead"] <= 1000 * 1.03, st
    print(f"\n1% box over 100k tiles: {st} of {n_files} files; explain: {m.group(0)}")

    # capped ranges read a superset; refinement keeps the answer exact
    capped = read(spark, big_layer, maxRanges=3).where("col BETWEEN 181 AND 220 AND row BETWEEN 100 AND 124")
    assert "ranges=3 " in scan_description(capped)
    assert sorted(r.v for r in capped.collect()) == sorted(r.v for r in got)
    st = metrics(spark, capped)
    assert st["recordsReturned"] == 1000 and st["recordsDiscarded"] > 0
    assert st["recordsRead"] == st["recordsReturned"] + st["recordsDiscarded"]

    # the bbox option in map units (tiles are 10 x 10): the same tiles, strictly inside
    by_bbox = read(spark, big_layer, bbox="1810.5,1250.5,2209.5,1499.5")  # rows 100..124 from the top
    assert sorted(r.v for r in by_bbox.collect()) == sorted(r.v for r in got)
    assert ("boxes=[cols 181..220, rows 100..124]" in scan_description(by_bbox)
            and "bbox=[1810.5,1250.5,2209.5,1499.5]" in scan_description(by_bbox))


def test_a_small_box_over_several_files_is_one_task(spark, big_layer):
    # a task costs more than reading a few small files: the box's files are read one after the other
    q = read(spark, big_layer).where("col BETWEEN 181 AND 220 AND row BETWEEN 100 AND 124")
    assert q.rdd.getNumPartitions() == 1
    assert sorted(r.v for r in q.collect()) == sorted(r * 400 + c for c in range(181, 221) for r in range(100, 125))
    st = metrics(spark, q)
    assert st["filesRead"] > 1 and st["recordsReturned"] == 1000
    counted = q.groupBy().count()
    assert counted.collect()[0][0] == 1000 and metrics(spark, counted)["filesRead"] == st["filesRead"]


def test_box_outside_the_bounds_reads_no_file(spark, big_layer):
    for where in ["col > 399", "row < 0 AND col = 3", "col > 399 OR row > 249", "xmin > 5000"]:
        q = read(spark, big_layer).where(where)
        assert "files=0/" in scan_description(q), where
        assert q.collect() == []
        assert metrics(spark, q).get("filesRead", 0) == 0
    q = read(spark, big_layer, bbox="-100,-100,-1,-1")
    assert "boxes=[] (nothing can match)" in scan_description(q)
    assert q.count() == 0


def test_bad_read_options_are_refused_by_name(spark, layers, z3_layer):
    _, paths = layers
    with pytest.raises(InvalidArgument, match="option bbox.*no extent"), helpers.sfclayer_errors():
        read(spark, z3_layer[1], bbox="0,0,1,1").collect()
    with pytest.raises(InvalidArgument, match="option bbox"), helpers.sfclayer_errors():
        read(spark, paths["z"], bbox="1,2,3").collect()
    with pytest.raises(InvalidArgument, match="option maxRanges"), helpers.sfclayer_errors():
        read(spark, paths["z"], maxRanges="-1").collect()


# ---------------------------------------------------------------- errors

def test_missing_layer_names_the_path(spark, tmp_path):
    path = str(tmp_path / "nothing-here")
    with pytest.raises(LayerNotFound, match="no sfclayer layer at .*nothing-here"), helpers.sfclayer_errors():
        read(spark, path).collect()


def test_corrupt_metadata_names_the_file(spark, layers, tmp_path):
    _, paths = layers
    copy = str(tmp_path / "bad-metadata")
    shutil.copytree(paths["z"], copy)
    version = helpers.versions(copy)[-1]
    meta = os.path.join(copy, "_sfclayer", f"v{version:08d}.json")
    with open(meta, "w") as f:
        f.write("{ not json")
    crc = os.path.join(copy, "_sfclayer", f".v{version:08d}.json.crc")
    if os.path.exists(crc):
        os.remove(crc)
    with pytest.raises(CorruptLayer, match="bad layer metadata.*" + re.escape(f"v{version:08d}.json")), \
            helpers.sfclayer_errors():
        read(spark, copy).collect()


def test_data_file_that_is_not_a_mapfile_names_the_file(spark, layers, tmp_path):
    _, paths = layers
    copy = str(tmp_path / "bad-data")
    shutil.copytree(paths["z"], copy)
    victim = helpers.data_files(copy)[0]
    for name in os.listdir(victim):
        os.remove(os.path.join(victim, name))
    for name in ("data", "index"):
        with open(os.path.join(victim, name), "wb") as f:
            f.write(b"this is not a SequenceFile at all")
    with pytest.raises(CorruptLayer, match=re.escape(os.path.basename(victim)) + ".*not a SequenceFile"), \
            helpers.sfclayer_errors():
        read(spark, copy).collect()
    # a query whose ranges miss that file never opens it
    first_other = int(os.path.basename(helpers.data_files(copy)[1]).rsplit("-", 1)[1])
    layer = spark._jvm.io.sfclayer.layer.Layer.open(spark._jsc.hadoopConfiguration(), copy)
    col, row = get_field(layer.metadata(), "keyIndex").decode(first_other)
    assert read(spark, copy).where(f"col = {col} AND row = {row}").count() == 1
