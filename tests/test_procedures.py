"""SQL procedures (``CALL sfclayer.system.compact/vacuum/history``) against the Python API they mirror.

The session fixture's SparkSession comes from ``sfclayer.session``, which registers the catalog
``sfclayer`` (``sfclayer.CATALOG``); one test registers a second name at run time.
"""

import datetime as dt
import os
import shutil

import pytest

import sfclayer
from sfclayer import _jvm
from tests import helpers
from tests.test_updates import tiles, values


def call(spark, sql):
    """A CALL's rows, with Java-side sfclayer errors raised as sfclayer's Python classes."""
    with _jvm.translated():
        return spark.sql(sql).collect()


def with_small_files(spark, path):
    """A layer whose last four versions (small appends) left runs of small files to compact."""
    sfclayer.write(tiles(spark, 16, 16), path, bounds=(0, 0, 15, 15), block_size="64k", partitions=4)
    for i in range(4):
        sfclayer.write(tiles(spark, 2, 2, col0=4 * i, row0=4 * i, mult=3), path, mode="append", partitions=4)


def file_shapes(md):
    """A version document's files without the data directories (fresh per write): what a compact made."""
    return [(f["name"], f.get("records"), f.get("dataBytes")) for f in md["files"]]


def test_compact_via_call_does_what_sfclayer_compact_does(spark, tmp_path):
    by_python, by_sql = str(tmp_path / "py"), str(tmp_path / "sql")
    with_small_files(spark, by_python)
    shutil.copytree(by_python, by_sql)  # the same layer twice
    v = sfclayer.compact(spark, by_python)
    (row,) = call(spark, f"CALL sfclayer.system.compact(path => '{by_sql}')")
    assert v.operation == row.operation == "compact"
    assert (row.version, row.read_version, row.records, row.files, row.data_bytes) == (
        v.version, v.read_version, v.records, v.files, v.data_bytes)
    assert row.metrics == v.metrics and row.metrics["filesRemoved"] > row.metrics["filesAdded"] >= 1
    # the same version document effects: the same files (names, records, bytes) over the same kept ones
    py_md, sql_md = helpers.metadata(by_python), helpers.metadata(by_sql)
    assert file_shapes(sql_md) == file_shapes(py_md)
    assert sql_md["operation"]["name"] == "compact" and sql_md["version"] == py_md["version"]
    assert values(spark, by_sql) == values(spark, by_python)
    # the answer is the newest version as history reports it; a second compact has nothing to do
    newest = sfclayer.history(spark, by_sql)[-1]
    assert (row.version, row.created_at.replace(tzinfo=None)) == (
        newest.version, newest.created_at.astimezone(dt.timezone.utc).replace(tzinfo=None))
    (again,) = call(spark, f"CALL sfclayer.system.compact('{by_sql}')")  # positional
    assert again.version == row.version


def test_vacuum_dry_run_lists_what_sfclayer_vacuum_lists(spark, tmp_path):
    path = str(tmp_path / "layer")
    with_small_files(spark, path)
    sfclayer.compact(spark, path)
    versions = helpers.versions(path)
    on_disk = sorted(os.listdir(path))
    # the defaults (7 days) remove nothing, as in Python
    (default,) = call(spark, f"CALL sfclayer.system.vacuum(path => '{path}', dry_run => true)")
    assert default.asDict() == {"dry_run": True, "versions_removed": [], "files_removed": [], "bytes_freed": 0}
    assert sfclayer.vacuum(spark, path, dry_run=True)["filesRemoved"] == []
    # zero retention, forced: the dry run lists exactly what Python's lists, and deletes nothing
    plan = sfclayer.vacuum(spark, path, retain=dt.timedelta(0), enforce_retention=False, dry_run=True)
    (row,) = call(spark, f"CALL sfclayer.system.vacuum(path => '{path}', retain => '0s', dry_run => true, "
                         f"force => true)")
    assert row.dry_run is True
    assert (row.versions_removed, row.files_removed, row.bytes_freed) == (
        plan["versionsRemoved"], plan["filesRemoved"], plan["bytesFreed"])
    assert row.versions_removed == versions[:-1] and row.files_removed
    assert helpers.versions(path) == versions and sorted(os.listdir(path)) == on_disk
    # then for real (named arguments in any order): it removes what the dry run listed
    model = values(spark, path)
    (done,) = call(spark, f"CALL sfclayer.system.vacuum(force => true, retain => 'PT0S', path => '{path}')")
    assert done.dry_run is False
    assert (done.versions_removed, done.files_removed) == (row.versions_removed, row.files_removed)
    assert helpers.versions(path) == versions[-1:]
    assert not any(os.path.exists(os.path.join(path, f)) for f in done.files_removed)
    assert values(spark, path) == model


@pytest.mark.parametrize("args", ["retain => '1d'", "retain => 'P6D', force => false", "retain => '0s'"])
def test_vacuum_under_7_days_without_force_is_refused_naming_the_argument(spark, tmp_path, args):
    path = str(tmp_path / "layer")
    sfclayer.write(tiles(spark, 4, 4), path, bounds=(0, 0, 3, 3))
    sfclayer.write(tiles(spark, 4, 4, mult=7), path, mode="overwrite")
    retain = args.split("'")[1]
    with pytest.raises(sfclayer.InvalidArgument,
                       match=rf"^argument retain: '{retain}' is under the 7-day minimum.*pass force => true$"):
        call(spark, f"CALL sfclayer.system.vacuum(path => '{path}', {args})")
    assert helpers.versions(path) == [1, 2]  # nothing removed
    # Python refuses the same retention with the same rule
    with pytest.raises(sfclayer.InvalidArgument, match="7-day minimum"):
        sfclayer.vacuum(spark, path, retain=dt.timedelta(days=1))
    # positional: path, retain, dry_run, force
    (row,) = call(spark, f"CALL sfclayer.system.vacuum('{path}', '1d', true, true)")
    assert row.dry_run is True and row.versions_removed == []  # both versions are younger than a day


BAD_ARGUMENTS = [
    ("vacuum(path => '{path}', retain => 'soon')", r"^argument retain: 'soon' is not a duration"),
    ("vacuum(path => '{path}', retain => 'P7Q')", r"^argument retain: 'P7Q' is not an ISO-8601 duration"),
    ("vacuum(path => '{path}', retain => '-7d')", r"^argument retain: '-7d' is not a duration"),
    ("vacuum(path => NULL)", r"^argument path: NULL is not allowed \(give the layer's path"),
    ("vacuum(path => '')", r"^argument path: '' is empty"),
    ("vacuum(path => '{path}', dry_run => NULL)", r"^argument dry_run: NULL is not allowed \(true or false\)"),
    ("compact(path => NULL)", r"^argument path: NULL is not allowed"),
    ("history(NULL)", r"^argument path: NULL is not allowed"),
    ("optimize('{path}')", r"^procedure sfclayer\.system\.optimize: no such procedure \(sfclayer's are "
                           r"sfclayer\.system\.compact, delete, history, restore, vacuum\)"),
]


@pytest.mark.parametrize("sql, message", BAD_ARGUMENTS, ids=[b[0].split("(")[0] + str(i) for i, b in
                                                              enumerate(BAD_ARGUMENTS)])
def test_bad_arguments_are_named(spark, tmp_path, sql, message):
    path = str(tmp_path / "layer")
    sfclayer.write(tiles(spark, 2, 2), path, bounds=(0, 0, 1, 1))
    with pytest.raises(sfclayer.InvalidArgument, match=message):
        call(spark, "CALL sfclayer.system." + sql.format(path=path))
    assert helpers.versions(path) == [1]


def test_missing_layer_and_unknown_argument(spark, tmp_path):
    missing = str(tmp_path / "missing")
    for name in ("compact", "vacuum", "history"):
        with pytest.raises(sfclayer.LayerNotFound, match="no sfclayer layer at .*missing"):
            call(spark, f"CALL sfclayer.system.{name}(path => '{missing}')")
    # Spark checks the names and count of arguments itself, naming the one it does not know
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException, match=r"UNRECOGNIZED_PARAMETER_NAME.*`retian`"):
        spark.sql(f"CALL sfclayer.system.vacuum(path => '{missing}', retian => '7d')")
    with pytest.raises(AnalysisException, match=r"REQUIRED_PARAMETER_NOT_FOUND.*`path`"):
        spark.sql("CALL sfclayer.system.vacuum(retain => '7d')")


def test_history_via_call_is_sfclayer_history(spark, tmp_path):
    path = str(tmp_path / "layer")
    with_small_files(spark, path)
    sfclayer.delete(spark, path, keys=(0, 0, 1, 1))
    rows = call(spark, f"CALL sfclayer.system.HISTORY(path => '{path}')")  # names are case-insensitive
    expected = sfclayer.history(spark, path)
    assert [r.version for r in rows] == [v.version for v in expected] == helpers.versions(path)
    for r, v in zip(rows, expected):
        assert (r.operation, r.read_version, r.records, r.files, r.data_bytes, r.metrics) == (
            v.operation, v.read_version, v.records, v.files, v.data_bytes, v.metrics)
    assert [r.operation for r in rows] == ["write"] + ["append"] * 4 + ["delete"]
    # SQL can work on the rows: a procedure's result is an ordinary DataFrame
    assert spark.sql(f"CALL sfclayer.system.history('{path}')").where("operation = 'append'").count() == 4


def test_catalog_registers_at_run_time_under_any_name(spark, tmp_path):
    path = str(tmp_path / "layer")
    sfclayer.write(tiles(spark, 2, 2), path, bounds=(0, 0, 1, 1))
    spark.conf.set("spark.sql.catalog.maint", sfclayer.CATALOG)
    try:
        assert [r.procedure_name for r in spark.sql("SHOW PROCEDURES IN maint.system").collect()] == [
            "compact", "delete", "history", "restore", "vacuum"]
        assert [r.version for r in call(spark, f"CALL maint.system.history('{path}')")] == [1]
        described = "\n".join(r[0] for r in spark.sql("DESCRIBE PROCEDURE maint.system.vacuum").collect())
        assert "retain" in described and "DEFAULT '7d'" in described and "force" in described
    finally:
        spark.conf.unset("spark.sql.catalog.maint")


def test_session_and_configure_register_the_catalog(spark):
    from pyspark.sql import SparkSession

    assert spark.conf.get("spark.sql.catalog.sfclayer") == sfclayer.CATALOG
    builder = sfclayer.configure(SparkSession.Builder())
    assert builder._options["spark.sql.catalog.sfclayer"] == sfclayer.CATALOG
    mine = sfclayer.configure(SparkSession.Builder().config("spark.sql.catalog.sfclayer", "my.Catalog"))
    assert mine._options["spark.sql.catalog.sfclayer"] == "my.Catalog"  # a user's own catalog stays
