"""Concurrent writers and retried tasks: optimistic commits with rebase, ConcurrentUpdate, attempt-unique files."""

import json
import os
import subprocess
import sys
import threading
import uuid

import pytest
from pyspark.sql import functions as F

import sfclayer
from tests import helpers

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts", "append_process.py")


def tiles(spark, side, col0=0, row0=0, mult=1000):
    return (spark.range(side * side)
            .select((F.col("id") % side + col0).cast("int").alias("col"),
                    (F.floor(F.col("id") / side) + row0).cast("int").alias("row"))
            .withColumn("v", F.col("col") * mult + F.col("row"))
            .withColumn("payload", F.expr("unhex(repeat(lpad(hex(v), 8, '0'), 4))")))


def values(spark, path):
    return {(r["col"], r["row"]): r["v"] for r in sfclayer.read(spark, path).select("col", "row", "v").collect()}


def model(*boxes):
    """The 16 x 16 base layer with each (col0, row0, side, mult) box appended over it."""
    m = {(c, r): c * 1000 + r for c in range(16) for r in range(16)}
    for col0, row0, side, mult in boxes:
        m.update({(c, r): c * mult + r for c in range(col0, col0 + side) for r in range(row0, row0 + side)})
    return m


@pytest.fixture
def layer(spark, tmp_path):
    """16 x 16 tiles, Z-order, 4 write partitions: one file per quadrant (indexes 0-63, ..., 192-255)."""
    path = str(tmp_path / f"layer-{uuid.uuid4().hex[:6]}")
    sfclayer.write(tiles(spark, 16), path, bounds=(0, 0, 15, 15), partitions=4)
    return path


@pytest.fixture
def commit_delay(spark):
    """Every write is held back 3 s before its commit (at its first data file, by the test filesystem
    of the test jar, io.sfclayer.testing), so two writers started together overlap."""
    with helpers.faults(spark, **{"sfclayer.test.stallFirstFileMillis": "3000"}):
        yield


def race(*writes):
    """Run the writes in threads started together; each one's exception or None."""
    barrier = threading.Barrier(len(writes))
    results = [None] * len(writes)

    def run(i, write):
        barrier.wait()
        try:
            write()
        except Exception as e:  # noqa: BLE001 - the test inspects it
            results[i] = e

    threads = [threading.Thread(target=run, args=(i, w)) for i, w in enumerate(writes)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_threads_appending_to_disjoint_boxes_both_land(spark, layer, commit_delay):
    a = tiles(spark, 8, 0, 0, mult=3)
    b = tiles(spark, 8, 8, 8, mult=5)
    errors = race(lambda: sfclayer.write(a, layer, mode="append", partitions=4),
                  lambda: sfclayer.write(b, layer, mode="append", partitions=4))
    assert errors == [None, None]
    hist = sfclayer.history(spark, layer)
    assert [(v.operation, v.read_version) for v in hist] == [("write", None), ("append", 1), ("append", 1)]
    assert values(spark, layer) == model((0, 0, 8, 3), (8, 8, 8, 5))  # the second rebased on the first


def test_threads_appending_to_overlapping_boxes_one_lands(spark, layer, commit_delay):
    before = helpers.metadata(layer)
    a = tiles(spark, 4, 0, 0, mult=3)
    b = tiles(spark, 4, 2, 2, mult=5)
    # copy-on-write (delta appends into overlapping boxes both land: test_delta_appends_to_overlapping_boxes_both_land)
    errors = race(lambda: sfclayer.write(a, layer, mode="append", partitions=4, append_mode="rewrite"),
                  lambda: sfclayer.write(b, layer, mode="append", partitions=4, append_mode="rewrite"))
    lost = [e for e in errors if e is not None]
    assert len(lost) == 1 and isinstance(lost[0], sfclayer.ConcurrentUpdate)
    assert "version 2 (append" in str(lost[0]) and "read version 1" in str(lost[0])
    assert helpers.versions(layer) == [1, 2]
    winner = (0, 0, 4, 3) if errors[0] is None else (2, 2, 4, 5)
    assert values(spark, layer) == model(winner)
    # the loser's files are gone; the committed version references only existing files
    on_disk = {os.path.relpath(p, layer) for p in _mapfiles(layer)}
    referenced = {f"{f['dir']}/{f['name']}" for f in helpers.metadata(layer)["files"]}
    assert on_disk == referenced | {f"{f['dir']}/{f['name']}" for f in before["files"]}


def test_delta_appends_to_overlapping_boxes_both_land(spark, layer, commit_delay):
    # a delta append removes nothing and its tiles are newer than any: it rebases (FORMAT.md section 11)
    a = tiles(spark, 4, 0, 0, mult=3)
    b = tiles(spark, 4, 2, 2, mult=5)
    errors = race(lambda: sfclayer.write(a, layer, mode="append", partitions=4, append_mode="delta"),
                  lambda: sfclayer.write(b, layer, mode="append", partitions=4, append_mode="delta"))
    assert errors == [None, None]
    assert helpers.versions(layer) == [1, 2, 3]
    docs = [helpers.metadata(layer, v) for v in (2, 3)]
    assert all(d["operation"]["delta"] for d in docs) and len(docs[1]["deltas"]) == 2
    v2 = {(r["col"], r["row"]): r["v"] for r in sfclayer.read(spark, layer, version=2).collect()}
    a_first = v2[(1, 1)] == 1 * 3 + 1  # which append took version 2 (b's box does not hold (1, 1))
    boxes = [(0, 0, 4, 3), (2, 2, 4, 5)]
    assert values(spark, layer) == model(*(boxes if a_first else boxes[::-1]))  # the later one wins where they meet


def test_overwrite_racing_an_append_exactly_one_wins(spark, layer, commit_delay):
    errors = race(lambda: sfclayer.write(tiles(spark, 4, mult=7), layer, mode="overwrite", bounds=(0, 0, 15, 15)),
                  lambda: sfclayer.write(tiles(spark, 4, 12, 12, mult=3), layer, mode="append"))
    assert sum(e is None for e in errors) == 1
    lost = [e for e in errors if e is not None][0]
    assert isinstance(lost, sfclayer.ConcurrentUpdate)
    if errors[0] is None:
        assert values(spark, layer) == {(c, r): c * 7 + r for c in range(4) for r in range(4)}
    else:
        assert values(spark, layer) == model((12, 12, 4, 3))


@pytest.fixture
def manifest_layer(spark, tmp_path):
    """The 16 x 16 layer in format 6: one file per aligned 4 x 4 block (16 files), one file a leaf manifest."""
    path = str(tmp_path / f"manifests-{uuid.uuid4().hex[:6]}")
    with helpers.manifest_capacities(spark):
        sfclayer.write(tiles(spark, 16), path, bounds=(0, 0, 15, 15), partitions=16)
        assert helpers.metadata(path)["formatVersion"] == 6
        yield path


@pytest.mark.parametrize("box, conflict", [((9, 9, 10, 10), False), ((2, 2, 5, 5), True)])
def test_a_shuffled_append_racing_a_delete_on_manifests(spark, manifest_layer, commit_delay, box, conflict):
    """Issue 20: commits that read only the manifests of their ranges still see each other: a shuffled
    append and a delete of a disjoint box both land (the second rebased on the first's tree); of a box
    meeting the append's, exactly one lands and the other fails with ConcurrentUpdate."""
    errors = race(lambda: sfclayer.write(tiles(spark, 4, mult=3), manifest_layer, mode="append", partitions=4,
                                         small_append_bytes=0),
                  lambda: sfclayer.delete(spark, manifest_layer, keys=box))
    appended = model((0, 0, 4, 3))
    deleted = {k: v for k, v in model().items() if not (box[0] <= k[0] <= box[2] and box[1] <= k[1] <= box[3])}
    if not conflict:
        assert errors == [None, None]
        hist = sfclayer.history(spark, manifest_layer)[1:]
        assert sorted((v.operation, v.read_version) for v in hist) == [("append", 1), ("delete", 1)]
        assert values(spark, manifest_layer) == {k: v for k, v in appended.items() if k in deleted}
        return
    lost = [e for e in errors if e is not None]
    assert len(lost) == 1 and isinstance(lost[0], sfclayer.ConcurrentUpdate), errors
    assert helpers.versions(manifest_layer) == [1, 2]
    assert values(spark, manifest_layer) == (appended if errors[0] is None else deleted)


def _mapfiles(path):
    out = []
    for root, dirs, _ in os.walk(path):
        out += [os.path.join(root, d) for d in dirs if d.startswith("part-")]
    return out


def test_two_processes_append_disjoint_boxes_and_a_failed_task_is_retried(spark, layer, tmp_path):
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    (barrier / "expect").write_text("a b")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(os.path.dirname(SCRIPT), "..", "..", "python"),
                                         env.get("PYTHONPATH", "")])
    env["SFCLAYER_JAR"] = sfclayer.jar_path()
    env["SFCLAYER_TEST_JAR"] = helpers.TEST_JAR
    # a: top-left quadrant, and the first attempt of its only busy task (partition 0) fails after writing
    procs = [subprocess.Popen([sys.executable, SCRIPT, layer, "0", "0", "8", "3", str(barrier), "a", "0"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True),
             subprocess.Popen([sys.executable, SCRIPT, layer, "8", "8", "8", "5", str(barrier), "b"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
        outs.append(json.loads(out.strip().splitlines()[-1]))
    assert outs == [{"ok": True, "failedTasks": 1}, {"ok": True, "failedTasks": 0}]  # a's task 0 was retried
    hist = sfclayer.history(spark, layer)
    assert [(v.operation, v.read_version) for v in hist] == [("write", None), ("append", 1), ("append", 1)]
    assert values(spark, layer) == model((0, 0, 8, 3), (8, 8, 8, 5))
    # exactly the committed attempts' files are published; the failed attempt's files are not, and
    # the write removed them after its commit
    md = helpers.metadata(layer)
    referenced = {f"{f['dir']}/{f['name']}" for f in md["files"]}
    on_disk = {os.path.relpath(p, layer) for p in _mapfiles(layer)}
    v1 = {f"{f['dir']}/{f['name']}" for f in helpers.metadata(layer, 1)["files"]}
    assert on_disk == referenced | v1
    assert all(os.path.isdir(os.path.join(layer, f)) for f in referenced)
