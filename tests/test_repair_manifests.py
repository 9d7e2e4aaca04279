"""Repair of a damaged or missing manifest (issue 35; FORMAT.md section 10): ``verify`` reports it,
``repair`` finds its data files again on disk (whole, matching the span and totals its reference
records) and commits the version again with its manifests rebuilt; when a file is damaged too, it
names the older version to restore instead of failing as verify did."""

import json
import os
import shutil

import pytest

import sfclayer
from sfclayer import CorruptLayer

from . import helpers
from .test_integrity import flip, records
from .test_repair_update import COLS, GRID, ROWS, pixels, tiles_df, values


@pytest.fixture(scope="module")
def two_versions(spark, tmp_path_factory):
    """Format 6, one data file a leaf: version 1 of 16 files, version 2 replacing the tiles of two of
    them (their old files stay on disk in the same spans: candidates a repair must tell apart)."""
    path = str(tmp_path_factory.mktemp("manifests") / "layer")
    keys = [(c, r) for c in range(COLS) for r in range(ROWS)]
    with helpers.manifest_capacities(spark):
        sfclayer.write(tiles_df(spark, keys), path, bounds=GRID.bounds, extent=GRID.extent, crs=GRID.crs,
                       raster=GRID.raster_metadata(1, "uint8", 0), partitions=16, compression="none")
        # copy-on-write: version 2 rewrites two files, their old ones staying on disk (what repair must tell apart)
        sfclayer.write(tiles_df(spark, [(0, 0), (7, 7)], seed=5), path, mode="append", append_mode="rewrite")
    model = {k: int(pixels(*k)[0, 1, 1]) for k in keys}
    model.update({k: int(pixels(*k, seed=5)[0, 1, 1]) for k in [(0, 0), (7, 7)]})
    assert helpers.metadata(path)["formatVersion"] == 6 and values(spark, path) == model
    return path, model


@pytest.fixture()
def layer(two_versions, tmp_path):
    path, model = two_versions
    copy = str(tmp_path / "layer")
    shutil.copytree(path, copy)
    return copy, model


def _leaves(path, version=None):
    """The leaf manifests a version's tree lists (file names), in index order."""
    out, d = [], os.path.join(path, "_sfclayer", "manifests")

    def walk(refs):
        for ref in refs:
            if ref["level"] == 0:
                out.append(ref["path"])
            else:
                with open(os.path.join(d, ref["path"])) as f:
                    walk(json.load(f)["manifests"])

    walk(helpers.metadata(path, version)["manifests"])
    return out


def _new_leaf(path):
    """A leaf version 2 wrote (version 1 does not list it)."""
    return next(m for m in _leaves(path, 2) if m not in _leaves(path, 1))


@pytest.mark.parametrize("damage", ["flipped byte", "deleted"])
def test_repair_rebuilds_a_damaged_or_missing_manifest_from_its_data_files(spark, layer, damage):
    path, model = layer
    leaf = os.path.join(path, "_sfclayer", "manifests", _new_leaf(path))
    if damage == "deleted":
        os.remove(leaf)
    else:
        flip(leaf, os.path.getsize(leaf) // 2)
    spark._jvm.io.sfclayer.format.Manifest.forgetCached()
    with pytest.raises(CorruptLayer, match="manifest .*" + os.path.basename(leaf)), helpers.sfclayer_errors():
        values(spark, path)
    report = sfclayer.verify(spark, path)
    assert not report.clean and report.manifests_damaged
    result = sfclayer.repair(spark, path)
    assert result.repaired and result.new_version == 3, [d["what"] for d in result.dropped]
    assert [d["what"] for d in result.dropped] == [
        f"manifest {os.path.basename(leaf)} was damaged or missing; rebuilt from the data files it listed"]
    assert values(spark, path) == model  # nothing lost: every file was whole
    assert sfclayer.verify(spark, path).clean
    h = sfclayer.history(spark, path)[-1]
    assert (h.operation, h.metrics["repairedVersion"], h.metrics["rebuiltManifests"]) == \
        ("repair", 2, [os.path.basename(leaf)])


def test_a_damaged_manifest_over_a_damaged_file_points_to_restore(spark, layer):
    path, model = layer
    leaf = os.path.join(path, "_sfclayer", "manifests", _new_leaf(path))
    with open(leaf) as f:
        (entry,) = json.load(f)["files"]
    data = os.path.join(path, entry["dir"], entry["name"], "data")
    bad = records(os.path.dirname(data))[0]
    flip(data, bad["value_start"] + len(bad["value"]) // 2)
    os.remove(leaf)
    spark._jvm.io.sfclayer.format.Manifest.forgetCached()
    with pytest.raises(CorruptLayer, match=r"cannot repair layer .*is missing.*damaged or unreadable data files in "
                                           r"that span: \[" + f"{entry['dir']}/{entry['name']}"
                                           + r".*sfclayer restore .* --version 1"):
        sfclayer.repair(spark, path)
    assert helpers.versions(path) == [1, 2]  # nothing written
    sfclayer.restore(spark, path, version=1)
    assert sfclayer.verify(spark, path).clean
    assert values(spark, path) == {k: int(pixels(*k)[0, 1, 1]) for k in model}
