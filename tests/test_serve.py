"""The tile server over HTTP: every endpoint, caching headers, errors, and requests that try to
reach files (none does)."""

import base64
import io
import json
import os
import sys
import time

import numpy as np
import pytest

from sfclayer import server as srv
from sfclayer.curves.metadata import key_index_from_json
from sfclayer.errors import InvalidArgument
from sfclayer.server import catalog, tiles

from . import helpers
from . import serving as sv
from .serving import CORS_ORIGIN, TILE, client, layers, running  # noqa: F401 (fixtures)


def test_start_message_names_the_url_on_loopback(running):
    assert running.host == "127.0.0.1" and running.port > 0
    assert any(running.url in line and "rgb" in line for line in running.lines[:1])


def test_png_tile_is_the_tiles_pixels(client):
    code, headers, body = client.get("/layers/rgb/tiles/0/2/1.png")
    assert code == 200 and headers["content-type"] == "image/png"
    image = sv.decode_png(body)
    np.testing.assert_array_equal(image[..., :3], sv.rgb_pixels(2, 1).transpose(1, 2, 0))
    assert (image[..., 3] == 255).all()


@pytest.mark.skipif("webp" not in tiles.formats(), reason="GDAL without WebP")
def test_webp_tile_is_lossless(client):
    code, headers, body = client.get("/layers/rgb/tiles/0/3/2.webp")
    assert code == 200 and headers["content-type"] == "image/webp"
    np.testing.assert_array_equal(sv.decode_png(body)[..., :3], sv.rgb_pixels(3, 2).transpose(1, 2, 0))


def _rio_tiler_render(array, invalid, rescale, colormap):
    """rio-tiler's own rendering of a one-band tile (the reference for the server's): ImageData,
    rescaled, through rio-tiler's colormap table, as an RGBA image."""
    from rio_tiler.colormap import cmap
    from rio_tiler.models import ImageData

    img = ImageData(np.ma.MaskedArray(array, mask=np.broadcast_to(invalid, array.shape)))
    img.rescale(in_range=(rescale,))
    return sv.decode_png(img.render(img_format="PNG", colormap=cmap.get(colormap)))


def test_single_band_goes_through_the_colormap_with_nodata_transparent(client):
    values = sv.dem_pixels(1, 2)
    invalid = values[0] == -9999.0
    expected = _rio_tiler_render(values, invalid, (1000, 1500), "terrain")
    for query in ("colormap_name=terrain&rescale=1000,1500", "colormap_name=Terrain&rescale=1000,1500"):
        code, headers, body = client.get(f"/layers/dem/tiles/0/1/2.png?{query}")
        assert code == 200 and "warning" not in headers
        image = sv.decode_png(body)
        np.testing.assert_array_equal(image, expected)
        assert (image[invalid][:, 3] == 0).all() and (image[~invalid][:, 3] == 255).all()
    # sfclayer's older name of the parameter: the same tile, and TiTiler's routes' deprecation note
    code, headers, body = client.get("/layers/dem/tiles/0/1/2.png?colormap=terrain&rescale=1000,1500")
    assert code == 200 and np.array_equal(sv.decode_png(body), expected)
    assert "colormap_name=<name>" in headers["warning"] and headers["warning"].startswith("299 ")


def test_single_band_defaults_to_viridis_over_the_tiles_own_values(client):
    values = sv.dem_pixels(2, 1)
    invalid = values[0] == -9999.0
    valid = values[0][~invalid]
    expected = _rio_tiler_render(values, invalid, (float(valid.min()), float(valid.max())), "viridis")
    code, _, body = client.get("/layers/dem/tiles/0/2/1.png")
    assert code == 200
    np.testing.assert_array_equal(sv.decode_png(body), expected)


def test_rgba_and_wide_rgb_tiles_are_drawn_as_rio_tiler_draws_them():
    from rio_tiler.models import ImageData

    rng = np.random.default_rng(34)
    valid = np.ones((8, 8), bool)
    valid[:2] = False
    rgba = rng.integers(0, 256, (4, 8, 8)).astype(np.uint8)  # a fourth band is the alpha, under the validity
    image = sv.decode_png(tiles.render_pixels(rgba, valid))
    np.testing.assert_array_equal(image[..., :3][valid], rgba[:3].transpose(1, 2, 0)[valid])
    np.testing.assert_array_equal(image[..., 3], np.where(valid, rgba[3], 0))
    wide = rng.integers(0, 4000, (3, 8, 8)).astype(np.uint16)  # other types: rescaled to 0..255, as rio-tiler does
    for rescale in ((0, 4000), None):
        img = ImageData(np.ma.MaskedArray(wide.copy(), mask=np.broadcast_to(~valid, wide.shape)))
        img.rescale(in_range=(rescale or (int(wide[:, valid].min()), int(wide[:, valid].max())),))
        want = sv.decode_png(img.render(img_format="PNG"))
        np.testing.assert_array_equal(sv.decode_png(tiles.render_pixels(wide, valid, rescale=rescale)), want)


@pytest.mark.skipif("webp" not in tiles.formats(), reason="GDAL without WebP")
def test_webp_single_band_equals_the_png(client):
    code, headers, body = client.get("/layers/dem/tiles/0/1/2.webp?colormap_name=terrain&rescale=1000,1500")
    assert code == 200 and headers["content-type"] == "image/webp"
    png = sv.decode_png(client.get("/layers/dem/tiles/0/1/2.png?colormap_name=terrain&rescale=1000,1500")[2])
    webp = sv.decode_png(body)
    np.testing.assert_array_equal(webp[..., 3], png[..., 3])
    np.testing.assert_array_equal(webp[..., :3][png[..., 3] > 0], png[..., :3][png[..., 3] > 0])


def test_demo_layout_tiles_and_padded_edge_tiles(client):
    code, _, body = client.get("/layers/hwc/tiles/0/1/1.png")
    assert code == 200
    np.testing.assert_array_equal(sv.decode_png(body)[..., :3], sv.hwc_pixels(1, 1))
    code, _, body = client.get("/layers/hwc/tiles/0/5/0.png")  # a 10 px wide edge tile, padded to 16
    image = sv.decode_png(body)
    assert image.shape == (TILE, TILE, 4)
    np.testing.assert_array_equal(image[:, :10, :3], sv.hwc_pixels(5, 0, (10, TILE)))
    assert (image[:, 10:, 3] == 0).all() and (image[:, :10, 3] == 255).all()


def test_space_time_tiles_by_iso_time(client):
    for i, t in enumerate(sv.TIMES):
        code, _, body = client.get(f"/layers/st/tiles/0/3/1.png?time={t.isoformat()}Z&colormap_name=gray&rescale=0,255")
        assert code == 200, body
        values = sv.st_pixels(3, 1, i)
        assert values[0, 0, 0] == 3 * 10 + 1 + 100 * i  # one value a time: each time its own grey
        expected = _rio_tiler_render(values, np.zeros(values.shape[1:], bool), (0, 255), "gray")
        np.testing.assert_array_equal(sv.decode_png(body), expected)
    assert client.get("/layers/st/tiles/0/3/1.png")[0] == 400          # a time is needed
    assert client.get("/layers/st/tiles/0/3/1.png?time=2031-01-01")[0] == 404
    assert client.get("/layers/rgb/tiles/0/3/1.png?time=2024-05-01")[0] == 400


def test_values_endpoint(client, layers):
    doc = client.json("/layers/rgb/values/4/2")
    v = doc["values"]
    pixels = np.frombuffer(base64.b64decode(v["pixels"]), np.uint8).reshape(3, TILE, TILE)
    np.testing.assert_array_equal(pixels, sv.rgb_pixels(4, 2))
    assert (v["width"], v["height"], v["bands"], v["dtype"]) == (TILE, TILE, 3, "uint8")
    # the index of key (4, 2) on the layer's own curve, from its version document (not the server's)
    ki = key_index_from_json(helpers.metadata(layers["rgb"])["keyIndex"])
    assert doc["file"].startswith("part-r-") and doc["index"] == ki.index(4, 2)
    st = client.json(f"/layers/st/values/0/0?time={sv.TIMES[1].isoformat()}")
    assert np.frombuffer(base64.b64decode(st["values"]["pixels"]), "<i2")[0] == 100
    assert client.get(f"/layers/rgb/values/{sv.MISSING[0]}/{sv.MISSING[1]}")[0] == 404


def test_keys_endpoint_names_the_file(client, running):
    lv = running.served["rgb"].base
    doc = client.json("/layers/rgb/keys/2/3")
    assert doc["index"] == lv.key_index.index(2, 3) and doc["file"] == lv.file_of(doc["index"])
    assert len({client.json(f"/layers/rgb/keys/{c}/{r}")["file"] for c, r in sv.keys()}) > 1
    assert client.json("/layers/rgb/keys/99/0")["inBounds"] is False


def test_layers_and_tilejson(client):
    doc = client.json("/layers")
    names = [layer["name"] for layer in doc["layers"]]
    assert names == ["rgb", "dem", "hwc", "st", "merc"]
    rgb = client.json("/layers/rgb")
    assert rgb["grid"]["keyBounds"] == [0, 0, 5, 3] and rgb["grid"]["tileWidth"] == TILE
    assert rgb["lonlatBounds"] == list(sv.EXTENT) and rgb["zooms"] == [0] and not rgb["spaceTime"]
    assert client.json("/layers/st")["timeBounds"]["resolution"] == 86_400_000_000
    merc = client.json("/layers/merc/tilejson.json")
    assert merc["tilejson"] == "3.0.0" and merc["scheme"] == "xyz"
    assert merc["tiles"][0].endswith("/layers/merc/tiles/{z}/{x}/{y}.png") and merc["tiles"][0].startswith("http://127.0.0.1:")
    assert merc["minzoom"] == merc["maxzoom"] == sv.MERCATOR_ZOOM and merc["tileMatrixSet"] == "WebMercatorQuad"
    assert merc["center"][2] == sv.MERCATOR_ZOOM
    assert doc["formats"][0] == "png" and set(doc["formats"]) <= {"png", "webp"}
    # its tiles carry the drawing parameters, colormap by its current name (the TileJSON notes the old one)
    code, headers, body = client.get("/layers/merc/tilejson.json?colormap=terrain&rescale=0,9")
    assert code == 200 and "colormap_name=<name>" in headers["warning"]
    assert json.loads(body)["tiles"][0].endswith("/layers/merc/tiles/{z}/{x}/{y}.png?colormap_name=terrain&rescale=0,9")
    import morecantile

    tms = morecantile.tms.get("WebMercatorQuad")
    west, _, _, north = tms.bounds(morecantile.Tile(2, 1, 3))
    _, south, east, _ = tms.bounds(morecantile.Tile(5, 4, 3))
    np.testing.assert_allclose(merc["bounds"], [west, south, east, north], atol=1e-6)


def test_ogc_api_tiles(client):
    assert "http://www.opengis.net/spec/ogcapi-tiles-1/1.0/conf/core" in client.json("/conformance")["conformsTo"]
    assert client.json("/?f=json")["links"]
    sets = client.json("/tileMatrixSets")["tileMatrixSets"]
    assert [s["id"] for s in sets] == ["WebMercatorQuad"]
    assert client.json("/tileMatrixSets/WebMercatorQuad")["id"] == "WebMercatorQuad"
    assert [c["id"] for c in client.json("/collections")["collections"]] == ["rgb", "dem", "hwc", "st", "merc"]
    ts = client.json("/collections/merc/tiles/WebMercatorQuad")
    assert ts["tileMatrixSetLimits"] == [{"tileMatrix": "3", "minTileRow": 1, "maxTileRow": 4,
                                         "minTileCol": 2, "maxTileCol": 5}]
    # Row before column: tile col 4, row 2 (XYZ 3/4/2) is OGC 3/2/4.
    code, _, ogc_body = client.get("/collections/merc/tiles/WebMercatorQuad/3/2/4")
    assert code == 200
    _, _, xyz_body = client.get("/layers/merc/tiles/3/4/2.png")
    np.testing.assert_array_equal(sv.decode_png(ogc_body), sv.decode_png(xyz_body))
    np.testing.assert_array_equal(sv.decode_png(ogc_body)[..., :3], sv.rgb_pixels(2, 1).transpose(1, 2, 0))
    assert client.get("/collections/rgb/tiles/WebMercatorQuad/0/0/0")[0] == 404   # not on a TMS
    assert client.get("/collections/merc/tiles/WorldCRS84Quad/3/2/4")[0] == 404
    assert client.get("/layers/merc/tiles/0/0/0.png")[0] == 404                  # not its zoom


def test_etag_and_304(client):
    code, headers, body = client.get("/layers/rgb/tiles/0/1/1.png")
    etag = headers["etag"]
    assert code == 200 and "max-age" in headers["cache-control"] and etag.startswith('"v')
    code, headers, body = client.get("/layers/rgb/tiles/0/1/1.png", {"If-None-Match": etag})
    assert code == 304 and body == b"" and headers["etag"] == etag
    # Other parameters, another tile or another layer: other tags.
    assert client.get("/layers/rgb/tiles/0/1/2.png")[1]["etag"] != etag
    assert client.get("/layers/dem/tiles/0/1/1.png")[1]["etag"] != client.get("/layers/dem/tiles/0/1/1.png?rescale=0,1")[1]["etag"]
    code, headers, _ = client.get("/layers/rgb/values/1/1")
    assert client.get("/layers/rgb/values/1/1", {"If-None-Match": headers["etag"]})[0] == 304


def test_if_none_match_compares_weakly(client):
    """RFC 9110 13.1.2: W/"x" matches "x" (nginx weakens the tags of responses it compresses)."""
    etag = client.get("/layers/rgb/tiles/0/1/1.png")[1]["etag"]
    assert client.get("/layers/rgb/tiles/0/1/1.png", {"If-None-Match": f'"other", W/{etag}'})[0] == 304
    assert client.get("/layers/rgb/tiles/0/1/1.png", {"If-None-Match": 'W/"other"'})[0] == 200
    values = client.get("/layers/rgb/values/1/1")[1]["etag"]
    assert values.startswith('W/"')  # the JSON goes out gzipped or not: one weak tag for both
    assert client.get("/layers/rgb/values/1/1", {"If-None-Match": values[2:]})[0] == 304


def test_tilejson_only_for_layers_on_web_mercator(client):
    # rgb is on a lon/lat grid of its own: a TileJSON would make every client fetch 0/0/0 as the world
    code, headers, body = client.get("/layers/rgb/tilejson.json")
    error = json.loads(body)["error"]
    assert code == 404 and headers["content-type"] == "application/json"
    assert "not WebMercatorQuad" in error and "/layers/rgb" in error
    assert client.get("/layers/dem/tilejson.json?colormap=terrain")[0] == 404


def test_cors_for_the_configured_origin_with_preflight(client):
    code, headers, _ = client.get("/layers/merc/tilejson.json", {"Origin": CORS_ORIGIN})
    assert code == 200 and headers["access-control-allow-origin"] == CORS_ORIGIN
    assert "etag" in headers["access-control-expose-headers"].lower()
    code, headers, _ = client.get("/layers/merc/tiles/3/4/2.png", {"Origin": CORS_ORIGIN})
    assert code == 200 and headers["access-control-allow-origin"] == CORS_ORIGIN
    code, headers, _ = client.get("/layers", {"Origin": "https://elsewhere.example"})
    assert code == 200 and "access-control-allow-origin" not in headers
    client.conn.request("OPTIONS", "/layers/merc/tilejson.json", headers={
        "Origin": CORS_ORIGIN, "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "if-none-match"})
    r = client.conn.getresponse()
    r.read()
    assert r.status == 200 and r.getheader("access-control-allow-origin") == CORS_ORIGIN
    assert "GET" in r.getheader("access-control-allow-methods")
    assert "if-none-match" in r.getheader("access-control-allow-headers").lower()


def test_json_is_gzipped_for_clients_that_accept_it_tiles_are_not(client):
    import gzip

    plain = client.get("/layers")[2]
    code, headers, body = client.get("/layers", {"Accept-Encoding": "gzip"})
    assert code == 200 and headers["content-encoding"] == "gzip" and "accept-encoding" in headers["vary"].lower()
    assert gzip.decompress(body) == plain and len(body) < len(plain) / 2
    code, headers, body = client.get("/layers/rgb/tiles/0/1/1.png", {"Accept-Encoding": "gzip"})
    assert code == 200 and "content-encoding" not in headers and sv.decode_png(body).shape == (TILE, TILE, 4)


def test_favicon(client):
    from PIL import Image

    code, headers, body = client.get("/favicon.ico")
    assert code == 200 and headers["content-type"] == "image/x-icon"
    assert Image.open(io.BytesIO(body)).format == "ICO"


def test_host_header_must_name_this_server(client, running):
    # DNS rebinding: a page of evil.example whose name now resolves to 127.0.0.1 sends Host: evil.example
    code, _, body = client.get("/layers/rgb/values/1/1", {"Host": f"evil.example:{running.port}"})
    assert code == 400 and "evil.example" in json.loads(body)["error"] and "--allowed-host" in json.loads(body)["error"]
    for host in (f"localhost:{running.port}", f"127.0.0.1:{running.port}", "LOCALHOST", f"[::1]:{running.port}"):
        assert client.get("/layers", {"Host": host})[0] == 200, host


def test_missing_tiles_404_and_transparent_option(client):
    code, headers, body = client.get(f"/layers/rgb/tiles/0/{sv.MISSING[0]}/{sv.MISSING[1]}.png")
    assert code == 404 and json.loads(body)["error"].startswith("layer rgb has no tile at key (5, 3)")
    code, headers, body = client.get(f"/layers/rgb/tiles/0/{sv.MISSING[0]}/{sv.MISSING[1]}.png?empty=transparent")
    assert code == 404 and headers["content-type"] == "image/png"
    image = sv.decode_png(body)
    assert image.shape == (TILE, TILE, 4) and (image[..., 3] == 0).all()
    assert client.get("/layers/rgb/tiles/0/100/0.png")[0] == 404        # outside the key bounds
    assert client.get("/layers/nope/tiles/0/0/0.png")[0] == 404
    assert client.get("/no/such/route")[0] == 404


@pytest.mark.parametrize("path, fragment", [
    ("/layers/rgb/tiles/0/a/1.png", "x: 'a' is not an integer (-2^31..2^31-1)"),
    ("/layers/rgb/tiles/0/1/1.5.png", "y: '1.5' is not an integer"),
    ("/layers/rgb/tiles/99999999999/1/1.png", "z: '99999999999'"),
    ("/layers/rgb/tiles/0/1/1.gif", "image format: 'gif' is not served"),
    ("/layers/dem/tiles/0/1/1.png?colormap=nosuchmap", "colormap: 'nosuchmap' is unknown"),
    ("/layers/dem/tiles/0/1/1.png?colormap_name=nosuchmap", "colormap_name: 'nosuchmap' is unknown"),
    ("/layers/dem/tiles/0/1/1.png?colormap_name=gray&colormap=terrain", "colormap: 'terrain' is given with colormap_name"),
    ("/layers/dem/tiles/0/1/1.png?colormap=%7B%221%22%3A%5B0%2C0%2C0%2C255%5D%7D", "colormap: a JSON colormap"),
    ("/layers/merc/tilejson.json?colormap_name=nosuchmap", "colormap_name: 'nosuchmap' is unknown"),
    ("/layers/dem/tiles/0/1/1.png?rescale=5", "rescale: '5' is not two numbers"),
    ("/layers/dem/tiles/0/1/1.png?rescale=9,1", "rescale: '9,1' is not a range ('min,max', finite, min < max)"),
    ("/layers/dem/tiles/0/1/1.png?empty=maybe", "empty: 'maybe' is not a choice"),
    ("/layers/dem/tiles/0/1/1.png?bogus=1", "query parameters: bogus are unknown"),
    ("/layers/st/tiles/0/1/1.png?time=yesterday", "time: 'yesterday' is not a time"),
    ("/layers/rgb/values/x/1", "col: 'x' is not an integer"),
])
def test_bad_requests_answer_400_json(client, path, fragment):
    code, headers, body = client.get(path)
    assert code == 400 and headers["content-type"] == "application/json"
    doc = json.loads(body)
    assert doc["status"] == 400 and fragment in doc["error"]


class _FileWatch:
    """Records every file the Python process opens or lists while armed (``sys.addaudithook``)."""

    events = ("open", "os.listdir", "os.scandir", "os.stat", "os.open")  # audit events naming paths

    def __init__(self):
        self.armed = False
        self.seen = []
        sys.addaudithook(self._hook)  # hooks cannot be removed: this one only records while armed

    def _hook(self, event, args):
        if self.armed and event in ("open", "os.listdir", "os.scandir") and args:
            self.seen.append((event, str(args[0])))


@pytest.fixture(scope="module")
def file_watch():
    return _FileWatch()


@pytest.mark.parametrize("path", [
    "/layers/..%2F..%2F..%2Fetc%2Fpasswd/tiles/0/0/0.png",
    "/layers/../../etc/passwd",
    "/layers/%2e%2e/tiles/0/0/0.png",
    "/layers/rgb/tiles/0/..%2F..%2Fetc/passwd.png",
    "/layers/rgb/tiles/0/0/..%2F..%2F..%2Fetc%2Fpasswd.png",
    "/layers/rgb/values/..%2F../1",
    "/layers/dem/tiles/0/1/1.png?colormap=..%2F..%2Fetc%2Fpasswd",
    "/layers/st/tiles/0/1/1.png?time=..%2F..%2Fetc%2Fpasswd",
    "/static/..%2F..%2F..%2Fetc%2Fpasswd",
    "/static/../app.py",
    "/static/%2e%2e/app.py",
    "/collections/rgb/tiles/..%2F..%2Fetc/0/0/0",
    "/tileMatrixSets/..%2F..%2Fetc%2Fpasswd",
])
def test_path_traversal_touches_no_file(client, file_watch, path):
    file_watch.seen.clear()
    file_watch.armed = True
    try:
        code, headers, body = client.get(path)
    finally:
        file_watch.armed = False
    assert code in (400, 404), (path, code)
    assert b"root:" not in body and b"import" not in body
    touched = [p for _, p in file_watch.seen if "passwd" in p or "etc" in p.split(os.sep) or p.endswith("app.py")]
    assert touched == []


def test_viewer_and_its_static_files(client):
    code, headers, body = client.get("/")
    assert code == 200 and headers["content-type"].startswith("text/html")
    for src in (b"static/leaflet/leaflet.js", b"static/viewer.js", b"static/leaflet/leaflet.css"):
        assert src in body
        code, _, js = client.get("/" + src.decode())
        assert code == 200 and len(js) > 1000
    assert b"http://" not in body and b"https://" not in body  # nothing from a CDN
    assert client.get("/static/leaflet/images/layers.png")[0] == 200


def test_one_log_line_per_request(running, client):
    before = len(running.lines)
    client.get("/layers/rgb/tiles/0/0/0.png")
    client.get("/layers/rgb/tiles/0/0/9.png")
    # A line is written once the response is sent: the client may read it a moment before.
    deadline = time.time() + 5
    while time.time() < deadline and len([x for x in running.lines[before:] if "/rgb/tiles/0/0/" in x]) < 2:
        time.sleep(0.01)
    lines = [x for x in running.lines[before:] if "/rgb/tiles/0/0/" in x]
    assert len(lines) == 2
    assert lines[0].startswith('127.0.0.1 "GET /layers/rgb/tiles/0/0/0.png" 200 ') and lines[0].endswith("ms")
    assert '"GET /layers/rgb/tiles/0/0/9.png" 404' in lines[1]


def test_coalescing_gathers_requests_behind_a_running_look_up_into_sorted_get_many(spark, layers):
    lines = []
    with srv.serve(spark, [layers["rgb"]], port=0, coalesce_ms=50, background=True, log=lines.append) as server:
        coalescer = server.app.coalescers[("rgb", 0)]
        wanted = [(c, r) for c, r in sv.keys()][:12] + [(0, 0)] * 3
        calls, results = sv.fetch_coalesced(server, "rgb", wanted)
        assert {code for code, _, _ in results.values()} == {200}
        assert coalescer.requests == len(wanted)
        # Every key read, few batches; a key is read once per batch (one tile may land in two batches).
        assert set().union(*map(set, calls)) == set(wanted) and len(calls) <= 4
        assert sum(len(c) for c in calls) < len(wanted)
        assert len(calls[0]) == 1  # a quiet server sends the first request at once
        lv = server.served["rgb"].base
        for batch in calls:
            indexes = [lv.index(*k) for k in batch]
            assert indexes == sorted(indexes) and len(set(batch)) == len(batch)


def test_layer_names_and_bad_paths(spark, tmp_path):
    assert catalog.layer_names(["/a/b/", "x=/c", "/d/b"]) == {"b": "/a/b/", "x": "/c", "b-2": "/d/b"}
    with pytest.raises(InvalidArgument, match="layer name"):
        catalog.layer_names(["bad name=/x"])
    from sfclayer.errors import LayerNotFound

    with pytest.raises(LayerNotFound):
        srv.serve(spark, [str(tmp_path / "nothing")], port=0, background=True, log=lambda *_: None)
