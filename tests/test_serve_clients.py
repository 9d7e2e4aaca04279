"""The tile server with clients nobody here wrote (GDAL's WMS/TMS driver, morecantile), under faults
(a damaged data file inside a coalesced batch), and bound off loopback (Host names, the warning)."""

import importlib.util
import json
import os
import shutil
import threading
import time

import numpy as np
import pytest

import sfclayer
from sfclayer import server as srv

from . import serving as sv
from .serving import CORS_ORIGIN, TILE, client, layers, running  # noqa: F401 (fixtures)

SERVED_LAYERS = ("rgb", "merc")


def test_allowed_hosts_cors_off_by_default_and_a_warning_off_loopback(spark, layers):
    lines = []
    with srv.serve(spark, [layers["merc"]], host="0.0.0.0", port=0, background=True, log=lines.append,
                   allowed_hosts=["tiles.example"]) as server:
        assert any("warning: listening on 0.0.0.0" in line for line in lines)
        c = sv.Client(f"http://127.0.0.1:{server.port}/")
        try:
            assert c.get("/layers", {"Host": "tiles.example"})[0] == 200
            assert c.get("/layers", {"Host": "other.example"})[0] == 400
            code, headers, _ = c.get("/layers", {"Origin": CORS_ORIGIN})
            assert code == 200 and "access-control-allow-origin" not in headers
        finally:
            c.close()
    lines = []
    with srv.serve(spark, [layers["merc"]], port=0, background=True, log=lines.append):
        assert not any("warning" in line for line in lines)


def test_a_damaged_file_fails_only_its_own_keys_in_a_coalesced_batch(spark, layers, tmp_path):
    import shutil

    path = str(tmp_path / "damaged")
    shutil.copytree(layers["rgb"], path)
    with sfclayer.open(spark, path) as lay:
        files = lay.metadata["files"]
    assert len(files) >= 2
    bad = files[-1]
    with open(os.path.join(path, bad["dir"], bad["name"], "data"), "ab") as f:
        f.write(b"\0")  # its length no longer matches its files entry: every read of it is refused
    with srv.serve(spark, [f"dmg={path}"], port=0, coalesce_ms=50, background=True, log=lambda *_: None) as server:
        lv = server.served["dmg"].base
        wanted = sv.keys()
        in_bad = {k for k in wanted if bad["firstIndex"] <= lv.index(*k) <= bad["lastIndex"]}
        assert in_bad and len(in_bad) < len(wanted)
        calls, results = sv.fetch_coalesced(server, "dmg", wanted)
        assert any(len(c) > 1 and set(c) & in_bad and set(c) - in_bad for c in calls)  # a mixed batch happened
        for key, (code, headers, body) in results.items():
            if key in in_bad:
                assert code == 500 and "CorruptLayer" in json.loads(body)["error"], key
            else:
                assert code == 200 and json.loads(body)["col"] == key[0], (key, code, body[:200])


def test_tile_matrix_set_document_is_read_by_morecantile(client):
    import morecantile

    doc = client.json("/tileMatrixSets/WebMercatorQuad")
    tms = morecantile.TileMatrixSet.model_validate(doc)
    ref = morecantile.tms.get("WebMercatorQuad")
    assert tms.id == "WebMercatorQuad" and tms.crs.to_epsg() == 3857
    assert [m.id for m in tms.tileMatrices] == [m.id for m in ref.tileMatrices]
    assert tms.xy_bounds(morecantile.Tile(4, 2, 3)) == ref.xy_bounds(morecantile.Tile(4, 2, 3))


def _gdal_wms():
    try:
        import rasterio

        with rasterio.Env() as env:
            return "WMS" in env.drivers()
    except ImportError:
        return False


@pytest.mark.skipif(not _gdal_wms(), reason="needs rasterio with GDAL's WMS driver")
def test_gdal_reads_the_tiles_pixel_exact_through_its_tms_driver(running):
    """A client nobody here wrote: GDAL's WMS driver (its TMS mini-driver), as QGIS reads XYZ tiles."""
    import rasterio
    from rasterio.windows import Window

    half = 20037508.342789244
    size = TILE * 2 ** sv.MERCATOR_ZOOM
    xml = f"""<GDAL_WMS>
  <Service name="TMS"><ServerUrl>{running.url}layers/merc/tiles/${{z}}/${{x}}/${{y}}.png</ServerUrl></Service>
  <DataWindow><UpperLeftX>{-half}</UpperLeftX><UpperLeftY>{half}</UpperLeftY><LowerRightX>{half}</LowerRightX>
    <LowerRightY>{-half}</LowerRightY><TileLevel>{sv.MERCATOR_ZOOM}</TileLevel><TileCountX>1</TileCountX>
    <TileCountY>1</TileCountY><YOrigin>top</YOrigin></DataWindow>
  <Projection>EPSG:3857</Projection><BlockSizeX>{TILE}</BlockSizeX><BlockSizeY>{TILE}</BlockSizeY>
  <BandsCount>4</BandsCount><ZeroBlockHttpCodes>404</ZeroBlockHttpCodes>
</GDAL_WMS>"""
    with rasterio.Env(GDAL_HTTP_TIMEOUT="30", GDAL_DISABLE_READDIR_ON_OPEN="EMPTY_DIR"):
        with rasterio.open(xml) as ds:
            assert (ds.width, ds.height) == (size, size) and ds.crs.to_epsg() == 3857
            # tile col 4, row 2 at zoom 3 holds rgb_pixels(2, 1) (the layer starts at col 2, row 1)
            got = ds.read(window=Window(4 * TILE, 2 * TILE, TILE, TILE))
            np.testing.assert_array_equal(got[:3], sv.rgb_pixels(2, 1))
            assert (got[3] == 255).all()
            outside = ds.read(window=Window(0, 0, TILE, TILE))  # no tile there: a 404, read as empty
            assert (outside == 0).all()


_CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
_PAGE = """<!DOCTYPE html><html><body><script>
var base = location.hash.slice(1), out = {};
fetch(base + "layers/merc/tilejson.json").then(function (r) { return r.json(); })
  .then(function (tj) { out.tilejson = tj.tilejson; }, function (e) { out.fetchError = String(e); })
  .then(function () {
    var img = new Image();
    img.crossOrigin = "anonymous";  // how MapLibre, deck.gl and OpenLayers' WebGL layers load tiles
    img.onload = function () {
      var c = document.createElement("canvas");
      c.width = img.width; c.height = img.height;
      var g = c.getContext("2d");
      g.drawImage(img, 0, 0);
      try { out.pixel = Array.from(g.getImageData(0, 0, 1, 1).data); } catch (e) { out.canvasError = String(e); }
      window.result = out;
    };
    img.onerror = function () { out.imageError = true; window.result = out; };
    img.src = base + "layers/merc/tiles/3/4/2.png";
  });
</script></body></html>"""


@pytest.mark.skipif(_CHROMIUM is None or shutil.which("chromedriver") is None
                    or importlib.util.find_spec("selenium") is None,
                    reason="needs Debian's chromium and chromium-driver (make test installs them) and selenium")
def test_cors_from_a_page_on_another_origin_in_chromium(spark, layers, tmp_path):
    import http.server

    from .test_viewer_browser import _driver

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = _PAGE.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    pages = [http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page) for _ in range(2)]
    for p in pages:
        threading.Thread(target=p.serve_forever, daemon=True).start()
    allowed, other = (f"http://127.0.0.1:{p.server_address[1]}" for p in pages)
    with srv.serve(spark, [f"merc={layers['merc']}"], port=0, background=True, log=lambda *_: None,
                   cors_origins=[allowed]) as server:
        driver = _driver(str(tmp_path / "chromium"))
        try:
            results = {}
            for origin in (allowed, other):
                driver.get(f"{origin}/#{server.url}")
                deadline = time.time() + 60
                while time.time() < deadline and not driver.execute_script("return !!window.result"):
                    time.sleep(0.1)
                results[origin] = driver.execute_script("return window.result")
        finally:
            driver.quit()
            for p in pages:
                p.shutdown()
    assert results[allowed]["tilejson"] == "3.0.0"
    assert results[allowed]["pixel"] == [*sv.rgb_pixels(2, 1)[:, 0, 0].tolist(), 255]
    assert "fetchError" in results[other] and results[other].get("imageError")  # CORS blocks other origins
