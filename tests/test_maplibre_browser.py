"""A WebGL map library shows a served layer over a page from another origin (issue 34): maplibre-gl (from
npm, ``make maplibre-gl``, served from this tree: no CDN) in Debian's headless Chromium (WebGL by
SwiftShader), the page on one loopback port and ``sfclayer serve`` (in-process, no JVM) on another with
CORS allowing the page's origin. A cross-origin image without CORS cannot become a WebGL texture, so
the tiles appear on the canvas only if the server's CORS answer is right; the canvas is compared pixel
for pixel with the stored tile the server returns.

Skips where Chromium, its driver, selenium or the maplibre-gl files are missing (``make test`` gets them).
"""

import functools
import glob
import http.server
import importlib.util
import io
import os
import shutil
import tempfile
import threading
import time

import numpy as np
import pytest

import sfclayer
from sfclayer import raster
from sfclayer import server as srv

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
MAPLIBRE = sorted(glob.glob(os.path.join(ROOT, "integration", "target", "maplibre-gl-*", "maplibre-gl.js")))
ZOOM, C0, R0 = 3, 2, 1  # WebMercatorQuad tiles (2..5, 1..4) at zoom 3, as tests/serving.py's merc layer
SIZE = 256

pytestmark = pytest.mark.skipif(
    CHROMIUM is None or DRIVER is None or importlib.util.find_spec("selenium") is None or not MAPLIBRE,
    reason="needs Debian's chromium and chromium-driver, selenium, and maplibre-gl from npm (make test gets "
           "them: make chromium-installed maplibre-gl)")

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><link rel="stylesheet" href="maplibre-gl.css">
<style>html, body, #map {{ margin: 0; width: 768px; height: 512px; }}</style></head>
<body><div id="map"></div><script src="maplibre-gl.js"></script><script>
window.errors = [];
window.map = new maplibregl.Map({{
  container: "map", center: [{lon}, {lat}], zoom: {zoom}, fadeDuration: 0, attributionControl: false,
  canvasContextAttributes: {{preserveDrawingBuffer: true}}, pixelRatio: 1,
  style: {{version: 8, sources: {{layer: {{type: "raster", tiles: ["{tiles}"], tileSize: {size}}}}},
          layers: [{{id: "layer", type: "raster", source: "layer",
                     paint: {{"raster-resampling": "nearest", "raster-fade-duration": 0}}}}]}}
}});
map.on("error", function (e) {{ window.errors.push(String(e.error && e.error.message || e)); }});
map.on("idle", function () {{ window.idle = true; }});
</script></body></html>
"""


def _tile(c, r):
    """A 256 px RGB tile that differs from every other: stripes and a gradient keyed by (c, r)."""
    y, x = np.mgrid[0:SIZE, 0:SIZE]
    return np.stack([(x + 40 * c) % 256, (y + 60 * r) % 256, ((x // 32 + y // 32 + c + r) % 2) * 200 + 20],
                    axis=0).astype(np.uint8)


@pytest.fixture(scope="module")
def layer(spark, tmp_path_factory):
    rows = []
    for c in range(C0, C0 + 4):
        for r in range(R0, R0 + 4):
            v = raster.from_numpy(_tile(c, r))
            rows.append((c, r, *[v[k] for k in raster.COLUMNS]))
    path = str(tmp_path_factory.mktemp("maplibre") / "merc")
    side = 2 ** ZOOM
    meta = {"tileWidth": SIZE, "tileHeight": SIZE, "bands": 3, "dtype": "uint8", "nodata": None,
            "tms": "WebMercatorQuad", "zoom": ZOOM}
    half = 20037508.342789244
    sfclayer.write(spark.createDataFrame(rows, raster.spark_schema()), path, bounds=(0, 0, side - 1, side - 1),
                   extent=(-half, -half, half, half), crs="EPSG:3857", raster=meta)
    return path


@pytest.fixture
def page_server(tmp_path):
    """A static page server on its own loopback port (another origin than the tile server's)."""
    for f in ("maplibre-gl.js", "maplibre-gl.css"):
        shutil.copy(os.path.join(os.path.dirname(MAPLIBRE[-1]), f), tmp_path / f)
    handler = functools.partial(_Quiet, directory=str(tmp_path))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield tmp_path, f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def _driver(user_dir):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
                 "--ignore-gpu-blocklist", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                 "--force-device-scale-factor=1", "--window-size=900,700", f"--user-data-dir={user_dir}"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(DRIVER), options=options)


def _lonlat(col, row):
    """The north-west corner of WebMercatorQuad tile (col, row) at ZOOM, in degrees."""
    import morecantile

    b = morecantile.tms.get("WebMercatorQuad").ul(col, row, ZOOM)
    return b.x, b.y


def test_maplibre_gl_renders_the_layer_over_a_page_of_another_origin(layer, page_server):
    from PIL import Image

    from . import serving as sv

    directory, origin = page_server
    lines = []
    user_dir = tempfile.mkdtemp(prefix="sfclayer-chromium-")
    col, row = C0 + 1, R0 + 1  # its NW corner at the map's centre: the tile fills the lower-right quarter
    with srv.serve(None, [f"merc={layer}"], port=0, background=True, log=lines.append,
                   cors_origins=[origin]) as server:
        tiles = f"{server.url.rstrip('/')}/layers/merc/tiles/WebMercatorQuad/{{z}}/{{x}}/{{y}}.png"
        lon, lat = _lonlat(col, row)
        # maplibre's zoom counts 512 px tiles: at zoom ZOOM - 1 it shows the 256 px tiles of ZOOM one to one
        (directory / "index.html").write_text(PAGE.format(lon=lon, lat=lat, zoom=ZOOM - 1, tiles=tiles, size=SIZE))
        driver = _driver(user_dir)
        try:
            driver.get(origin + "/index.html")
            deadline = time.time() + 90
            while not driver.execute_script("return window.idle === true") and time.time() < deadline:
                time.sleep(0.2)
            state = driver.execute_script("return JSON.stringify({idle: window.idle, errors: window.errors,"
                                          " webgl: !!document.createElement('canvas').getContext('webgl2')})")
            assert driver.execute_script("return window.idle === true"), state
            assert driver.execute_script("return window.errors.length") == 0, state
            url = driver.execute_script("return map.getCanvas().toDataURL('image/png')")
        finally:
            driver.quit()
            shutil.rmtree(user_dir, ignore_errors=True)
        client = sv.Client(server.url)
        try:
            code, headers, body = client.get(f"/layers/merc/tiles/WebMercatorQuad/{ZOOM}/{col}/{row}.png",
                                             {"Origin": origin})
        finally:
            client.close()
    assert code == 200 and headers.get("access-control-allow-origin") == origin
    served = np.asarray(Image.open(io.BytesIO(body)).convert("RGB")).astype(int)
    assert (served == _tile(col, row).transpose(1, 2, 0)).all()  # the stored pixels, as written
    import base64

    canvas = np.asarray(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).convert("RGB")).astype(int)
    h, w = canvas.shape[:2]
    y, x = h // 2, w // 2
    shown = canvas[y:y + SIZE, x:x + SIZE]
    best = min(np.abs(canvas[y + dy:y + dy + SIZE, x + dx:x + dx + SIZE] - served).mean()
               for dy in (-1, 0, 1) for dx in (-1, 0, 1) if y + dy + SIZE <= h and x + dx + SIZE <= w)
    assert best < 3, f"the canvas differs from the served tile by {best:.1f} on average"
    # the tile to its left is another: the comparison can fail
    assert np.abs(canvas[y:y + SIZE, x - SIZE:x] - served).mean() > 20
    assert shown.std() > 10  # not a blank canvas
    requested = [line for line in lines if f"/tiles/WebMercatorQuad/{ZOOM}/" in line and '" 200 ' in line]
    assert any(f"/{ZOOM}/{col}/{row}.png" in line for line in requested), lines[-10:]
