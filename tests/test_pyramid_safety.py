"""Pyramids under concurrency and damage (issue 27): one run at a time (a lease), a document written
only if no other run changed it, checked by its checksum (older documents still read), levels read
only for the base version they were built from, and vacuum visiting the levels."""

import datetime as dt
import json
import os
import shutil

import pytest

import sfclayer
from sfclayer import ConcurrentUpdate, CorruptLayer, InvalidArgument
from sfclayer import pyramids as pyr

from . import helpers
from .test_integrity import _uncrc
from .test_repair_update import GRID, tiles_df



@pytest.fixture(scope="module")
def built(spark, tmp_path_factory):
    """A raster layer of 8 × 8 tiles (zoom 3) with its pyramid (levels 0..2)."""
    path = str(tmp_path_factory.mktemp("pyramid") / "layer")
    sfclayer.write(tiles_df(spark, [(c, r) for c in range(8) for r in range(8)]), path, bounds=GRID.bounds,
                   extent=GRID.extent, crs=GRID.crs, raster=GRID.raster_metadata(1, "uint8", 0), partitions=2)
    assert sfclayer.pyramid(spark, path) == [0, 1, 2]
    return path


@pytest.fixture()
def layer(built, tmp_path):
    copy = str(tmp_path / "layer")
    shutil.copytree(built, copy)
    return copy


def _newest(path):
    """The newest numbered pyramid document (FORMAT.md section 8)."""
    d = os.path.join(path, "_pyramid")
    return os.path.join(d, sorted(f for f in os.listdir(d) if f.startswith("pyramid-") and f.endswith(".json"))[-1])


def _doc(path):
    with open(_newest(path)) as f:
        return json.load(f)


def _write_doc(path, doc, where=None):
    where = where or _newest(path)
    if os.path.exists(where):
        _uncrc(where)  # Hadoop's local checksum sidecar would name the change first
    with open(where, "w") as f:
        json.dump(doc, f)


def test_the_document_has_a_checksum_and_the_level_versions(layer):
    doc = _doc(layer)
    assert doc["formatVersion"] == 4 and doc["baseVersion"] == 1
    assert doc["levelVersions"] == {"0": 1, "1": 1, "2": 1}
    assert doc["sha256"] == pyr._checksum(doc)
    assert not [f for f in os.listdir(os.path.join(layer, "_pyramid")) if f.endswith(".tmp") or f.startswith(".lease")]


def test_a_damaged_document_is_named_and_an_older_one_still_reads(spark, layer):
    doc = _doc(layer)
    with open(_newest(layer), "r+") as f:  # published by a hard link: no Hadoop checksum sidecar, its own checks
        f.write(" ")
    with pytest.raises(CorruptLayer, match=r"pyramid-00000001\.json is damaged \(not JSON"):
        sfclayer.pyramid_levels(spark, layer)
    _write_doc(layer, dict(doc, levels=[1, 2]))  # valid JSON, wrong content
    with pytest.raises(CorruptLayer, match=r"pyramid-00000001\.json.*sha256"):
        sfclayer.pyramid_levels(spark, layer)
    # A layer of an earlier sfclayer: the single pyramid.json of format 2 (no checksum to check)
    _uncrc(_newest(layer))
    os.remove(_newest(layer))
    old = {k: v for k, v in doc.items() if k not in ("sha256", "levelVersions")}
    _write_doc(layer, dict(old, formatVersion=2), os.path.join(layer, "_pyramid", "pyramid.json"))
    assert sfclayer.pyramid_levels(spark, layer) == [0, 1, 2, 3]
    assert sfclayer.read(spark, layer, zoom=1).count() == 4


def test_a_second_run_is_refused_while_one_holds_the_lease(spark, layer):
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    lease = os.path.join(layer, "_pyramid", ".lease")
    token = jvm.io.sfclayer.layer.Lease.take(conf, lease, "a test run")
    try:
        with pytest.raises(ConcurrentUpdate, match=r"\.lease.*a test run"):
            sfclayer.pyramid(spark, layer, full=True)
    finally:
        assert jvm.io.sfclayer.layer.Lease.release(conf, lease, token)
    assert not os.path.exists(lease)
    assert _doc(layer)["levelVersions"] == {"0": 1, "1": 1, "2": 1}  # the refused run changed nothing


def test_the_document_is_not_written_over_another_runs(spark, layer, monkeypatch):
    """A run whose document changed under it (another run, e.g. one started past a removed stale
    lease) fails instead of claiming its base version for levels the other run also wrote."""
    children = pyr._children
    published = []

    def other_run_writes_meanwhile(*args):
        doc = _doc(layer)
        doc = dict(doc, createdAt="2000-01-01T00:00:00+00:00")
        doc["sha256"] = pyr._checksum(doc)
        if not published:  # the other run published document 2
            _write_doc(layer, doc, os.path.join(layer, "_pyramid", "pyramid-00000002.json"))
            published.append(2)
        return children(*args)

    monkeypatch.setattr(pyr, "_children", other_run_writes_meanwhile)
    with pytest.raises(ConcurrentUpdate, match="document changed while this run built the levels"):
        sfclayer.pyramid(spark, layer, full=True)
    assert not os.path.exists(os.path.join(layer, "_pyramid", ".lease"))  # released on failure too


def test_a_level_is_read_only_for_the_base_version_it_was_built_from(spark, layer):
    sfclayer.write(tiles_df(spark, [(0, 0)], seed=4), layer, mode="append")  # base version 2
    sfclayer.pyramid(spark, layer)  # levels updated from base version 2
    assert _doc(layer)["baseVersion"] == 2
    assert sfclayer.read(spark, layer, zoom=2, version=2).count() == 16
    with pytest.raises(InvalidArgument, match="version: 1 .*built from \\(2\\)"):
        sfclayer.read(spark, layer, zoom=2, version=1)
    with pytest.raises(InvalidArgument, match="version: 1 "):
        sfclayer.open(spark, layer, zoom=1, version=1)
    with pytest.raises(InvalidArgument, match="as_of"):
        sfclayer.read(spark, layer, zoom=2, as_of=dt.datetime.now(dt.timezone.utc))
    assert sfclayer.read(spark, layer, zoom=3, version=1).count() == 64  # the base zoom: the base's versions
    # the level version the document names, not a newer one a run in progress may have committed
    level = os.path.join(layer, "_pyramid", "2")
    pinned = _doc(layer)["levelVersions"]["2"]
    assert pinned == helpers.versions(level)[-1]
    with sfclayer.open(spark, layer, zoom=2) as lv:
        assert lv.metadata["version"] == pinned


def test_vacuum_visits_the_pyramid_levels(spark, layer):
    sfclayer.pyramid(spark, layer, full=True)  # every level rewritten: version 2, version 1's files unreferenced
    level = os.path.join(layer, "_pyramid", "1")
    old_files = {f"{f['dir']}/{f['name']}" for f in helpers.metadata(level, 1)["files"]}
    report = sfclayer.vacuum(spark, layer, retain=dt.timedelta(0), enforce_retention=False)
    assert sorted(report["pyramidLevels"]) == ["0", "1", "2"]
    assert report["pyramidLevels"]["1"]["versionsRemoved"] == [1]
    assert set(report["pyramidLevels"]["1"]["filesRemoved"]) == old_files
    assert helpers.versions(level) == [2]
    assert not any(os.path.exists(os.path.join(level, f)) for f in old_files)
    assert sfclayer.read(spark, layer, zoom=1).count() == 4
