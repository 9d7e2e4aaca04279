"""The HDFS test infrastructure itself, proven with plain Spark and Hadoop (no sfclayer code).

If these fail, the sfclayer-on-HDFS tests cannot be trusted either way.
"""

import os
import threading
import time

import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T

from integration.hdfs import BLOCK_SIZE

pytestmark = pytest.mark.hdfs


def _sample(spark, n=2000):
    return spark.range(n).select(
        F.col("id"),
        (F.col("id") % 7).cast("int").alias("k"),
        (F.col("id") * 0.5).alias("x"),
        F.sha2(F.col("id").cast("string"), 256).alias("h"),
        F.unhex(F.sha2(F.col("id").cast("string"), 224)).alias("b"),
    )


def test_parquet_round_trip(spark, hdfs):
    path = hdfs.path("parquet")
    assert path.startswith(hdfs.url + "/sfclayer-tests/")
    df = _sample(spark)
    df.repartition(3).write.parquet(path)

    back = spark.read.parquet(path)
    assert [(f.name, f.dataType) for f in back.schema] == [(f.name, f.dataType) for f in df.schema]
    assert sorted(back.collect()) == sorted(df.collect())

    files = hdfs.block_locations(spark, path)
    parts = [f for f in files if f[0].endswith(".parquet")]
    assert len(parts) == 3
    assert all(f[0].startswith(hdfs.url + "/") and f[1] > 0 and f[2] >= 1 for f in parts)
    assert any(f[0].endswith("/_SUCCESS") for f in files)


def test_paths_are_unique(hdfs):
    assert len({hdfs.path("x") for _ in range(5)}) == 5


def test_small_block_size_gives_several_blocks(spark, hdfs):
    path = hdfs.path("blocks") + "/file.bin"
    data = os.urandom(2 * BLOCK_SIZE + 123_456)  # 2.1 MiB at 1 MiB a block: 3 blocks
    hdfs.write_bytes(spark, path, data, block_size=BLOCK_SIZE)

    [(name, length, blocks)] = hdfs.block_locations(spark, path)
    assert name.endswith("/file.bin")
    assert length == len(data)
    assert blocks == 3
    assert hdfs.read_bytes(spark, path) == data

    # And Spark's own writers use the session's 1 MiB blocks too.
    text = hdfs.path("text")
    spark.range(120_000).selectExpr("sha2(cast(id as string), 256) AS value").coalesce(1).write.text(text)
    [(_, length, blocks)] = [f for f in hdfs.block_locations(spark, text) if f[0].endswith(".txt")]
    assert length > 7 * BLOCK_SIZE and blocks == -(-length // BLOCK_SIZE)


def _write_csv(spark, hdfs, name, rows, files):
    path = hdfs.path(name)
    spark.range(rows).select("id", F.sha2(F.col("id").cast("string"), 256).alias("h")) \
        .repartition(files).write.csv(path)
    return path


SCHEMA = T.StructType([T.StructField("id", T.LongType()), T.StructField("h", T.StringType())])


def _expected(spark, rows):
    return spark.range(rows).select(
        F.count("*").alias("n"), F.sum("id").alias("s"),
        F.sum(F.crc32(F.sha2(F.col("id").cast("string"), 256))).alias("c")).first()


def _summary(df):
    return df.select(F.count("*").alias("n"), F.sum("id").alias("s"), F.sum(F.crc32("h")).alias("c")).first()


def _multi_block(spark, hdfs, path, replication=2):
    files = [f for f in hdfs.block_locations(spark, path) if f[0].endswith(".csv")]
    assert files and all(blocks >= 3 for _, _, blocks in files), files
    hosts = [h for per_file in hdfs.block_hosts(spark, path).values() for h in per_file]
    assert all(len(replicas) == replication for replicas in hosts), hosts
    return files


def test_read_survives_a_stopped_datanode(spark, hdfs):
    """Every block has a replica on both DataNodes: with one stopped, a read still sees everything."""
    if hdfs.external:
        pytest.skip("stops a DataNode: needs the suite's own MiniHdfs")
    rows = 60_000  # ~4.6 MB of CSV in 2 files: 3 blocks each
    path = _write_csv(spark, hdfs, "fault-before", rows, files=2)
    _multi_block(spark, hdfs, path)
    expected = _expected(spark, rows)

    hdfs.stop_datanode(0)
    try:
        assert _summary(spark.read.schema(SCHEMA).csv(path)) == expected
    finally:
        hdfs.restart_datanode(0)
    assert hdfs.status()["running"] == [True] * hdfs.datanodes
    assert _summary(spark.read.schema(SCHEMA).csv(path)) == expected


def test_open_stream_survives_its_datanode_stopping(spark, hdfs):
    """Hadoop's client, as Spark uses it, fails over mid-block when the DataNode it reads from stops."""
    if hdfs.external:
        pytest.skip("stops a DataNode: needs the suite's own MiniHdfs")
    path = hdfs.path("stream") + "/file.bin"
    data = os.urandom(3 * BLOCK_SIZE + 4321)
    hdfs.write_bytes(spark, path, data)
    assert [blocks for _, _, blocks in hdfs.block_locations(spark, path)] == [4]

    fs, p = hdfs.filesystem(spark, path)
    stream = fs.open(p)
    try:
        head = bytes(stream.readNBytes(300_000))  # part-way into block 0
        serving = stream.getCurrentDatanode().getXferAddr()
        victim = hdfs.datanode_addresses.index(serving)
        hdfs.stop_datanode(victim)
        try:
            rest = bytes(stream.readNBytes(len(data)))
        finally:
            hdfs.restart_datanode(victim)
        assert stream.getCurrentDatanode().getXferAddr() != serving
    finally:
        stream.close()
    assert head + rest == data


def test_spark_read_survives_a_datanode_stopping_mid_job(spark, hdfs, tmp_path):
    """The DataNode stops while a Spark read job runs: two tasks are part-way through their files
    (held inside a Python UDF), four more have not opened theirs yet."""
    if hdfs.external:
        pytest.skip("stops a DataNode: needs the suite's own MiniHdfs")
    rows = 180_000  # ~13 MB of CSV in 6 files, ~2.2 MB (3 blocks) each: one task per file
    path = _write_csv(spark, hdfs, "fault-during", rows, files=6)
    assert len(_multi_block(spark, hdfs, path)) == 6
    expected = _expected(spark, rows)

    gate = tmp_path / "gate"
    gate.mkdir()
    gate_dir = str(gate)

    @F.udf("long", useArrow=False)
    def held(i, h):
        # Each Python worker, on its first row, says it has started and waits for the go-ahead
        # while its task holds the file open.
        import os as _os
        import time as _time
        started = _os.path.join(gate_dir, f"started-{_os.getpid()}")
        if not _os.path.exists(started):
            open(started, "w").close()
            deadline = _time.monotonic() + 60
            while not _os.path.exists(_os.path.join(gate_dir, "go")) and _time.monotonic() < deadline:
                _time.sleep(0.02)
        return i if h else None

    key = "spark.sql.files.maxPartitionBytes"
    before = spark.conf.get(key)
    spark.conf.set(key, str(5 * BLOCK_SIZE // 2))  # one file per task
    try:
        df = spark.read.schema(SCHEMA).csv(path).select(held("id", "h").alias("id"), "h")
        assert df.rdd.getNumPartitions() == 6
    finally:
        spark.conf.set(key, before)
    result, error = {}, {}

    def run():
        try:
            result["summary"] = _summary(df)
        except Exception as e:  # reported below
            error["e"] = e

    reader = threading.Thread(target=run)
    reader.start()
    try:
        deadline = time.monotonic() + 60
        while len(list(gate.glob("started-*"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(list(gate.glob("started-*"))) == 2, "both task slots should be under way"
        hdfs.stop_datanode(1)
        (gate / "go").touch()
        reader.join(timeout=180)
        assert not reader.is_alive(), "the read hung after a DataNode stopped"
    finally:
        (gate / "go").touch()
        hdfs.restart_datanode(1)
    assert not error, error
    assert result["summary"] == expected
