"""The catalog ``sfclayer`` as tables: layers named by path, with SQL time travel (``VERSION AS OF``,
``TIMESTAMP AS OF``), which Spark offers only through a catalog, and ``DELETE FROM``."""

import time

import pytest
from pyspark.errors import AnalysisException

import sfclayer
from sfclayer import _jvm
from tests import helpers
from tests.test_updates import tiles, values


def sql(spark, query):
    with _jvm.translated():
        return spark.sql(query).collect()


def as_dict(rows):
    return {(r["col"], r["row"]): r["v"] for r in rows}


@pytest.fixture
def three_versions(spark, tmp_path):
    """Version 1: 4 x 4 tiles; 2: an append replacing 2 x 2 of them; 3: a delete of column 3."""
    path = str(tmp_path / "layer")
    sfclayer.write(tiles(spark, 4, 4), path, bounds=(0, 0, 3, 3))
    time.sleep(0.01)  # distinct commit times, so TIMESTAMP AS OF can tell them apart
    sfclayer.write(tiles(spark, 2, 2, mult=7), path, mode="append")
    time.sleep(0.01)
    sfclayer.delete(spark, path, keys=(3, 0, 3, 3))
    return path


def test_version_and_timestamp_as_of_read_what_the_python_api_reads(spark, three_versions):
    path = three_versions
    table = f"sfclayer.`{path}`"
    assert as_dict(sql(spark, f"SELECT col, row, v FROM {table}")) == values(spark, path)
    for v in sfclayer.history(spark, path):
        expected = values(spark, path, version=v.version)
        assert as_dict(sql(spark, f"SELECT col, row, v FROM {table} VERSION AS OF {v.version}")) == expected
        at = v.created_at.isoformat()
        assert as_dict(sql(spark, f"SELECT col, row, v FROM {table} TIMESTAMP AS OF '{at}'")) == expected
    assert len(values(spark, path, version=1)) == 16 and len(values(spark, path)) == 12
    # pushdown works as on any sfclayer table
    plan = spark.sql(f"EXPLAIN SELECT * FROM {table} VERSION AS OF 1 WHERE col = 1").collect()[0][0]
    assert "pushed=[EqualTo(col,1)]" in plan and "boxes=[cols 1..1" in plan


def test_time_travel_errors_name_the_versions(spark, three_versions):
    table = f"sfclayer.`{three_versions}`"
    with pytest.raises(sfclayer.LayerNotFound, match=r"has no version 9; its versions are \[1, 2, 3\]"):
        sql(spark, f"SELECT * FROM {table} VERSION AS OF 9")
    with pytest.raises(sfclayer.LayerNotFound, match=r"no version committed at or before 2001-01-01T00:00:00Z"):
        sql(spark, f"SELECT * FROM {table} TIMESTAMP AS OF '2001-01-01'")
    with pytest.raises(sfclayer.LayerNotFound, match=r"no sfclayer layer at .*missing"):
        sql(spark, f"SELECT * FROM sfclayer.`{three_versions}-missing`")
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):  # a layer is one path, no namespace
        spark.sql(f"SELECT * FROM sfclayer.ns.`{three_versions}`")


def test_delete_from_a_path_table(spark, three_versions):
    path = three_versions
    model = {k: v for k, v in values(spark, path).items() if k[1] != 0}
    spark.sql(f"DELETE FROM sfclayer.`{path}` WHERE row = 0")
    assert values(spark, path) == model and helpers.versions(path) == [1, 2, 3, 4]


@pytest.mark.parametrize("statement", ["DROP TABLE sfclayer.`{path}`",
                                       "CREATE TABLE sfclayer.`{path}-new` (col INT, row INT, v BIGINT)",
                                       "ALTER TABLE sfclayer.`{path}` ADD COLUMN w INT"])
def test_the_catalog_changes_no_tables(spark, three_versions, statement):
    what = " ".join(statement.split()[:2])
    with pytest.raises(sfclayer.InvalidArgument, match=rf"^{what}: catalog sfclayer only reads layers by path"):
        sql(spark, statement.format(path=three_versions))
    assert helpers.versions(three_versions) == [1, 2, 3]
    assert sql(spark, "SHOW TABLES IN sfclayer") == []
