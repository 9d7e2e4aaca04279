"""The same small write/read as test_hdfs_cluster.py, against an HDFS in Docker (apache/hadoop:3).

Skipped where no Docker engine answers; see the docker_hdfs fixture in integration/conftest.py.
"""

import os

import pytest

from integration.hdfs import BLOCK_SIZE

pytestmark = pytest.mark.docker


def test_parquet_round_trip_on_docker_hdfs(docker_hdfs, spark):
    path = docker_hdfs.path("parquet")
    df = spark.range(5000).selectExpr("id", "id % 13 AS k", "sha2(CAST(id AS STRING), 256) AS h")
    df.repartition(2).write.parquet(path)

    back = spark.read.parquet(path)
    assert sorted(back.collect()) == sorted(df.collect())
    parts = [f for f in docker_hdfs.block_locations(spark, path) if f[0].endswith(".parquet")]
    assert len(parts) == 2 and all(length > 0 and blocks >= 1 for _, length, blocks in parts)


def test_small_blocks_on_docker_hdfs(docker_hdfs, spark):
    path = docker_hdfs.path("blocks") + "/file.bin"
    data = os.urandom(2 * BLOCK_SIZE + 1000)
    docker_hdfs.write_bytes(spark, path, data)
    assert [(length, blocks) for _, length, blocks in docker_hdfs.block_locations(spark, path)] == [(len(data), 3)]
    assert docker_hdfs.read_bytes(spark, path) == data


def test_sfclayer_layer_on_docker_hdfs(docker_hdfs, spark):
    """sfclayer itself on the Docker HDFS: a write, a bbox read and a look-up agree with the input."""
    import sfclayer

    path = docker_hdfs.path("layer")
    rows = [(c, r, c * 100 + r) for c in range(16) for r in range(16)]
    df = spark.createDataFrame(rows, "col int, row int, v int")
    sfclayer.write(df, path, bounds=(0, 0, 15, 15), extent=(0, 0, 16, 16), block_size="64k", partitions=2)
    back = sfclayer.read(spark, path, bbox=(2.5, 10.5, 5.5, 13.5))  # cols 2..5, map y 10.5..13.5 = rows 2..5
    assert sorted((r.col, r.row, r.v) for r in back.collect()) == sorted(
        (c, r, c * 100 + r) for c in range(2, 6) for r in range(2, 6))
    assert sfclayer.read(spark, path).count() == 256
    with sfclayer.open(spark, path) as layer:
        assert layer.get(7, 9) == {"v": 709}
