"""Restore (issue 35): a new version whose content is an older version's (Delta's RESTORE), through
Python, the CLI, SQL (``CALL sfclayer.system.restore``) and Spark Connect, checked against a dict model
of each version; refused, naming what is gone, when the version was vacuumed."""

import datetime as dt
import os
import shutil

import pytest

import sfclayer
from sfclayer import ConcurrentUpdate, InvalidArgument, LayerNotFound, cli
from tests import helpers
from tests.test_procedures import call
from tests.test_updates import tiles, values


@pytest.fixture(scope="module")
def three_versions(spark, tmp_path_factory):
    """Version 1: 8 × 8 tiles; 2: an append replacing and adding tiles; 3: a delete. And the model."""
    path = str(tmp_path_factory.mktemp("restore") / "layer")
    sfclayer.write(tiles(spark, 8, 8), path, bounds=(0, 0, 15, 15), block_size="64k", partitions=2)
    model = {1: values(spark, path)}
    sfclayer.write(tiles(spark, 4, 4, col0=6, row0=6, mult=7), path, mode="append", partitions=2)
    model[2] = {**model[1], **{(c, r): c * 7 + r for c in range(6, 10) for r in range(6, 10)}}
    sfclayer.delete(spark, path, keys=(0, 0, 2, 2))
    model[3] = {k: v for k, v in model[2].items() if not (k[0] <= 2 and k[1] <= 2)}
    for v, want in model.items():
        assert values(spark, path, version=v) == want
    return path, model


@pytest.fixture()
def layer(three_versions, tmp_path):
    path, model = three_versions
    copy = str(tmp_path / "layer")
    shutil.copytree(path, copy)
    return copy, dict(model)


def test_restore_by_version_and_by_time_is_the_older_versions_content(spark, layer):
    path, model = layer
    done = sfclayer.restore(spark, path, version=1)
    assert (done.version, done.operation, done.read_version) == (4, "restore", 3)
    assert done.metrics == {"restoredVersion": 1}
    assert values(spark, path) == model[1] and values(spark, path, version=4) == model[1]
    assert sfclayer.history(spark, path)[-1].operation == "restore"
    assert sfclayer.verify(spark, path).clean
    # as_of a time between versions 2 and 3: version 2's content
    h = {v.version: v.created_at for v in sfclayer.history(spark, path)}
    between = h[2] + (h[3] - h[2]) / 2
    assert sfclayer.restore(spark, path, as_of=between).metrics == {"restoredVersion": 2}
    assert values(spark, path) == model[2]
    # the layer goes on: an append on top of the restored content
    sfclayer.write(tiles(spark, 1, 1, col0=15, row0=15, mult=1), path, mode="append")
    assert values(spark, path) == {**model[2], (15, 15): 15 * 1 + 15}
    # the newest version asked for: nothing new
    newest = sfclayer.history(spark, path)[-1].version
    assert sfclayer.restore(spark, path, version=newest).version == newest
    assert sfclayer.history(spark, path)[-1].version == newest


def test_restore_refuses_what_is_gone_and_bad_arguments(spark, layer):
    path, model = layer
    with pytest.raises(InvalidArgument, match="exactly one of version and as_of"):
        sfclayer.restore(spark, path)
    with pytest.raises(InvalidArgument, match="exactly one of version and as_of"):
        sfclayer.restore(spark, path, version=1, as_of="2026-01-01T00:00:00Z")
    with pytest.raises(LayerNotFound, match=r"cannot restore version 9 .*no such version; the versions it has are "
                                            r"\[1, 2, 3\]"):
        sfclayer.restore(spark, path, version=9)
    with pytest.raises(LayerNotFound, match="no version committed at or before 2000"):
        sfclayer.restore(spark, path, as_of="2000-01-01T00:00:00Z")
    # A data file of version 1 deleted by hand: refused, naming it, and nothing committed.
    gone = helpers.data_files(path, 1)[0]
    shutil.rmtree(gone)
    with pytest.raises(LayerNotFound, match=r"cannot restore version 1 of layer .*data files are gone .*e\.g\. "
                                            + os.path.relpath(gone, path)):
        sfclayer.restore(spark, path, version=1)
    assert helpers.versions(path) == [1, 2, 3]
    # Vacuumed: the version documents before the newest are gone.
    sfclayer.vacuum(spark, path, retain=dt.timedelta(0), enforce_retention=False)
    with pytest.raises(LayerNotFound, match=r"cannot restore version 2 of layer .*removed by vacuum.*\[3\]"):
        sfclayer.restore(spark, path, version=2)
    assert values(spark, path) == model[3]


def test_a_restore_conflicts_with_a_write_committed_after_it_read_the_log(spark, layer):
    path, model = layer
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    # Version 4 committed by another writer between the restore's look at the log and its commit: the
    # restore's readVersion is 3, so it must fail rather than revert version 4 unseen.
    log = jvm.io.sfclayer.commit.VersionLog(conf, jvm.org.apache.hadoop.fs.Path(path))
    md = log.read(1).copy()
    sfclayer.write(tiles(spark, 1, 1, col0=14, row0=14), path, mode="append")
    from py4j.java_gateway import set_field

    set_field(md, "operation", "restore")
    set_field(md, "readVersion", 3)
    set_field(md, "writeId", jvm.io.sfclayer.commit.VersionLog.newWriteId())
    with pytest.raises(ConcurrentUpdate, match="version 4"), helpers.sfclayer_errors():
        log.commit(md, jvm.java.util.ArrayList())
    assert helpers.versions(path) == [1, 2, 3, 4]


def test_restore_from_the_cli_and_sql(spark, layer, capsys, tmp_path):
    path, model = layer
    assert cli.main(["restore", path, "--version", "1"]) == 0
    assert capsys.readouterr().out == f"version 4: restores version 1 ({len(model[1])} records in " \
        f"{sfclayer.history(spark, path)[-1].files} data files)\n"
    assert values(spark, path) == model[1]
    assert cli.main(["restore", path, "--version", "9"]) == 1
    assert "sfclayer: error: cannot restore version 9" in capsys.readouterr().err
    (row,) = call(spark, f"CALL sfclayer.system.restore(path => '{path}', version => 2)")
    assert (row.version, row.operation, row.read_version, row.metrics) == (5, "restore", 4, {"restoredVersion": 2})
    assert values(spark, path) == model[2]
    h = {v.version: v.created_at for v in sfclayer.history(spark, path)}
    between = (h[3] + (h[4] - h[3]) / 2).isoformat()
    (row,) = call(spark, f"CALL sfclayer.system.restore(path => '{path}', as_of => '{between}')")
    assert row.metrics == {"restoredVersion": 3} and values(spark, path) == model[3]
    with pytest.raises(InvalidArgument, match="exactly one of"):
        call(spark, f"CALL sfclayer.system.restore(path => '{path}')")
    assert cli.main(["restore", path, "--as-of", between]) == 0
    assert capsys.readouterr().out.startswith("version 7: restores version 3 ")
