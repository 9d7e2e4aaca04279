"""Layers as SQL tables and views: the same pushdown as the DataFrame reader."""

import os
import re
import uuid

import pytest
from pyspark.sql import functions as F

from sfclayer.errors import LayerNotFound
from tests import helpers
from tests.test_read import envelope, write

# cols 3..62, rows -5..34 over x 0..600, y 0..400: tiles are 10 x 10, row -5 at the top
COLS, ROWS, COL0, ROW0 = 60, 40, 3, -5
BOUNDS = (COL0, ROW0, COL0 + COLS - 1, ROW0 + ROWS - 1)
EXTENT = (0, 0, 600, 400)


@pytest.fixture(scope="module")
def layer(spark, tmp_path_factory):
    df = spark.range(COLS * ROWS).select((F.col("id") % COLS + COL0).cast("int").alias("col"),
                                         (F.floor(F.col("id") / COLS) + ROW0).cast("int").alias("row"),
                                         F.col("id").cast("int").alias("v"))
    return write(df, str(tmp_path_factory.mktemp("sql") / "grid"), bounds=",".join(map(str, BOUNDS)),
                 extent=",".join(map(str, EXTENT)), blockSize="64k", partitions=3)


@pytest.fixture(scope="module")
def z3_layer(spark, tmp_path_factory):
    df = (spark.range(20 * 20 * 5)
          .select((F.col("id") % 20).cast("int").alias("col"), (F.floor(F.col("id") / 20) % 20).cast("int").alias("row"),
                  F.timestamp_micros(F.lit(1_577_836_800_000_000) + F.floor(F.col("id") / 400) * 6 * 3_600_000_000)
                  .alias("time"), F.col("id").cast("int").alias("v")))
    return write(df, str(tmp_path_factory.mktemp("sql") / "z3"), bounds="0,0,19,19",
                 timeBounds="2020-01-01T00:00:00Z,2020-01-02T00:00:00Z", timeResolution="1 hour")


@pytest.fixture
def table(spark):
    name = "sfc_" + uuid.uuid4().hex[:8]
    yield name
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    spark.catalog.dropTempView(name)


def plan(spark, query):
    return spark.sql("EXPLAIN " + query).collect()[0][0]


def expected(pred):
    out = set()
    for i in range(COLS * ROWS):
        c, r = i % COLS + COL0, i // COLS + ROW0
        if pred(c, r, *envelope(c, r, BOUNDS, EXTENT)):
            out.add((c, r, i))
    return out


def test_create_table_pushes_key_and_envelope_predicates(spark, layer, table):
    spark.sql(f"CREATE TABLE {table} USING sfclayer LOCATION '{layer}'")
    assert [f.name for f in spark.table(table).schema] == ["col", "row", "v", "xmin", "ymin", "xmax", "ymax"]

    query = f"SELECT col, row, v FROM {table} WHERE col BETWEEN 10 AND 19 AND row >= 0 AND row < 4"
    explain = plan(spark, query)
    assert re.search(r"boxes=\[cols 10\.\.19, rows 0\.\.3\] ranges=\d+ files=\d+/\d+ pushed=\[.*GreaterThanOrEqual"
                     r"\(col,10\)", explain), explain
    assert "Filter " not in explain.replace("RuntimeFilters", "")
    assert {tuple(r) for r in spark.sql(query).collect()} == expected(lambda c, r, *e: 10 <= c <= 19 and 0 <= r < 4)

    # the intersects form in map units: x 95..205, y 300..320 touches cols 12..23, rows 2..5
    query = (f"SELECT col, row, v FROM {table} "
             "WHERE xmax >= 95 AND xmin <= 205 AND ymax >= 300 AND ymin <= 320")
    explain = plan(spark, query)
    assert "boxes=[cols 12..23, rows 2..5]" in explain, explain
    assert "GreaterThanOrEqual(xmax,95.0)" in explain
    assert {tuple(r) for r in spark.sql(query).collect()} == expected(
        lambda c, r, x0, y0, x1, y1: x1 >= 95 and x0 <= 205 and y1 >= 300 and y0 <= 320)

    # an OR of two boxes, and a predicate on a value column left to Spark
    query = f"SELECT col, row, v FROM {table} WHERE (col = 3 AND row < -3) OR (col = 62 AND v > 1000)"
    explain = plan(spark, query)
    assert "boxes=[cols 3..3, rows -5..-4; cols 62..62, rows -5..34]" in explain, explain
    assert {tuple(r) for r in spark.sql(query).collect()} == expected(
        lambda c, r, *e: (c == 3 and r < -3) or (c == 62 and (r - ROW0) * COLS + c - COL0 > 1000))
    assert "Filter (" in explain  # v > 1000 is Spark's to finish

    # metadata columns in SQL
    rows = spark.sql(f"SELECT col, row, _sfc_index, _file FROM {table} WHERE col = 5 AND row = 5").collect()
    assert len(rows) == 1 and rows[0]._file.rsplit("/", 1)[1].startswith("part-r-")

    # dropping the table leaves the layer alone
    spark.sql(f"DROP TABLE {table}")
    assert os.path.isdir(os.path.join(layer, "_sfclayer"))


def test_temporary_view_with_options(spark, layer, table):
    spark.sql(f"CREATE TEMPORARY VIEW {table} USING sfclayer OPTIONS (path '{layer}', bbox '101,301,119,319')")
    query = f"SELECT col, row, v FROM {table} WHERE row != 4"
    explain = plan(spark, query)
    # the bbox touches cols 13..14, rows 3..4
    assert "boxes=[cols 13..14, rows 3..3]" in explain, explain
    assert {tuple(r) for r in spark.sql(query).collect()} == expected(lambda c, r, *e: c in (13, 14) and r == 3)


def test_time_predicates_in_sql(spark, z3_layer, table):
    spark.sql(f"CREATE TABLE {table} USING sfclayer LOCATION '{z3_layer}'")
    query = (f"SELECT col, row, unix_micros(time) AS t FROM {table} WHERE col = 4 AND row BETWEEN 2 AND 3 "
             "AND time >= TIMESTAMP '2020-01-01T05:00:00Z' AND time < TIMESTAMP '2020-01-01T18:00:00Z'")
    explain = plan(spark, query)
    assert "times 2020-01-01T05:00:00Z..2020-01-01T17:59:59.999999Z" in explain, explain
    t0 = 1_577_836_800_000_000
    hour = 3_600_000_000
    assert sorted(tuple(r) for r in spark.sql(query).collect()) == sorted(
        (4, r, t0 + k * 6 * hour) for r in (2, 3) for k in (1, 2))


def test_missing_layer_in_sql_names_the_path(spark, tmp_path, table):
    missing = str(tmp_path / "no-layer")
    with pytest.raises(LayerNotFound, match="no sfclayer layer at .*no-layer"), helpers.sfclayer_errors():
        spark.sql(f"CREATE TABLE {table} USING sfclayer LOCATION '{missing}'")
        spark.sql(f"SELECT * FROM {table}").collect()
