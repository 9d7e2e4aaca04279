"""sfclayer on a real HDFS: write, bbox and time reads, point look-ups, one block per file, faults.

The cluster (see integration/hdfs.py) uses 1 MiB blocks, so layers of a few MiB span many blocks and
files; the session's HDFS client writes with replication 2 on two DataNodes.
"""

import datetime as dt
import random

import pytest
from pyspark.sql import functions as F

import sfclayer

pytestmark = pytest.mark.hdfs

UTC = dt.timezone.utc
N_COLS, N_ROWS = 48, 40
EXTENT = (0.0, 0.0, 48.0, 40.0)  # one map unit per tile


def tiles(spark, payload_bytes=3000):
    return (spark.range(N_COLS * N_ROWS, numPartitions=4)
            .select((F.col("id") % N_COLS).cast("int").alias("col"),
                    F.floor(F.col("id") / N_COLS).cast("int").alias("row"))
            .withColumn("v", F.col("col") * 1000 + F.col("row"))
            .withColumn("payload", F.expr(f"unhex(repeat(lpad(hex(col * 1000 + row), 8, '0'), {payload_bytes // 4}))")))


@pytest.fixture(scope="module")
def layer(spark, hdfs):
    path = hdfs.path("layer")
    # no blockSize option: the target filesystem's block size (1 MiB here) is the default
    sfclayer.write(tiles(spark), path, bounds=(0, 0, N_COLS - 1, N_ROWS - 1), extent=EXTENT, partitions=3,
                   compression="none")
    return path


def data_files(hdfs, spark, path):
    return [(f, n, blocks) for f, n, blocks in hdfs.block_locations(spark, path)
            if "/part-r-" in f and f.endswith("/data")]


def test_every_data_file_is_exactly_one_block(spark, hdfs, layer):
    files = data_files(hdfs, spark, layer)
    md = sfclayer.open(spark, layer).metadata
    assert md["blockSize"] == 1 << 20
    assert len(files) == md["fileCount"] > 3  # ~5.8 MB of tiles in 1 MiB files
    for name, length, blocks in files:
        assert length <= 1 << 20, name
        assert blocks == 1, f"{name} spans {blocks} blocks"


def test_bbox_and_key_reads_equal_brute_force(spark, layer):
    everything = {(r.col, r.row): r.v for r in sfclayer.read(spark, layer).select("col", "row", "v").collect()}
    assert len(everything) == N_COLS * N_ROWS
    rng = random.Random(5)
    for _ in range(4):
        c0, r0 = rng.randrange(N_COLS), rng.randrange(N_ROWS)
        c1, r1 = rng.randrange(c0, N_COLS), rng.randrange(r0, N_ROWS)
        got = {(r.col, r.row) for r in sfclayer.read(spark, layer, keys=(c0, r0, c1, r1)).select("col", "row").collect()}
        assert got == {k for k in everything if c0 <= k[0] <= c1 and r0 <= k[1] <= r1}
    # map units: rows count down from the top of the extent
    got = {(r.col, r.row) for r in sfclayer.read(spark, layer, bbox=(10.5, 30.5, 12.5, 31.5)).collect()}
    assert got == {(c, r) for c in (10, 11, 12) for r in (8, 9)}


def test_point_look_ups(spark, layer):
    with sfclayer.open(spark, layer, cache_size=2) as lyr:
        for col, row in [(0, 0), (47, 39), (13, 21), (30, 2)]:
            got = lyr.get(col, row)
            assert got["v"] == col * 1000 + row
            assert got["payload"] == bytes.fromhex(f"{col * 1000 + row:08x}") * 750
        with pytest.raises(sfclayer.KeyNotFound):
            lyr.get(48, 0)


def test_space_time_layer_with_time_filter(spark, hdfs):
    base = dt.datetime(2023, 6, 1, tzinfo=UTC)
    rows = [(c, r, base + dt.timedelta(hours=6 * h), c + r + h) for c in range(8) for r in range(8) for h in range(10)]
    df = spark.createDataFrame(rows, "col int, row int, time timestamp, v int")
    path = hdfs.path("st")
    sfclayer.write(df, path, time_resolution="1 day")
    t0, t1 = base + dt.timedelta(hours=12), base + dt.timedelta(hours=30)
    got = sorted((r.col, r.row, r.v) for r in sfclayer.read(spark, path, keys=(2, 3, 4, 5), time=(t0, t1)).collect())
    want = sorted((c, r, v) for c, r, t, v in rows if 2 <= c <= 4 and 3 <= r <= 5 and t0 <= t <= t1)
    assert got == want and len(want) == 3 * 3 * 4
    with sfclayer.open(spark, path) as lyr:
        assert lyr.get(7, 7, base + dt.timedelta(hours=54)) == {"v": 7 + 7 + 9}


def test_failed_write_keeps_the_layer(spark, hdfs, layer):
    before = sfclayer.open(spark, layer).metadata
    dup = tiles(spark, 16).union(tiles(spark, 16).limit(1))
    with pytest.raises(sfclayer.InvalidInput, match="duplicate key"):
        sfclayer.write(dup, layer, mode="overwrite", bounds=(0, 0, N_COLS - 1, N_ROWS - 1), extent=EXTENT)
    with sfclayer.open(spark, layer) as lyr:
        assert lyr.metadata == before
        assert lyr.get(5, 5)["v"] == 5005


def test_reads_survive_a_datanode_stopping(spark, hdfs, layer):
    expected = N_COLS * N_ROWS
    df = sfclayer.read(spark, layer).select("col", "row", "v")
    hdfs.stop_datanode(0)
    try:
        rows = df.collect()
        assert len(rows) == expected and all(r.v == r.col * 1000 + r.row for r in rows)
        with sfclayer.open(spark, layer) as lyr:
            assert lyr.get(40, 33)["v"] == 40033
    finally:
        hdfs.restart_datanode(0)


def test_scan_partitions_prefer_the_hosts_of_their_file(spark, hdfs, layer):
    df = sfclayer.read(spark, layer, keys=(0, 0, 20, 20))
    leaves = df._jdf.queryExecution().sparkPlan().collectLeaves()
    scans = [leaves.apply(i) for i in range(leaves.size())
             if leaves.apply(i).getClass().getSimpleName() == "BatchScanExec"]
    assert len(scans) == 1
    partitions = scans[0].scan().toBatch().planInputPartitions()
    assert len(partitions) >= 1
    datanodes = {addr.split(":")[0] for addr in getattr(hdfs, "datanode_addresses", [])} or None
    for p in partitions:
        hosts = list(p.preferredLocations())
        assert hosts, f"no preferred location for {p}"
        if datanodes:
            assert set(hosts) <= datanodes | {"localhost"}


def test_a_damaged_record_written_through_hdfs_is_caught_by_sfclayer(spark, hdfs):
    """The damage goes through the HDFS client, so HDFS' block checksums are valid: sfclayer's CRC fires."""
    from sfclayer._jvm import translated
    from tests.test_integrity import parse_records

    path = hdfs.path("damaged")
    sfclayer.write(tiles(spark, 600), path, bounds=(0, 0, N_COLS - 1, N_ROWS - 1), extent=EXTENT, partitions=2,
                   compression="none")
    files = sorted(f for f, _, _ in data_files(hdfs, spark, path))
    victim = files[1]
    data = bytearray(hdfs.read_bytes(spark, victim))
    recs = parse_records(bytes(data))
    r = recs[len(recs) // 2 + 1]
    data[r["value_start"] + 100] ^= 0x20
    hdfs.write_bytes(spark, victim, bytes(data))
    expected = {(c, rr): c * 1000 + rr for c in range(N_COLS) for rr in range(N_ROWS)}

    with pytest.raises(sfclayer.CorruptLayer, match=r"part-r-\d+-\d+/data.*SFC index " + str(r["index"])):
        with translated():
            sfclayer.read(spark, path).collect()
    got = {(x.col, x.row): x.v for x in sfclayer.read(spark, path, on_corrupt="skip").select("col", "row", "v").collect()}
    lost = set(expected) - set(got)
    assert len(lost) == 1 and all(got[k] == expected[k] for k in got)
    (col, row), = lost
    with sfclayer.open(spark, path) as lyr:
        with pytest.raises(sfclayer.CorruptLayer, match="SFC index"):
            lyr.get(col, row)
    report = sfclayer.verify(spark, path)
    assert not report.clean and [f.name for f in report.damaged_files] == [victim.split("/")[-2]]
    assert report.damaged_files[0].first_offset == r["offset"]
    result = sfclayer.repair(spark, path)
    assert result.repaired and sfclayer.verify(spark, path).clean
    after = {(x.col, x.row): x.v for x in sfclayer.read(spark, path).select("col", "row", "v").collect()}
    assert after == got
