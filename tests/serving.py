"""Layers, an HTTP client and shared fixtures for the tile server's tests (tests/test_serve*.py).

The fixtures ``layers`` (module scope: :func:`write_layers`, the names in the test module's
``SERVED_LAYERS`` if it has one, else all), ``running`` (a background server over them, CORS allowed
from :data:`CORS_ORIGIN`, its log lines in ``.lines``) and ``client`` (a :class:`Client` of it) are
used by importing them into a test module.
"""

import datetime as _dt
import http.client
import io
import json
import threading
import time
import urllib.parse

import numpy as np
import pytest

import sfclayer
from sfclayer import raster

TILE = 16          # px
GRID = (6, 4)      # cols × rows
EXTENT = (0.0, 0.0, 60.0, 40.0)
MISSING = (5, 3)   # a key inside the bounds with no tile
TIMES = [_dt.datetime(2024, 5, 1), _dt.datetime(2024, 5, 2)]
MERCATOR_ZOOM = 3
CORS_ORIGIN = "https://maps.example"
LAYER_NAMES = ("rgb", "dem", "hwc", "st", "merc")


def rgb_pixels(col, row):
    rng = np.random.default_rng(col * 100 + row)
    return rng.integers(0, 256, (3, TILE, TILE), dtype=np.uint8)


def dem_pixels(col, row):
    y, x = np.mgrid[0:TILE, 0:TILE]
    a = (col * 1000 + row * 100 + y * TILE + x).astype(np.float32)
    a[0, :4] = -9999.0  # nodata: transparent
    return a[np.newaxis]


def hwc_pixels(col, row, size=(TILE, TILE)):
    """The demo's older layout: height × width × bands."""
    rng = np.random.default_rng(7 + col * 31 + row)
    return rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)


def st_pixels(col, row, t):
    return np.full((1, TILE, TILE), col * 10 + row + 100 * t, dtype=np.int16)


def _raster_df(spark, tiles, time=False):
    rows = []
    for key, (array, nodata) in tiles.items():
        t = raster.from_numpy(array, nodata=nodata)
        rows.append((*key, *[t[k] for k in raster.COLUMNS]))
    return spark.createDataFrame(rows, raster.spark_schema(time=time))


def keys():
    return [(c, r) for c in range(GRID[0]) for r in range(GRID[1]) if (c, r) != MISSING]


def write_layers(spark, root, names=LAYER_NAMES):
    """Small layers under ``root``: rgb, dem, hwc (edge tiles 10 px), st (space-time), merc."""
    bounds = (0, 0, GRID[0] - 1, GRID[1] - 1)
    paths = {}
    if "rgb" in names:
        paths["rgb"] = f"{root}/rgb"
        sfclayer.write(_raster_df(spark, {k: (rgb_pixels(*k), None) for k in keys()}), paths["rgb"],
                       bounds=bounds, extent=EXTENT, crs="EPSG:4326", partitions=3)
    if "dem" in names:
        paths["dem"] = f"{root}/dem"
        sfclayer.write(_raster_df(spark, {k: (dem_pixels(*k), -9999.0) for k in keys()}), paths["dem"],
                       bounds=bounds, extent=EXTENT, crs="EPSG:4326")
    if "hwc" in names:
        _write_hwc(spark, f"{root}/hwc", bounds)
        paths["hwc"] = f"{root}/hwc"
    if "st" in names:
        paths["st"] = f"{root}/st"
        _write_st(spark, paths["st"], bounds)
    if "merc" in names:
        paths["merc"] = f"{root}/merc"
        _write_merc(spark, paths["merc"])
    return paths


def _write_hwc(spark, path, bounds):
    from pyspark.sql.types import BinaryType, IntegerType, StringType, StructField, StructType

    schema = StructType([StructField(n, t, False) for n, t in [
        ("col", IntegerType()), ("row", IntegerType()), ("pixels", BinaryType()), ("width", IntegerType()),
        ("height", IntegerType()), ("bands", IntegerType()), ("dtype", StringType())]])
    rows = []
    for c, r in keys():
        size = (10 if c == GRID[0] - 1 else TILE, 10 if r == GRID[1] - 1 else TILE)
        a = hwc_pixels(c, r, size)
        rows.append((c, r, a.tobytes(), size[0], size[1], 3, "uint8"))
    sfclayer.write(spark.createDataFrame(rows, schema), path, bounds=bounds, extent=EXTENT, crs="EPSG:4326")


def _write_st(spark, path, bounds):
    st = {}
    for i, t in enumerate(TIMES):
        for c, r in keys():
            st[(c, r, t)] = (st_pixels(c, r, i), None)
    sfclayer.write(_raster_df(spark, st, time=True), path, bounds=bounds,
                   time_bounds=(TIMES[0], TIMES[-1] + _dt.timedelta(days=1)), time_resolution="1 day")


def _write_merc(spark, path):
    # WebMercatorQuad tiles 2..5 × 1..4 at zoom 3 (an extent on that grid, no raster metadata).
    half = 20037508.342789244
    size = 2 * half / 2 ** MERCATOR_ZOOM
    c0, r0 = 2, 1
    ext = (-half + c0 * size, half - (r0 + 4) * size, -half + (c0 + 4) * size, half - r0 * size)
    merc = {(c0 + c, r0 + r): (rgb_pixels(c, r), None) for c in range(4) for r in range(4)}
    sfclayer.write(_raster_df(spark, merc), path, bounds=(c0, r0, c0 + 3, r0 + 3), extent=ext, crs="EPSG:3857")


class Client:
    """Keep-alive HTTP/1.1 to one server."""

    def __init__(self, url):
        u = urllib.parse.urlsplit(url)
        self.conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)

    def get(self, path, headers=None):
        self.conn.request("GET", path, headers=headers or {})
        r = self.conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()

    def json(self, path, status=200):
        code, headers, body = self.get(path)
        assert code == status, (path, code, body[:300])
        assert headers["content-type"].startswith("application/json")
        return json.loads(body)

    def close(self):
        self.conn.close()


def decode_png(body):
    from PIL import Image

    image = Image.open(io.BytesIO(body))
    assert image.format in ("PNG", "WEBP")
    return np.asarray(image.convert("RGBA"))


def fetch_coalesced(server, name, keys, hold=0.3):
    """Request ``/layers/<name>/values/<c>/<r>`` for every key at once, a thread each, while the layer's
    first look-up is held until every request has been sent and ``hold`` seconds more, so the other
    requests gather behind it into coalesced batches (on a loaded machine too).

    Returns ``(batches, answers)``: the keys of each ``get_many`` call, and each key's
    ``(code, headers, body)``.
    """
    layer = server.served[name].base.layer
    real, batches, answers = layer.get_many, [], {}
    sent = threading.Semaphore(0)

    def slow_first(keys_, **kw):
        batches.append(list(keys_))
        if len(batches) == 1:
            for _ in keys:
                sent.acquire(timeout=30)
            time.sleep(hold)
        return real(keys_, **kw)

    def fetch(key):
        c = Client(server.url)
        try:
            c.conn.request("GET", f"/layers/{name}/values/{key[0]}/{key[1]}")
            sent.release()
            r = c.conn.getresponse()
            answers[key] = r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            c.close()

    layer.get_many = slow_first
    threads = [threading.Thread(target=fetch, args=(k,)) for k in keys]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return batches, answers


@pytest.fixture(scope="module")
def layers(spark, tmp_path_factory, request):
    names = getattr(request.module, "SERVED_LAYERS", LAYER_NAMES)
    return write_layers(spark, str(tmp_path_factory.mktemp("served")), names=names)


@pytest.fixture(scope="module")
def running(spark, layers):
    from sfclayer import server as srv

    lines = []
    server = srv.serve(spark, [f"{n}={p}" for n, p in layers.items()], port=0, background=True, log=lines.append,
                       cors_origins=[CORS_ORIGIN])
    server.lines = lines
    yield server
    server.stop()


@pytest.fixture
def client(running):
    c = Client(running.url)
    yield c
    c.close()
