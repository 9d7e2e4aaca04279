"""Conflicts and isolation (docs/FORMAT.md section 6): writers racing on one layer, vacuum racing a write,
and updates that change nothing publishing nothing (issue 27)."""

import datetime as dt
import os
import threading
import time
import uuid

import pytest

import sfclayer
from tests import helpers
from tests.test_concurrency import race, tiles, values


@pytest.fixture
def commit_delay(spark):
    """Every write is held back 3 s before its commit (at its first data file, by the test filesystem
    of the test jar, io.sfclayer.testing), so two writers started together overlap."""
    with helpers.faults(spark, **{"sfclayer.test.stallFirstFileMillis": "3000"}):
        yield


def _path(tmp_path):
    return str(tmp_path / f"layer-{uuid.uuid4().hex[:6]}")


def _quadrants(spark, path, *corners):
    """A 16 x 16 Z-order layer holding only the 8 x 8 quadrants at ``corners`` (one file each)."""
    df = None
    for col0, row0 in corners:
        q = tiles(spark, 8, col0, row0)
        df = q if df is None else df.union(q)
    sfclayer.write(df, path, bounds=(0, 0, 15, 15), partitions=4)


def test_delete_and_an_append_into_a_gap_inside_its_box_do_not_both_commit(spark, tmp_path, commit_delay):
    # Quadrants (0, 0) and (8, 8) hold tiles; (8, 0) is a gap no file spans (Z indexes 64-127). The
    # delete covers all but the top row (so it rewrites a file, and the commit delay holds it too);
    # the append inserts into the gap. Both committing from the same base would be write skew: a
    # delete of the box after which the appended tiles are in it.
    path = _path(tmp_path)
    _quadrants(spark, path, (0, 0), (8, 8))
    errors = race(lambda: sfclayer.delete(spark, path, keys=(0, 0, 15, 14)),
                  lambda: sfclayer.write(tiles(spark, 4, 8, 0, mult=3), path, mode="append"))
    history = sfclayer.history(spark, path)
    if errors == [None, None]:
        # allowed only as a serial order: the later commit read the earlier one's version
        assert history[-1].read_version == history[-2].version == 2, history
        survivors = {(c, 15) for c in range(8, 16)}
        expected = survivors | {(c, r) for c in range(8, 12) for r in range(4)}
        assert set(values(spark, path)) == (expected if history[-1].operation != "delete" else survivors)
        return
    assert sum(e is None for e in errors) == 1, errors
    lost = [e for e in errors if e is not None][0]
    assert isinstance(lost, sfclayer.ConcurrentUpdate)
    assert helpers.versions(path) == [1, 2]
    if errors[0] is None:  # the delete won: the top row of quadrant (8, 8) is left
        assert set(values(spark, path)) == {(c, 15) for c in range(8, 16)}
    else:  # the append won: the base plus the appended box
        assert len(values(spark, path)) == 2 * 64 + 16


def test_delete_and_an_append_far_apart_both_commit(spark, tmp_path, commit_delay):
    path = _path(tmp_path)
    _quadrants(spark, path, (0, 0), (8, 8))
    errors = race(lambda: sfclayer.delete(spark, path, keys=(0, 0, 3, 3)),
                  lambda: sfclayer.write(tiles(spark, 4, 12, 12, mult=3), path, mode="append"))
    assert errors == [None, None]
    got = values(spark, path)
    assert not any(c < 4 and r < 4 for c, r in got)
    assert got[(12, 12)] == 12 * 3 + 12 and len(got) == 2 * 64 - 16


def test_compact_racing_an_append_into_a_file_it_rewrites_one_fails(spark, tmp_path, commit_delay):
    path = _path(tmp_path)
    sfclayer.write(tiles(spark, 16), path, bounds=(0, 0, 15, 15), partitions=8, block_size="1m")
    before = values(spark, path)
    # copy-on-write: a delta append never fails against a compaction (DeltaWriteTest, FORMAT.md section 11)
    errors = race(lambda: sfclayer.compact(spark, path),
                  lambda: sfclayer.write(tiles(spark, 2, 0, 0, mult=3), path, mode="append", append_mode="rewrite"))
    assert sum(e is None for e in errors) == 1, errors
    assert isinstance([e for e in errors if e is not None][0], sfclayer.ConcurrentUpdate)
    got = values(spark, path)
    if errors[0] is None:
        assert got == before and helpers.metadata(path)["operation"]["name"] == "compact"
    else:
        assert got == {**before, **{(c, r): c * 3 + r for c in range(2) for r in range(2)}}


def test_vacuum_during_a_write_in_progress_keeps_its_files(spark, tmp_path, commit_delay):
    path = _path(tmp_path)
    _quadrants(spark, path, (0, 0))
    base_dirs = set(os.listdir(path))
    error = []

    def append():
        try:
            sfclayer.write(tiles(spark, 4, 12, 12, mult=3), path, mode="append")
        except Exception as e:  # noqa: BLE001 - the test inspects it
            error.append(e)

    t = threading.Thread(target=append)
    t.start()
    try:
        # wait until the append's job has written its files (it then holds its commit back 3 s)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            new = [d for d in set(os.listdir(path)) - base_dirs if d.startswith("data-")]
            if new and any(n.startswith("part-") for _, dirs, _ in os.walk(os.path.join(path, new[0])) for n in dirs):
                break
            time.sleep(0.05)
        else:
            pytest.fail("the append wrote no files")
        report = sfclayer.vacuum(spark, path, retain=dt.timedelta(0), enforce_retention=False)
        assert not any(f.startswith(new[0]) for f in report["filesRemoved"] + report["otherRemoved"]), report
    finally:
        t.join()
    assert error == []
    got = values(spark, path)
    assert got[(12, 12)] == 12 * 3 + 12 and len(got) == 64 + 16


def test_vacuum_judges_age_by_files_not_directories_and_removes_stale_temporary_documents(spark, tmp_path):
    path = _path(tmp_path)
    _quadrants(spark, path, (0, 0))
    v1_dir = helpers.metadata(path)["dataDir"]
    sfclayer.write(tiles(spark, 8, 0, 0, mult=3), path, mode="append")  # rewrites version 1's file
    stale = os.path.join(path, "_sfclayer", ".tmp-20200101T000000-deadbeef.json")
    with open(stale, "w") as f:
        f.write("{}")
    # directories stamped in the future, as S3A stamps them with the listing's time: vacuum must
    # judge by the files (and the writeId's time), never by a directory's own time
    future = time.time() + 3600
    for root, dirs, _ in os.walk(path):
        for d in dirs:
            os.utime(os.path.join(root, d), (future, future))
    plan = sfclayer.vacuum(spark, path, retain=dt.timedelta(0), enforce_retention=False, dry_run=True)
    assert plan["versionsRemoved"] == [1]
    assert len(plan["filesRemoved"]) == 1 and plan["filesRemoved"][0].startswith(v1_dir + "/")
    assert "_sfclayer/.tmp-20200101T000000-deadbeef.json" in plan["otherRemoved"]
    assert v1_dir in plan["otherRemoved"]  # left empty
    assert plan["bytesFreed"] > 0
    assert helpers.versions(path) == [1, 2] and os.path.exists(stale)  # a dry run deletes nothing
    done = sfclayer.vacuum(spark, path, retain=dt.timedelta(0), enforce_retention=False)
    assert {k: done[k] for k in ("versionsRemoved", "filesRemoved", "otherRemoved", "bytesFreed")} == {
        k: plan[k] for k in ("versionsRemoved", "filesRemoved", "otherRemoved", "bytesFreed")}
    assert helpers.versions(path) == [2] and not os.path.exists(stale) and not os.path.exists(os.path.join(path, v1_dir))
    assert values(spark, path) == {(c, r): c * 3 + r for c in range(8) for r in range(8)}


def test_an_empty_append_publishes_nothing(spark, tmp_path):
    path = _path(tmp_path)
    _quadrants(spark, path, (0, 0))
    sfclayer.write(tiles(spark, 4).limit(0), path, mode="append")
    assert helpers.versions(path) == [1]
    assert [d for d in os.listdir(path) if d.startswith("data-")] == [helpers.metadata(path)["dataDir"]]


def test_a_delete_rewrites_only_files_holding_a_tile_it_deletes(spark, tmp_path):
    # Quadrant (0, 0) full (Z indexes 0-63, one file) and rows 0-3 of quadrant (8, 0) without cols 8-13 of
    # rows 0-1 (one file spanning 72-95). The box cols 6-13 x rows 0-1 holds 4 tiles of the first file and
    # none of the second, whose span it meets (indexes 80-83): the second file must stay as it is.
    from pyspark.sql import functions as F
    path = _path(tmp_path)
    second = tiles(spark, 8, 8, 0).where((F.col("row") < 4) & ~((F.col("row") < 2) & (F.col("col") <= 13)))
    sfclayer.write(tiles(spark, 8).union(second), path, bounds=(0, 0, 15, 15), partitions=4)
    before = helpers.metadata(path)["files"]
    assert [(f["firstIndex"], f["lastIndex"]) for f in before] == [(0, 63), (72, 95)]
    v = sfclayer.delete(spark, path, keys=(6, 0, 13, 1))
    after = helpers.metadata(path)
    assert v.metrics["tilesDeleted"] == 4 and v.metrics["filesRemoved"] == 1
    ids = {f"{f['dir']}/{f['name']}" for f in after["files"]}
    assert f"{before[1]['dir']}/{before[1]['name']}" in ids
    assert after["operation"]["removedFiles"] == [f"{before[0]['dir']}/{before[0]['name']}"]


def test_a_read_pinned_on_a_vacuumed_version_says_it_was_vacuumed(spark, tmp_path):
    # issue 35: the files of a version vacuum removed are no damage; the error must say so, not advise onCorrupt=skip
    path = _path(tmp_path)
    _quadrants(spark, path, (0, 0))
    pinned = sfclayer.read(spark, path, version=1)
    assert pinned.count() == 64
    sfclayer.write(tiles(spark, 8, 8, 8), path, mode="overwrite")
    sfclayer.vacuum(spark, path, retain=dt.timedelta(0), enforce_retention=False)
    with pytest.raises(sfclayer.LayerNotFound, match="version 1 of layer .* was removed by vacuum") as e:
        with sfclayer._jvm.translated():
            pinned.select("v").collect()
    assert "onCorrupt=skip" not in str(e.value) and "versions are now [2]" in str(e.value)


def test_a_read_pinned_on_a_vacuumed_format_6_version_says_it_was_vacuumed(spark, tmp_path):
    # issue 35: a version listing its files through manifests (format 6) loses its manifests to vacuum before
    # its data files are opened: the error must say the version was vacuumed, not that a manifest is missing
    path = _path(tmp_path)
    with helpers.manifest_capacities(spark):
        _quadrants(spark, path, (0, 0), (8, 8))
        assert helpers.metadata(path)["formatVersion"] == 6
        pinned = sfclayer.read(spark, path, version=1)  # its manifests not read yet (a read plans lazily)
        sfclayer.write(tiles(spark, 8, 8, 8), path, mode="overwrite")
    sfclayer.vacuum(spark, path, retain=dt.timedelta(0), enforce_retention=False)
    with pytest.raises(sfclayer.LayerNotFound, match="version 1 of layer .* was removed by vacuum") as e:
        with sfclayer._jvm.translated():
            pinned.select("v").collect()
    assert "its manifest" in str(e.value) and "is missing" not in str(e.value)
    assert "versions are now [2]" in str(e.value)
