"""How many requests sfclayer makes of S3, counted at the server (moto): the ones that are the point.

On an object store every request is a round trip of tens of milliseconds; a look-up whose file's
index is cached should cost its data read and nothing else (no HEAD, no listing), a write should
not rename data (a copy of every byte on S3) nor probe directories per file.
"""

import time

import pytest
import sfclayer
from integration.s3 import tiles as s3_tiles

pytestmark = pytest.mark.s3

N_COLS, N_ROWS = 32, 16
BLOCK = 64 << 10


def tiles(spark, keys=None, bump=0):
    return s3_tiles(spark, N_COLS, N_ROWS, keys, bump, payload=400)


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


def preloaded(lyr):
    """Waits until the reader has read every file's index (in the background since it opened)."""
    files = lyr.metadata["fileCount"]
    deadline = time.monotonic() + 60
    while lyr.stats()["indexes_kept"] < files and time.monotonic() < deadline:
        time.sleep(0.05)
    assert lyr.stats()["indexes_kept"] == files


def test_a_cold_look_up_with_its_index_cached_is_one_data_read(spark, s3, layer):
    with sfclayer.open(spark, layer, cache_size=1) as lyr:
        assert len(lyr.metadata["files"]) >= 3
        preloaded(lyr)
        lyr.get(0, 0)                      # file of (0, 0): its index read, the file open
        lyr.get(N_COLS - 1, N_ROWS - 1)    # another file: closes the first (cache_size=1)
        got, requests = counted(s3, lambda: lyr.get(0, 0))  # reopened with its index known
        assert lyr.stats()["files_opened"] == 3
    assert got["v"] == 0
    print(f"\ncold look-up, index cached: {len(requests)} requests\n{describe(requests)}")
    # one ranged GET of the data object: no HEAD (the length is the version document's), no header read
    assert len(requests) == 1 and requests[0][0] == "GET" and requests[0][1].endswith("/data"), describe(requests)


def test_opening_reads_the_log_in_two_requests_and_the_indexes_in_the_background(spark, s3, layer):
    spark._jvm.io.sfclayer.lookup.ValueReader.forgetSharedIndexes()  # as a fresh driver would
    lyr, opening = counted(s3, lambda: sfclayer.open(spark, layer, cache_size=1))
    with lyr:
        # the newest version: the GET of the writer's copy of it, one LIST of _sfclayer/ from its version
        # (start-after) that shows it is the newest (FORMAT.md section 6)
        assert [m for m, _, _ in opening[:2]] == ["GET", "GET"], describe(opening)
        assert opening[0][1].endswith("/_sfclayer/_newest.json") and "list-type" in opening[1][2], describe(opening)
        preloaded(lyr)
        # every file's first look-up after the background read of its index: one GET
        keys = [(0, 0), (N_COLS - 1, N_ROWS - 1), (N_COLS // 2, N_ROWS // 2), (N_COLS // 4, N_ROWS - 1)]
        for col, row in keys:
            got, requests = counted(s3, lambda: lyr.get(col, row))
            assert got["v"] == col * 1000 + row
            assert len(requests) == 1 and requests[0][1].endswith("/data"), describe(requests)
        assert lyr.stats()["files_opened"] >= 3


def test_request_counts_of_open_scan_and_commit(spark, s3, layer):
    """Reported for the record (bench/ has the timings); asserted where a number is the point."""
    lyr, opening = counted(s3, lambda: sfclayer.open(spark, layer))
    with lyr:
        preloaded(lyr)  # its background reads of bloom filters and indexes are not the open's nor the scan's
    opening = [r for r in opening if not r[1].endswith(("/index", "/bloom"))]
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
    print(describe(scan))
    assert len(opening) == 2, describe(opening)  # GET of the copy of the newest document, LIST from it
    # a box in small files: one GET of each file's data, no HEAD, no index read first
    assert not [r for r in scan if r[0] == "HEAD" or r[1].endswith("/index")], describe(scan)
    # the commit: its marker for vacuum (a PUT, then one delete: FORMAT.md section 6, "Vacuum and version
    # numbers"), a LIST of the log, the conditional PUT of the document, the PUTs of its copy and of the hint; no
    # probe, no server-side copy
    log = [r for r in append if "/_sfclayer/" in r[1] or "_sfclayer%2F" in r[2] and "delete" in r[2]]
    marker = [r for r in log if "/_sfclayer/_commit-" in r[1] or "delete" in r[2]]
    assert [r[0] for r in marker] in (["PUT", "DELETE"], ["PUT", "POST"]), describe(append)
    log = [r for r in log if r not in marker]
    assert not [r for r in log if r[0] in ("HEAD", "COPY", "DELETE")], describe(append)
    assert [r[1].rsplit("/", 1)[1] for r in log if r[0] == "PUT"] == ["v00000002.json", "_newest.json",
                                                                      "_last_version"], describe(append)
    # no data is renamed: a rename on S3 is a COPY (a PUT naming a source) plus a DELETE
    assert not [r for r in write + append if r[0] == "COPY" and "/part-r-" in r[1]], describe(write + append)
    assert not [r for r in write + append if r[0] == "DELETE" and "/part-r-" in r[1]], describe(write + append)


def test_a_box_in_files_over_a_mib_reads_each_index_then_its_data(spark, s3):
    """Files larger than ObjectStores.SCAN_WHOLE_BYTES: the index (HEAD, GET) first, then the data from
    where the box starts: no HEAD of the data, no GET of its header before the index is known."""
    path = s3.path("large-files")
    sfclayer.write(s3_tiles(spark, N_COLS, N_ROWS, payload=8192), path, bounds=(0, 0, N_COLS - 1, N_ROWS - 1),
                   partitions=2, block_size=64 << 20, compression="none")  # the payload is repetitive
    with sfclayer.open(spark, path) as lyr:
        sizes = [f["dataBytes"] for f in lyr.metadata["files"]]
        preloaded(lyr)  # its background reads are not the box's
    assert min(sizes) > 1 << 20, sizes
    got, requests = counted(s3, lambda: sfclayer.read(spark, path, keys=(3, 3, 9, 9)).select("col", "row", "v")
                            .collect())
    assert {(r.col, r.row): r.v for r in got} == {(c, r): c * 1000 + r for c in range(3, 10) for r in range(3, 10)}
    print(f"\nbox in files over a MiB: {len(requests)} requests\n{describe(requests)}")
    files = {p[:-len("/data")] for _, p, _ in requests if p.endswith("/data")}
    assert files, describe(requests)
    for f in files:
        mine = [(m, p.rsplit("/", 1)[1]) for m, p, _ in requests if p.startswith(f + "/")]
        assert mine[:2] == [("HEAD", "index"), ("GET", "index")], describe(requests)
        assert set(mine[2:]) == {("GET", "data")}, describe(requests)
