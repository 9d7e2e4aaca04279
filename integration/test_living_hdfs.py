"""Living layers on a real HDFS: append, delete, history, time travel, vacuum, and a commit race
(on HDFS the version document is published by an atomic rename without overwrite)."""

import datetime as dt
import threading

import pytest
from pyspark.sql import functions as F

import sfclayer
from tests import helpers

pytestmark = pytest.mark.hdfs

SIDE = 32


def tiles(spark, side, col0=0, row0=0, mult=1000, payload_bytes=2000):
    return (spark.range(side * side, numPartitions=2)
            .select((F.col("id") % side + col0).cast("int").alias("col"),
                    (F.floor(F.col("id") / side) + row0).cast("int").alias("row"))
            .withColumn("v", F.col("col") * mult + F.col("row"))
            .withColumn("payload", F.expr(f"unhex(repeat(lpad(hex(v), 8, '0'), {payload_bytes // 4}))")))


def values(spark, path, **kw):
    return {(r.col, r.row): r.v for r in sfclayer.read(spark, path, **kw).select("col", "row", "v").collect()}


def test_append_delete_history_time_travel_vacuum(spark, hdfs):
    path = hdfs.path("living")
    sfclayer.write(tiles(spark, SIDE), path, bounds=(0, 0, SIDE - 1, SIDE - 1), partitions=4)
    v1 = sfclayer.open(spark, path, cache_size=1)
    try:
        sfclayer.write(tiles(spark, 4, 5, 5, mult=7), path, mode="append")
        sfclayer.delete(spark, path, keys=(20, 20, 23, 23))
        model = {(c, r): c * 1000 + r for c in range(SIDE) for r in range(SIDE)}
        model.update({(c, r): c * 7 + r for c in range(5, 9) for r in range(5, 9)})
        for c in range(20, 24):
            for r in range(20, 24):
                del model[(c, r)]
        assert values(spark, path) == model
        hist = sfclayer.history(spark, path)
        assert [(v.version, v.operation) for v in hist] == [(1, "write"), (2, "append"), (3, "delete")]
        assert hist[1].files_removed < hist[0].files_added  # the append rewrote only what it touched
        assert len(values(spark, path, version=1)) == SIDE * SIDE
        assert v1.get(5, 5)["v"] == 5005 and v1.version == 1
        with sfclayer.open(spark, path) as newest:
            assert newest.version == 3 and newest.get(5, 5)["v"] == 40
        plan = sfclayer.vacuum(spark, path, retain=dt.timedelta(0), enforce_retention=False, dry_run=True)
        assert plan["versionsRemoved"] == [1, 2]
        sfclayer.vacuum(spark, path, retain=dt.timedelta(0), enforce_retention=False)
        with pytest.raises(sfclayer.LayerNotFound, match=r"no version 1: it was removed by vacuum; its versions are \[3\]"):
            sfclayer.read(spark, path, version=1).count()
        assert values(spark, path) == model
    finally:
        v1.close()


def test_overlapping_appends_race_on_hdfs(spark, hdfs):
    path = hdfs.path("race")
    sfclayer.write(tiles(spark, 16, payload_bytes=64), path, bounds=(0, 0, 15, 15), partitions=4)
    barrier = threading.Barrier(2)
    errors = [None, None]

    def append(i, mult):
        barrier.wait()
        try:
            sfclayer.write(tiles(spark, 4, 1, 1, mult=mult, payload_bytes=64), path, mode="append", partitions=4)
        except Exception as e:  # noqa: BLE001 - inspected below
            errors[i] = e

    # each write held back 3 s (a test filesystem of the test jar), so the two overlap
    with helpers.faults(spark, scheme="hdfs", **{"sfclayer.test.stallFirstFileMillis": "3000"}):
        threads = [threading.Thread(target=append, args=(i, m)) for i, m in enumerate((3, 5))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    lost = [e for e in errors if e is not None]
    assert len(lost) == 1 and isinstance(lost[0], sfclayer.ConcurrentUpdate)
    mult = 3 if errors[0] is None else 5
    got = values(spark, path)
    assert got[(2, 2)] == 2 * mult + 2 and got[(0, 0)] == 0 and len(got) == 256
    assert [v.version for v in sfclayer.history(spark, path)] == [1, 2]
