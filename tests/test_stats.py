"""Per-file statistics (seed 003): collected during writes and updates, pruning files for value
predicates before any is opened, and count(*) answered from the version document."""

import datetime as dt
import json
import os
import random
import re

import google_crc32c
import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T

import sfclayer
from tests import helpers

SIDE = 24
D0 = dt.date(2024, 1, 1)
T0 = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
SCHEMA = T.StructType([
    T.StructField("col", T.IntegerType(), False),
    T.StructField("row", T.IntegerType(), False),
    T.StructField("v", T.IntegerType(), False),
    T.StructField("w", T.DoubleType(), True),
    T.StructField("name", T.StringType(), True),
    T.StructField("d", T.DateType(), True),
    T.StructField("ts", T.TimestampType(), True),
    T.StructField("blob", T.BinaryType(), False),
])


def source_rows(seed=7):
    rnd = random.Random(seed)
    rows = []
    for c in range(SIDE):
        for r in range(SIDE):
            rows.append((c, r, r * 100 + c,
                         None if rnd.random() < 0.15 else round(r + rnd.random(), 3),
                         None if (c + r) % 9 == 0 else f"s{r:03d}",
                         D0 + dt.timedelta(days=r),
                         None if c == 5 else T0 + dt.timedelta(hours=c * 24 + r),
                         bytes(1500)))
    return rows


@pytest.fixture(scope="module")
def layer(spark, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("stats") / "layer")
    rows = source_rows()
    df = spark.createDataFrame(rows, SCHEMA)
    sfclayer.write(df, path, bounds=(0, 0, SIDE - 1, SIDE - 1), block_size="64k", partitions=2, compression="none")
    return path, rows


def read_all(spark, path, **options):
    return sfclayer.read(spark, path, **options)


def metrics(spark, df):
    return dict(spark._jvm.io.sfclayer.spark.SfcLayerMetrics.of(df._jdf))


def us(t):
    return (t - EPOCH) // dt.timedelta(microseconds=1)


# A predicate: (sql, python evaluator over a row dict giving True/False/None, might(stats, records)).
def comparison(column, op, value, rnd_sql):
    py_ops = {"=": lambda a, b: a == b, "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
              ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}

    def stat_value(v):
        if isinstance(v, dt.datetime):
            return us(v)
        if isinstance(v, dt.date):
            return (v - D0).days + (D0 - dt.date(1970, 1, 1)).days
        return v

    def evaluate(row):
        x = row[column]
        return None if x is None else py_ops[op](x, value)

    def might(stats, records):
        s = stats.get(column)
        if s is None or s.get("unknown"):
            return True
        if s["min"] is None:
            return s["nulls"] < records
        lo, hi, v = s["min"], s["max"], stat_value(value)
        return {"=": lo <= v <= hi, "<": lo < v, "<=": lo <= v, ">": hi > v, ">=": hi >= v}[op]

    return f"{column} {op} {rnd_sql}", evaluate, might


def random_predicate(rnd, depth=0):
    kind = rnd.random()
    if depth < 2 and kind < 0.3:
        a, b = random_predicate(rnd, depth + 1), random_predicate(rnd, depth + 1)
        if rnd.random() < 0.5:
            return (f"({a[0]}) AND ({b[0]})", lambda r: _and(a[1](r), b[1](r)),
                    lambda s, n: a[2](s, n) and b[2](s, n))
        return (f"({a[0]}) OR ({b[0]})", lambda r: _or(a[1](r), b[1](r)),
                lambda s, n: a[2](s, n) or b[2](s, n))
    op = rnd.choice(["=", "<", "<=", ">", ">="])
    column = rnd.choice(["v", "w", "name", "d", "ts", "null"])
    if column == "v":
        v = rnd.randrange(-50, SIDE * 100 + 50)
        return comparison("v", op, v, str(v))
    if column == "w":
        v = round(rnd.uniform(-1, SIDE + 1), 2)
        return comparison("w", op, v, repr(v))
    if column == "name":
        v = f"s{rnd.randrange(0, SIDE + 2):03d}"
        return comparison("name", op, v, f"'{v}'")
    if column == "d":
        v = D0 + dt.timedelta(days=rnd.randrange(-2, SIDE + 2))
        return comparison("d", op, v, f"DATE'{v.isoformat()}'")
    if column == "ts":
        v = T0 + dt.timedelta(hours=rnd.randrange(-5, SIDE * 25))
        return comparison("ts", op, v, f"TIMESTAMP'{v.strftime('%Y-%m-%d %H:%M:%S')}+00:00'")
    c = rnd.choice(["w", "name", "ts"])
    if rnd.random() < 0.5:
        return (f"{c} IS NULL", lambda r: r[c] is None,
                lambda s, n: c not in s or s[c]["nulls"] > 0)
    return (f"{c} IS NOT NULL", lambda r: r[c] is not None,
            lambda s, n: c not in s or s[c]["nulls"] < n)


def _and(a, b):
    if a is False or b is False:
        return False
    return None if a is None or b is None else True


def _or(a, b):
    if a is True or b is True:
        return True
    return None if a is None or b is None else False


def test_stats_are_written_for_each_file_and_match_its_tiles(spark, layer):
    path, rows = layer
    md = helpers.metadata(path)
    assert md["fileCount"] >= 6
    df = read_all(spark, path).select("_file", "col", "row", "v", "w", "name", "d", "ts").collect()
    by_file = {}
    for r in df:
        by_file.setdefault(os.path.basename(r["_file"]), []).append(r)
    for f in md["files"]:
        s, tiles = f["stats"], by_file[f["name"]]
        assert "blob" not in s  # binary columns get none
        for column in ("col", "row", "v"):
            vals = [t[column] for t in tiles]
            assert (s[column]["min"], s[column]["max"], s[column]["nulls"]) == (min(vals), max(vals), 0)
        names = [t["name"] for t in tiles if t["name"] is not None]
        assert (s["name"]["min"], s["name"]["max"]) == (min(names), max(names))
        assert s["name"]["nulls"] == sum(t["name"] is None for t in tiles)
        ws = [t["w"] for t in tiles if t["w"] is not None]
        # a file whose w are all null (format 3's larger records can leave one tile alone) has no bounds
        assert (s["w"]["min"], s["w"]["max"]) == ((min(ws), max(ws)) if ws else (None, None))
        ds = [(t["d"] - dt.date(1970, 1, 1)).days for t in tiles]
        assert (s["d"]["min"], s["d"]["max"]) == (min(ds), max(ds))
        tss = [us(t["ts"].astimezone(dt.timezone.utc)) for t in tiles if t["ts"] is not None]
        assert s["ts"]["nulls"] == len(tiles) - len(tss)
        if tss:
            assert (s["ts"]["min"], s["ts"]["max"]) == (min(tss), max(tss))


@pytest.mark.parametrize("seed", [1])
def test_random_predicates_prune_by_statistics_and_equal_a_full_scan(spark, layer, seed):
    path, rows = layer
    md = helpers.metadata(path)
    names = [f.name for f in SCHEMA.fields]
    dicts = [dict(zip(names, r)) for r in rows]
    rnd = random.Random(seed)
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    pruned_any = False
    for _ in range(14):
        sql, evaluate, might = random_predicate(rnd)
        df = read_all(spark, path).where(sql).select("col", "row")
        got = sorted((r["col"], r["row"]) for r in df.collect())
        want = sorted((d["col"], d["row"]) for d in dicts if evaluate(d) is True)
        assert got == want, sql
        allowed = sum(bool(might(f["stats"], f["records"])) for f in md["files"])
        m = metrics(spark, df)
        # Spark may simplify a composite predicate (e.g. drop a contradiction) before pushing it, so
        # that it prunes more than the predicate as written; a single comparison prunes exactly.
        composite = " AND " in sql or " OR " in sql
        assert m["filesRead"] <= allowed if composite else m["filesRead"] == allowed, (sql, m)
        assert m["filesRead"] + m["filesPrunedByStats"] == md["fileCount"], (sql, m)
        pruned_any |= allowed < md["fileCount"]
        # the same predicate over a scan that cannot prune (nothing pushed: abs() hides the key)
        full = read_all(spark, path).where(f"abs(col) >= 0 AND ({sql})").select("col", "row")
        assert sorted((r["col"], r["row"]) for r in full.collect()) == want
    assert pruned_any


def test_explain_says_how_many_files_each_pruning_removed(spark, layer):
    path, _ = layer
    df = read_all(spark, path).where("v >= 2200 AND col <= 11")
    plan = df._jdf.queryExecution().executedPlan().toString()
    m = re.search(r"filesPruned=\[by name (\d+), by statistics (\d+)\]", plan)
    assert m, plan
    assert int(m.group(1)) >= 1 and int(m.group(2)) >= 1, plan
    df.collect()
    got = metrics(spark, df)
    assert (got["filesPrunedByName"], got["filesPrunedByStats"]) == (int(m.group(1)), int(m.group(2)))


def test_count_of_the_whole_layer_opens_no_data_file(spark, layer):
    path, rows = layer
    df = read_all(spark, path).groupBy().count()
    assert df.collect()[0][0] == len(rows)
    m = metrics(spark, df)
    assert m["filesRead"] == 0 and m["bytesRead"] == 0
    assert m["filesCountedFromStats"] == helpers.metadata(path)["fileCount"]
    df2 = read_all(spark, path).selectExpr("count(col)")
    assert df2.collect()[0][0] == len(rows)
    assert metrics(spark, df2)["filesRead"] == 0


def test_count_of_a_box_reads_keys_only_where_statistics_do_not_answer(spark, layer):
    path, rows = layer
    rnd = random.Random(3)
    for _ in range(5):
        c0, r0 = rnd.randrange(SIDE), rnd.randrange(SIDE)
        c1, r1 = rnd.randrange(c0, SIDE), rnd.randrange(r0, SIDE)
        df = sfclayer.read(spark, path, keys=(c0, r0, c1, r1)).groupBy().count()
        want = sum(c0 <= r[0] <= c1 and r0 <= r[1] <= r1 for r in rows)
        assert df.collect()[0][0] == want
        m = metrics(spark, df)
        selected = helpers.metadata(path)["fileCount"] - m["filesPrunedByName"] - m["filesPrunedByStats"]
        assert m["filesRead"] + m["filesCountedFromStats"] == selected


def test_updates_write_statistics_and_files_without_them_are_never_pruned(spark, tmp_path):
    path = str(tmp_path / "upd")
    rows = source_rows(seed=2)
    df = spark.createDataFrame(rows, SCHEMA)
    sfclayer.write(df.where("row < 12"), path, bounds=(0, 0, SIDE - 1, SIDE - 1), block_size="64k", compression="none")
    sfclayer.write(df.where("row >= 12"), path, mode="append")
    md = helpers.metadata(path)
    assert md["version"] == 2 and all("stats" in f for f in md["files"])
    assert max(f["stats"]["v"]["max"] for f in md["files"]) == (SIDE - 1) * 100 + SIDE - 1
    q = "v >= 2000"
    want = sorted((r[0], r[1]) for r in rows if r[2] >= 2000)
    got = sfclayer.read(spark, path).where(q).select("col", "row")
    assert sorted(map(tuple, got.collect())) == want
    assert metrics(spark, got)["filesPrunedByStats"] >= 1
    # an older writer's version: the same files, no statistics (rewritten as version 3)
    doc = helpers.metadata(path)
    for f in doc["files"]:
        del f["stats"]
    doc["version"] = 3
    doc.pop("checksum", None)
    doc["checksum"] = "00000000"  # format 3: the document's CRC32C, its last member (FORMAT.md section 9)
    text = json.dumps(doc).encode()
    text = text.replace(b'"checksum": "00000000"', f'"checksum": "{google_crc32c.value(text):08x}"'.encode())
    with open(os.path.join(path, "_sfclayer", "v00000003.json"), "wb") as out:
        out.write(text)
    got = sfclayer.read(spark, path).where(q).select("col", "row")
    assert sorted(map(tuple, got.collect())) == want
    m = metrics(spark, got)
    assert m["filesPrunedByStats"] == 0 and m["filesRead"] == doc["fileCount"]
    count = sfclayer.read(spark, path).groupBy().count()
    assert count.collect()[0][0] == len(rows)
