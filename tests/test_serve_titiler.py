"""TiTiler's endpoints over sfclayer layers (issue 34): a layer on its source's own grid warped to any
tile matrix set, and a WebMercatorQuad layer with its pyramid served from its stored tiles, checked
against rio-tiler and rasterio reading the source GeoTIFF, and GDAL's WMTS driver reading the
capabilities document."""

import json
import urllib.parse

import numpy as np
import pytest
import rasterio

import sfclayer
from sfclayer import server as srv

from . import serving as sv
from .raster_sources import blue_marble_window, needs_basemap

pytestmark = needs_basemap

TILE = 64
# a window of the Blue Marble whose edges are not on tile edges: 8..13°E, 44..47.2°N (75 × 48 px)
WEST, SOUTH, EAST, NORTH = 8.0, 44.0, 13.0, 47.2


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    return blue_marble_window(tmp_path_factory.mktemp("src") / "alps.tif", WEST, SOUTH, EAST, NORTH)


@pytest.fixture(scope="module")
def served(spark, source, tmp_path_factory):
    root = tmp_path_factory.mktemp("titiler")
    own, merc = str(root / "own"), str(root / "merc")
    sfclayer.ingest(spark, source, own, tms=None, tile_size=16)  # 5 × 3 tiles, no pyramid
    sfclayer.ingest(spark, source, merc, zoom=7, resampling="nearest")
    sfclayer.pyramid(spark, merc, min_zoom=4)
    with srv.serve(spark, [f"own={own}", f"merc={merc}"], port=0, background=True, log=lambda *_: None,
                   cors_origins=[sv.CORS_ORIGIN]) as server:
        yield server


@pytest.fixture
def client(served):
    c = sv.Client(served.url)
    yield c
    c.close()


def _png(client, path):
    code, headers, body = client.get(path)
    assert code == 200, (path, code, body[:300])
    return sv.decode_png(body), headers


def test_warped_web_mercator_tiles_equal_rio_tiler_on_the_source(client, source):
    from rio_tiler.io import Reader

    with Reader(source) as src:
        for z, x, y in [(7, 67, 45), (7, 66, 46), (8, 133, 91)]:
            for method in ("nearest", "bilinear"):
                want = src.tile(x, y, z, reproject_method=method)
                got, headers = _png(client, f"/layers/own/tiles/WebMercatorQuad/{z}/{x}/{y}.png?reproject={method}")
                assert got.shape == (256, 256, 4)
                np.testing.assert_array_equal(got[..., 3] > 0, ~want.array.mask.all(axis=0), err_msg=(z, x, y))
                valid = got[..., 3] > 0
                diff = np.abs(got[..., :3].astype(int) - want.array.data.transpose(1, 2, 0).astype(int))[valid]
                assert valid.any() and diff.max() <= 1, (z, x, y, method, diff.max())
                assert headers["content-crs"].endswith("3857>")


def test_point_is_the_source_pixel(client, source):
    with rasterio.open(source) as ds:
        for lon, lat in [(8.01, 47.19), (10.5, 45.5), (12.99, 44.01), (11.2333, 46.0667)]:
            want = [int(v) for v in next(ds.sample([(lon, lat)]))]
            got = client.json(f"/layers/own/point/{lon},{lat}")
            assert got["values"] == want, (lon, lat)
    assert client.get("/layers/own/point/20,20")[0] == 404  # outside


def test_tilejson_bounds_centre_and_zooms_are_the_datas(client, source):
    from rio_tiler.io import Reader

    for name, tol in (("own", 1e-9), ("merc", 360 / 2 ** 7 / 256)):  # merc: one pixel at zoom 7
        tj = client.json(f"/layers/{name}/WebMercatorQuad/tilejson.json")
        np.testing.assert_allclose(tj["bounds"], [WEST, SOUTH, EAST, NORTH], atol=tol, err_msg=name)
        assert tj["tiles"][0].startswith(f"http://127.0.0.1:{client.conn.port}/layers/{name}/tiles/WebMercatorQuad/")
        assert WEST < tj["center"][0] < EAST and SOUTH < tj["center"][1] < NORTH
    merc = client.json("/layers/merc/WebMercatorQuad/tilejson.json")
    assert (merc["minzoom"], merc["maxzoom"]) == (4, 7)
    own = client.json("/layers/own/WebMercatorQuad/tilejson.json")
    with Reader(source) as src:  # the zoom nearest the source's resolution, as rio-tiler tells it
        assert own["maxzoom"] == src.maxzoom and own["minzoom"] >= src.minzoom
    # the col/row TileJSON of the WebMercatorQuad layer: the data's bounds, not the whole world
    legacy = client.json("/layers/merc/tilejson.json")
    np.testing.assert_allclose(legacy["bounds"], [WEST, SOUTH, EAST, NORTH], atol=360 / 2 ** 7 / 256)


def test_stored_tiles_are_served_as_they_are(client, served):
    lv = served.served["merc"].levels[7]
    tile = lv.layer.get(67, 45)
    want = sfclayer.raster.to_numpy(tile, masked=True)
    got, _ = _png(client, "/layers/merc/tiles/WebMercatorQuad/7/67/45.png")
    np.testing.assert_array_equal(got[..., :3][got[..., 3] > 0], want.transpose(1, 2, 0)[got[..., 3] > 0].data)
    np.testing.assert_array_equal(got[..., 3] > 0, ~want.mask.all(axis=0))
    # the fast path (no parameters) answers what the factory's path (a parameter) renders
    full, _ = _png(client, "/layers/merc/tiles/WebMercatorQuad/7/67/45.png?return_mask=true")
    np.testing.assert_array_equal(got, full)
    # a pyramid level: z picks it
    level = served.served["merc"].levels[5]
    want5 = sfclayer.raster.to_numpy(level.layer.get(16, 11), masked=True)
    got5, _ = _png(client, "/layers/merc/tiles/WebMercatorQuad/5/16/11.png")
    np.testing.assert_array_equal(got5[..., 3] > 0, ~want5.mask.all(axis=0))


def test_titiler_parameters(client):
    base = "/layers/own/tiles/WebMercatorQuad/7/67/45"
    rgb, _ = _png(client, f"{base}.png")
    one, _ = _png(client, f"{base}.png?bidx=2")
    assert (one[..., 0] == rgb[..., 1]).all() and (one[..., 0] == one[..., 2]).all()  # gray of band 2
    viridis, _ = _png(client, f"{base}.png?bidx=1&colormap_name=viridis&rescale=0,255")
    assert not (viridis[..., 0] == viridis[..., 1]).all()
    code, headers, body = client.get(f"{base}.png?bidx=1&colormap=viridis&rescale=0,255")  # sfclayer's old name
    assert code == 200 and "deprecated" in headers["warning"]
    assert (sv.decode_png(body) == viridis).all()
    cmap = json.dumps({str(v): [v, 0, 0, 255] for v in range(256)})
    red, _ = _png(client, f"{base}.png?bidx=3&colormap={urllib.parse.quote(cmap)}")
    assert (red[..., 0] == rgb[..., 2]).all() and (red[..., 1] == 0).all()
    ratio, _ = _png(client, f"{base}.png?expression=b1*0%2Bb2&rescale=0,255")
    assert (ratio[..., 0] == rgb[..., 1]).all()
    nomask, _ = _png(client, f"{base}.png?return_mask=false")
    assert nomask.shape[2] == 4 and (nomask[..., 3] == 255).all()
    big, _ = _png(client, f"{base}@2x.png")
    assert big.shape == (512, 512, 4)
    code, _, body = client.get(f"{base}.png?colormap_name=nope")
    assert code in (400, 422) and b"nope" in body
    code, _, body = client.get(f"{base}.png?bidx=9")  # warped
    assert code == 400 and b"bidx: 9" in body
    code, _, body = client.get("/layers/merc/tiles/WebMercatorQuad/7/67/45.png?bidx=9")  # stored
    assert code == 400 and b"bidx: 9" in body


def test_other_tile_matrix_sets(client, source):
    from morecantile import tms
    from rio_tiler.io import Reader

    t = tms.get("WorldCRS84Quad")
    x, y, z = t.tile(10.5, 45.5, 7)
    with Reader(source, tms=t) as src:
        want = src.tile(x, y, z)
    got, headers = _png(client, f"/layers/own/tiles/WorldCRS84Quad/{z}/{x}/{y}.png")
    valid = got[..., 3] > 0
    np.testing.assert_array_equal(valid, ~want.array.mask.all(axis=0))
    assert (got[..., :3][valid] == want.array.data.transpose(1, 2, 0)[valid]).all()


def test_warping_without_a_pyramid_is_bounded(client, served, spark):
    # own has no pyramid: a zoom-2 tile would read every tile of it at 1/15° (here only 15 tiles,
    # so a smaller budget shows the refusal)
    from sfclayer.server.tiler import LayerReader, TooManyTiles

    with LayerReader(served.served["own"], max_tiles=4) as src:
        with pytest.raises(TooManyTiles, match="sfclayer pyramid"):
            src.tile(2, 1, 2)
    paths = [f"{n}={served.served[n].path}" for n in ("own", "merc")]
    with srv.serve(spark, paths, port=0, background=True, log=lambda *_: None, max_tiles=4) as small:
        c = sv.Client(small.url)
        try:
            code, _, body = c.get("/layers/own/tiles/WebMercatorQuad/2/2/1.png")
            assert code == 400 and b"sfclayer pyramid" in body and b"15 tiles" in body
            assert c.get("/layers/merc/tiles/WebMercatorQuad/4/8/5.png")[0] == 200  # a level of its pyramid
        finally:
            c.close()


def test_info_statistics_preview_bbox(client, source):
    info = client.json("/layers/own/info")
    assert info["dtype"] == "uint8" and info["count"] == 3 and info["width"] == 80 and info["height"] == 48
    np.testing.assert_allclose(info["bounds"], [WEST, SOUTH, EAST, NORTH])
    stats = client.json("/layers/own/statistics")
    with rasterio.open(source) as ds:
        a = ds.read()
    for i, band in enumerate(("b1", "b2", "b3")):
        assert stats[band]["min"] == a[i].min() and stats[band]["max"] == a[i].max()
        assert stats[band]["mean"] == pytest.approx(a[i].mean(), rel=1e-9)
    prev, _ = _png(client, "/layers/own/preview.png?max_size=75")
    assert prev.shape == (48, 75, 4)
    np.testing.assert_array_equal(prev[..., :3], a.transpose(1, 2, 0))
    part, _ = _png(client, "/layers/own/bbox/9,45,10,46.png")
    np.testing.assert_array_equal(part[..., :3], a[:, 18:33, 15:30].transpose(1, 2, 0))


def test_wmts_capabilities_read_by_gdal(client, served, tmp_path):
    code, headers, body = client.get("/layers/merc/WMTSCapabilities.xml?tile_format=png")
    assert code == 200 and b"TileMatrixSet" in body
    doc = tmp_path / "wmts.xml"
    doc.write_bytes(body)
    with rasterio.open(f"WMTS:{doc},layer=merc_WebMercatorQuad_default,tilematrixset=WebMercatorQuad,tilematrix=7") as ds:
        # the zoom-7 matrix: tile (67, 45)'s pixels as GDAL reads them through its tiles
        left, top = ds.transform * (0, 0)
        res = ds.transform.a
        half = 20037508.342789244
        size = 2 * half / 2 ** 7
        col = round((-half + 67 * size - left) / res)
        row = round((top - (half - 45 * size)) / res)
        window = ds.read(window=((row, row + 256), (col, col + 256)))
    want, _ = _png(client, "/layers/merc/tiles/WebMercatorQuad/7/67/45.png")
    np.testing.assert_array_equal(window.transpose(1, 2, 0), want)  # with the alpha band


def test_serve_reads_in_process_without_java(served, tmp_path):
    """`sfclayer serve` with no java on PATH (and no JAVA_HOME): the in-process reader, two worker processes."""
    import os
    import signal
    import subprocess
    import sys
    import time

    paths = [f"{n}={served.served[n].path}" for n in ("own", "merc")]
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "SPARK_HOME")}
    env["PATH"] = os.path.dirname(sys.executable)  # the venv's bin: python, no java
    log = open(tmp_path / "serve.log", "w+")
    proc = subprocess.Popen([sys.executable, "-m", "sfclayer", "serve", *paths, "--port", "0", "--processes", "2"],
                            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        url = None
        for _ in range(600):
            log.seek(0)
            text = log.read()
            if "http://" in text:
                url = "http://" + text.split("http://", 1)[1].split("/", 1)[0] + "/"
                break
            assert proc.poll() is None, text
            time.sleep(0.1)
        assert url, text
        c = sv.Client(url)
        try:
            got, _ = _png(c, "/layers/merc/tiles/WebMercatorQuad/7/67/45.png")
            want, _ = _png(sv.Client(served.url), "/layers/merc/tiles/WebMercatorQuad/7/67/45.png")
            np.testing.assert_array_equal(got, want)
            assert c.json("/layers/own/point/10.5,45.5")["values"] == \
                sv.Client(served.url).json("/layers/own/point/10.5,45.5")["values"]
        finally:
            c.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        log.close()


def test_png_encoder_is_read_exactly_by_pillow_and_gdal(tmp_path):
    from PIL import Image

    from sfclayer.server.tiling import _encode_png

    rng = np.random.default_rng(34)
    for n, mode in ((1, "L"), (2, "LA"), (3, "RGB"), (4, "RGBA")):
        bands = [rng.integers(0, 256, (37, 53)).astype(np.uint8) for _ in range(n)]
        body = _encode_png(bands)
        image = Image.open(__import__("io").BytesIO(body))
        assert image.mode == mode
        np.testing.assert_array_equal(np.asarray(image), np.stack(bands, -1) if n > 1 else bands[0])
        (tmp_path / f"{n}.png").write_bytes(body)
        with rasterio.open(tmp_path / f"{n}.png") as ds:
            np.testing.assert_array_equal(ds.read(), np.stack(bands))


def test_warped_tiles_on_many_threads_equal_one_at_a_time(served):
    import concurrent.futures

    from sfclayer.server.tiler import LayerReader

    s = served.served["own"]
    tiles = [(x, y, 8) for x in range(133, 137) for y in range(89, 93)]
    serial = {t: LayerReader(s).tile(*t).array for t in tiles}
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        threaded = dict(zip(tiles, pool.map(lambda t: LayerReader(s).tile(*t).array, tiles)))
    for t in tiles:
        np.testing.assert_array_equal(threaded[t].data, serial[t].data)
        np.testing.assert_array_equal(threaded[t].mask, serial[t].mask)
