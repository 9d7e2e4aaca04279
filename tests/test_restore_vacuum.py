"""Restore against vacuum (issue 35, found by the race model: RacesTest seed 12344 on a loaded machine): a restore
lists an older version's data files, which no pending marker protects. A vacuum that dropped that version and
collected its files before the restore published, then deleted them after the restore had checked them, left a
committed version whose files were gone (every read of the newest version: CorruptLayer, "the listed data file is
missing"). Each now announces itself in ``_sfclayer/`` first (FORMAT.md section 6, "Vacuum and restores"): a
restore is refused with ConcurrentUpdate while a vacuum's marker is there, and a vacuum keeps the versions that
restores in progress name. Both sides are checked here with the other side's marker put in place by hand."""

import os

import pytest

import sfclayer
from sfclayer.errors import ConcurrentUpdate, LayerNotFound


def _layer(spark, path):
    """Version 1: 16 tiles in one file; version 2: a copy-on-write append rewrote that file."""
    df = spark.range(16).selectExpr("int(id % 4) AS col", "int(id DIV 4) AS row", "id AS v")
    sfclayer.write(df, path, bounds=(0, 0, 3, 3), partitions=1)
    sfclayer.write(spark.range(1).selectExpr("0 AS col", "0 AS row", "99L AS v"), path, mode="append",
                   appendMode="rewrite")
    return {(c, r): 4 * r + c for c in range(4) for r in range(4)}


def _tiles(spark, path, version):
    return {(x["col"], x["row"]): x["v"] for x in sfclayer.read(spark, path, version=version).collect()}


def test_a_restore_is_refused_while_a_vacuum_runs(spark, tmp_path):
    path = str(tmp_path / "layer")
    v1 = _layer(spark, path)
    marker = os.path.join(path, "_sfclayer", "_vacuum-00000000-0000-0000-0000-000000000000")
    open(marker, "w").close()  # a vacuum running (it may delete version 1's files at any moment)
    with pytest.raises(ConcurrentUpdate, match="while a vacuum runs"):
        sfclayer.restore(spark, path, version=1)
    assert [v.version for v in sfclayer.history(spark, path)] == [1, 2]
    assert not [f for f in os.listdir(os.path.join(path, "_sfclayer")) if f.startswith("_restore-")]
    os.remove(marker)
    assert sfclayer.restore(spark, path, version=1).version == 3
    assert _tiles(spark, path, 3) == v1


def test_a_vacuum_keeps_the_version_a_restore_in_progress_restores(spark, tmp_path):
    path = str(tmp_path / "layer")
    v1 = _layer(spark, path)
    marker = os.path.join(path, "_sfclayer", "_restore-00000000-0000-0000-0000-000000000000-1")
    open(marker, "w").close()  # a restore of version 1 that checked its files and is about to commit
    sfclayer.vacuum(spark, path, retain=0, enforce_retention=False, quiet=True)
    assert [v.version for v in sfclayer.history(spark, path)] == [1, 2]
    assert _tiles(spark, path, 1) == v1
    assert not [f for f in os.listdir(os.path.join(path, "_sfclayer")) if f.startswith("_vacuum-")]
    os.remove(marker)  # the restore is done: the next vacuum removes version 1
    sfclayer.vacuum(spark, path, retain=0, enforce_retention=False, quiet=True)
    assert [v.version for v in sfclayer.history(spark, path)] == [2]


def test_a_version_vacuumed_between_two_a_restore_kept_is_reported_as_vacuumed(spark, tmp_path):
    """A kept version leaves a hole below the newest: a version in it was removed by vacuum, not "no such
    version" (the race model found the wrong message once restores' markers kept old versions)."""
    path = str(tmp_path / "layer")
    _layer(spark, path)
    sfclayer.write(spark.range(1).selectExpr("1 AS col", "1 AS row", "7L AS v"), path, mode="append",
                   appendMode="rewrite")
    marker = os.path.join(path, "_sfclayer", "_restore-00000000-0000-0000-0000-000000000000-1")
    open(marker, "w").close()
    sfclayer.vacuum(spark, path, retain=0, enforce_retention=False, quiet=True)
    os.remove(marker)
    assert [v.version for v in sfclayer.history(spark, path)] == [1, 3]
    with pytest.raises(LayerNotFound, match=r"cannot restore version 2 .*removed by vacuum"):
        sfclayer.restore(spark, path, version=2)
    with pytest.raises(LayerNotFound, match=r"cannot restore version 4 .*no such version"):
        sfclayer.restore(spark, path, version=4)
