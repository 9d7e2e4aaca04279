"""Pyramids of layers on their source's own grid (``tms=None``): GeoTrellis' floating layout, each
level half the resolution from the same top-left corner, base zoom ``ceil(log2(max(cols, rows)))``
and level 0 one tile; every level against a numpy 2 × 2 reduction of the whole source (written
here), extents from the source's transform, and ``bbox`` reads in map units at each level."""

import math

import numpy as np
import pytest

import sfclayer
from sfclayer import raster

from tests.raster_sources import DEM_NODATA, dem_tif  # noqa: F401 - fixtures

rasterio = pytest.importorskip("rasterio")

TILE = 64


def reduce_mosaic(a, nodata):
    """(bands, 2h, 2w) → (bands, h, w): masked mean of each 2 × 2 block, rounded half to even."""
    b, h2, w2 = a.shape
    invalid = np.broadcast_to((a == nodata).all(axis=0), a.shape)
    m = np.ma.masked_array(a.astype(np.float64), mask=invalid).reshape(b, h2 // 2, 2, w2 // 2, 2)
    return np.rint(m.mean(axis=(2, 4))).filled(nodata).astype(a.dtype)


def test_native_grid_pyramid(spark, dem_tif, tmp_path):
    path = str(tmp_path / "dem")
    report = sfclayer.ingest(spark, dem_tif, path, tms=None, tile_size=TILE)
    with rasterio.open(dem_tif) as ds:
        src, (xres, yres), left, top = ds.read(), ds.res, ds.bounds.left, ds.bounds.top
    _, h, w = src.shape  # 344 × 403 px: 7 × 6 tiles of 64
    cols, rows = math.ceil(w / TILE), math.ceil(h / TILE)
    assert (report.grid.width, report.grid.height) == (cols, rows)
    base = math.ceil(math.log2(max(cols, rows)))  # 3
    assert sfclayer.pyramid(spark, path) == list(range(base))
    assert sfclayer.pyramid_levels(spark, path) == list(range(base + 1))

    # The whole base as one picture, padded with nodata to whole tiles.
    mosaic = np.full((1, rows * TILE, cols * TILE), DEM_NODATA, dtype=src.dtype)
    mosaic[:, :h, :w] = src
    n_cols, n_rows = cols, rows
    for z in range(base - 1, -1, -1):
        n_cols, n_rows = math.ceil(n_cols / 2), math.ceil(n_rows / 2)
        padded = np.full((1, 2 * n_rows * TILE, 2 * n_cols * TILE), DEM_NODATA, dtype=src.dtype)
        padded[:, :mosaic.shape[1], :mosaic.shape[2]] = mosaic
        mosaic = reduce_mosaic(padded, DEM_NODATA)
        rows_z = sfclayer.read(spark, path, zoom=z).select("col", "row", *raster.COLUMNS).collect()
        got = {(x["col"], x["row"]): raster.to_numpy(x) for x in rows_z}
        want = {}
        for r in range(n_rows):
            for c in range(n_cols):
                t = mosaic[:, r * TILE:(r + 1) * TILE, c * TILE:(c + 1) * TILE]
                if not raster.is_empty(t, DEM_NODATA):
                    want[(c, r)] = t
        assert sorted(got) == sorted(want), f"zoom {z}"
        for key, t in want.items():
            np.testing.assert_array_equal(got[key], t, err_msg=f"zoom {z} tile {key}")
        # Georeferencing: same top-left corner, pixels 2^(base - z) times the source's.
        s = 2 ** (base - z)
        with sfclayer.open(spark, path, zoom=z) as level:
            md = level.metadata
        assert md["raster"]["zoom"] == z and md["raster"]["tms"] is None and md["crs"] == "EPSG:4326"
        ki = md["keyIndex"]
        assert (ki["colMax"] + 1, ki["rowMax"] + 1) == (n_cols, n_rows)
        ext = md["extent"]
        assert ext["xmin"] == pytest.approx(left) and ext["ymax"] == pytest.approx(top)
        assert ext["xmax"] == pytest.approx(left + n_cols * TILE * s * xres)
        assert ext["ymin"] == pytest.approx(top - n_rows * TILE * s * yres)
        # A map point reads the tile holding it, at every level.
        x, y = left + 150.5 * xres, top - 100.5 * yres  # source pixel (150, 100)
        hit = sfclayer.read(spark, path, zoom=z, bbox=(x, y, x, y)).select("col", "row").collect()
        assert [(t["col"], t["row"]) for t in hit] == [(150 // (TILE * s), 100 // (TILE * s))]
    assert n_cols == n_rows == 1 and sorted(got) == [(0, 0)]  # level 0: one tile
