"""Repairs and updates over damaged data files (issue 27): an update never launders damage (it opens
the files it rewrites with their version entry and fails with CorruptLayer naming a damaged one),
and a repair is an update based on the version it verified (only the damaged files rewritten, every
other field and file kept, versions committed since kept)."""

import os
import shutil

import numpy as np
import pytest

import sfclayer
from sfclayer import CorruptLayer, raster
from sfclayer.ingestion import Grid

from . import helpers
from .test_integrity import flip, records, tiles_of, truncate

COLS, ROWS, TILE = 8, 8, 16
GRID = Grid("EPSG:4326", (0.0, 0.0, 8.0, 8.0), COLS, ROWS, TILE, TILE, None, 3)


def pixels(c, r, seed=0):
    a = np.full((1, TILE, TILE), 1 + (c * 31 + r * 7 + seed) % 250, np.uint8)
    a[0, 0, 0] = 0  # a nodata pixel in each tile
    return a


def tiles_df(spark, keys, seed=0):
    rows = []
    for c, r in keys:
        v = raster.from_numpy(pixels(c, r, seed), 0)
        rows.append((c, r, *(v[k] for k in raster.COLUMNS)))
    return spark.createDataFrame(rows, raster.spark_schema())


def values(spark, path):
    rows = sfclayer.read(spark, path).select("col", "row", *raster.COLUMNS).collect()
    return {(x["col"], x["row"]): int(raster.to_numpy(x)[0, 1, 1]) for x in rows}


@pytest.fixture(scope="module")
def source(spark, tmp_path_factory):
    """A raster layer (a grid of its own, zoom 3) of 64 tiles in two data files of many records."""
    path = str(tmp_path_factory.mktemp("repair") / "layer")
    keys = [(c, r) for c in range(COLS) for r in range(ROWS)]
    sfclayer.write(tiles_df(spark, keys), path, bounds=GRID.bounds, extent=GRID.extent, crs=GRID.crs,
                   raster=GRID.raster_metadata(1, "uint8", 0), partitions=2, index_interval=4,
                   compression="none")  # groups as stored: the test reads their tiles itself
    assert len(helpers.data_files(path)) == 2
    return path, {k: int(pixels(*k)[0, 1, 1]) for k in keys}


@pytest.fixture()
def layer(source, tmp_path):
    path, model = source
    copy = str(tmp_path / "layer")
    shutil.copytree(path, copy)
    return copy, dict(model)


def _keys_of_file(md, mapfile):
    keys = set()
    for rec in records(mapfile):
        keys |= tiles_of(md, rec)
    return keys


def test_an_append_over_a_file_truncated_at_a_record_boundary_fails_naming_it(spark, layer):
    path, _ = layer
    md = helpers.metadata(path)
    mapfile = helpers.data_files(path)[1]
    recs = records(mapfile)
    cut = recs[len(recs) // 2]
    truncate(os.path.join(mapfile, "data"), cut["offset"])  # whole records gone, the rest intact
    lost = set()
    for rec in recs[len(recs) // 2:]:
        lost |= tiles_of(md, rec)
    key = sorted(lost)[0]
    # copy-on-write (a delta append reads no base file: the damage stays where a read or verify finds it)
    with pytest.raises(CorruptLayer, match=os.path.basename(mapfile) + ".*truncated"):
        sfclayer.write(tiles_df(spark, [key], seed=5), path, mode="append", append_mode="rewrite")
    assert helpers.versions(path) == [1]  # nothing published: the lost tiles are not laundered away


def test_an_append_over_a_file_whose_header_version_flipped_fails_naming_it(spark, layer):
    path, _ = layer
    md = helpers.metadata(path)
    mapfile = helpers.data_files(path)[0]
    data = os.path.join(mapfile, "data")
    with open(data, "rb") as f:
        buf = f.read()
    at = buf.index(b"sfclayer.formatVersion") + len(b"sfclayer.formatVersion") + 1  # Text: vint length, bytes
    assert buf[at:at + 1] == b"3"
    flip(data, at, mask=0x01)  # "3" -> "2": a checked file would be read unchecked
    key = sorted(_keys_of_file(md, mapfile))[0]
    with pytest.raises(CorruptLayer, match=os.path.basename(mapfile) + ".*format version 2"):
        sfclayer.write(tiles_df(spark, [key], seed=5), path, mode="append", append_mode="rewrite")
    assert helpers.versions(path) == [1]


def test_repair_is_an_update_of_the_verified_version(spark, layer):
    path, model = layer
    md = helpers.metadata(path)
    damaged, kept = helpers.data_files(path)[1], helpers.data_files(path)[0]
    recs = records(damaged)
    bad = recs[len(recs) // 2]
    flip(os.path.join(damaged, "data"), bad["value_start"] + len(bad["value"]) // 2)
    lost = tiles_of(md, bad)
    report = sfclayer.verify(spark, path)
    assert not report.clean and [f.name for f in report.damaged_files] == [os.path.basename(damaged)]

    # a commit between the verify and the repair: an append into the other file
    key = sorted(_keys_of_file(md, kept))[0]
    sfclayer.write(tiles_df(spark, [key], seed=9), path, mode="append")
    model[key] = int(pixels(*key, seed=9)[0, 1, 1])

    result = sfclayer.repair(spark, path, report=report)
    assert result.repaired and result.damaged_version == 1 and result.new_version == 3
    new = helpers.metadata(path)
    assert new["operation"]["name"] == "repair" and new["operation"]["readVersion"] == 1
    assert new["raster"] == md["raster"] and new["extent"] == md["extent"]  # every field kept
    assert new["operation"]["metrics"]["dropped"]["repairedVersion"] == 1
    # only the damaged file was rewritten; the append's file is kept where it is
    v2 = {f"{f['dir']}/{f['name']}" for f in helpers.metadata(path, 2)["files"]}
    v3 = {f"{f['dir']}/{f['name']}" for f in new["files"]}
    assert len(v2 - v3) == 1 and (v2 - v3).pop().endswith(os.path.basename(damaged))
    assert values(spark, path) == {k: v for k, v in model.items() if k not in lost}
    assert sfclayer.verify(spark, path).clean
    assert sfclayer.pyramid_levels(spark, path) == [3]  # still a raster layer



def test_repair_of_a_layer_of_manifests_reads_the_damaged_files_paths(spark, tmp_path):
    """Issue 20: repairing a format 6 layer (one data file a leaf manifest) reads the manifests on the
    paths to the files the verify named, not every manifest; the result is the layer without the
    damaged record's tiles."""
    path = str(tmp_path / "manifests")
    keys = [(c, r) for c in range(COLS) for r in range(ROWS)]
    with helpers.manifest_capacities(spark):
        sfclayer.write(tiles_df(spark, keys), path, bounds=GRID.bounds, extent=GRID.extent, crs=GRID.crs,
                       raster=GRID.raster_metadata(1, "uint8", 0), partitions=16, index_interval=4,
                       compression="none")
        md = helpers.metadata(path)
        files = helpers.data_files(path)
        assert md["formatVersion"] == 6 and len(files) == 16
        damaged = files[5]
        bad = records(damaged)[0]
        flip(os.path.join(damaged, "data"), bad["value_start"] + len(bad["value"]) // 2)
        report = sfclayer.verify(spark, path)
        assert [f.name for f in report.damaged_files] == [os.path.basename(damaged)]
        manifest = spark._jvm.io.sfclayer.format.Manifest
        manifest.forgetCached()
        before = manifest.readsTotal()
        result = sfclayer.repair(spark, path, report=report)
        reads = manifest.readsTotal() - before
    manifests = len(os.listdir(os.path.join(path, "_sfclayer", "manifests")))
    depth = md["manifests"][0]["level"] + 1
    assert result.repaired and result.new_version == 2
    assert 0 < reads <= 2 * depth < manifests, (reads, depth, manifests)
    model = {k: int(pixels(*k)[0, 1, 1]) for k in keys}
    lost = tiles_of(md, bad)
    assert lost and values(spark, path) == {k: v for k, v in model.items() if k not in lost}
    assert sfclayer.verify(spark, path).clean
