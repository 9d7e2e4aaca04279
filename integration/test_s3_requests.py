"""How many requests sfclayer makes of S3, counted at the server (moto): the ones that are the point.

On an object store every request is a round trip of tens of milliseconds; a look-up whose file's
index is cached should cost its data read and nothing else (no HEAD, no listing), a write should
not rename data (a copy of every byte on S3) nor probe directories per file.
"""

import pytest
from pyspark.sql import functions as F

import sfclayer

pytestmark = pytest.mark.s3

N_COLS, N_ROWS = 32, 16
BLOCK = 64 << 10


def tiles(spark, keys=None, bump=0):
    if keys is None:
        df = (spark.range(N_COLS * N_ROWS, numPartitions=2)
              .select((F.col("id") % N_COLS).cast("int").alias("col"),
                      F.floor(F.col("id") / N_COLS).cast("int").alias("row")))
    else:
        df = spark.createDataFrame(keys, "col int, row int")
    return (df.withColumn("v", F.col("col") * 1000 + F.col("row") + F.lit(bump))
              .withColumn("payload", F.expr("unhex(repeat(lpad(hex(v), 8, '0'), 100))")))


@pytest.fixture(scope="module")
def layer(spark, s3):
    path = s3.path("requests")
    sfclayer.write(tiles(spark), path, bounds=(0, 0, N_COLS - 1, N_ROWS - 1), partitions=2, block_size=BLOCK,
                   compression="none")
    return path


def describe(requests):
    return "\n".join(f"{m} {p}{'?' + q if q else ''}" for m, p, q in requests)


def counted(s3, fn):
    s3.server.reset()
    result = fn()
    return result, s3.server.requests()


def test_a_cold_look_up_with_its_index_cached_is_one_data_read(spark, s3, layer):
    with sfclayer.open(spark, layer, cache_size=1) as lyr:
        files = lyr.metadata["files"]
        assert len(files) >= 3
        lyr.get(0, 0)                      # file of (0, 0): its index read, the file open
        lyr.get(N_COLS - 1, N_ROWS - 1)    # another file: evicts the first (cache_size=1)
        got, requests = counted(s3, lambda: lyr.get(0, 0))  # reopened with its index known
    assert got["v"] == 0
    print(f"\ncold look-up, index cached: {len(requests)} requests\n{describe(requests)}")
    assert all(m == "GET" for m, _, _ in requests), describe(requests)
    assert len(requests) <= 2, describe(requests)


def test_request_counts_of_open_scan_and_commit(spark, s3, layer):
    """Reported for the record (bench/ has the timings); asserted where a number is the point."""
    _, opening = counted(s3, lambda: sfclayer.open(spark, layer).close())
    _, scan = counted(s3, lambda: sfclayer.read(spark, layer, keys=(0, 0, 7, 7)).count())
    path = s3.path("commit")
    _, write = counted(s3, lambda: sfclayer.write(tiles(spark), path, bounds=(0, 0, N_COLS - 1, N_ROWS - 1),
                                                  partitions=2, block_size=BLOCK))
    _, append = counted(s3, lambda: sfclayer.write(tiles(spark, [(1, 1)], bump=1), path, mode="append"))
    files = sfclayer.open(spark, path).metadata["fileCount"]
    for what, reqs in [("open", opening), ("scan of a 8x8 box", scan), (f"write of {files} files", write),
                       ("append of one tile", append)]:
        by = {}
        for m, _, q in reqs:
            kind = "LIST" if m == "GET" and "list-type" in q else m
            by[kind] = by.get(kind, 0) + 1
        print(f"\n{what}: {len(reqs)} requests {by}")
    # no data is renamed: a rename on S3 is a COPY (a PUT naming a source) plus a DELETE
    assert not [r for r in write + append if r[0] == "COPY" and "/part-r-" in r[1]], describe(write + append)
    assert not [r for r in write + append if r[0] == "DELETE" and "/part-r-" in r[1]], describe(write + append)
