"""Box queries on the driver (``Layer.query``/``Layer.count``): the same answers as a Spark read."""

import datetime as dt
import itertools
import random

import pytest
from pyspark.sql import functions as F

import sfclayer

from .test_lookup import grid

UTC = dt.timezone.utc
EXTENT = (-10.0, 40.0, 15.0, 55.0)  # 50 x 30 tiles of 0.5 degree


@pytest.fixture(scope="module", params=["z", "hilbert", "rowmajor"])
def spatial(request, spark, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("query") / request.param)
    df = grid(spark, 50, 30, col0=0, row0=0, keep=0.8)
    sfclayer.write(df, path, key_index=request.param, bounds=(0, 0, 49, 29), extent=EXTENT, block_size="64k",
                   partitions=3)
    return path


@pytest.fixture(scope="module")
def space_time(spark, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("query") / "z3")
    base = dt.datetime(2024, 3, 1, tzinfo=UTC)
    rng = random.Random(4)
    rows = [(c, r, base + dt.timedelta(hours=rng.randrange(0, 24 * 20)), f"{c}/{r}/{k}" + "." * 100)
            for c in range(20) for r in range(12) for k in range(4)]
    rows = list({(c, r, t): (c, r, t, label) for c, r, t, label in rows}.values())
    df = spark.createDataFrame(rows, "col int, row int, time timestamp, label string")
    sfclayer.write(df, path, time_resolution="1 day", block_size="64k", partitions=2)
    return path, base


def spark_answer(spark, path, **box):
    df = sfclayer.read(spark, path, **box)
    cols = ["col", "row", "name"] if "name" in df.columns else ["col", "row", "label"]
    if "time" in df.columns:
        df = df.withColumn("time", F.unix_micros("time"))
        cols.insert(2, "time")
    return sorted(tuple(r) for r in df.select(*cols).collect())


def query_answer(layer, **box):
    out = []
    for t in layer.query(**box):
        key = [t["col"], t["row"]]
        if "time" in t:
            key.append(int((t["time"] - dt.datetime(1970, 1, 1, tzinfo=UTC)) / dt.timedelta(microseconds=1)))
        out.append(tuple(key) + (t.get("name", t.get("label")),))
    return sorted(out)


def random_keys(rng, cols, rows):
    c0, c1 = sorted(rng.randrange(-3, cols + 3) for _ in range(2))
    r0, r1 = sorted(rng.randrange(-3, rows + 3) for _ in range(2))
    return (c0, r0, c1, r1)


def test_query_equals_a_spark_read_on_random_boxes(spark, spatial):
    rng = random.Random(spatial.rsplit("/", 1)[-1])
    with sfclayer.open(spark, spatial) as layer:
        for _ in range(4):
            keys = random_keys(rng, 50, 30)
            expected = spark_answer(spark, spatial, keys=keys)
            assert query_answer(layer, keys=keys) == expected
            assert layer.count(keys=keys) == len(expected)
        for _ in range(3):
            x0, x1 = sorted(rng.uniform(-12, 17) for _ in range(2))
            y0, y1 = sorted(rng.uniform(38, 57) for _ in range(2))
            bbox = (x0, y0, x1, y1)
            keys = random_keys(rng, 50, 30)
            assert query_answer(layer, bbox=bbox) == spark_answer(spark, spatial, bbox=bbox)
            both = spark_answer(spark, spatial, bbox=bbox, keys=keys)
            assert query_answer(layer, bbox=bbox, keys=keys) == both
            assert layer.count(bbox=bbox, keys=keys) == len(both)
        # a box on a tile edge: envelopes that touch it count, as in a Spark read
        edge = (-10.0, 40.0, -9.5, 40.5)
        assert query_answer(layer, bbox=edge) == spark_answer(spark, spatial, bbox=edge)


def test_query_equals_a_spark_read_with_time_ranges(spark, space_time):
    path, base = space_time
    rng = random.Random(8)
    with sfclayer.open(spark, path) as layer:
        whole = spark_answer(spark, path)
        assert query_answer(layer) == whole
        for _ in range(5):
            h0, h1 = sorted(rng.randrange(-30, 24 * 21) for _ in range(2))
            time = (base + dt.timedelta(hours=h0, minutes=rng.randrange(60)), base + dt.timedelta(hours=h1))
            keys = random_keys(rng, 20, 12)
            expected = spark_answer(spark, path, keys=keys, time=time)
            assert query_answer(layer, keys=keys, time=time) == expected
            assert layer.count(keys=keys, time=time) == len(expected)


def test_query_streams_in_batches_and_honours_limit(spark, spatial):
    with sfclayer.open(spark, spatial) as layer:
        total = layer.count()
        assert total > 1000
        batches = list(layer._client.query(""))
        assert len(batches) >= 2 and sum(count for count, _ in batches) == total
        assert len(list(layer.query(limit=7))) == 7
        assert list(layer.query(limit=0)) == []
        # an iterator abandoned midway gives its connection up; the layer goes on
        it = layer.query()
        first = list(itertools.islice(it, 3))
        it.close()
        assert len(first) == 3
        assert layer._client.open_connections() <= layer._client._pool_size
        assert layer.count(keys=(0, 0, 4, 4)) == len(list(layer.query(keys=(0, 0, 4, 4))))


def test_bad_boxes_are_clear_errors(spark, spatial, space_time, tmp_path):
    with sfclayer.open(spark, spatial) as layer:
        with pytest.raises(sfclayer.InvalidArgument, match="bbox: .* must be four numbers"):
            layer.query(bbox=(1, 2, 3))
        with pytest.raises(sfclayer.InvalidArgument, match="spatial"):
            layer.count(time=(0, 1))
        with pytest.raises(sfclayer.InvalidArgument, match="keys: .* minimum above its maximum"):
            layer.query(keys=(5, 0, 1, 3))
        with pytest.raises(sfclayer.InvalidArgument, match="bbox: .* minimum above its maximum"):
            layer.count(bbox=(5, 45, 0, 50))
        with pytest.raises(sfclayer.InvalidArgument, match="limit"):
            layer.query(limit=-1)
        assert layer.count(keys=(100, 100, 200, 200)) == 0
        assert layer.count(keys=(0, 0, 49, 29)) == layer.count() > 0  # the connection is still in step
    path = str(tmp_path / "no-extent")
    sfclayer.write(grid(spark, 4, 4, 0, 0), path, bounds=(0, 0, 3, 3))
    with sfclayer.open(spark, path) as layer:
        with pytest.raises(sfclayer.InvalidArgument, match="has no extent"):
            list(layer.query(bbox=(0, 0, 1, 1)))
        assert layer.count() == 16
