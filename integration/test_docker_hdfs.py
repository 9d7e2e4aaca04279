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
