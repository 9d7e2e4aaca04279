"""Serving a raster layer with a pyramid: ``z`` picks the level (sfclayer.pyramid's layers), TileJSON
spans the levels, OGC API – Tiles lists each level's limits."""

import numpy as np
import pytest

import sfclayer
from sfclayer import raster
from sfclayer import server as srv
from sfclayer.ingestion import Grid

from . import serving as sv

BASE_ZOOM = 2


def _base_pixels(col, row):
    rng = np.random.default_rng(1000 + col * 10 + row)
    return rng.integers(0, 256, (3, 256, 256), dtype=np.uint8)


@pytest.fixture(scope="module")
def pyramid_layer(spark, tmp_path_factory):
    grid = Grid.from_tms("WebMercatorQuad", BASE_ZOOM)
    rows = []
    for c in range(grid.width):
        for r in range(grid.height):
            t = raster.from_numpy(_base_pixels(c, r), nodata=0)  # sfclayer.pyramid needs a nodata
            rows.append((c, r, *[t[k] for k in raster.COLUMNS]))
    path = str(tmp_path_factory.mktemp("pyramid") / "world")
    sfclayer.write(spark.createDataFrame(rows, raster.spark_schema()), path, bounds=grid.bounds, extent=grid.extent,
                   crs=grid.crs, raster=grid.raster_metadata(3, "uint8", 0))
    assert sfclayer.pyramid(spark, path, min_zoom=0) == [0, 1]
    return path


@pytest.fixture(scope="module")
def running(spark, pyramid_layer):
    with srv.serve(spark, [f"world={pyramid_layer}"], port=0, background=True, log=lambda *_: None) as server:
        yield server


def test_levels_in_layers_tilejson_and_ogc(running):
    c = sv.Client(running.url)
    try:
        info = c.json("/layers/world")
        assert info["zooms"] == [0, 1, 2] and info["grid"]["tms"] == "WebMercatorQuad"
        assert info["pixelLayout"] == "raster" and info["grid"]["tileWidth"] == 256
        tj = c.json("/layers/world/tilejson.json")
        assert (tj["minzoom"], tj["maxzoom"]) == (0, 2)
        np.testing.assert_allclose(tj["bounds"], [-180, -85.0511287798066, 180, 85.0511287798066], atol=1e-6)
        limits = c.json("/collections/world/tiles/WebMercatorQuad")["tileMatrixSetLimits"]
        assert [(lim["tileMatrix"], lim["maxTileCol"], lim["maxTileRow"]) for lim in limits] == \
            [("0", 0, 0), ("1", 1, 1), ("2", 3, 3)]
        assert c.get("/layers/world/tiles/3/0/0.png")[0] == 404
        assert c.get("/layers/world/tiles/1/2/0.png")[0] == 404  # outside level 1's 2 × 2 tiles
    finally:
        c.close()


def test_each_zoom_serves_its_levels_pixels(spark, running, pyramid_layer):
    c = sv.Client(running.url)
    try:
        for z, (col, row) in [(2, (3, 1)), (1, (1, 0)), (0, (0, 0))]:
            code, _, body = c.get(f"/layers/world/tiles/{z}/{col}/{row}.png")
            assert code == 200
            with sfclayer.open(spark, pyramid_layer, zoom=z) as level:
                expected = raster.to_numpy(level.get(col, row)).transpose(1, 2, 0)
            np.testing.assert_array_equal(sv.decode_png(body)[..., :3], expected)
            # OGC: row before column, same tile.
            code, _, ogc = c.get(f"/collections/world/tiles/WebMercatorQuad/{z}/{row}/{col}")
            assert code == 200 and ogc == body
        # Level 1 really is the base averaged 2 × 2 (independently: numpy over the base's pixels).
        stitched = np.zeros((3, 512, 512))
        for dc in (0, 1):
            for dr in (0, 1):
                stitched[:, dr * 256:(dr + 1) * 256, dc * 256:(dc + 1) * 256] = _base_pixels(2 + dc, 0 + dr)
        mean = stitched.reshape(3, 256, 2, 256, 2).mean(axis=(2, 4))
        served = sv.decode_png(c.get("/layers/world/tiles/1/1/0.png")[2])[..., :3].transpose(2, 0, 1)
        assert np.abs(served - mean).max() <= 1.0
    finally:
        c.close()
