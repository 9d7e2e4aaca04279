"""The layer writer: one shuffle, sorted block-rolled MapFiles, atomic publish, clear errors."""

import datetime as dt
import os
import uuid

import pytest
from pyspark.errors import SparkRuntimeException
from pyspark.sql import functions as F
from pyspark.sql import types as T

import sfclayer
from tests import helpers


def tiles(spark, n_cols, n_rows, col0=0, row0=0, size=16):
    """A grid of tiles with an int value and a binary payload of `size` bytes."""
    return (spark.range(n_cols * n_rows)
            .select((F.col("id") % n_cols + col0).cast("int").alias("col"),
                    (F.floor(F.col("id") / n_cols) + row0).cast("int").alias("row"))
            .withColumn("v", F.col("col") * 1000 + F.col("row"))
            .withColumn("payload", F.expr(f"unhex(repeat(lpad(hex(v), 8, '0'), {max(1, size // 4)}))")))


@pytest.fixture
def layer_path(tmp_path):
    return str(tmp_path / f"layer-{uuid.uuid4().hex[:6]}")


def count_stages(spark, action):
    """Run `action` under a fresh job group; return (jobs, stages) Spark ran for it."""
    sc = spark.sparkContext
    group = "g-" + uuid.uuid4().hex
    sc.setJobGroup(group, "counting stages")
    try:
        action()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    tracker = sc.statusTracker()
    jobs = tracker.getJobIdsForGroup(group)
    stages = set()
    for j in jobs:
        stages.update(tracker.getJobInfo(j).stageIds)
    return len(jobs), len(stages)


def test_files_are_sorted_disjoint_named_by_first_index_and_within_block(spark, layer_path):
    df = tiles(spark, 64, 48, col0=10, row0=-5, size=1500)
    sfclayer.write(df, layer_path, bounds=(10, -5, 73, 42), block_size="64k", partitions=3, compression="none")
    md = helpers.metadata(layer_path)
    files = helpers.data_files(layer_path)
    assert md["recordCount"] == 64 * 48
    assert md["fileCount"] == len(files) > 3  # rolled well beyond one file per partition
    previous_last = -1
    seen = 0
    for f in files:
        groups = helpers.read_groups(spark, f)
        first_in_name = int(os.path.basename(f).rsplit("-", 1)[1])
        indexes = [i for i, _ in groups]
        assert indexes[0] == first_in_name
        assert indexes == sorted(set(indexes))
        assert indexes[0] > previous_last
        previous_last = indexes[-1]
        assert os.path.getsize(os.path.join(f, "data")) <= 64 * 1024
        for index, group in groups:
            for tile in helpers.decode_group(md, group):
                assert tile["v"] == tile["col"] * 1000 + tile["row"]
                seen += 1
    assert seen == 64 * 48
    # the file names' first indexes agree with the metadata's per-file statistics
    assert [f["firstIndex"] for f in md["files"]] == [int(os.path.basename(p).rsplit("-", 1)[1]) for p in files]


def test_metadata_round_trips(spark, layer_path):
    df = tiles(spark, 8, 4).withColumn("label", F.lit("x"))
    sfclayer.write(df, layer_path, bounds=(0, 0, 7, 3), key_index="hilbert",
                   extent=(-180, -90, 180, 90), crs="EPSG:4326", compression="deflate", index_interval=8)
    md = helpers.metadata(layer_path)
    assert md["format"] == "sfclayer" and md["formatVersion"] == 3 and md["version"] == 1
    assert md["keyIndex"]["kind"] == "hilbert"
    assert (md["keyIndex"]["colMin"], md["keyIndex"]["rowMax"]) == (0, 3)
    assert md["extent"] == {"xmin": -180.0, "ymin": -90.0, "xmax": 180.0, "ymax": 90.0}
    assert md["crs"] == "EPSG:4326"
    assert md["compression"] == "deflate" and md["indexInterval"] == 8
    assert [f["name"] for f in md["valueSchema"]["fields"]] == ["v", "payload", "label"]
    assert [f["name"] for f in md["tileSchema"]["fields"]] == ["col", "row", "v", "payload", "label"]
    # the JVM reads back exactly what it wrote
    with sfclayer.open(spark, layer_path) as layer:
        assert layer.metadata == md
        assert layer.get(3, 2)["label"] == "x"


def test_one_shuffle_with_bounds_and_one_small_job_more_without(spark, tmp_path):
    df = tiles(spark, 32, 32)
    jobs, stages = count_stages(spark, lambda: sfclayer.write(df, str(tmp_path / "a"), bounds=(0, 0, 31, 31)))
    assert (jobs, stages) == (1, 2)  # the shuffle's map side and the writing side
    jobs, stages = count_stages(spark, lambda: sfclayer.write(df, str(tmp_path / "b")))
    assert (jobs, stages) == (2, 3)  # plus one narrow stage that computes the bounds
    assert helpers.metadata(str(tmp_path / "b"))["keyIndex"]["colMax"] == 31


def test_space_time_layer_groups_keys_sharing_an_index(spark, layer_path):
    base = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    rows = [(c, r, base + dt.timedelta(hours=h), c * 100 + r + h) for c in range(4) for r in range(4)
            for h in (0, 6, 30)]
    schema = "col int, row int, time timestamp, v int"
    df = spark.createDataFrame(rows, schema)
    sfclayer.write(df, layer_path, time_resolution="1 day")
    md = helpers.metadata(layer_path)
    assert md["keyIndex"]["kind"] == "z3"
    assert md["keyIndex"]["timeResolution"] == 86_400_000_000
    assert md["recordCount"] == len(rows)
    assert md["indexCount"] == 4 * 4 * 2  # hours 0 and 6 share a day bin
    group_sizes = [len(helpers.decode_group(md, g)) for f in helpers.data_files(layer_path)
                   for _, g in helpers.read_groups(spark, f)]
    assert sorted(set(group_sizes)) == [1, 2]


def test_oversized_value_gets_a_file_of_its_own(spark, layer_path):
    df = tiles(spark, 8, 8, size=200).withColumn(
        "payload", F.when((F.col("col") == 3) & (F.col("row") == 3), F.expr("unhex(repeat('ab', 100000))"))
        .otherwise(F.col("payload")))
    sfclayer.write(df, layer_path, bounds=(0, 0, 7, 7), block_size="64k", partitions=1, compression="none")
    big = [f for f in helpers.data_files(layer_path) if os.path.getsize(os.path.join(f, "data")) > 64 * 1024]
    assert len(big) == 1
    assert len(helpers.read_groups(spark, big[0])) == 1


@pytest.mark.parametrize("compression", ["none", "deflate", "zstd"])
def test_compressed_values_round_trip(spark, layer_path, compression):
    df = tiles(spark, 6, 5, size=4000)
    sfclayer.write(df, layer_path, bounds=(0, 0, 5, 4), compression=compression)
    md = helpers.metadata(layer_path)
    decoded = [t for f in helpers.data_files(layer_path) for _, g in helpers.read_groups(spark, f)
               for t in helpers.decode_group(md, g)]
    assert sorted((t["col"], t["row"]) for t in decoded) == [(c, r) for c in range(6) for r in range(5)]
    with sfclayer.open(spark, layer_path) as layer:
        assert layer.get(4, 3)["payload"] == bytes.fromhex(f"{4003:08x}") * 1000
    if compression != "none":
        assert md["dataBytes"] < 6 * 5 * 4000 / 2


def test_save_modes(spark, layer_path):
    sfclayer.write(tiles(spark, 4, 4), layer_path, bounds=(0, 0, 3, 3))
    with pytest.raises(sfclayer.LayerExists, match="already exists"):
        sfclayer.write(tiles(spark, 4, 4), layer_path, bounds=(0, 0, 3, 3))
    sfclayer.write(tiles(spark, 2, 2), layer_path, mode="ignore", bounds=(0, 0, 3, 3))
    assert helpers.metadata(layer_path)["recordCount"] == 16
    first_files = helpers.data_files(layer_path)
    sfclayer.write(tiles(spark, 2, 2), layer_path, mode="overwrite", bounds=(0, 0, 3, 3))
    assert helpers.versions(layer_path) == [1, 2]
    assert helpers.metadata(layer_path)["recordCount"] == 4
    sfclayer.write(tiles(spark, 3, 3), layer_path, mode="overwrite", bounds=(0, 0, 3, 3))
    assert helpers.versions(layer_path) == [1, 2, 3]
    # nothing but vacuum deletes data: version 1's files stay for readers pinned to it
    assert all(os.path.isdir(f) for f in first_files)
    assert helpers.metadata(layer_path)["operation"]["name"] == "overwrite"


def test_failed_write_leaves_the_previous_layer_intact(spark, layer_path):
    sfclayer.write(tiles(spark, 16, 16), layer_path, bounds=(0, 0, 15, 15), partitions=4)
    before = helpers.metadata(layer_path)
    entries_before = sorted(os.listdir(layer_path))
    # A duplicate key is found by one writing task while the others have written their files.
    dup = tiles(spark, 16, 16).union(tiles(spark, 1, 1, col0=15, row0=15))
    with pytest.raises(sfclayer.InvalidInput, match=r"duplicate key \(col=15, row=15\)"):
        sfclayer.write(dup, layer_path, mode="overwrite", bounds=(0, 0, 15, 15), partitions=4)
    # A failure on the map side (a value that cannot be computed).
    boom = tiles(spark, 16, 16).withColumn("v", F.when(F.col("col") == 7, F.raise_error(F.lit("boom")))
                                           .otherwise(F.col("v")))
    with pytest.raises(SparkRuntimeException, match="boom"):  # Spark's own error, passed through as it is
        sfclayer.write(boom, layer_path, mode="overwrite", bounds=(0, 0, 15, 15))
    assert helpers.metadata(layer_path) == before
    assert sorted(os.listdir(layer_path)) == entries_before  # failed writes removed their data
    with sfclayer.open(spark, layer_path) as layer:
        assert layer.get(15, 15)["v"] == 15015


def test_killed_write_leftovers_are_ignored(spark, layer_path):
    sfclayer.write(tiles(spark, 4, 4), layer_path, bounds=(0, 0, 3, 3))
    # What a killed write leaves: a data directory with files and a temporary commit document.
    ghost = os.path.join(layer_path, "data-20000101T000000-deadbeef", "part-r-00000-0")
    os.makedirs(ghost)
    with open(os.path.join(layer_path, "_sfclayer", ".tmp-20000101T000000-deadbeef.json"), "w") as f:
        f.write("{")
    assert sfclayer.read(spark, layer_path).count() == 16
    with sfclayer.open(spark, layer_path) as layer:
        assert layer.get(1, 1)["v"] == 1001


def test_bad_input_is_refused_by_name(spark, layer_path):
    ok = tiles(spark, 4, 4)
    cases = [
        (ok.drop("row"), sfclayer.InvalidInput, "no key column 'row'"),
        (ok.withColumn("col", F.col("col").cast("long")), sfclayer.InvalidInput, "'col' must be an int"),
        (ok.withColumn("row", F.when(F.col("col") == 2, None).otherwise(F.col("row"))),
         sfclayer.InvalidInput, "null key"),
        (ok.withColumn("m", F.create_map(F.col("col"), F.col("row"))), sfclayer.InvalidInput, "'m'"),
        (ok.withColumn("_file", F.lit("x")), sfclayer.InvalidInput, "'_file'"),
    ]
    for df, error, message in cases:
        with pytest.raises(error, match=message):
            sfclayer.write(df, layer_path, bounds=(0, 0, 3, 3))
    with pytest.raises(sfclayer.KeyOutOfBounds, match=r"col=3, row=\d.*cols 0\.\.2"):
        sfclayer.write(ok, layer_path, bounds=(0, 0, 2, 3))
    assert not os.path.exists(os.path.join(layer_path, "_sfclayer"))


@pytest.mark.parametrize("options, message", [
    ({"bounds": (0, 0, 3)}, "option bounds"),
    ({"bounds": (5, 0, 3, 3)}, "colMin <= colMax"),
    ({"compression": "lz4"}, "lz4"),
    ({"key_index": "peano"}, "peano"),
    ({"block_size": "12q"}, "blockSize"),
    ({"time_resolution": "soon"}, "timeResolution"),
    ({"extent": (1, 1, 0, 2)}, "extent"),
    ({"partitions": 0}, "partitions"),
    ({"bouns": "0,0,3,3"}, "unknown sfclayer write option 'bouns'"),
])
def test_bad_options_are_refused_by_name(spark, layer_path, options, message):
    with pytest.raises(sfclayer.InvalidArgument, match=message):
        sfclayer.write(tiles(spark, 4, 4), layer_path, **options)
    assert not os.path.exists(layer_path)


def test_bounds_too_large_for_the_curve_are_refused_before_writing(spark, layer_path):
    base = dt.datetime(2024, 1, 1)
    df = spark.createDataFrame([(0, 0, base, 1)], "col int, row int, time timestamp, v int")
    with pytest.raises(sfclayer.InvalidArgument, match="2\\^21|2097152"):
        sfclayer.write(df, layer_path, bounds=(0, 0, 1 << 22, 10), time_resolution="1 day")
    assert not os.path.exists(layer_path)


def test_refuses_to_overwrite_what_is_not_a_layer(spark, tmp_path):
    target = tmp_path / "precious"
    target.mkdir()
    (target / "thesis.txt").write_text("do not delete")
    with pytest.raises(sfclayer.LayerExists, match="not an sfclayer layer"):
        sfclayer.write(tiles(spark, 2, 2), str(target), mode="overwrite")
    assert (target / "thesis.txt").read_text() == "do not delete"


def test_value_types_round_trip(spark, layer_path):
    schema = T.StructType([
        T.StructField("col", T.IntegerType(), False), T.StructField("row", T.IntegerType(), False),
        T.StructField("b", T.BooleanType()), T.StructField("s", T.ShortType()),
        T.StructField("l", T.LongType()), T.StructField("f", T.FloatType()),
        T.StructField("d", T.DoubleType()), T.StructField("str", T.StringType()),
        T.StructField("bin", T.BinaryType()), T.StructField("day", T.DateType()),
        T.StructField("ts", T.TimestampType()), T.StructField("dec", T.DecimalType(10, 3)),
        T.StructField("arr", T.ArrayType(T.IntegerType())),
        T.StructField("m", T.MapType(T.StringType(), T.DoubleType())),
        T.StructField("st", T.StructType([T.StructField("a", T.IntegerType()), T.StructField("z", T.StringType())])),
    ])
    import decimal

    row = (1, 2, True, 7, 1 << 40, 1.5, 2.25, "héllo", b"\x00\x01", dt.date(2020, 2, 29),
           dt.datetime(2021, 3, 4, 5, 6, 7, 890000), decimal.Decimal("12.345"), [1, None, 3],
           {"a": 1.0, "b": None}, (9, "z"))
    nulls = (2, 2) + (None,) * (len(schema.fields) - 2)
    df = spark.createDataFrame([row, nulls], schema)
    sfclayer.write(df, layer_path, bounds=(0, 0, 3, 3))
    back = {(r["col"], r["row"]): r for r in sfclayer.read(spark, layer_path).collect()}
    assert tuple(back[(1, 2)]) == row
    assert tuple(back[(2, 2)]) == nulls
    with sfclayer.open(spark, layer_path) as layer:
        got = layer.get(1, 2)
        assert got["str"] == "héllo" and got["arr"] == [1, None, 3] and got["dec"] == decimal.Decimal("12.345")
        assert got["st"] == {"a": 9, "z": "z"} and got["day"] == dt.date(2020, 2, 29)
        assert layer.get(2, 2) == {k: None for k in got}
