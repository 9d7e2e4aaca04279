"""Living layers: append/upsert, delete, compact, history, time travel, vacuum (issue 10)."""

import datetime as dt
import json
import os
import shutil
import uuid

import pytest
from pyspark.sql import functions as F

import sfclayer
from sfclayer import _jvm
from tests import helpers


def tiles(spark, n_cols, n_rows, col0=0, row0=0, size=16, mult=1000):
    """A grid of tiles: v = col * mult + row, and a payload of `size` bytes."""
    return (spark.range(n_cols * n_rows)
            .select((F.col("id") % n_cols + col0).cast("int").alias("col"),
                    (F.floor(F.col("id") / n_cols) + row0).cast("int").alias("row"))
            .withColumn("v", F.col("col") * mult + F.col("row"))
            .withColumn("payload", F.expr(f"unhex(repeat(lpad(hex(v), 8, '0'), {max(1, size // 4)}))")))


def values(spark, path, **read_args):
    return {(r["col"], r["row"]): r["v"] for r in sfclayer.read(spark, path, **read_args).select("col", "row", "v").collect()}


def files_by_id(md):
    return {f"{f['dir']}/{f['name']}": f for f in md["files"]}


@pytest.fixture
def layer_path(tmp_path):
    return str(tmp_path / f"layer-{uuid.uuid4().hex[:6]}")


@pytest.fixture
def big(spark, layer_path):
    """A 32 x 32 layer of ~1.5 KB tiles in ~24 files of 64 KiB."""
    sfclayer.write(tiles(spark, 32, 32, size=1500), layer_path, bounds=(0, 0, 31, 31), block_size="64k",
                   partitions=4, compression="none")
    return layer_path


def test_append_rewrites_only_the_files_its_records_fall_in(spark, big):
    before = helpers.metadata(big)
    mtimes = {fid: os.stat(os.path.join(big, fid, "data")).st_mtime_ns for fid in files_by_id(before)}
    # copy-on-write (9 tiles into 64 KiB files would otherwise be a delta: test_deltas.py)
    sfclayer.write(tiles(spark, 3, 3, col0=8, row0=8, size=1500, mult=7), big, mode="append", append_mode="rewrite")
    after = helpers.metadata(big)
    assert after["formatVersion"] == 3 and after["operation"]["name"] == "append"
    assert after["operation"]["readVersion"] == 1
    kept = set(files_by_id(before)) & set(files_by_id(after))
    removed = set(files_by_id(before)) - set(files_by_id(after))
    assert removed == set(after["operation"]["removedFiles"]) and 1 <= len(removed) <= 3
    assert len(kept) >= len(before["files"]) - 3
    for fid in kept:  # untouched files: same path in both documents, never rewritten
        assert os.stat(os.path.join(big, fid, "data")).st_mtime_ns == mtimes[fid]
    # the version's files stay sorted and disjoint, and the data is the model's
    spans = sorted((f["firstIndex"], f["lastIndex"]) for f in after["files"])
    assert all(a[1] < b[0] for a, b in zip(spans, spans[1:]))
    model = {(c, r): c * 1000 + r for c in range(32) for r in range(32)}
    model.update({(c, r): c * 7 + r for c in range(8, 11) for r in range(8, 11)})
    assert values(spark, big) == model
    assert after["operation"]["metrics"]["tilesReplaced"] == 9
    assert after["recordCount"] == 1024


def keyed(spark, keys, size, mult):
    """Tiles at the given keys: v = col * mult + row, and a payload of `size` bytes."""
    return (spark.createDataFrame(keys, "col int, row int")
            .withColumn("v", F.col("col") * mult + F.col("row"))
            .withColumn("payload", F.expr(f"unhex(repeat(lpad(hex(v), 8, '0'), {size // 4}))")))


def test_an_update_leaves_no_small_file_next_to_a_rewritten_one(spark, big):
    before = helpers.metadata(big)
    block = before["blockSize"]
    mtimes = {fid: os.stat(os.path.join(big, fid, "data")).st_mtime_ns for fid in files_by_id(before)}
    # a full file (one block) whose tiles grow by 5 x 2000 bytes: its rewrite spills over a block
    target = sorted(before["files"], key=lambda f: f["firstIndex"])[1]
    assert target["dataBytes"] > 0.95 * block
    keys = sorted((r["col"], r["row"]) for r in sfclayer.read(spark, big).select("col", "row", "_file").collect()
                  if os.path.basename(r["_file"]) == target["name"])[:5]
    sfclayer.write(keyed(spark, keys, 3500, 7), big, mode="append")
    after = helpers.metadata(big)
    added = [f for f in after["files"] if f["dir"].startswith(after["dataDir"] + "/")]
    assert set(after["operation"]["removedFiles"]) == {f"{target['dir']}/{target['name']}"}
    total = sum(f["dataBytes"] for f in added)
    # rolled at the block size alone, this output would end with a file under a quarter block ...
    assert len(added) == 2 and block < total < 1.25 * block - 4000
    # ... merged with its rewritten neighbour instead: two files, neither small nor over a block
    assert all(block // 4 <= f["dataBytes"] <= block for f in added), added
    assert added[0]["firstIndex"] == target["firstIndex"] and added[0]["lastIndex"] < added[1]["firstIndex"]
    # written under a name of its own, not the rewritten file's moved out of the way (a rename on an
    # object store copies every byte)
    assert added[0]["name"] != target["name"]
    # in the version's index order, no small new file lies next to another new file
    new = {f"{f['dir']}/{f['name']}" for f in added}
    ordered = sorted(after["files"], key=lambda f: f["firstIndex"])
    for a, b in zip(ordered, ordered[1:]):
        if {f"{a['dir']}/{a['name']}", f"{b['dir']}/{b['name']}"} <= new:
            assert min(a["dataBytes"], b["dataBytes"]) >= block // 4
    assert all(a["lastIndex"] < b["firstIndex"] for a, b in zip(ordered, ordered[1:]))
    for fid in set(files_by_id(before)) & set(files_by_id(after)):  # untouched: same path, never rewritten
        assert os.stat(os.path.join(big, fid, "data")).st_mtime_ns == mtimes[fid]
    assert len(files_by_id(after)) == len(files_by_id(before)) + 1
    # no file of the rebalancing is left in the attempt directory
    on_disk = {os.path.relpath(os.path.join(root, d), big) for root, dirs, _ in os.walk(os.path.join(big, after["dataDir"]))
               for d in dirs if os.path.basename(root).startswith("attempt-")}
    assert on_disk == new
    model = {(c, r): c * 1000 + r for c in range(32) for r in range(32)}
    model.update({k: k[0] * 7 + k[1] for k in keys})
    assert values(spark, big) == model
    with sfclayer.open(spark, big) as layer:
        assert [layer.get(*k)["v"] for k in keys] == [model[k] for k in keys]
        assert len(layer.get(*keys[0])["payload"]) == 3500


def test_on_existing_keep_and_error(spark, layer_path):
    sfclayer.write(tiles(spark, 8, 8), layer_path, bounds=(0, 0, 15, 15))
    sfclayer.write(tiles(spark, 4, 4, col0=6, row0=6, mult=7), layer_path, mode="append", on_existing="keep")
    got = values(spark, layer_path)
    assert got[(7, 7)] == 7007 and got[(9, 9)] == 9 * 7 + 9 and len(got) == 64 + 16 - 4
    versions = helpers.versions(layer_path)
    with pytest.raises(sfclayer.InvalidInput, match=r"key \(col=\d+, row=\d+\) already exists .*onExisting=error"):
        sfclayer.write(tiles(spark, 2, 2, col0=7, row0=7, mult=3), layer_path, mode="append", on_existing="error")
    assert helpers.versions(layer_path) == versions  # nothing published
    with pytest.raises(sfclayer.InvalidArgument, match="onExisting: 'merge'"):
        sfclayer.write(tiles(spark, 1, 1), layer_path, mode="append", on_existing="merge")


def test_append_checks_bounds_and_schema_by_name(spark, layer_path):
    sfclayer.write(tiles(spark, 4, 4), layer_path, bounds=(0, 0, 7, 7))
    with pytest.raises(sfclayer.KeyOutOfBounds, match=r"col=8.*cols 0\.\.7"):
        sfclayer.write(tiles(spark, 2, 2, col0=7), layer_path, mode="append")
    with pytest.raises(sfclayer.InvalidInput, match="value column 'v' is string"):
        sfclayer.write(tiles(spark, 2, 2).withColumn("v", F.lit("x")), layer_path, mode="append")
    with pytest.raises(sfclayer.InvalidInput, match="no value column 'payload'"):
        sfclayer.write(tiles(spark, 2, 2).drop("payload"), layer_path, mode="append")
    with pytest.raises(sfclayer.InvalidInput, match="value column 'extra' is not in the layer"):
        sfclayer.write(tiles(spark, 2, 2).withColumn("extra", F.lit(1)), layer_path, mode="append")
    assert helpers.versions(layer_path) == [1]
    assert sorted(os.listdir(layer_path)) == sorted(["_sfclayer", helpers.metadata(layer_path)["dataDir"]])


def test_append_refuses_layer_shaping_options_that_differ(spark, layer_path):
    shape = dict(bounds=(0, 0, 7, 7), key_index="hilbert", block_size="64k", compression="deflate",
                 extent=(0, 0, 8, 8), crs="EPSG:3857", index_interval=8, raster={"bands": 1})
    sfclayer.write(tiles(spark, 4, 4), layer_path, **shape)
    # the layer's own values are accepted, and the append is done
    sfclayer.write(tiles(spark, 2, 2, mult=3), layer_path, mode="append", format_version=3, **shape)
    assert values(spark, layer_path)[(1, 1)] == 4 and helpers.versions(layer_path) == [1, 2]
    on_disk = sorted(os.listdir(layer_path))
    differing = [  # (keyword, value, the option's name and value in the message, the layer's value)
        ("bounds", (0, 0, 15, 15), "bounds: '0,0,15,15'", "'0,0,7,7'"),
        ("key_index", "z", "keyIndex: 'z'", "'hilbert'"),
        ("block_size", "128k", "blockSize: '128k'", "'65536' bytes"),
        ("compression", "zstd", "compression: 'zstd'", "'deflate'"),
        ("extent", (0, 0, 16, 16), r"extent: '0,0,16,16'", r"'0\.0,0\.0,8\.0,8\.0'"),
        ("crs", "EPSG:4326", "crs: 'EPSG:4326'", "'EPSG:3857'"),
        ("index_interval", 4, "indexInterval: '4'", "'8'"),
        ("raster", {"bands": 3}, r"raster: '\{\"bands\": ?3\}'", r"'\{\"bands\":1\}'"),
    ]
    for keyword, value, given, theirs in differing:
        with pytest.raises(sfclayer.InvalidArgument, match=f"option {given} differs from the value of layer "
                           f".*, {theirs}; an append keeps the layer's .*nothing was written"):
            sfclayer.write(tiles(spark, 2, 2, mult=5), layer_path, mode="append", **{keyword: value})
    with pytest.raises(sfclayer.InvalidArgument, match="option formatVersion: '2' is for new layers"):
        sfclayer.write(tiles(spark, 2, 2, mult=5), layer_path, mode="append", format_version=2)
    assert helpers.versions(layer_path) == [1, 2] and sorted(os.listdir(layer_path)) == on_disk  # nothing written
    assert values(spark, layer_path)[(1, 1)] == 4


def test_append_refuses_other_time_bounds_and_resolution(spark, layer_path):
    t0 = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    df = spark.createDataFrame([(1, 1, t0, 1)], "col int, row int, time timestamp, v int")
    window = (t0, t0 + dt.timedelta(days=9))
    sfclayer.write(df, layer_path, bounds=(0, 0, 3, 3), time_bounds=window, time_resolution="6 hours")
    sfclayer.write(df, layer_path, mode="append", time_bounds=window, time_resolution=dt.timedelta(hours=6))
    with pytest.raises(sfclayer.InvalidArgument, match=r"option timeBounds: .* differs .*, "
                       r"'2024-01-01T00:00:00Z,2024-01-10T00:00:00Z'"):
        sfclayer.write(df, layer_path, mode="append", time_bounds=(t0, t0 + dt.timedelta(days=10)))
    with pytest.raises(sfclayer.InvalidArgument, match=r"option timeResolution: '1 day' differs .*, 'PT6H'"):
        sfclayer.write(df, layer_path, mode="append", time_resolution="1 day")
    assert helpers.versions(layer_path) == [1, 2]


def _append_jobs(spark, new, path, **opts):
    """Appends ``new`` to ``path``; returns the stage counts of the Spark jobs the append ran."""
    sc = spark.sparkContext
    group = f"append-{uuid.uuid4().hex[:8]}"
    sc.setJobGroup(group, "test")
    try:
        sfclayer.write(new, path, mode="append", **opts)
    finally:
        sc._jsc.clearJobGroup()
    tracker = sc.statusTracker()
    return [len(tracker.getJobInfo(j).stageIds) for j in tracker.getJobIdsForGroup(group)]


def test_small_append_skips_the_shuffle_and_writes_what_the_shuffled_append_writes(spark, big, tmp_path):
    shuffled = str(tmp_path / "shuffled")
    shutil.copytree(big, shuffled)
    # keys spread over several partitions (and files), some replacing, none outside the bounds
    # (the input's size must be one Spark can estimate: a range, a file, a cached DataFrame)
    new = tiles(spark, 32, 2, col0=0, row0=9, size=1500, mult=7)
    # copy-on-write both (the small-append path of deltas: test_deltas.py)
    small_jobs = _append_jobs(spark, new, big, partitions=4, append_mode="rewrite")
    big_jobs = _append_jobs(spark, new, shuffled, partitions=4, small_append_bytes=0, append_mode="rewrite")
    assert small_jobs == [1] and big_jobs == [2]  # one stage, no shuffle; the shuffled: map and write stages
    a, b = helpers.metadata(big), helpers.metadata(shuffled)

    def shape(md):
        files = sorted((f["name"], f["firstIndex"], f["lastIndex"], f["records"], f["dataBytes"]) for f in md["files"])
        return files, md["operation"], md["recordCount"], md["dataBytes"]
    assert shape(a) == shape(b)
    assert values(spark, big) == values(spark, shuffled)
    assert a["operation"]["metrics"]["tilesReplaced"] == 64 and a["operation"]["metrics"]["filesRemoved"] > 1


def test_append_to_no_layer_creates_it(spark, layer_path):
    sfclayer.write(tiles(spark, 3, 3), layer_path, mode="append", bounds=(0, 0, 9, 9))
    md = helpers.metadata(layer_path)
    assert md["version"] == 1 and md["operation"]["name"] == "write" and md["recordCount"] == 9


@pytest.mark.parametrize("mode", ["errorifexists", "overwrite", "append"])
def test_killed_first_write_is_a_layer_with_no_versions(spark, layer_path, mode):
    # what a first write killed before its commit leaves: data, a temporary document, no version
    ghost = os.path.join(layer_path, "data-20000101T000000-deadbeef", "attempt-3", "part-r-00000-0")
    os.makedirs(ghost)
    os.makedirs(os.path.join(layer_path, "_sfclayer"))
    with open(os.path.join(layer_path, "_sfclayer", ".tmp-20000101T000000-deadbeef.json"), "w") as f:
        f.write("{")
    with pytest.raises(sfclayer.LayerNotFound, match="no committed version"):
        sfclayer.read(spark, layer_path).count()
    sfclayer.write(tiles(spark, 3, 3), layer_path, mode=mode, bounds=(0, 0, 3, 3))
    assert helpers.versions(layer_path) == [1]
    assert len(values(spark, layer_path)) == 9


def test_history_and_time_travel(spark, layer_path):
    sfclayer.write(tiles(spark, 4, 4), layer_path, bounds=(0, 0, 7, 7))
    t1 = dt.datetime.now(dt.timezone.utc)
    sfclayer.write(tiles(spark, 2, 2, col0=6, row0=6), layer_path, mode="append")
    sfclayer.delete(spark, layer_path, keys=(0, 0, 1, 1))
    hist = sfclayer.history(spark, layer_path)
    assert [(v.version, v.operation, v.read_version) for v in hist] == [
        (1, "write", None), (2, "append", 1), (3, "delete", 2)]
    assert [v.records for v in hist] == [16, 20, 16]
    assert hist[1].metrics["tilesInserted"] == 4 and hist[2].tiles_deleted == 4
    assert hist[0].created_at <= t1 < hist[1].created_at
    assert hist[1].files_added >= 1 and hist[1].bytes_written > 0
    assert len(values(spark, layer_path, version=1)) == 16
    assert len(values(spark, layer_path, version=2)) == 20
    assert len(values(spark, layer_path, as_of=t1)) == 16
    assert (0, 0) not in values(spark, layer_path) and (0, 0) in values(spark, layer_path, version=2)
    df = spark.read.format("sfclayer").option("versionAsOf", 2).load(layer_path)
    assert df.count() == 20
    with pytest.raises(sfclayer.LayerNotFound, match=r"no version 9; its versions are \[1, 2, 3\]"):
        sfclayer.read(spark, layer_path, version=9).count()
    with pytest.raises(sfclayer.LayerNotFound, match="no version committed at or before 2001"):
        sfclayer.read(spark, layer_path, as_of=dt.datetime(2001, 1, 1)).count()
    with pytest.raises(sfclayer.InvalidArgument, match="versionAsOf: 'x'"), _jvm.translated():
        spark.read.format("sfclayer").option("versionAsOf", "x").load(layer_path).count()
    # look-ups pin the version they opened; refresh moves to the newest
    with sfclayer.open(spark, layer_path, version=2) as layer:
        assert layer.version == 2 and layer.get(0, 0)["v"] == 0
        assert layer.refresh() == 3
        with pytest.raises(sfclayer.KeyNotFound):
            layer.get(0, 0)
    with sfclayer.open(spark, layer_path, as_of=t1) as layer:
        assert layer.version == 1 and (6, 6) not in layer
    out = _cli(["history", layer_path, "--json"])
    assert [v["operation"] for v in json.loads(out)] == ["write", "append", "delete"]
    # each version names the write that committed it (what a CommitStateUnknown names, issue 35)
    write_ids = [v.write_id for v in sfclayer.history(spark, layer_path)]
    assert [v["writeId"] for v in json.loads(out)] == write_ids
    assert write_ids[-1] == helpers.metadata(layer_path)["writeId"] and len(set(write_ids)) == 3
    assert write_ids[-1] in _cli(["history", layer_path])


def _cli(args):
    import contextlib
    import io

    from sfclayer import cli

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert cli.main(args) == 0
    return buf.getvalue()


def test_delete_by_keys_bbox_and_time(spark, layer_path):
    sfclayer.write(tiles(spark, 16, 16, size=800), layer_path, bounds=(0, 0, 15, 15), extent=(0, 0, 16, 16),
                   block_size="64k")
    before = helpers.metadata(layer_path)
    v = sfclayer.delete(spark, layer_path, keys=(2, 2, 5, 3))
    assert v.version == 2 and v.metrics["tilesDeleted"] == 8
    # bbox in map units: tiles whose envelope meets (10.5, 10.5, 11.5, 11.5): cols 10..11, rows 4..5
    sfclayer.delete(spark, layer_path, bbox=(10.5, 10.5, 11.5, 11.5))
    model = {(c, r): c * 1000 + r for c in range(16) for r in range(16)}
    for c in range(2, 6):
        for r in range(2, 4):
            del model[(c, r)]
    for c in (10, 11):
        for r in (4, 5):
            del model[(c, r)]
    assert values(spark, layer_path) == model
    after = helpers.metadata(layer_path)
    assert len(set(files_by_id(before)) - set(files_by_id(after))) <= 4  # only files meeting the boxes
    unchanged = sfclayer.delete(spark, layer_path, keys=(2, 2, 3, 3))  # nothing left there
    assert unchanged.version == 3 and helpers.versions(layer_path) == [1, 2, 3]
    with pytest.raises(sfclayer.InvalidArgument, match="give keys, bbox or time"):
        sfclayer.delete(spark, layer_path)
    with pytest.raises(sfclayer.InvalidArgument, match="spatial"):
        sfclayer.delete(spark, layer_path, time=(0, 1))


def test_delete_space_time(spark, layer_path):
    t0 = dt.datetime(2024, 1, 1)
    rows = [(c, r, t0 + dt.timedelta(days=d), c * 100 + r + d) for c in range(4) for r in range(4) for d in range(3)]
    df = spark.createDataFrame(rows, "col int, row int, time timestamp, v int")
    sfclayer.write(df, layer_path, bounds=(0, 0, 3, 3), time_bounds=(t0, t0 + dt.timedelta(days=3)))
    sfclayer.delete(spark, layer_path, keys=(0, 0, 1, 1), time=(t0 + dt.timedelta(days=1), t0 + dt.timedelta(days=1)))
    got = sorted((r["col"], r["row"], r["time"].day) for r in sfclayer.read(spark, layer_path).collect())
    want = sorted((c, r, 1 + d) for c in range(4) for r in range(4) for d in range(3)
                  if not (c <= 1 and r <= 1 and d == 1))
    assert got == want


def test_compact_merges_runs_of_small_files(spark, layer_path):
    sfclayer.write(tiles(spark, 16, 16), layer_path, bounds=(0, 0, 15, 15), block_size="64k", partitions=4)
    for i in range(4):  # small appends in different partitions leave small files
        sfclayer.write(tiles(spark, 2, 2, col0=4 * i, row0=4 * i, mult=3), layer_path, mode="append", partitions=4)
    model = values(spark, layer_path)
    before = helpers.metadata(layer_path)
    v = sfclayer.compact(spark, layer_path)
    after = helpers.metadata(layer_path)
    assert v.operation == "compact" and after["fileCount"] < before["fileCount"]
    assert values(spark, layer_path) == model
    assert sfclayer.compact(spark, layer_path).version == v.version  # nothing left to compact
    with sfclayer.open(spark, layer_path) as layer:
        assert layer.get(4, 4)["v"] == 4 * 3 + 4


def test_vacuum_retention_dry_run_and_pinned_reader(spark, layer_path):
    sfclayer.write(tiles(spark, 16, 16, size=800), layer_path, bounds=(0, 0, 15, 15), block_size="64k")
    assert helpers.metadata(layer_path)["fileCount"] >= 2
    pinned = sfclayer.open(spark, layer_path, cache_size=1)
    try:
        for i in range(5):
            mode = "overwrite" if i == 2 else "append"
            sfclayer.write(tiles(spark, 8, 8, mult=10 + i), layer_path, mode=mode, bounds=(0, 0, 15, 15))
            assert pinned.get(3, 4)["v"] == 3004  # version 1, still read
        assert helpers.versions(layer_path) == [1, 2, 3, 4, 5, 6]
        with pytest.raises(sfclayer.InvalidArgument, match="7-day minimum"):
            sfclayer.vacuum(spark, layer_path, retain=dt.timedelta(days=1))
        assert sfclayer.vacuum(spark, layer_path)["versionsRemoved"] == []  # all younger than 7 days
        plan = sfclayer.vacuum(spark, layer_path, retain=dt.timedelta(0), enforce_retention=False, dry_run=True)
        assert plan["versionsRemoved"] == [1, 2, 3, 4, 5] and plan["filesRemoved"]
        assert helpers.versions(layer_path) == [1, 2, 3, 4, 5, 6] and pinned.get(3, 4)["v"] == 3004
        newest = helpers.metadata(layer_path)
        done = sfclayer.vacuum(spark, layer_path, retain=dt.timedelta(0), enforce_retention=False)
        assert done["filesRemoved"] == plan["filesRemoved"]
        assert helpers.versions(layer_path) == [6]
        # in a file the reader has not open (its one cached file holds (3, 4)): no damage, the version is gone
        with pytest.raises(sfclayer.LayerNotFound, match=r"version 1 of layer .* was removed by vacuum.*now \[6\]"):
            pinned.get(15, 15)
    finally:
        pinned.close()
    with pytest.raises(sfclayer.LayerNotFound, match=r"no version 1: it was removed by vacuum; its versions are \[6\]"):
        sfclayer.read(spark, layer_path, version=1).count()
    assert values(spark, layer_path) == {(c, r): c * 14 + r for c in range(8) for r in range(8)}
    # what is left is exactly the newest version's files
    on_disk = {os.path.relpath(os.path.dirname(p), layer_path) + "/" + os.path.basename(p)
               for p in _mapfiles(layer_path)}
    assert on_disk == set(files_by_id(newest))


def _mapfiles(path):
    out = []
    for root, dirs, _ in os.walk(path):
        out += [os.path.join(root, d) for d in dirs if d.startswith("part-")]
    return out


def test_format_version_1_reads_and_becomes_current_at_first_update(spark, layer_path):
    sfclayer.write(tiles(spark, 8, 8), layer_path, bounds=(0, 0, 7, 7), partitions=1)
    md = helpers.metadata(layer_path)
    # rewrite it as format version 1 wrote it: one data directory, listed; no dirs in `files`
    data_dir = os.path.join(layer_path, md["dataDir"])
    for f in md["files"]:
        shutil.move(os.path.join(layer_path, f["dir"], f["name"]), os.path.join(data_dir, f["name"]))
        del f["dir"]
    md["formatVersion"] = 1
    del md["operation"]
    del md["checksum"]  # format 1 documents have none (a stale one would be damage)
    with open(os.path.join(layer_path, "_sfclayer", "v00000001.json"), "w") as f:
        json.dump(md, f)
    assert len(values(spark, layer_path)) == 64
    sfclayer.write(tiles(spark, 1, 1, col0=2, row0=2, mult=5), layer_path, mode="append")
    md2 = helpers.metadata(layer_path)
    assert md2["formatVersion"] == 3 and all("dir" in f for f in md2["files"])
    got = values(spark, layer_path)
    assert len(got) == 64 and got[(2, 2)] == 12 and got[(1, 1)] == 1001


def test_newer_format_version_is_refused_by_name(spark, layer_path):
    sfclayer.write(tiles(spark, 2, 2), layer_path, bounds=(0, 0, 1, 1))
    doc = os.path.join(layer_path, "_sfclayer", "v00000001.json")
    md = helpers.metadata(layer_path)
    md["formatVersion"] = 8
    os.remove(doc)
    with open(doc, "w") as f:
        json.dump(md, f)
    with pytest.raises(sfclayer.CorruptLayer, match="format version 8; this sfclayer reads format versions 1..7"):
        sfclayer.read(spark, layer_path).count()


def test_sql_delete_and_time_travel_through_a_view(spark, layer_path):
    sfclayer.write(tiles(spark, 8, 8), layer_path, bounds=(0, 0, 7, 7))
    name = f"living_{uuid.uuid4().hex[:6]}"
    spark.sql(f"CREATE TABLE {name} USING sfclayer LOCATION '{layer_path}'")
    try:
        with _jvm.translated():
            spark.sql(f"DELETE FROM {name} WHERE col BETWEEN 0 AND 1 AND row < 2")
        assert spark.sql(f"SELECT count(*) AS n FROM {name}").collect()[0]["n"] == 60
        assert [v.operation for v in sfclayer.history(spark, layer_path)] == ["write", "delete"]
        with pytest.raises(sfclayer.InvalidArgument, match=r"GreaterThan\(v,3\).* is not a box of keys"), \
                _jvm.translated():
            spark.sql(f"DELETE FROM {name} WHERE v > 3")
        # Spark refuses VERSION AS OF on session-catalog tables; a view with the read option works
        spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW {name}_v1 USING sfclayer "
                  f"OPTIONS (path '{layer_path}', versionAsOf '1')")
        assert spark.sql(f"SELECT count(*) AS n FROM {name}_v1").collect()[0]["n"] == 64
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")
        spark.sql(f"DROP VIEW IF EXISTS {name}_v1")
    assert helpers.versions(layer_path) == [1, 2]  # dropping the external table kept the layer


def test_updates_keep_the_raster_description_and_other_fields(spark, layer_path):
    raster = {"tileWidth": 4, "tileHeight": 4, "bands": 1, "dtype": "uint8", "nodata": None, "tms": None,
              "zoom": None}
    sfclayer.write(tiles(spark, 4, 4), layer_path, bounds=(0, 0, 7, 7), raster=raster)
    sfclayer.write(tiles(spark, 2, 2, col0=6, row0=6), layer_path, mode="append")
    sfclayer.delete(spark, layer_path, keys=(0, 0, 0, 0))
    sfclayer.compact(spark, layer_path)
    for v in helpers.versions(layer_path):
        assert helpers.metadata(layer_path, v)["raster"] == raster
    with sfclayer.open(spark, layer_path) as layer:
        assert layer.metadata["raster"] == raster and layer.version == helpers.versions(layer_path)[-1]
