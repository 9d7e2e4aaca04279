"""Zonal statistics' centre rule where pixel centres lie exactly on a zone's edge (issue 37): the pixels
counted are GDAL's rasterizer's on the whole source (rasterstats), for edges at 45° through pixel centres
and axis-parallel edges on lines of centres, over tile boundaries.

The reference source's transform is exact in binary (origin and pixel size multiples of 1/4), so that its
pixel centres are exactly where the zones' edges pass and rasterstats applies GDAL's rule without
rounding. On a transform such as 1/1200 of a degree, a centre is "on" an edge only up to the last bit
(of the zone's vertices, of each tile's origin), and which side rasterstats' own window arithmetic puts
it on varies; sfclayer puts coordinates within 1e-6 px of a centre on it, so that such a layer counts
the pixels of the exact geometry: the second test compares a layer of the same pixels on a 1/1200°
grid, its zones through the same centres, with rasterstats on the exact twin. (The rasterization in
each tile's map coordinates that this replaced counted the same as rasterstats on the exact grid, and
was 6 of 10 zones off, by up to 31 px, on the 1/1200° one.)
"""

import numpy as np

import pytest

shapely = pytest.importorskip("shapely")
rasterstats = pytest.importorskip("rasterstats")
rasterio = pytest.importorskip("rasterio")
from shapely import geometry as sg  # noqa: E402

import sfclayer  # noqa: E402

from .raster_sources import write_geotiff  # noqa: E402

NODATA = -32768

STATS = ["count", "sum", "min", "max"]


def _pixels():
    rng = np.random.default_rng(37)
    a = rng.integers(-1000, 1000, size=(1, 260, 330)).astype("int16")
    a[0, :20, 300:] = NODATA
    return a


@pytest.fixture(scope="module")
def exact_tif(tmp_path_factory):
    """330 × 260 px of int16 at 0.25 units a pixel from (12, 80): every centre exact in binary."""
    return write_geotiff(tmp_path_factory.mktemp("zonal_edges") / "exact.tif", _pixels(),
                         (12.0, 80.0 - 260 * 0.25, 12.0 + 330 * 0.25, 80.0), crs="EPSG:3857", nodata=NODATA)


@pytest.fixture(scope="module")
def inexact_tif(tmp_path_factory):
    """The same pixels at 1/1200° from (6.1°E, 47.3°N) (a 3-arc-second DEM's grid): centres not exact."""
    d = 1 / 1200
    return write_geotiff(tmp_path_factory.mktemp("zonal_edges") / "inexact.tif", _pixels(),
                         (6.1, 47.3 - 260 * d, 6.1 + 330 * d, 47.3), crs="EPSG:4326", nodata=NODATA)


def _layer(spark, tif, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("zonal_edges") / "layer")
    sfclayer.ingest(spark, [tif], path, tms=None, tile_size=64, quiet=True)
    return path


@pytest.fixture(scope="module")
def edge_layer(spark, exact_tif, tmp_path_factory):
    return _layer(spark, exact_tif, tmp_path_factory)


@pytest.fixture(scope="module")
def inexact_layer(spark, inexact_tif, tmp_path_factory):
    return _layer(spark, inexact_tif, tmp_path_factory)


def edge_zones(tif):
    """Diamonds (45° edges through centres) and boxes (edges on lines of centres), in map units, some
    across tile boundaries (every 64 px)."""
    with rasterio.open(tif) as src:
        t = src.transform

    def centre(i, j):  # column i, row j
        return t * (i + 0.5, j + 0.5)

    zones = []
    for ci, cj, k in [(40, 40, 6), (64, 64, 10), (100, 130, 25), (200, 63, 7), (127, 190, 32), (300, 230, 3)]:
        zones.append(sg.Polygon([centre(ci, cj - k), centre(ci + k, cj), centre(ci, cj + k), centre(ci - k, cj)]))
    for i0, j0, i1, j1 in [(10, 10, 20, 30), (60, 60, 70, 70), (120, 5, 140, 70), (63, 126, 129, 200)]:
        (x0, y0), (x1, y1) = centre(i0, j0), centre(i1, j1)
        zones.append(sg.box(min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1)))
    return zones


def test_centre_rule_on_edges_through_pixel_centres_equals_rasterstats(spark, edge_layer, exact_tif):
    zones = edge_zones(exact_tif)
    got = {r["id"]: r.asDict() for r in sfclayer.zonal_stats(spark, edge_layer, zones, stats=STATS).collect()}
    want = rasterstats.zonal_stats(zones, exact_tif, stats=STATS, all_touched=False, nodata=NODATA)
    differ = [(i, got[i]["count"], w["count"]) for i, w in enumerate(want) if got[i]["count"] != w["count"]]
    assert not differ, f"(zone, sfclayer's count, rasterstats') {differ}"
    for i, w in enumerate(want):
        assert got[i]["sum"] == pytest.approx(w["sum"]) and got[i]["min"] == w["min"] and got[i]["max"] == w["max"]


def test_centre_rule_on_a_grid_inexact_in_binary_counts_the_exact_geometrys_pixels(spark, inexact_layer,
                                                                                    inexact_tif, exact_tif):
    # the zones through the same pixel centres on both grids; the reference: rasterstats on the exact one
    want = rasterstats.zonal_stats(edge_zones(exact_tif), exact_tif, stats=STATS, all_touched=False, nodata=NODATA)
    zones = edge_zones(inexact_tif)
    got = {r["id"]: r.asDict() for r in sfclayer.zonal_stats(spark, inexact_layer, zones, stats=STATS).collect()}
    differ = [(i, got[i]["count"], w["count"]) for i, w in enumerate(want) if got[i]["count"] != w["count"]]
    assert not differ, f"(zone, sfclayer's count, rasterstats' on the exact grid) {differ}"
    for i, w in enumerate(want):
        assert got[i]["sum"] == pytest.approx(w["sum"]) and got[i]["min"] == w["min"] and got[i]["max"] == w["max"]
