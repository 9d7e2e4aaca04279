"""Point look-ups: exact values for random keys on every key index, misses, the LRU, batches."""

import datetime as dt
import random
import threading

import pytest
from pyspark.sql import functions as F

import sfclayer
from sfclayer import _lookup as lookup_client

UTC = dt.timezone.utc


def grid(spark, n_cols, n_rows, col0, row0, keep=1.0, seed=7):
    """A (possibly sparse) grid of tiles whose value says which tile it is."""
    df = (spark.range(n_cols * n_rows)
          .select((F.col("id") % n_cols + col0).cast("int").alias("col"),
                  (F.floor(F.col("id") / n_cols) + row0).cast("int").alias("row")))
    if keep < 1.0:
        df = df.where(F.rand(seed) < keep)
    return (df.withColumn("name", F.format_string("tile %d/%d", "col", "row"))
              .withColumn("pixels", F.expr("unhex(repeat(lpad(hex(pmod(col * 7 + row, 65536)), 4, '0'), 128))")))


def expected(col, row):
    return {"name": f"tile {col}/{row}", "pixels": bytes.fromhex(f"{(col * 7 + row) % 65536:04x}") * 128}


@pytest.fixture(scope="module", params=["z", "hilbert", "rowmajor"])
def spatial_layer(request, spark, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("lookup") / request.param)
    df = grid(spark, 50, 30, col0=-20, row0=100, keep=0.7)
    sfclayer.write(df, path, key_index=request.param, bounds=(-20, 100, 29, 129), block_size="64k",
                   partitions=3, compression="none")  # many files: look-ups across them
    present = {(r["col"], r["row"]) for r in df.select("col", "row").collect()}
    return path, present


def test_random_keys_return_exactly_what_the_layer_holds(spark, spatial_layer):
    path, present = spatial_layer
    rng = random.Random(1)
    with sfclayer.open(spark, path) as layer:
        assert len(layer.metadata["files"]) > 3
        for _ in range(150):
            col, row = rng.randint(-20, 29), rng.randint(100, 129)
            if (col, row) in present:
                assert layer.get(col, row) == expected(col, row)
            else:
                with pytest.raises(sfclayer.KeyNotFound, match=rf"\(col={col}, row={row}\)"):
                    layer.get(col, row)


def test_misses_are_key_errors_and_outside_bounds_is_a_miss(spark, spatial_layer):
    path, _ = spatial_layer
    with sfclayer.open(spark, path) as layer:
        with pytest.raises(KeyError):
            layer.get(500, 500)
        with pytest.raises(sfclayer.KeyNotFound, match="outside its key bounds"):
            layer.get(30, 100)
        assert (30, 100) not in layer
        with pytest.raises(sfclayer.InvalidArgument, match="spatial"):
            layer.get(0, 100, time=dt.datetime(2020, 1, 1))


def test_get_many_keeps_order_and_marks_misses(spark, spatial_layer):
    path, present = spatial_layer
    keys = [(c, r) for c in range(-20, 30, 3) for r in range(100, 130, 4)] + [(999, 999)]
    random.Random(2).shuffle(keys)
    with sfclayer.open(spark, path) as layer:
        got = layer.get_many(keys)
        assert got == [expected(*k) if k in present else None for k in keys]
        # sorted by index, each file is opened once for the whole batch
        assert layer.stats()["files_opened"] <= len(layer.metadata["files"])


def test_lru_bounds_open_files(spark, spatial_layer):
    path, present = spatial_layer
    with sfclayer.open(spark, path, cache_size=2) as layer:
        for col, row in sorted(present)[::7]:
            layer.get(col, row)
            assert layer.stats()["open_files"] <= 2
        stats = layer.stats()
        assert stats["files_opened"] > 2  # files were evicted and reopened
        assert stats["cache_hits"] > 0


def test_concurrent_callers_agree(spark, spatial_layer):
    path, present = spatial_layer
    keys = sorted(present)
    errors = []
    with sfclayer.open(spark, path, cache_size=2) as layer:
        def work(seed):
            rng = random.Random(seed)
            try:
                for _ in range(40):
                    k = rng.choice(keys)
                    assert layer.get(*k) == expected(*k)
            except Exception as e:  # collected for the main thread
                errors.append(e)
        threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []


def test_space_time_look_ups_tell_apart_keys_sharing_an_index(spark, tmp_path):
    base = dt.datetime(2024, 3, 1, tzinfo=UTC)
    times = [base + dt.timedelta(hours=h) for h in (0, 5, 11, 30, 55)]
    rows = [(c, r, t, f"{c}/{r}@{t.isoformat()}") for c in range(6) for r in range(5) for t in times]
    df = spark.createDataFrame(rows, "col int, row int, time timestamp, label string")
    path = str(tmp_path / "st")
    sfclayer.write(df, path, time_resolution="1 day", block_size="64k")
    with sfclayer.open(spark, path) as layer:
        assert layer.metadata["indexCount"] < layer.metadata["recordCount"]  # shared indexes exist
        for c, r, t, label in random.Random(3).sample(rows, 40):
            assert layer.get(c, r, t) == {"label": label}
        with pytest.raises(sfclayer.KeyNotFound, match="col=1, row=1, time=2024-03-01T01:00:00Z"):
            layer.get(1, 1, base + dt.timedelta(hours=1))  # same day bin as stored tiles, no tile
        with pytest.raises(sfclayer.InvalidArgument, match="space-time"):
            layer.get(1, 1)
        got = layer.get_many([(1, 1, times[1]), (1, 1, base + dt.timedelta(hours=2)), (5, 4, times[4])])
        assert got == [{"label": f"1/1@{times[1].isoformat()}"}, None, {"label": f"5/4@{times[4].isoformat()}"}]


def test_reader_stays_on_its_version_while_the_layer_is_rewritten(spark, tmp_path):
    path = str(tmp_path / "versions")
    sfclayer.write(grid(spark, 8, 8, 0, 0), path, bounds=(0, 0, 7, 7))
    with sfclayer.open(spark, path) as old:
        sfclayer.write(grid(spark, 8, 8, 0, 0).withColumn("name", F.lit("new")), path, mode="overwrite",
                       bounds=(0, 0, 7, 7))
        assert old.get(3, 4)["name"] == "tile 3/4"
        assert old.metadata["version"] == 1
    with sfclayer.open(spark, path) as new:
        assert new.get(3, 4)["name"] == "new"


def test_missing_layer_is_a_clear_error(spark, tmp_path):
    with pytest.raises(sfclayer.LayerNotFound, match="nowhere"):
        sfclayer.open(spark, str(tmp_path / "nowhere"))


def test_the_clients_opcodes_are_the_servers(spark):
    # one table in two languages: a request the server reads as another would be answered wrongly
    server = spark._jvm.io.sfclayer.lookup.LookupServer
    ours = (lookup_client._BIND, lookup_client._GET_ONE, lookup_client._GET_MANY, lookup_client._QUERY,
            lookup_client._COUNT)
    assert ours == (server.OP_BIND, server.OP_GET_ONE, server.OP_GET_MANY, server.OP_QUERY, server.OP_COUNT)
    assert bytes(ours) == b"AGMQC"
