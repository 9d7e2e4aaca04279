"""GeoTrellis catalogs read in place (issue 22), against layers GeoTrellis 3.7.1 itself wrote.

tests/data/geotrellis/ is written by integration/geotrellis (GeoTrellis' HadoopLayerWriter): ``catalog/``
and ``expected/``, where each layer's ``<name>__<zoom>.npz`` holds what GeoTrellis' own reader read back
(keys, GeoTrellis' toIndex of each, cells, GeoTrellis' nodata verdict) and ``layers.json`` describes
the layers. Every comparison here is against those files.
"""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from sfclayer import geotrellis, raster
from sfclayer.errors import InvalidArgument, KeyNotFound, LayerNotFound

DATA = Path(__file__).parent / "data" / "geotrellis"
CATALOG = str(DATA / "catalog")
LAYERS = json.loads((DATA / "expected" / "layers.json").read_text()) if (DATA / "expected").exists() else []

pytestmark = pytest.mark.skipif(not LAYERS,
                                reason="tests/data/geotrellis is not there (integration/geotrellis writes it)")


def expected(layer):
    z = np.load(DATA / "expected" / f"{layer['name']}__{layer['zoom']}.npz")
    keys = [tuple(int(v) for v in k) for k in z["keys"]]
    return {k: (z["cells"][i], z["nodata_mask"][i]) for i, k in enumerate(keys)}


def key_of(t, space_time):
    if not space_time:
        return (t["col"], t["row"])
    ms = t["time"]
    ms = ms if isinstance(ms, int) else int(round(ms.timestamp() * 1000))
    return (t["col"], t["row"], ms)


def metrics(spark, df):
    return dict(spark._jvm.io.sfclayer.spark.SfcLayerMetrics.of(df._jdf))


def same(a, b):
    """Bit-identical arrays (NaN equal to NaN)."""
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def check_tile(layer, tile, cells, nodata_mask):
    a = raster.to_numpy(tile)
    assert a.dtype.name == layer["dtype"] == tile["dtype"]
    assert same(a, cells.astype(cells.dtype.newbyteorder("<"))), (layer["name"], tile["col"], tile["row"])
    want = layer["nodata"]
    if want == "NaN":
        assert math.isnan(tile["nodata"])
    else:
        assert tile["nodata"] == want
    if layer["bands"] == 1:
        assert (raster.valid_mask(tile) == ~nodata_mask[0]).all()


def test_layers_lists_the_catalog(spark):
    assert geotrellis.layers(spark, CATALOG) == sorted((l["name"], l["zoom"]) for l in LAYERS)
    with pytest.raises(LayerNotFound):
        geotrellis.layers(spark, str(DATA / "nothing-here"))


def test_every_tile_reads_back_as_geotrellis_wrote_it(spark):
    # Through the DataFrame scan: a layer of each tile record family, nodata rule, index and key type (every
    # layer's every tile goes through the same decoder in test_look_ups_equal_what_geotrellis_wrote); one Spark
    # job per key type, the layers' scans in one union.
    from functools import reduce
    from pyspark.sql import functions as F

    names = {"int8", "uint8_ud", "int16_raw", "uint16", "int32", "float32_ud", "float64_ud", "bit", "mb_uint16",
             "files_hilbert", "st_float32", "st_mb_uint8"}
    for st in (False, True):
        chosen = [l for l in LAYERS if (l["keyType"] == "SpaceTimeKey") == st and l["name"] in names]
        dfs = [geotrellis.read(spark, CATALOG, l["name"], l["zoom"])
               .withColumn("layer", F.lit(f"{l['name']}/{l['zoom']}")) for l in chosen]
        rows = reduce(lambda a, b: a.unionByName(b), dfs).collect()
        for layer in chosen:
            want = expected(layer)
            got = {key_of(r.asDict(), st): r.asDict() for r in rows if r.layer == f"{layer['name']}/{layer['zoom']}"}
            assert sorted(got) == sorted(want), layer["name"]
            for k, tile in got.items():
                check_tile(layer, tile, *want[k])
                assert tile["bands"] == layer["bands"]


def test_envelopes_are_geotrellis_key_extents(spark):
    # GeoTrellis' own layout.mapTransform.keyToExtent of every key (the fixture's extents)
    for name in ("files", "uint8_raw", "st_float32", "crs84"):
        layer = next(l for l in LAYERS if l["name"] == name)
        z = np.load(DATA / "expected" / f"{name}__{layer['zoom']}.npz")
        want = {tuple(int(v) for v in k[:2]): e for k, e in zip(z["keys"], z["extents"])}
        rows = geotrellis.read(spark, CATALOG, name, layer["zoom"]).select("col", "row", "xmin", "ymin", "xmax", "ymax")
        for r in rows.collect():
            # sfclayer's TileGrid arithmetic, not GeoTrellis': equal to a few ulps of the layout's coordinates
            assert [r.xmin, r.ymin, r.xmax, r.ymax] == pytest.approx(list(want[(r.col, r.row)]), rel=1e-12, abs=1e-6)


@pytest.mark.parametrize("name", ["files", "files_hilbert", "st_float32"])
def test_boxes_equal_a_brute_force_filter(spark, name):
    layer = next(l for l in LAYERS if l["name"] == name)
    want = expected(layer)
    st = layer["keyType"] == "SpaceTimeKey"
    for box in [(0, 0, 2, 2), (3, 4, 9, 6), (5, 5, 5, 5), (13, 0, 20, 20), (30, 30, 40, 40)]:
        df = geotrellis.read(spark, CATALOG, name, layer["zoom"], keys=box)
        got = sorted(key_of(r.asDict(), st) for r in df.collect())
        assert got == sorted(k for k in want if box[0] <= k[0] <= box[2] and box[1] <= k[1] <= box[3]), (name, box)
        m = metrics(spark, df)
        assert m.get("recordsReturned", 0) == len(got)
    # in SQL too, through the same scan
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW gt_{name} USING sfclayer "
              f"OPTIONS (path '{CATALOG}', geotrellisLayer '{name}/{layer['zoom']}')")
    n = spark.sql(f"SELECT count(*) AS n FROM gt_{name} WHERE col BETWEEN 2 AND 6 AND row <= 5").first().n
    assert n == sum(1 for k in want if 2 <= k[0] <= 6 and k[1] <= 5)


def test_a_small_box_prunes_files_by_name_and_seeks(spark):
    layer = next(l for l in LAYERS if l["name"] == "files")
    assert len(layer["files"]) > 4
    df = geotrellis.read(spark, CATALOG, "files", 0, keys=(2, 2, 3, 3))
    assert df.count() >= 1
    rows = df.collect()
    m = metrics(spark, df)
    assert m["filesPrunedByName"] >= len(layer["files"]) - 2
    assert m["recordsReturned"] == len(rows)
    assert m["recordsRead"] <= len(rows) + 4 * m["rangesRead"]  # at most an index interval before each range


def test_bbox_and_time(spark):
    layer = next(l for l in LAYERS if l["name"] == "st_float32")
    want = expected(layer)
    times = sorted({k[2] for k in want})
    lo, hi = times[1], times[-1]
    df = geotrellis.read(spark, CATALOG, "st_float32", 0, time=(lo * 1000, hi * 1000))
    got = sorted(key_of(r.asDict(), True) for r in df.collect())
    assert got == sorted(k for k in want if lo <= k[2] <= hi)
    meta = geotrellis.info(spark, CATALOG, "files", 0)
    ex, cols = meta["layoutExtent"], meta["layoutCols"]
    tw = (ex[2] - ex[0]) / cols
    th = (ex[3] - ex[1]) / meta["layoutRows"]
    # the inside of tile (4, 5) only
    box = (ex[0] + 4.25 * tw, ex[3] - 5.75 * th, ex[0] + 4.75 * tw, ex[3] - 5.25 * th)
    got = [(r.col, r.row) for r in geotrellis.read(spark, CATALOG, "files", 0, bbox=box).collect()]
    present = (4, 5) in expected(next(l for l in LAYERS if l["name"] == "files"))
    assert got == ([(4, 5)] if present else [])
    with pytest.raises(InvalidArgument):
        geotrellis.read(spark, CATALOG, "files", 0, time=("2020-01-01", "2020-02-01")).collect()


def test_look_ups_equal_what_geotrellis_wrote(spark):
    for layer in LAYERS:
        want = expected(layer)
        st = layer["keyType"] == "SpaceTimeKey"
        with geotrellis.open(spark, CATALOG, layer["name"], layer["zoom"]) as gl:
            keys = sorted(want)
            asked = [(c, r, ms * 1000) for c, r, ms in keys] if st else keys
            for k, tile in zip(keys, gl.get_many(asked)):
                check_tile(layer, dict(tile, col=k[0], row=k[1]), *want[k])
            one = keys[len(keys) // 2]
            check_tile(layer, dict(gl.get(*(asked[len(keys) // 2])), col=one[0], row=one[1]), *want[one])
            assert gl.count() == len(want)
            q = [key_of(t, st) for t in gl.query(keys=(0, 0, 3, 3))]
            assert sorted(q) == sorted(k for k in want if k[0] <= 3 and k[1] <= 3)
            missing = (10_000, 10_000, keys[0][2] * 1000) if st else (10_000, 10_000)
            with pytest.raises(KeyNotFound):
                gl.get(*missing)
            assert gl.get_many([missing]) == [None]
    with pytest.raises(InvalidArgument):
        with geotrellis.open(spark, CATALOG, "files", 0) as gl:
            gl.get(1, 1, "2020-01-01")
    with pytest.raises(LayerNotFound):
        geotrellis.open(spark, CATALOG, "files", 99)


def test_look_ups_go_through_the_look_up_socket_not_py4j(spark, monkeypatch):
    from sfclayer import _classic

    layer = next(l for l in LAYERS if l["keyType"] == "SpaceTimeKey")
    want = expected(layer)
    keys = sorted(want)
    sessions = spark._jvm.io.sfclayer.lookup.GtLookupSessions
    before = sessions.openReaders()
    with geotrellis.open(spark, CATALOG, layer["name"], layer["zoom"]) as gl:
        assert sessions.openReaders() == before + 1

        def no_py4j(*args, **kwargs):
            raise AssertionError(f"a py4j call during a look-up: {args[:2]}")

        with monkeypatch.context() as m:  # every JVM call of sfclayer.geotrellis goes through these
            m.setattr(_classic, "gateway_call", no_py4j)
            c, r, ms = keys[0]
            check_tile(layer, dict(gl.get(c, r, ms * 1000), col=c, row=r), *want[keys[0]])
            got = gl.get_many([(c, r, ms * 1000) for c, r, ms in keys] + [(10_000, 10_000, ms * 1000)])
            assert got[-1] is None and all(t is not None for t in got[:-1])
            assert sorted(key_of(t, True) for t in gl.query()) == keys
            assert gl.count() == len(keys)
            assert [key_of(t, True) for t in gl.query(limit=2)] == [key_of(t, True) for t in gl.query()][:2]
        assert gl._client.open_connections() >= 1  # bound to this layer's reader on the shared server
    assert sessions.openReaders() == before
    with pytest.raises(InvalidArgument):
        gl.get(*keys[0][:2], keys[0][2] * 1000)


def _comparable(tile):
    """A tile dict whose NaN nodata compares equal (two NaNs never do)."""
    return None if tile is None else dict(tile, nodata="NaN" if tile["nodata"] != tile["nodata"] else tile["nodata"])


def test_layers_open_on_spark_connect_and_answer_as_on_classic(spark, connect):
    """GeoTrellis layers go through the session's transport (issue 39): on Spark Connect the server's
    plugins answer, with the same tiles as the classic path's socket and what GeoTrellis wrote."""
    from sfclayer import _connect

    assert geotrellis.layers(connect, CATALOG) == geotrellis.layers(spark, CATALOG)
    readers = lambda: int(_connect.request_text(connect, "readers"))  # noqa: E731
    before = readers()
    for layer in (next(l for l in LAYERS if l["keyType"] == "SpaceTimeKey"), next(l for l in LAYERS if l["name"] == "int16")):
        want = expected(layer)
        st = layer["keyType"] == "SpaceTimeKey"
        keys = sorted(want)
        asked = [(c, r, ms * 1000) for c, r, ms in keys] if st else keys
        missing = (10_000, 10_000, keys[0][2] * 1000) if st else (10_000, 10_000)
        with geotrellis.open(spark, CATALOG, layer["name"], layer["zoom"]) as classic, \
                geotrellis.open(connect, CATALOG, layer["name"], layer["zoom"]) as remote:
            assert readers() == before + 1
            assert remote.info == classic.info == geotrellis.info(connect, CATALOG, layer["name"], layer["zoom"])
            got = remote.get_many(asked + [missing])
            assert got[-1] is None
            for k, tile in zip(keys, got):
                check_tile(layer, dict(tile, col=k[0], row=k[1]), *want[k])
            assert [_comparable(t) for t in got] == [_comparable(t) for t in classic.get_many(asked + [missing])]
            assert _comparable(remote.get(*asked[0])) == _comparable(classic.get(*asked[0]))
            with pytest.raises(KeyNotFound):
                remote.get(*missing)
            assert remote.count() == classic.count() == len(want)
            box = dict(keys=(0, 0, 3, 3))
            assert [_comparable(t) for t in remote.query(**box)] == [_comparable(t) for t in classic.query(**box)]
            c, r = keys[-1][:2]
            ms = keys[-1][2] if st else 0
            assert remote._client.index(c, r, ms) == classic._client.index(c, r, ms)
        assert readers() == before  # closing the layer closed its reader on the server
        with pytest.raises(InvalidArgument):
            remote.get(*asked[0])
    with pytest.raises(LayerNotFound):
        geotrellis.open(connect, CATALOG, "files", 99)


class _Py4jCalls:
    """Counts the py4j commands Python sends (calls and class or member look-ups; not garbage collection)."""

    def __init__(self, spark, monkeypatch):
        client = spark.sparkContext._gateway._gateway_client
        send = client.send_command
        self.sent = []

        def counted(command, *args, **kwargs):
            if not command.startswith("m\nd\n"):  # py4j releasing a Java object
                self.sent.append(command.split("\n")[:3])
            return send(command, *args, **kwargs)

        monkeypatch.setattr(client, "send_command", counted)

    def take(self):
        out, self.sent[:] = list(self.sent), []
        return out


def test_a_cold_open_and_its_close_are_one_py4j_round_trip_each(spark, monkeypatch):
    layer = next(l for l in LAYERS if l["name"] == "int16")
    want = expected(layer)
    key = sorted(want)[0]
    geotrellis.open(spark, CATALOG, "int16", 0).close()  # the first open resolves the JVM methods once
    calls = _Py4jCalls(spark, monkeypatch)
    gl = geotrellis.open(spark, CATALOG, "int16", 0)
    assert len(calls.take()) == 1
    assert gl.info["cellType"] == layer["cellType"] and gl.info["keyIndex"] == "zorder"  # answered with the handle
    check_tile(layer, dict(gl.get(*key), col=key[0], row=key[1]), *want[key])
    assert calls.take() == []
    gl.close()
    assert len(calls.take()) == 1


def test_a_layer_opened_after_another_closed_re_binds_its_pooled_connection(spark, monkeypatch):
    import socket

    from sfclayer import _lookup

    connects = []
    connect = socket.create_connection

    def counted(*args, **kwargs):
        connects.append(args[0])
        return connect(*args, **kwargs)

    monkeypatch.setattr(_lookup.socket, "create_connection", counted)
    # a pool of its own: a layer another test left open on the shared server (a module fixture) keeps that
    # pool's client count above one, and a pool with other clients closes a closed layer's connections
    monkeypatch.setattr(_lookup, "_POOLS", {})
    monkeypatch.setattr(_lookup, "LINGER", 10.0)  # far longer than from one close to the next open (a loaded CI took over 2 s)
    layers = [next(l for l in LAYERS if l["name"] == n) for n in ("int16", "float32", "int16")]
    for layer in layers:  # a cold open per key, as a request handler does
        want = expected(layer)
        key = sorted(want)[0]
        with geotrellis.open(spark, CATALOG, layer["name"], layer["zoom"]) as gl:
            check_tile(layer, dict(gl.get(*key), col=key[0], row=key[1]), *want[key])
            assert gl._client.open_connections() == 1
        assert gl._client.open_connections() == 0  # unbound from the closed layer, still pooled
    assert len(connects) == 1  # one socket for all three
    assert gl._client._pool.count() == 1  # lingering, then closed (tests/test_lookup_server.py)
    gl._client._pool.close()


def test_a_catalog_rewritten_between_opens_is_read_again(spark, tmp_path):
    import shutil

    catalog = tmp_path / "catalog"
    (catalog / "_attributes").mkdir(parents=True)

    def put(name):  # the fixture layer `name`/0 as layer x/0
        shutil.rmtree(catalog / "x", ignore_errors=True)
        shutil.copytree(DATA / "catalog" / name / "0", catalog / "x" / "0")
        doc = json.loads((DATA / "catalog" / "_attributes" / f"{name}___0___metadata.json").read_text())
        (catalog / "_attributes" / "x___0___metadata.json").write_text(json.dumps(doc))
        for crc in (catalog / "_attributes").glob(".*.crc"):
            crc.unlink()

    for name in ("int16", "float32", "mb_float32_ud", "int16"):
        put(name)
        layer = next(l for l in LAYERS if l["name"] == name)
        want = expected(layer)
        with geotrellis.open(spark, str(catalog), "x", 0) as gl:
            assert gl.info["cellType"] == layer["cellType"]
            got = gl.get_many(sorted(want))
            for k, t in zip(sorted(want), got):
                check_tile(layer, dict(t, col=k[0], row=k[1]), *want[k])


def test_convert_then_read_equals(spark, tmp_path):
    from sfclayer import pyramid_levels, read

    dest = str(tmp_path / "wm")
    r = geotrellis.convert(spark, CATALOG, "wm", 3, dest, zooms=[2])
    assert r["options"]["raster"]["tms"] == "WebMercatorQuad" and r["options"]["crs"] == "EPSG:3857"
    assert pyramid_levels(spark, dest) == [2, 3]
    for z in (3, 2):
        layer = next(l for l in LAYERS if l["name"] == "wm" and l["zoom"] == z)
        want = expected(layer)
        got = {(t.col, t.row): t.asDict() for t in read(spark, dest, zoom=z).collect()}
        assert sorted(got) == sorted(want)
        for k, tile in got.items():
            check_tile(layer, tile, *want[k])
    # a space-time layer with a user CRS (UTM: an EPSG code) and NaN nodata
    layer = next(l for l in LAYERS if l["name"] == "st_float32")
    dest = str(tmp_path / "st")
    r = geotrellis.convert(spark, CATALOG, "st_float32", 0, dest)
    assert r["options"]["crs"].startswith("EPSG:")
    want = expected(layer)
    got = {key_of(t.asDict(), True): t.asDict() for t in read(spark, dest).collect()}
    assert sorted(got) == sorted(want)
    for k, tile in got.items():
        check_tile(layer, tile, *want[k])
    with pytest.raises(InvalidArgument):
        geotrellis.convert(spark, CATALOG, "wm", 2, str(tmp_path / "x"), zooms=[3])


def test_cli_convert_geotrellis(spark, tmp_path, capsys):
    from sfclayer import cli, read

    dest = str(tmp_path / "int16")
    assert cli.main(["convert-geotrellis", CATALOG, "int16_ud", "0", dest], spark_factory=lambda: (spark, False)) == 0
    out = capsys.readouterr()
    assert "converted" in out.out
    # the command's progress bar (issue 37): the tasks of the write, done of total
    from .test_progress import _bars

    assert list(_bars(out.err)) == ["convert int16_ud zoom 0"], out.err
    assert len({*_bars(out.err).values()}) == 1 and all(d == t > 0 for d, t in _bars(out.err).values()), out.err
    layer = next(l for l in LAYERS if l["name"] == "int16_ud")
    assert read(spark, dest).count() == len(expected(layer))
    assert cli.main(["convert-geotrellis", CATALOG, "nosuch", "0", dest], spark_factory=lambda: (spark, False)) == 1


def test_serve_reads_geotrellis_layers_in_place(spark):
    from sfclayer import server as srv

    from . import serving as sv

    specs = [f"wm=gt:{CATALOG}#wm", f"gt:{CATALOG}#int16_ud/0"]
    with srv.serve(spark, specs, port=0, background=True, log=lambda *_: None) as running:
        c = sv.Client(running.url)
        try:
            info = c.json("/layers/wm")
            assert info["zooms"] == [2, 3] and info["grid"]["tms"] == "WebMercatorQuad"
            status, headers, body = c.get("/layers/wm/tiles/3/3/2.png")[:3]
            assert status == 200 and body[:4] == b"\x89PNG"
            assert c.get("/layers/wm/tiles/3/0/0.png")[0] == 404  # no such tile in the GeoTrellis layer
            layer = next(l for l in LAYERS if l["name"] == "int16_ud")
            k = sorted(expected(layer))[0]
            assert c.json("/layers/int16_ud")["pixelLayout"] == "raster"
            assert c.get(f"/layers/int16_ud/values/{k[0]}/{k[1]}")[0] == 200
        finally:
            c.close()


def test_sfclayer_only_options_are_refused(spark):
    for option, value in (("versionAsOf", "1"), ("geometry", "POINT (0 0)")):
        with pytest.raises(InvalidArgument, match=option):
            with sfclayer_translated():
                spark.read.format("sfclayer").option("geotrellisLayer", "files/0").option(option, value) \
                    .load(CATALOG).count()
    with pytest.raises(InvalidArgument, match="name/zoom"):
        with sfclayer_translated():
            spark.read.format("sfclayer").option("geotrellisLayer", "files").load(CATALOG).count()


def sfclayer_translated():
    from sfclayer import _jvm

    return _jvm.translated()
