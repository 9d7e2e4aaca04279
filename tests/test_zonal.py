"""Zonal statistics (issue 24) equal rasterstats' on the source GeoTIFF, for both of GDAL's pixel rules."""

import random

import pytest

shapely = pytest.importorskip("shapely")
rasterstats = pytest.importorskip("rasterstats")
from shapely import geometry as sg  # noqa: E402

import sfclayer  # noqa: E402
from sfclayer.errors import InvalidArgument  # noqa: E402

from .raster_sources import DEM_NODATA, dem_tif, jacksboro  # noqa: E402,F401

STATS = ["count", "sum", "mean", "min", "max", "std"]


@pytest.fixture(scope="module")
def dem_layer(spark, dem_tif, tmp_path_factory):  # noqa: F811
    path = str(tmp_path_factory.mktemp("zonal") / "dem")
    sfclayer.ingest(spark, [dem_tif], path, tms=None, tile_size=64)
    return path


def zones_over(bounds, rng):
    """Zones of every awkward kind over a raster's bounds (west, south, east, north)."""
    w, s, e, n = bounds
    dx, dy = e - w, n - s
    px = dx / 403  # about a pixel

    def at(fx, fy):
        return w + fx * dx, s + fy * dy

    zones = []
    for _ in range(8):  # triangles crossing tile edges
        zones.append(sg.Polygon([at(rng.uniform(0, 1), rng.uniform(0, 1)) for _ in range(3)]))
    outer = sg.Point(*at(0.4, 0.5)).buffer(0.25 * dx)
    zones.append(outer.difference(sg.Point(*at(0.4, 0.5)).buffer(0.1 * dx)))  # a hole
    zones.append(sg.MultiPolygon([sg.box(*at(0.05, 0.05), *at(0.2, 0.15)), sg.box(*at(0.6, 0.7), *at(0.7, 0.95))]))
    cx, cy = at(0.31, 0.62)
    zones.append(sg.box(cx, cy, cx + 0.3 * px, cy + 0.3 * px))  # smaller than a pixel
    # partly outside; no edge exactly on a pixel edge (0.5 of 344 rows is one): there GDAL's all_touched
    # answer hangs on the last bit of the transform, which a tile's origin and a window's round apart
    zones.append(sg.box(*at(-0.2, 0.3), *at(0.15, 0.5037)))
    zones.append(sg.box(*at(1.2, 1.2), *at(1.4, 1.4)))  # wholly outside
    zones.append(sg.Polygon([at(0.97, 0.02), at(0.99, 0.02), at(0.99, 0.05)]))  # over nodata (the cut corner)
    zones.append(sg.Point(*at(0.5, 0.5)).buffer(0.3 * dx, quad_segs=2))  # large, many tiles
    return zones


def reference(zones, tif, all_touched):
    return rasterstats.zonal_stats(zones, tif, stats=STATS, all_touched=all_touched, nodata=DEM_NODATA)


def assert_equal_stats(got, want):
    for i, (g, w) in enumerate(zip(got, want)):
        assert g["count"] == w["count"], (i, g, w)
        for s in STATS[1:]:
            if w["count"] == 0:
                assert g[s] is None, (i, s, g)
            else:
                assert g[s] == pytest.approx(w[s], rel=1e-9, abs=1e-9), (i, s, g, w)


@pytest.mark.parametrize("all_touched", [False, True])
def test_zonal_stats_equal_rasterstats_on_the_source(spark, dem_layer, dem_tif, all_touched):  # noqa: F811
    _, bounds = jacksboro()
    zones = zones_over(bounds, random.Random(3))
    df = sfclayer.zonal_stats(spark, dem_layer, zones, stats=STATS, all_touched=all_touched)
    assert df.columns == ["id"] + STATS
    got = {r["id"]: r.asDict() for r in df.collect()}
    assert sorted(got) == list(range(len(zones)))
    want = reference(zones, dem_tif, all_touched)
    assert_equal_stats([got[i] for i in range(len(zones))], want)
    assert got[len(zones) - 3]["count"] == 0  # wholly outside


def test_zones_as_a_spark_dataframe_of_wkt(spark, dem_layer, dem_tif):  # noqa: F811
    _, bounds = jacksboro()
    zones = zones_over(bounds, random.Random(5))[:6]
    zdf = spark.createDataFrame([(f"z{i}", z.wkt) for i, z in enumerate(zones)], "zone string, wkt string")
    df = sfclayer.zonal_stats(spark, dem_layer, zdf, stats=("count", "mean"), id_column="zone", geometry_column="wkt")
    got = {r["zone"]: r.asDict() for r in df.collect()}
    want = rasterstats.zonal_stats(zones, dem_tif, stats=["count", "mean"], nodata=DEM_NODATA)
    for i, w in enumerate(want):
        assert got[f"z{i}"]["count"] == w["count"]
        assert got[f"z{i}"]["mean"] == pytest.approx(w["mean"], rel=1e-9)


def test_multiband_has_a_band_column(spark, tmp_path):
    import numpy as np

    from .raster_sources import write_geotiff

    rng = np.random.default_rng(1)
    a = rng.integers(0, 200, size=(3, 100, 130)).astype("uint8")
    tif = write_geotiff(tmp_path / "rgb.tif", a, (0, 0, 13, 10), nodata=255)
    path = str(tmp_path / "rgb")
    sfclayer.ingest(spark, [tif], path, tms=None, tile_size=32)
    zones = [sg.Polygon([(1, 1), (9, 2), (5, 8)]), sg.box(11.2, 7.1, 12.9, 9.9)]
    df = sfclayer.zonal_stats(spark, path, zones, stats=["count", "sum", "max"])
    assert df.columns == ["id", "band", "count", "sum", "max"]
    got = {(r["id"], r["band"]): r for r in df.collect()}
    for band in (1, 2, 3):
        want = rasterstats.zonal_stats(zones, tif, band=band, stats=["count", "sum", "max"], nodata=255)
        for i, w in enumerate(want):
            assert (got[(i, band)]["count"], got[(i, band)]["sum"], got[(i, band)]["max"]) == (
                w["count"], pytest.approx(w["sum"]), w["max"])


def test_bad_arguments(spark, dem_layer):
    with pytest.raises(InvalidArgument, match="stats"):
        sfclayer.zonal_stats(spark, dem_layer, ["POINT (0 0)"], stats=["median!"])
    with pytest.raises(InvalidArgument, match="no column 'id'"):
        sfclayer.zonal_stats(spark, dem_layer, spark.createDataFrame([("POINT (0 0)",)], "geometry string"))
    with pytest.raises(InvalidArgument, match="zones\\[1\\]"):
        sfclayer.zonal_stats(spark, dem_layer, ["POINT (0 0)", "POLYGON ((0 0"])


def test_a_bad_zone_of_a_dataframe_is_refused_at_the_door_naming_it(spark, dem_layer):
    # Checked by a job of its own before the statistics' query is built: the user's action never
    # meets it in a task (which Spark would retry, logging the executor's traceback at ERROR).
    zones = spark.createDataFrame([(1, "POINT (0 0)"), (7, "POLYGON ((0 0"), (9, "not a geometry")],
                                  "id long, geometry string")
    with pytest.raises(InvalidArgument, match="zone 7 is not a usable geometry") as e:
        sfclayer.zonal_stats(spark, dem_layer, zones)
    assert "Traceback" not in str(e.value) and "\n" not in str(e.value)


def test_web_mercator_layer_equals_rasterstats_on_a_geotiff_of_its_tiles(spark, dem_tif, tmp_path):  # noqa: F811
    import pyproj

    from sfclayer.geometry import reproject

    path = str(tmp_path / "merc")
    sfclayer.ingest(spark, [dem_tif], path, tms="WebMercatorQuad")
    _, (w, s, e, n) = jacksboro()
    to_merc = pyproj.Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True).transform
    x0, y0 = to_merc(w, s)
    x1, y1 = to_merc(e, n)
    with sfclayer.open(spark, path) as layer:
        da = layer.to_xarray(bbox=(x0, y0, x1, y1))  # the layer's pixels over the DEM, as a GeoTIFF
    tif = str(tmp_path / "merc.tif")
    da.rio.to_raster(tif)
    zones = [z for z in zones_over((w, s, e, n), random.Random(9))[:9]]  # zones in lon/lat, inside the window
    df = sfclayer.zonal_stats(spark, path, zones, stats=STATS, geometry_crs="EPSG:4326")
    got = {r["id"]: r.asDict() for r in df.collect()}
    want = rasterstats.zonal_stats([reproject(z, "EPSG:4326", "EPSG:3857") for z in zones], tif, stats=STATS,
                                   nodata=da.rio.nodata)
    assert_equal_stats([got[i] for i in range(len(zones))], want)


def test_string_ids_with_a_zone_off_the_layer(spark, dem_layer, dem_tif):  # noqa: F811
    # pandas 3 makes string columns Arrow-backed: a batch of string ids whose covers came out empty (the
    # zone misses the layer) crashed inside mapInPandas ("Cannot convert pyarrow.lib.ChunkedArray")
    _, bounds = jacksboro()
    zones = zones_over(bounds, random.Random(7))
    off = [len(zones) - 3]  # wholly outside
    picked = [zones[i] for i in off + [0, 1]]
    zdf = spark.createDataFrame([(f"z{i}", z.wkt) for i, z in enumerate(picked)], "zone string, wkt string")
    got = {r["zone"]: r.asDict() for r in
           sfclayer.zonal_stats(spark, dem_layer, zdf, stats=("count", "mean"), id_column="zone",
                                geometry_column="wkt").collect()}
    want = rasterstats.zonal_stats(picked, dem_tif, stats=["count", "mean"], nodata=DEM_NODATA)
    assert sorted(got) == ["z0", "z1", "z2"]
    assert got["z0"]["count"] == 0 and got["z0"]["mean"] is None
    for i, w in enumerate(want):
        assert got[f"z{i}"]["count"] == w["count"]
        if w["count"]:
            assert got[f"z{i}"]["mean"] == pytest.approx(w["mean"], rel=1e-9)
