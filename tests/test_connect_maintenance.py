"""Maintenance, integrity, pyramid metadata and serving on a Spark Connect session (issue 21): through
sfclayer's relation plugin on the Connect server, no py4j, with the classic session's answers."""

import datetime as dt
import os
import shutil

import numpy as np
import pytest

import sfclayer
from sfclayer import server as srv

from . import helpers
from . import serving as sv
from .raster_sources import world_tif  # noqa: F401 - fixture
from .test_connect import grid, rows
from .test_integrity import flip, records


def _two_layers(spark, tmp_path):
    """The same three versions (a write, a replacing append, a compact) at two paths: old files to vacuum."""
    paths = [str(tmp_path / "a"), str(tmp_path / "b")]
    for path in paths:
        sfclayer.write(grid(spark, 8), path, bounds=(0, 0, 7, 7), partitions=2)
        sfclayer.write(grid(spark, 4, mult=3), path, mode="append", on_existing="replace", partitions=2)
        sfclayer.compact(spark, path)
    return paths


def test_vacuum_on_connect_is_classics(spark, connect, tmp_path):
    by_classic, by_connect = _two_layers(spark, tmp_path)
    with pytest.raises(sfclayer.InvalidArgument, match=r"^vacuum retain: .* under the 7-day minimum"):
        sfclayer.vacuum(connect, by_connect, retain=dt.timedelta(hours=1))
    zero = dt.timedelta(0)
    a = sfclayer.vacuum(spark, by_classic, retain=zero, dry_run=True, enforce_retention=False)
    b = sfclayer.vacuum(connect, by_connect, retain=zero, dry_run=True, enforce_retention=False)
    assert set(a) == set(b) >= {"versionsRemoved", "filesRemoved", "otherRemoved", "bytesFreed", "dryRun",
                                "pyramidLevels"}
    assert (b["dryRun"], b["versionsRemoved"], b["pyramidLevels"]) == (True, [1, 2], {})
    assert (len(a["filesRemoved"]), a["versionsRemoved"]) == (len(b["filesRemoved"]), b["versionsRemoved"])
    assert helpers.versions(by_connect) == [1, 2, 3]  # a dry run removes nothing
    done = sfclayer.vacuum(connect, by_connect, retain=zero, enforce_retention=False)
    assert not done["dryRun"] and done["filesRemoved"] == b["filesRemoved"] and done["bytesFreed"] > 0
    assert helpers.versions(by_connect) == [3]
    assert rows(sfclayer.read(connect, by_connect)) == rows(sfclayer.read(spark, by_classic))
    with pytest.raises(sfclayer.LayerNotFound):
        sfclayer.vacuum(connect, str(tmp_path / "missing"))


def test_restore_on_connect_is_classics(spark, connect, tmp_path):
    by_classic, by_connect = _two_layers(spark, tmp_path)
    a, b = sfclayer.restore(spark, by_classic, version=1), sfclayer.restore(connect, by_connect, version=1)
    assert (b.version, b.operation, b.metrics) == (a.version, a.operation, a.metrics) == (4, "restore",
                                                                                          {"restoredVersion": 1})
    assert rows(sfclayer.read(connect, by_connect)) == rows(sfclayer.read(spark, by_connect, version=1))
    with pytest.raises(sfclayer.LayerNotFound, match="cannot restore version 9 "):
        sfclayer.restore(connect, by_connect, version=9)


def _damage(path):
    """A value byte of a record in the middle of the first data file, flipped."""
    mapfile = helpers.data_files(path)[0]
    r = records(mapfile)[len(records(mapfile)) // 2]
    flip(os.path.join(mapfile, "data"), r["value_start"] + len(r["value"]) // 2)


def test_verify_and_repair_on_connect_are_classics(spark, connect, tmp_path):
    source = str(tmp_path / "source")
    sfclayer.write(grid(spark, 32), source, bounds=(0, 0, 31, 31), partitions=2)
    assert sfclayer.verify(connect, source).clean and sfclayer.verify(connect, source, version=1).clean
    by_classic, by_connect = str(tmp_path / "classic"), str(tmp_path / "connect")
    for path in (by_classic, by_connect):
        shutil.copytree(source, path)
        _damage(path)
    a, b = sfclayer.verify(spark, by_classic), sfclayer.verify(connect, by_connect)
    assert not b.clean and str(a).replace(by_classic, "P") == str(b).replace(by_connect, "P")
    keys = [(c, r) for c in range(32) for r in range(32)]
    with sfclayer.open(spark, by_classic) as la, sfclayer.open(connect, by_connect) as lb:
        got_a, got_b = la.get_many(keys, errors_as_values=True), lb.get_many(keys, errors_as_values=True)
        assert [type(t) for t in got_b] == [type(t) for t in got_a]
        assert any(isinstance(t, sfclayer.CorruptLayer) for t in got_b)
        with pytest.raises(sfclayer.CorruptLayer, match="damaged"):
            lb.get_many(keys)
    ra, rb = sfclayer.repair(spark, by_classic), sfclayer.repair(connect, by_connect)
    assert rb.repaired and (rb.damaged_version, rb.new_version) == (ra.damaged_version, ra.new_version) == (1, 2)
    assert rb.dropped and [dict(d, what=d["what"].replace(by_connect, "P")) for d in rb.dropped] == [
        dict(d, what=d["what"].replace(by_classic, "P")) for d in ra.dropped]
    assert sfclayer.verify(connect, by_connect).clean
    assert rows(sfclayer.read(connect, by_connect)) == rows(sfclayer.read(spark, by_classic))
    assert len(rows(sfclayer.read(connect, by_connect))) < 32 * 32
    with pytest.raises(sfclayer.LayerNotFound):
        sfclayer.verify(connect, str(tmp_path / "missing"))


@pytest.fixture(scope="module")
def world(spark, world_tif, tmp_path_factory):  # noqa: F811 - the fixture above
    path = str(tmp_path_factory.mktemp("connect-pyramid") / "world")
    sfclayer.ingest(spark, world_tif, path, tms="WorldCRS84Quad", zoom=2)  # the classic build, which the Connect one is compared with
    sfclayer.pyramid(spark, path)
    return path


def test_pyramid_metadata_and_zoom_reads_on_connect(spark, connect, world):
    assert sfclayer.pyramid_levels(connect, world) == sfclayer.pyramid_levels(spark, world) == [0, 1, 2]
    with sfclayer.open(connect, world, zoom=1) as a, sfclayer.open(spark, world, zoom=1) as b:
        assert a.version == b.version and a.metadata == b.metadata
        assert sorted(t["col"] for t in a.query()) == sorted(t["col"] for t in b.query())
        got, want = a.get(1, 0), b.get(1, 0)
        assert got.keys() == want.keys() and all(np.array_equal(got[k], want[k]) for k in got)
    assert sfclayer.read(connect, world, zoom=0).count() == sfclayer.read(spark, world, zoom=0).count()
    with pytest.raises(sfclayer.InvalidArgument, match="not a raster layer"):
        plain = os.path.join(os.path.dirname(world), "plain")
        sfclayer.write(grid(connect, 2), plain, bounds=(0, 0, 1, 1))
        sfclayer.pyramid_levels(connect, plain)


def _level_tiles(spark, path, z):
    return sorted((t["col"], t["row"], bytes(t["pixels"]), bytes(t["mask"] or b""))
                  for t in sfclayer.read(spark, path, zoom=z).collect())


def test_pyramid_builds_on_connect_as_on_classic(spark, connect, world, tmp_path):
    base = str(tmp_path / "world")
    shutil.copytree(world, base, ignore=shutil.ignore_patterns("_pyramid"))
    assert sfclayer.pyramid(connect, base) == [0, 1]
    assert sfclayer.pyramid_levels(connect, base) == sfclayer.pyramid_levels(spark, world)
    for z in (0, 1):  # the same tiles, pixels and masks per level as the classic build's
        assert _level_tiles(connect, base, z) == _level_tiles(spark, world, z)
    assert sfclayer.pyramid(connect, base) == []  # up to date: the document was written, the lease released
    assert not os.path.exists(os.path.join(base, "_pyramid", ".lease"))
    # an incremental update on Connect (a parent vanishes at zoom 1) equals a classic full build of the same base
    sfclayer.delete(connect, base, keys=(0, 0, 1, 1))
    assert sfclayer.pyramid(connect, base) == [0, 1]
    again = str(tmp_path / "again")
    shutil.copytree(base, again, ignore=shutil.ignore_patterns("_pyramid"))
    assert sfclayer.pyramid(spark, again) == [0, 1]
    for z in (0, 1):
        assert _level_tiles(connect, base, z) == _level_tiles(spark, again, z)


def test_serve_on_connect_answers_as_on_classic(spark, connect, tmp_path):
    layers = sv.write_layers(spark, str(tmp_path))
    answers = []
    for session in (spark, connect):
        server = srv.serve(session, [f"{n}={p}" for n, p in layers.items()], port=0, background=True,
                           log=lambda line: None)
        client = sv.Client(server.url)
        try:
            code, _, png = client.get("/layers/rgb/tiles/0/2/1.png")
            answers.append((code, png, client.json("/layers/rgb/values/4/2"),
                            client.get(f"/layers/rgb/values/{sv.MISSING[0]}/{sv.MISSING[1]}")[0]))
        finally:
            client.close()
            server.stop()
    assert answers[0] == answers[1] and answers[1][0] == 200 and answers[1][3] == 404
