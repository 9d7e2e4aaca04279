"""sfclayer on a real S3 server (moto, through S3A): the layer's life on ``s3a://`` as on HDFS.

Write, bbox and key reads, look-ups, append, delete, time travel, compact, verify, vacuum and the
tile server, each checked against the values the tiles were written with. The server is the
session's ``s3`` fixture (conftest.py, integration/s3.py).
"""

import datetime as dt
import random
import threading
import time

import pytest

import sfclayer
from integration.s3 import tiles as s3_tiles

pytestmark = pytest.mark.s3

N_COLS, N_ROWS = 24, 16
EXTENT = (0.0, 0.0, 24.0, 16.0)  # one map unit per tile
BOUNDS = (0, 0, N_COLS - 1, N_ROWS - 1)
# small blocks so the layer has several data files (and compact has small ones to merge)
BLOCK = 64 << 10


def tiles(spark, keys=None, bump=0, payload=400):
    """Tiles ``v = col * 1000 + row + bump`` with a payload derived from ``v`` (integration/s3.py)."""
    return s3_tiles(spark, N_COLS, N_ROWS, keys, bump, payload)


def values(spark, path, **kw):
    return {(r.col, r.row): r.v for r in sfclayer.read(spark, path, **kw).select("col", "row", "v").collect()}


def everything(bump=0):
    return {(c, r): c * 1000 + r + bump for c in range(N_COLS) for r in range(N_ROWS)}


def objects(spark, path):
    """Every object under an s3a:// path (relative key -> length), listed through S3A."""
    jvm = spark._jvm
    p = jvm.org.apache.hadoop.fs.Path(path)
    fs = p.getFileSystem(spark._jsc.hadoopConfiguration())
    out = {}
    it = fs.listFiles(p, True)
    root = str(fs.makeQualified(p)).rstrip("/") + "/"
    while it.hasNext():
        st = it.next()
        out[str(st.getPath())[len(root):]] = st.getLen()
    return out


@pytest.fixture(scope="module")
def layer(spark, s3):
    path = s3.path("layer")
    sfclayer.write(tiles(spark), path, bounds=BOUNDS, extent=EXTENT, partitions=2, block_size=BLOCK, compression="none")
    return path


def test_write_then_read_everything(spark, layer):
    assert values(spark, layer) == everything()
    md = sfclayer.open(spark, layer).metadata
    assert md["version"] == 1 and md["recordCount"] == N_COLS * N_ROWS and md["fileCount"] > 2


def test_bbox_and_key_reads_equal_brute_force(spark, layer):
    want = everything()
    rng = random.Random(3)
    for _ in range(3):
        c0, r0 = rng.randrange(N_COLS), rng.randrange(N_ROWS)
        c1, r1 = rng.randrange(c0, N_COLS), rng.randrange(r0, N_ROWS)
        assert values(spark, layer, keys=(c0, r0, c1, r1)) == {
            k: v for k, v in want.items() if c0 <= k[0] <= c1 and r0 <= k[1] <= r1}
    # map units: rows count down from the top of the extent
    assert set(values(spark, layer, bbox=(10.5, 10.5, 12.5, 11.5))) == {(c, r) for c in (10, 11, 12) for r in (4, 5)}


def test_look_ups(spark, layer):
    with sfclayer.open(spark, layer, cache_size=2) as lyr:
        for col, row in [(0, 0), (N_COLS - 1, N_ROWS - 1), (13, 7), (3, 11)]:
            got = lyr.get(col, row)
            assert got["v"] == col * 1000 + row
            assert got["payload"] == bytes.fromhex(f"{col * 1000 + row:08x}") * 100
        assert [t and t["v"] for t in lyr.get_many([(1, 2), (N_COLS, 0), (5, 6)])] == [1002, None, 5006]
        with pytest.raises(sfclayer.KeyNotFound):
            lyr.get(N_COLS, 0)
        assert sorted((t["col"], t["row"]) for t in lyr.query(keys=(2, 2, 4, 3))) == [
            (c, r) for c in (2, 3, 4) for r in (2, 3)]
        assert lyr.count(keys=(0, 0, 9, 9)) == 100


def test_updates_time_travel_compact_verify_vacuum(spark, s3):
    """One layer through its whole life on S3; vacuum with zero retention then frees exactly the
    files no version references, as on local files."""
    path = s3.path("life")
    # six partitions of ~25 KB in 256 KiB blocks: small files side by side, for compact to merge
    sfclayer.write(tiles(spark), path, bounds=BOUNDS, extent=EXTENT, partitions=6, block_size=4 * BLOCK,
                   compression="none")
    v1 = everything()
    # append: replace a box, add nothing new (keys inside the bounds)
    box = [(c, r) for c in range(4, 8) for r in range(2, 5)]
    sfclayer.write(tiles(spark, box, bump=7), path, mode="append")
    v2 = {**v1, **{k: v1[k] + 7 for k in box}}
    assert values(spark, path) == v2
    # delete a box
    deleted = sfclayer.delete(spark, path, keys=(20, 10, 23, 15))
    assert deleted.version == 3 and deleted.tiles_deleted == 4 * 6
    v3 = {k: v for k, v in v2.items() if not (k[0] >= 20 and k[1] >= 10)}
    assert values(spark, path) == v3
    # time travel: every version reads as it was
    assert values(spark, path, version=1) == v1
    assert values(spark, path, version=2) == v2
    with sfclayer.open(spark, path, version=1) as old:
        assert old.get(5, 3)["v"] == 5003
    with sfclayer.open(spark, path) as new:
        assert new.get(5, 3)["v"] == 5010
        with pytest.raises(sfclayer.KeyNotFound):
            new.get(21, 12)
    assert [v.operation for v in sfclayer.history(spark, path)] == ["write", "append", "delete"]
    # compact: many small files into fewer, same tiles
    before = sfclayer.open(spark, path).metadata["fileCount"]
    compacted = sfclayer.compact(spark, path)
    assert compacted.version == 4 and compacted.files < before
    assert values(spark, path) == v3
    report = sfclayer.verify(spark, path)
    assert report.clean, str(report)

    newest = sfclayer.open(spark, path).metadata
    referenced = {f"{f['dir']}/{f['name']}" for f in newest["files"]}
    on_s3 = objects(spark, path)
    data_objects = {k for k in on_s3 if "/part-r-" in k}
    unreferenced = {k for k in data_objects if k.rsplit("/", 1)[0] not in referenced}
    assert unreferenced, "the updates should have left files of older versions"
    result = sfclayer.vacuum(spark, path, retain=dt.timedelta(0), enforce_retention=False)
    assert result["versionsRemoved"] == [1, 2, 3]
    assert {f.rstrip("/") for f in result["filesRemoved"]} == {k.rsplit("/", 1)[0] for k in unreferenced}
    left = objects(spark, path)
    assert {k for k in left if "/part-r-" in k} == data_objects - unreferenced
    gone = set(on_s3) - set(left)
    assert {k for k in gone if "/part-r-" not in k} >= {f"_sfclayer/v{v:08d}.json" for v in (1, 2, 3)}
    # every byte removed but the version documents' is counted
    assert result["bytesFreed"] == sum(on_s3[k] for k in gone if not k.startswith("_sfclayer/v"))
    assert values(spark, path) == v3 and sfclayer.verify(spark, path).clean


def test_vacuum_during_a_write_in_progress_on_s3_keeps_its_files(spark, s3_race):
    """The append's files are on S3 and its commit (the PUT of ``v00000002.json``) is held at the
    server's proxy: vacuum with zero retention keeps them, and the append then commits."""
    path = s3_race.path("in-progress")
    proxy = s3_race.proxy
    sfclayer.write(tiles(spark), path, bounds=BOUNDS, extent=EXTENT, partitions=2, block_size=BLOCK, compression="none")
    before = set(objects(spark, path))
    # n=2 never comes: the one commit waits out the timeout, then goes on to the server
    proxy.hold(r"_sfclayer/v00000002\.json", n=2, timeout=8)
    error = []

    def append():
        try:
            sfclayer.write(tiles(spark, [(1, 1), (2, 2)], bump=5), path, mode="append")
        except Exception as e:  # noqa: BLE001 - judged below
            error.append(e)

    t = threading.Thread(target=append)
    t.start()
    try:
        deadline = time.monotonic() + 120
        while True:
            new = {k for k in set(objects(spark, path)) - before if "/part-r-" in k and k.endswith("/data")}
            if new:
                break
            assert time.monotonic() < deadline, "the append wrote no files"
            time.sleep(0.1)
        assert sfclayer.history(spark, path)[-1].version == 1, "the commit was not held back"
        report = sfclayer.vacuum(spark, path, retain=dt.timedelta(0), enforce_retention=False)
        removed = report["filesRemoved"] + report["otherRemoved"]
        assert not [f for f in removed if any(k.startswith(f.rstrip("/")) for k in new)], report
    finally:
        t.join(120)
        held = list(proxy.held)
        proxy.clear()
    assert error == []
    assert [h for h in held if "v00000002" in h[0]], "the commit never went through the proxy's hold"
    want = everything()
    want.update({(1, 1): 1001 + 5, (2, 2): 2002 + 5})
    assert values(spark, path) == want and sfclayer.verify(spark, path).clean


def test_tile_server_serves_a_layer_on_s3(spark, s3):
    from tests import serving as sv

    root = s3.path("served")
    paths = sv.write_layers(spark, root, names=("rgb",))
    import numpy as np
    from sfclayer import server as srv

    server = srv.serve(spark, [f"rgb={paths['rgb']}"], port=0, background=True, log=lambda line: None)
    try:
        client = sv.Client(server.url)
        try:
            code, headers, body = client.get("/layers/rgb/tiles/0/2/1.png")
            assert code == 200 and headers["content-type"] == "image/png"
            np.testing.assert_array_equal(sv.decode_png(body)[..., :3], sv.rgb_pixels(2, 1).transpose(1, 2, 0))
            code, _, _ = client.get(f"/layers/rgb/tiles/0/{sv.MISSING[0]}/{sv.MISSING[1]}.png")
            assert code == 404
        finally:
            client.close()
    finally:
        server.stop()
