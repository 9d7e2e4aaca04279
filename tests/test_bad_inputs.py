"""A person at the keyboard (issue 37): bad inputs across the Python API, DataFrame/SQL, the CLI, Spark
Connect and the tile server, table-driven. Each raises (or answers) its named class with a message naming
the bad value, in a short traceback, and writes nothing.

Economical: two small layers per module (a spatial one with an extent and a CRS, a space-time one) serve
every row; each group of rows shares them and checks at its end that no version was added.
"""

import datetime as dt
import math
import os
import traceback

import numpy as np
import pytest

import sfclayer
from sfclayer import cli

from .raster_sources import dem_tif  # noqa: F401 (fixture)
from sfclayer.errors import (InvalidArgument, InvalidInput, KeyNotFound, LayerExists, LayerNotFound,
                             SfcLayerError)

# At most 15 lines printed for a user's call; the table's lambdas add a frame (2 lines) a direct call has not.
MAX_TRACEBACK_LINES = 15 + 2


@pytest.fixture(scope="module")
def layers(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("bad_inputs")
    spatial, st = str(root / "dem"), str(root / "st")
    df = spark.range(16).selectExpr("int(id % 4) AS col", "int(id DIV 4) AS row", "id AS value")
    sfclayer.write(df, spatial, bounds=(0, 0, 3, 3), extent=(0, 0, 4, 4), crs="EPSG:4326")
    sfclayer.write(spark.range(4).selectExpr("int(id) AS col", "0 AS row",
                                             "timestamp'2020-01-01 00:00:00' AS time", "id AS value"),
                   st, bounds=(0, 0, 3, 0), time_bounds=("2020-01-01", "2020-12-31"), time_resolution="1 day")
    return {"L": spatial, "S": st, "new": str(root / "never"), "root": str(root)}


def _versions(spark, path):
    return len(sfclayer.history(spark, path))


def _nothing_at(spark, path):
    """No layer version at ``path`` (a failed first write may leave an empty directory, no version)."""
    with pytest.raises(LayerNotFound):
        sfclayer.history(spark, path)


def _short(exc):
    """At most 15 lines printed (not counting the ``^^^^`` marks Python 3.11 puts under a call), no Java."""
    lines = [line for line in "".join(traceback.format_exception(exc)).splitlines()
             if line.strip(" ^~")]
    assert len(lines) <= MAX_TRACEBACK_LINES, "\n".join(lines)
    assert not any(line.lstrip().startswith("at org.") or "java.lang" in line for line in lines), "\n".join(lines)


def _check(exc, error, value):
    assert isinstance(exc, error), f"{type(exc).__name__}: {exc}"
    assert value in str(exc), f"{value!r} not in {exc}"
    _short(exc)


# ---------------------------------------------------------------------------- the Python API
NAN = float("nan")
# (id, call(spark, paths), error class, text the message shows)
API = [
    ("get col float", lambda s, p, L: L.get(1.5, 1), InvalidArgument, "col: 1.5"),
    ("get col str", lambda s, p, L: L.get("1", 1), InvalidArgument, "col: '1'"),
    ("get col bool", lambda s, p, L: L.get(True, 1), InvalidArgument, "col: True"),
    ("get col nan", lambda s, p, L: L.get(NAN, 1), InvalidArgument, "col: nan"),
    ("get col 2^40", lambda s, p, L: L.get(2 ** 40, 1), InvalidArgument, "col: 1099511627776"),
    ("get col None", lambda s, p, L: L.get(None, 1), InvalidArgument, "col: None"),
    ("get col np.float64", lambda s, p, L: L.get(np.float64(2), 1), InvalidArgument, "col: "),
    ("get row below int32", lambda s, p, L: L.get(1, -2 ** 31 - 1), InvalidArgument, "row: -2147483649"),
    ("get row 2^31", lambda s, p, L: L.get(1, 2 ** 31), InvalidArgument, "row: 2147483648"),
    ("get row float", lambda s, p, L: L.get(1, 0.5), InvalidArgument, "row: 0.5"),
    ("get row bytes", lambda s, p, L: L.get(1, b"1"), InvalidArgument, "row: b'1'"),
    ("get outside bounds", lambda s, p, L: L.get(99, 99), KeyNotFound, "(col=99, row=99)"),
    ("get negative", lambda s, p, L: L.get(-5, 0), KeyNotFound, "(col=-5, row=0)"),
    ("get with time on spatial", lambda s, p, L: L.get(1, 1, "2020-01-01"), InvalidArgument, "spatial"),
    ("getitem float", lambda s, p, L: L[1.5, 1], InvalidArgument, "col: 1.5"),
    ("contains float", lambda s, p, L: (1.5, 1) in L, InvalidArgument, "col: 1.5"),
    ("contains str", lambda s, p, L: ("a", 1) in L, InvalidArgument, "col: 'a'"),
    ("get_many float", lambda s, p, L: L.get_many([(1.5, 1)]), InvalidArgument, "col: 1.5"),
    ("get_many short key", lambda s, p, L: L.get_many([(1,)]), InvalidArgument, "key: (1,)"),
    ("get_many str key", lambda s, p, L: L.get_many(["ab"]), InvalidArgument, "key: 'ab'"),
    ("get_many time on spatial", lambda s, p, L: L.get_many([(1, 2, 3)]), InvalidArgument, "key: (1, 2, 3)"),
    ("get_many 2^40", lambda s, p, L: L.get_many([(0, 2 ** 40)]), InvalidArgument, "row: 1099511627776"),
    ("query bbox 3 numbers", lambda s, p, L: list(L.query(bbox=(1, 2, 3))), InvalidArgument, "(1, 2, 3)"),
    ("query bbox word", lambda s, p, L: list(L.query(bbox=("a", 0, 1, 1))), InvalidArgument, "'a'"),
    ("query bbox nan", lambda s, p, L: list(L.query(bbox=(NAN, 0, 1, 1))), InvalidArgument, "nan"),
    ("query bbox inf", lambda s, p, L: list(L.query(bbox=(0, 0, math.inf, 1))), InvalidArgument, "inf"),
    ("query bbox min>max", lambda s, p, L: list(L.query(bbox=(5, 5, 1, 1))), InvalidArgument, "(5, 5, 1, 1)"),
    ("query bbox text", lambda s, p, L: list(L.query(bbox="1,2")), InvalidArgument, "'1,2'"),
    ("query keys float", lambda s, p, L: list(L.query(keys=(0, 0, 1.5, 3))), InvalidArgument, "1.5"),
    ("query keys min>max", lambda s, p, L: list(L.query(keys=(3, 3, 1, 1))), InvalidArgument, "(3, 3, 1, 1)"),
    ("query limit negative", lambda s, p, L: list(L.query(keys=(0, 0, 1, 1), limit=-1)), InvalidArgument, "-1"),
    ("query limit word", lambda s, p, L: list(L.query(keys=(0, 0, 1, 1), limit="x")), InvalidArgument, "'x'"),
    ("query time on spatial", lambda s, p, L: list(L.query(keys=(0, 0, 1, 1), time=(0, 1))), InvalidArgument,
     "spatial"),
    ("query bad geometry", lambda s, p, L: list(L.query(geometry="POINT (")), InvalidArgument, "POINT ("),
    ("count bbox 3", lambda s, p, L: L.count(bbox=(1, 2, 3)), InvalidArgument, "(1, 2, 3)"),
    ("count keys word", lambda s, p, L: L.count(keys="a,b,c,d"), InvalidArgument, "'a'"),
    ("read bbox 3", lambda s, p, L: sfclayer.read(s, p["L"], bbox=(1, 2, 3)).collect(), InvalidArgument,
     "(1, 2, 3)"),
    ("read bbox min>max", lambda s, p, L: sfclayer.read(s, p["L"], bbox=(5, 5, 1, 1)).collect(), InvalidArgument,
     "(5, 5, 1, 1)"),
    ("read bbox nan", lambda s, p, L: sfclayer.read(s, p["L"], bbox=(0, 0, NAN, 1)).collect(), InvalidArgument,
     "nan"),
    ("read keys float", lambda s, p, L: sfclayer.read(s, p["L"], keys=(0, 0, 0.5, 1)).collect(), InvalidArgument,
     "0.5"),
    ("read time 3", lambda s, p, L: sfclayer.read(s, p["S"], time=(1, 2, 3)).collect(), InvalidArgument,
     "(1, 2, 3)"),
    ("read time word", lambda s, p, L: sfclayer.read(s, p["S"], time=("noon", "2020-02-01")).collect(),
     InvalidArgument, "'noon'"),
    ("read time reversed", lambda s, p, L: sfclayer.read(s, p["S"], time=("2020-02-01", "2020-01-01")).collect(),
     InvalidArgument, "'2020-02-01'"),
    ("read version and as_of", lambda s, p, L: sfclayer.read(s, p["L"], version=1, as_of="2020-01-01"),
     InvalidArgument, "version or as_of"),
    ("read version 99", lambda s, p, L: sfclayer.read(s, p["L"], version=99).collect(), SfcLayerError, "99"),
    ("read as_of word", lambda s, p, L: sfclayer.read(s, p["L"], as_of="noon"), InvalidArgument, "'noon'"),
    ("read empty path", lambda s, p, L: sfclayer.read(s, ""), InvalidArgument, "path: ''"),
    ("read no layer", lambda s, p, L: sfclayer.read(s, p["root"] + "/nothing").collect(), LayerNotFound,
     "nothing"),
    ("open no layer", lambda s, p, L: sfclayer.open(s, p["root"] + "/nothing"), LayerNotFound, "nothing"),
    ("open empty path", lambda s, p, L: sfclayer.open(s, ""), InvalidArgument, "path: ''"),
    ("open path int", lambda s, p, L: sfclayer.open(s, 5), InvalidArgument, "path: 5"),
    ("st get no time", lambda s, p, L: sfclayer.open(s, p["S"]).get(0, 0), InvalidArgument, "space-time"),
    ("st get time word", lambda s, p, L: sfclayer.open(s, p["S"]).get(0, 0, "noon"), InvalidArgument, "'noon'"),
    ("write crs words", lambda s, p, L: sfclayer.write(_df(s), p["new"], crs="WGS 84 please"), InvalidArgument,
     "'WGS 84 please'"),
    ("write crs unknown code", lambda s, p, L: sfclayer.write(_df(s), p["new"], crs="EPSG:999999"),
     InvalidArgument, "'EPSG:999999'"),
    ("write crs int", lambda s, p, L: sfclayer.write(_df(s), p["new"], crs=4326), InvalidArgument, "crs: 4326"),
    ("write crs blank", lambda s, p, L: sfclayer.write(_df(s), p["new"], crs=" "), InvalidArgument, "crs: ' '"),
    ("write bounds 3", lambda s, p, L: sfclayer.write(_df(s), p["new"], bounds=(0, 0, 1)), InvalidArgument,
     "bounds"),
    ("write key index", lambda s, p, L: sfclayer.write(_df(s), p["new"], key_index="zz"), InvalidArgument, "zz"),
    ("write block size", lambda s, p, L: sfclayer.write(_df(s), p["new"], block_size="1k"), InvalidArgument,
     "'1k'"),
    ("write extent 3", lambda s, p, L: sfclayer.write(_df(s), p["new"], extent=(0, 0, 1)), InvalidArgument,
     "extent"),
    ("write compression", lambda s, p, L: sfclayer.write(_df(s), p["new"], compression="lzma"), InvalidArgument,
     "lzma"),
    ("write exists", lambda s, p, L: sfclayer.write(_df(s), p["L"]), LayerExists, "already exists"),
    ("write string key", lambda s, p, L: sfclayer.write(s.range(2).selectExpr("'a' AS col", "0 AS row",
                                                                              "id AS v"), p["new"]),
     InvalidInput, "'col'"),
    ("write long key", lambda s, p, L: sfclayer.write(s.range(2).selectExpr("id AS col", "0 AS row", "id AS v"),
                                                      p["new"]), InvalidInput, "'col'"),
    ("write no row", lambda s, p, L: sfclayer.write(s.range(2).selectExpr("int(id) AS col", "id AS v"),
                                                    p["new"]), InvalidInput, "'row'"),
    ("write duplicate keys", lambda s, p, L: sfclayer.write(s.range(3).selectExpr("1 AS col", "1 AS row",
                                                                                  "id AS v"), p["new"]),
     InvalidInput, "(col=1, row=1)"),
    ("write null key", lambda s, p, L: sfclayer.write(s.range(3).selectExpr("IF(id = 1, NULL, int(id)) AS col",
                                                                            "1 AS row", "id AS v"), p["new"],
                                                      bounds=(0, 0, 3, 3)), InvalidInput, "null"),
    ("append null value", lambda s, p, L: sfclayer.write(
        s.range(3).selectExpr("int(id) AS col", "1 AS row", "IF(id = 2, NULL, id) AS value"), p["L"],
        mode="append"), InvalidInput, "'value'"),
    ("append null value shuffled", lambda s, p, L: sfclayer.write(
        s.range(3).selectExpr("int(id) AS col", "1 AS row", "IF(id = 2, NULL, id) AS value"), p["L"],
        mode="append", small_append_bytes=0), InvalidInput, "(col=2, row=1)"),
    ("append wrong type", lambda s, p, L: sfclayer.write(
        s.range(3).selectExpr("int(id) AS col", "1 AS row", "'x' AS value"), p["L"], mode="append"),
     InvalidInput, "'value'"),
    ("append duplicate keys", lambda s, p, L: sfclayer.write(
        s.range(3).selectExpr("1 AS col", "1 AS row", "id AS value"), p["L"], mode="append"),
     InvalidInput, "(col=1, row=1)"),
    ("append outside bounds", lambda s, p, L: sfclayer.write(
        s.range(3).selectExpr("int(id) + 10 AS col", "1 AS row", "id AS value"), p["L"], mode="append"),
     SfcLayerError, "col=1"),
    ("vacuum retain word", lambda s, p, L: sfclayer.vacuum(s, p["L"], retain="7x"), InvalidArgument, "'7x'"),
    ("vacuum retain negative", lambda s, p, L: sfclayer.vacuum(s, p["L"], retain=-1), InvalidArgument, "-1"),
    ("vacuum retain -1d", lambda s, p, L: sfclayer.vacuum(s, p["L"], retain="-1d"), InvalidArgument, "'-1d'"),
    ("vacuum retain nan", lambda s, p, L: sfclayer.vacuum(s, p["L"], retain=NAN), InvalidArgument, "nan"),
    ("vacuum retain bool", lambda s, p, L: sfclayer.vacuum(s, p["L"], retain=True), InvalidArgument, "True"),
    ("vacuum retain short", lambda s, p, L: sfclayer.vacuum(s, p["L"], retain="1h"), InvalidArgument, "retain"),
    ("vacuum no layer", lambda s, p, L: sfclayer.vacuum(s, p["root"] + "/nothing"), LayerNotFound, "nothing"),
    ("history no layer", lambda s, p, L: sfclayer.history(s, p["root"] + "/nothing"), LayerNotFound, "nothing"),
    ("compact no layer", lambda s, p, L: sfclayer.compact(s, p["root"] + "/nothing"), LayerNotFound, "nothing"),
    ("delete keys 3", lambda s, p, L: sfclayer.delete(s, p["L"], keys=(1, 2, 3)), InvalidArgument, "(1, 2, 3)"),
    ("delete keys reversed", lambda s, p, L: sfclayer.delete(s, p["L"], keys=(3, 3, 1, 1)), InvalidArgument,
     "cols 3..1"),
    ("delete time on spatial", lambda s, p, L: sfclayer.delete(s, p["L"], keys=(0, 0, 1, 1), time=(0, 1)),
     InvalidArgument, "time"),
    # zooms, checked before any source is opened or layer read (the source here does not exist)
    ("ingest zoom above the tms", lambda s, p, L: sfclayer.ingest(s, p["root"] + "/no.tif", p["new"], zoom=30),
     InvalidArgument, "zoom: 30 is outside WebMercatorQuad's zooms (0..24)"),
    ("ingest zoom negative", lambda s, p, L: sfclayer.ingest(s, p["root"] + "/no.tif", p["new"],
                                                             tms="WorldCRS84Quad", zoom=-1),
     InvalidArgument, "zoom: -1 is outside WorldCRS84Quad's zooms (0..23)"),
    ("ingest zoom float", lambda s, p, L: sfclayer.ingest(s, p["root"] + "/no.tif", p["new"], zoom=12.5),
     InvalidArgument, "zoom: 12.5"),
    ("ingest zoom str", lambda s, p, L: sfclayer.ingest(s, p["root"] + "/no.tif", p["new"], zoom="12"),
     InvalidArgument, "zoom: '12'"),
    ("read zoom float", lambda s, p, L: sfclayer.read(s, p["L"], zoom=1.5), InvalidArgument, "zoom: 1.5"),
    ("open zoom str", lambda s, p, L: sfclayer.open(s, p["L"], zoom="1"), InvalidArgument, "zoom: '1'"),
    ("zonal zoom float", lambda s, p, L: sfclayer.zonal_stats(s, p["L"], ["POINT (1 1)"], zoom=0.5),
     InvalidArgument, "zoom: 0.5"),
    ("zonal bad zone", lambda s, p, L: sfclayer.zonal_stats(s, p["L"], ["POINT (1 1)", "POLYGON (("]),
     InvalidArgument, "zones[1]"),
    ("zonal geometry_crs words", lambda s, p, L: sfclayer.zonal_stats(
        s, p["L"], s.createDataFrame([(1, "POINT (1 1)")], "id long, geometry string"), geometry_crs="WGS 84 please"),
     InvalidArgument, "geometry_crs: 'WGS 84 please'"),
    ("pyramid min_zoom str", lambda s, p, L: sfclayer.pyramid(s, p["L"], min_zoom="1"), InvalidArgument,
     "min_zoom: '1'"),
    ("pyramid min_zoom bool", lambda s, p, L: sfclayer.pyramid(s, p["L"], min_zoom=True), InvalidArgument,
     "min_zoom: True"),
]


def _df(spark):
    return spark.range(4).selectExpr("int(id % 2) AS col", "int(id DIV 2) AS row", "id AS value")


@pytest.mark.parametrize("case", API, ids=[c[0] for c in API])
def test_python_api(spark, layers, case):
    _, call, error, value = case
    before = (_versions(spark, layers["L"]), _versions(spark, layers["S"]))
    with sfclayer.open(spark, layers["L"]) as layer:
        with pytest.raises(SfcLayerError) as e:
            call(spark, layers, layer)
    _check(e.value, error, value)
    assert (_versions(spark, layers["L"]), _versions(spark, layers["S"])) == before
    _nothing_at(spark, layers["new"])


# ---------------------------------------------------------------------------- DataFrame / SQL
# pyspark's own captured exception: the condition and the message on one line, no Java frames
DATAFRAME = [
    ("option bbox min>max", lambda s, p: s.read.format("sfclayer").option("bbox", "5,5,1,1").load(p["L"]).collect(),
     "SFCLAYER_INVALID_ARGUMENT", "5,5,1,1"),
    ("option bbox words", lambda s, p: s.read.format("sfclayer").option("bbox", "a,b,c,d").load(p["L"]).collect(),
     "SFCLAYER_INVALID_ARGUMENT", "a,b,c,d"),
    ("option unknown", lambda s, p: s.read.format("sfclayer").option("keys", "0,0,x,1").load(p["L"]).collect(),
     "SFCLAYER_INVALID_ARGUMENT", "'keys'"),
    ("option versionAsOf word", lambda s, p: s.read.format("sfclayer").option("versionAsOf", "x").load(p["L"])
     .collect(), "SFCLAYER_INVALID_ARGUMENT", "'x'"),
    ("option versionAsOf 99", lambda s, p: s.read.format("sfclayer").option("versionAsOf", "99").load(p["L"])
     .collect(), "SFCLAYER_LAYER_NOT_FOUND", "99"),
    ("option timestampAsOf", lambda s, p: s.read.format("sfclayer").option("timestampAsOf", "noon").load(p["L"])
     .collect(), "SFCLAYER_INVALID_ARGUMENT", "noon"),
    ("load no layer", lambda s, p: s.read.format("sfclayer").load(p["root"] + "/nothing").collect(),
     "SFCLAYER_LAYER_NOT_FOUND", "nothing"),
    ("sql no layer", lambda s, p: s.sql(f"SELECT * FROM sfclayer.`{p['root']}/nothing`").collect(),
     "SFCLAYER_LAYER_NOT_FOUND", "nothing"),
    ("write keyIndex", lambda s, p: _df(s).write.format("sfclayer").option("keyIndex", "zz").save(p["new"]),
     "SFCLAYER_INVALID_ARGUMENT", "zz"),
    ("write bounds words", lambda s, p: _df(s).write.format("sfclayer").option("bounds", "a").save(p["new"]),
     "SFCLAYER_INVALID_ARGUMENT", "'a'"),
    ("write blockSize", lambda s, p: _df(s).write.format("sfclayer").option("blockSize", "1k").save(p["new"]),
     "SFCLAYER_INVALID_ARGUMENT", "'1k'"),
    ("write exists", lambda s, p: _df(s).write.format("sfclayer").save(p["L"]), "SFCLAYER_LAYER_EXISTS",
     "already exists"),
    ("write duplicate keys", lambda s, p: s.range(3).selectExpr("1 AS col", "1 AS row", "id AS v").write
     .format("sfclayer").save(p["new"]), "SFCLAYER_INVALID_INPUT", "(col=1, row=1)"),
    ("append wrong type", lambda s, p: s.range(3).selectExpr("int(id) AS col", "1 AS row", "'x' AS value").write
     .format("sfclayer").mode("append").save(p["L"]), "SFCLAYER_INVALID_INPUT", "'value'"),
    ("sql procedure retain", lambda s, p: s.sql(f"CALL sfclayer.system.vacuum(path => '{p['L']}', retain => '7x')")
     .collect(), "SFCLAYER_INVALID_ARGUMENT", "7x"),
]


@pytest.mark.parametrize("case", DATAFRAME, ids=[c[0] for c in DATAFRAME])
def test_dataframe_and_sql(spark, layers, case):
    from pyspark.errors import PySparkException

    _, call, condition, value = case
    before = _versions(spark, layers["L"])
    with pytest.raises(PySparkException) as e:
        call(spark, layers)
    assert e.value.getCondition() == condition, str(e.value)
    first = str(e.value).splitlines()[0]
    assert first.startswith(f"[{condition}] ") and value in first, first
    _short(e.value)
    assert _versions(spark, layers["L"]) == before
    _nothing_at(spark, layers["new"])


# ---------------------------------------------------------------------------- the CLI
# (argv with {L}, {root}; exit status; text of the one stderr line)
CLI = [
    (["info", "{root}/nothing"], 1, "nothing"),
    (["get", "{L}", "99", "99"], 1, "(col=99, row=99)"),
    (["get", "{L}", "1.5", "1"], 2, "'1.5'"),
    (["get", "{L}", "1", "1", "2020-01-01"], 1, "spatial"),
    (["history", "{root}/nothing"], 1, "nothing"),
    (["vacuum", "{L}", "--retain", "7x"], 2, "'7x'"),
    (["vacuum", "{L}", "--retain", "1h"], 1, "retain"),
    (["vacuum", "{root}/nothing"], 1, "nothing"),
    (["compact", "{root}/nothing"], 1, "nothing"),
    (["verify", "{root}/nothing"], 1, "nothing"),
]


@pytest.mark.parametrize("argv, status, value", CLI, ids=[" ".join(c[0][:2]) + f"-{i}" for i, c in enumerate(CLI)])
def test_cli(spark, layers, capsys, argv, status, value):
    argv = [a.format(**layers) for a in argv]
    before = _versions(spark, layers["L"])
    try:
        code = cli.main(argv, spark_factory=lambda: (spark, False))
    except SystemExit as e:
        code = e.code
    err = capsys.readouterr().err.strip().splitlines()
    assert code == status, err
    assert err and value in err[-1] and err[-1].startswith(("sfclayer: error: ", "sfclayer ")), err
    assert len(err) <= (3 if status == 2 else 1), err  # argparse: usage lines, then the error
    assert _versions(spark, layers["L"]) == before


# ---------------------------------------------------------------------------- Spark Connect
CONNECT = [
    ("read no layer", lambda c, p: sfclayer.read(c, p["root"] + "/nothing").collect(), LayerNotFound, "nothing"),
    ("read bbox", lambda c, p: sfclayer.read(c, p["L"], bbox=(5, 5, 1, 1)).collect(), InvalidArgument,
     "(5, 5, 1, 1)"),
    ("get float", lambda c, p: sfclayer.open(c, p["L"]).get(1.5, 1), InvalidArgument, "col: 1.5"),
    ("get outside", lambda c, p: sfclayer.open(c, p["L"]).get(99, 99), KeyNotFound, "(col=99, row=99)"),
    ("write exists", lambda c, p: sfclayer.write(c.range(2).selectExpr("int(id) AS col", "0 AS row", "id AS value"),
                                                 p["L"]), LayerExists, "already exists"),
    ("vacuum retain", lambda c, p: sfclayer.vacuum(c, p["L"], retain="7x"), InvalidArgument, "'7x'"),
    ("history no layer", lambda c, p: sfclayer.history(c, p["root"] + "/nothing"), LayerNotFound, "nothing"),
]


@pytest.mark.parametrize("case", CONNECT, ids=[c[0] for c in CONNECT])
def test_connect(spark, connect, layers, case):
    _, call, error, value = case
    before = _versions(spark, layers["L"])
    with pytest.raises(SfcLayerError) as e:
        call(connect, layers)
    _check(e.value, error, value)
    assert _versions(spark, layers["L"]) == before


def test_connect_dataframe_action_shows_the_condition(connect, layers):
    from pyspark.errors import PySparkException

    with pytest.raises(PySparkException) as e:
        connect.read.format("sfclayer").option("bbox", "5,5,1,1").load(layers["L"]).collect()
    assert e.value.getCondition() == "SFCLAYER_INVALID_ARGUMENT"
    assert "5,5,1,1" in str(e.value).splitlines()[0]


# ---------------------------------------------------------------------------- the tile server
SERVER = [
    ("/layers/nosuch", 404, "'nosuch'"),
    ("/layers/dem/values/1.5/2", 400, "'1.5'"),
    ("/layers/dem/values/1/x", 400, "'x'"),
    ("/layers/dem/values/99/99", 404, "(99, 99)"),
    ("/layers/dem/values/1/99999999999", 400, "'99999999999'"),
    ("/layers/dem/keys/a/1", 400, "'a'"),
    ("/layers/dem/values/1/1?time=2020-01-01", 400, "'2020-01-01'"),
    ("/layers/dem/values/1/1?bogus=1", 400, "bogus"),
    ("/layers/dem/tiles/0/1/1.png?colormap_name=nosuch", 400, "colormap_name: 'nosuch'"),
    ("/layers/dem/tiles/0/1/1.png?colormap=nosuch", 400, "colormap: 'nosuch'"),
    ("/layers/dem/tiles/0/1/1.png?rescale=1", 400, "rescale: '1'"),
    ("/layers/dem/tiles/0/1/1.gif", 400, "'gif'"),
]


@pytest.fixture(scope="module")
def server(spark, layers):
    from sfclayer import server as srv

    s = srv.serve(spark, [f"dem={layers['L']}"], port=0, background=True, log=lambda line: None)
    yield s
    s.stop()


@pytest.mark.parametrize("url, status, value", SERVER, ids=[c[0] for c in SERVER])
def test_tile_server(server, url, status, value):
    import json
    import urllib.error
    import urllib.request

    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(server.url.rstrip("/") + url, timeout=30)
    assert e.value.code == status
    body = e.value.read().decode()
    text = json.loads(body)["error"]
    assert value in text, text


def test_the_table_holds_at_least_100_bad_inputs():
    assert len(API) + len(DATAFRAME) + len(CLI) + len(CONNECT) + 1 + len(SERVER) >= 100


def test_readme_append_snippet_takes_a_nullable_dataframe(spark, tmp_path):
    """README, "Living layers": a layer written from ``spark.range`` columns is NOT NULL; an ordinary
    (nullable) DataFrame without nulls appends to it."""
    path = str(tmp_path / "dem")
    df = spark.range(100).selectExpr("int(id % 10) AS col", "int(id DIV 10) AS row", "int(id) * 3 AS elevation")
    sfclayer.write(df, path, bounds=(0, 0, 9, 9), extent=(0, 0, 1, 1))
    new_tiles = spark.createDataFrame([(1, 2, 7), (9, 9, 8)], "col int, row int, elevation int")  # nullable
    assert all(f.nullable for f in new_tiles.schema.fields)
    sfclayer.write(new_tiles, path, mode="append")  # upsert: only files the new tiles fall in are rewritten
    with sfclayer.open(spark, path) as layer:
        assert layer.get(1, 2)["elevation"] == 7 and layer.get(9, 9)["elevation"] == 8
        assert layer.get(3, 3)["elevation"] == 99
    assert _versions(spark, path) == 2


def test_cli_ingest_states_the_plan_and_refuses_a_large_one_without_yes(spark, tmp_path, capsys, monkeypatch,
                                                                        dem_tif):  # noqa: F811
    """Above the bound, a run without a terminal to answer and without --yes writes nothing."""
    monkeypatch.setattr(cli, "INGEST_CONFIRM_TILES", 10)
    monkeypatch.setattr("sys.stdin.isatty", lambda: False, raising=False)
    path = str(tmp_path / "big")
    code = cli.main(["ingest", dem_tif, path, "--tms", "none", "--tile-size", "64"],
                    spark_factory=lambda: (spark, False))
    out, err = capsys.readouterr()
    assert code == 1, (out, err)
    assert "42 tiles planned on the source's own grid (7 × 6 tiles)" in out, out
    assert err.strip().splitlines() == ["sfclayer: error: ingest: 42 tiles planned, more than 10 (pass --yes to write "
                                        "them, or a smaller --zoom); nothing was written"], err
    _nothing_at(spark, path)


def test_java_stack_kept_and_shown_with_sfclayer_debug(spark, layers, monkeypatch):
    df = spark.range(2).selectExpr("int(id) AS col", "0 AS row", "id AS value")
    with pytest.raises(LayerExists) as e:
        sfclayer.write(df, layers["L"])
    assert e.value.__cause__ is None and e.value.__suppress_context__
    assert "io.sfclayer.SfcLayerException$LayerExists" in e.value.java_stack
    assert "\tat io.sfclayer." in e.value.java_stack  # the Java frames, kept
    monkeypatch.setenv("SFCLAYER_DEBUG", "1")
    with pytest.raises(LayerExists) as e:
        sfclayer.write(df, layers["L"])
    assert e.value.java_error is not None and "LayerExists" in str(e.value.__cause__)
    assert "at io.sfclayer." in "".join(traceback.format_exception(e.value))
