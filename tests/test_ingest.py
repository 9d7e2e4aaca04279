"""Ingest of real GeoTIFFs onto standard tile grids: every tile against rasterio's own warp of the
whole source into that tile (exact for nearest, within 1 DN for bilinear), keys and extent against
morecantile, nodata-only tiles absent, the mosaic rule, and bad input."""

import json

import numpy as np
import pytest

import sfclayer
from sfclayer import raster

from tests.raster_sources import (  # noqa: F401 - fixtures
    DEM_NODATA, blue_marble_window, dem_tif, europe_tif, needs_basemap, world_tif, write_geotiff)

rasterio = pytest.importorskip("rasterio")
morecantile = pytest.importorskip("morecantile")


def reference_tile(sources, tms_name, x, y, z, resampling, nodata):
    """rasterio.warp.reproject of each whole source into the tile's bounds (morecantile's),
    drawn in order, each over the previous where it has a valid pixel."""
    from rasterio.enums import Resampling
    from rasterio.transform import from_bounds
    from rasterio.warp import reproject

    t = morecantile.tms.get(tms_name)
    m = t.matrix(z)
    dst_transform = from_bounds(*t.xy_bounds(x, y, z), m.tileWidth, m.tileHeight)
    out = None
    for path in sources:
        with rasterio.open(path) as ds:
            data = ds.read()
            part = np.full((ds.count, m.tileHeight, m.tileWidth), nodata, dtype=data.dtype)
            reproject(data, part, src_transform=ds.transform, src_crs=ds.crs, src_nodata=ds.nodata,
                      dst_transform=dst_transform, dst_crs=t.rasterio_crs, dst_nodata=nodata,
                      resampling=Resampling[resampling])
        if out is None:
            out = part
        else:
            valid = (part != nodata).any(axis=0)
            out[:, valid] = part[:, valid]
    return out


def morecantile_tiles(tms_name, sources, z):
    t = morecantile.tms.get(tms_name)
    keys = set()
    for path in sources:
        with rasterio.open(path) as ds:
            assert ds.crs.to_epsg() == 4326
            keys |= {(tile.x, tile.y) for tile in t.tiles(*ds.bounds, [z])}
    return keys


def layer_tiles(spark, path):
    rows = sfclayer.read(spark, path).select("col", "row", *raster.COLUMNS).collect()
    return {(r["col"], r["row"]): r for r in rows}


def check_against_reference(spark, path, sources, tms_name, z, resampling, nodata, tolerance):
    """Every candidate tile of the sources: present iff the reference holds data, and equal to it."""
    tiles = layer_tiles(spark, path)
    candidates = morecantile_tiles(tms_name, sources, z)
    assert set(tiles) <= candidates
    absent = 0
    for key in sorted(candidates):
        want = reference_tile(sources, tms_name, key[0], key[1], z, resampling, nodata)
        if raster.is_empty(want, nodata):
            assert key not in tiles, f"tile {key} holds only nodata and should be absent"
            absent += 1
            continue
        assert key in tiles, f"tile {key} is missing"
        got = raster.to_numpy(tiles[key])
        assert got.shape == want.shape and got.dtype == want.dtype
        diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
        assert diff.max() <= tolerance, f"tile {key}: {int((diff > tolerance).sum())} pixels differ by up to {diff.max()}"
    return tiles, absent


def check_grid_metadata(md, tms_name, z, bands, dtype, nodata):
    t = morecantile.tms.get(tms_name)
    m = t.matrix(z)
    first, last = t.xy_bounds(0, 0, z), t.xy_bounds(m.matrixWidth - 1, m.matrixHeight - 1, z)
    ki = md["keyIndex"]
    assert (ki["colMin"], ki["rowMin"], ki["colMax"], ki["rowMax"]) == (0, 0, m.matrixWidth - 1, m.matrixHeight - 1)
    ext = md["extent"]
    np.testing.assert_allclose([ext["xmin"], ext["ymin"], ext["xmax"], ext["ymax"]],
                               [first.left, last.bottom, last.right, first.top], rtol=0, atol=1e-6)
    assert rasterio.crs.CRS.from_user_input(md["crs"]) == t.rasterio_crs
    assert md["raster"] == {"tileWidth": m.tileWidth, "tileHeight": m.tileHeight, "bands": bands, "dtype": dtype,
                            "nodata": nodata, "tms": tms_name, "zoom": z}


@needs_basemap
def test_europe_to_web_mercator_nearest_is_exact(spark, europe_tif, tmp_path):
    path = str(tmp_path / "europe")
    report = sfclayer.ingest(spark, europe_tif, path, zoom=5, resampling="nearest")
    tiles, _ = check_against_reference(spark, path, [europe_tif], "WebMercatorQuad", 5, "nearest", 0, 0)
    assert report.tiles == len(tiles) > 10 and report.grid.zoom == 5
    with sfclayer.open(spark, path) as layer:
        check_grid_metadata(layer.metadata, "WebMercatorQuad", 5, 3, "uint8", None)  # no nodata declared
        # A look-up by XYZ numbers: Paris is in tile x=16, y=11 at zoom 5.
        paris = morecantile.tms.get("WebMercatorQuad").tile(2.35, 48.86, 5)
        assert (paris.x, paris.y) == (16, 11)
        np.testing.assert_array_equal(raster.to_numpy(layer.get(16, 11)), raster.to_numpy(tiles[(16, 11)]))
    # bbox queries are in the tile matrix's map units (metres here): one tile's interior.
    b = morecantile.tms.get("WebMercatorQuad").xy_bounds(16, 11, 5)
    inner = (b.left + 1000, b.bottom + 1000, b.right - 1000, b.top - 1000)
    assert [(r["col"], r["row"]) for r in sfclayer.read(spark, path, bbox=inner).collect()] == [(16, 11)]


@needs_basemap
def test_europe_to_web_mercator_bilinear_zoom_from_resolution(spark, europe_tif, tmp_path):
    path = str(tmp_path / "europe")
    report = sfclayer.ingest(spark, europe_tif, path)  # bilinear, zoom chosen
    # 1/15° is 7.4 km east-west in Web Mercator metres: zoom 4 (9.8 km) is closer than 5 (4.9 km).
    assert report.grid.zoom == 4 and report.nodata is None  # the source declares none: masks say it
    check_against_reference(spark, path, [europe_tif], "WebMercatorQuad", 4, "bilinear", 0, 1)


@needs_basemap
def test_world_to_world_crs84_quad(spark, world_tif, tmp_path):
    path = str(tmp_path / "world")
    report = sfclayer.ingest(spark, world_tif, path, tms="WorldCRS84Quad", resampling="bilinear")
    assert report.grid.zoom == 1  # 4/15° pixels: 0.35° (zoom 1) is closer than 0.18° (zoom 2)
    tiles, absent = check_against_reference(spark, path, [world_tif], "WorldCRS84Quad", 1, "bilinear", 0, 1)
    assert set(tiles) == {(x, y) for x in range(4) for y in range(2)} and absent == 0
    with sfclayer.open(spark, path) as layer:
        check_grid_metadata(layer.metadata, "WorldCRS84Quad", 1, 3, "uint8", None)
        assert layer.metadata["extent"] == {"xmin": -180.0, "ymin": -90.0, "xmax": 180.0, "ymax": 90.0}


def test_dem_with_nodata_tiles_over_nodata_absent(spark, dem_tif, tmp_path):
    path = str(tmp_path / "dem")
    report = sfclayer.ingest(spark, [dem_tif], path, zoom=12)
    assert report.nodata == DEM_NODATA
    tiles, absent = check_against_reference(spark, path, [dem_tif], "WebMercatorQuad", 12, "bilinear", DEM_NODATA, 1)
    assert absent >= 1 and len(tiles) >= 4  # the cut-off corner leaves whole tiles without data
    assert report.candidates == len(tiles) + absent
    with sfclayer.open(spark, path) as layer:
        check_grid_metadata(layer.metadata, "WebMercatorQuad", 12, 1, "int16", float(DEM_NODATA))
    t = next(iter(tiles.values()))
    assert t["dtype"] == "int16" and t["nodata"] == DEM_NODATA


@needs_basemap
def test_mosaic_last_source_wins_native_grid(spark, tmp_path):
    # Two overlapping crops on the Blue Marble's own grid; the second inverted, with a nodata hole.
    a_path = blue_marble_window(tmp_path / "a.tif", -12, 34, 18, 62)
    holed = []

    def invert_with_hole(x):
        x = 255 - x
        x[:, 60:120, 90:200] = 0
        holed.append(x)
        return x

    b_path = blue_marble_window(tmp_path / "b.tif", 6, 40, 30, 56, transform=invert_with_hole, nodata=0)
    with rasterio.open(a_path) as ds:
        a = ds.read()
    b = holed[0]
    # The reference canvas: 12°W..30°E × 34°N..62°N at 1/15°, a then b where b has data.
    canvas = np.zeros((3, 420, 630), "uint8")
    canvas[:, :, :450] = a
    sub = canvas[:, 90:330, 270:630]
    valid = (b != 0).any(axis=0)
    sub[:, valid] = b[:, valid]

    for order, want in (([a_path, b_path], canvas), ):
        path = str(tmp_path / "mosaic")
        report = sfclayer.ingest(spark, order, path, tms=None, tile_size=64)
        assert report.grid.tms is None and report.grid.crs == "EPSG:4326"
        assert (report.grid.width, report.grid.height) == (10, 7)
        tiles = layer_tiles(spark, path)
        stitched = np.zeros((3, 7 * 64, 10 * 64), "uint8")
        for (c, r), t in tiles.items():
            stitched[:, r * 64:(r + 1) * 64, c * 64:(c + 1) * 64] = raster.to_numpy(t)
        np.testing.assert_array_equal(stitched[:, :420, :630], want)
        # Tiles past the sources (bottom-right, outside both) hold only nodata: absent.
        assert (9, 0) not in tiles and (0, 0) in tiles
        with sfclayer.open(spark, path) as layer:
            md = layer.metadata
        assert md["raster"] == {"tileWidth": 64, "tileHeight": 64, "bands": 3, "dtype": "uint8",
                                "nodata": None, "tms": None, "zoom": None}  # a, the first, declares none
        assert md["extent"] == {"xmin": -12.0, "ymin": 62 - 7 * 64 / 15, "xmax": -12 + 10 * 64 / 15, "ymax": 62.0}

    # Reversed, a wins where both have data; b still fills where only b covers.
    path = str(tmp_path / "mosaic-ba")
    sfclayer.ingest(spark, [b_path, a_path], path, tms=None, tile_size=64)
    tiles = layer_tiles(spark, path)
    got = raster.to_numpy(tiles[(6, 3)])  # cols 384..447, rows 192..255: all a (lon < 18°)
    np.testing.assert_array_equal(got, a[:, 192:256, 384:448])
    got = raster.to_numpy(tiles[(8, 3)])  # cols 512..575: only b covers it
    np.testing.assert_array_equal(got, b[:, 192 - 90:256 - 90, 512 - 270:576 - 270])


@needs_basemap
def test_mosaic_last_source_wins_reprojected(spark, tmp_path):
    a_path = blue_marble_window(tmp_path / "a.tif", -12, 34, 18, 62)
    b_path = blue_marble_window(tmp_path / "b.tif", 6, 40, 30, 56, transform=lambda x: 255 - x)
    path = str(tmp_path / "mosaic")
    sfclayer.ingest(spark, [a_path, b_path], path, zoom=4, resampling="nearest")
    tiles, _ = check_against_reference(spark, path, [a_path, b_path], "WebMercatorQuad", 4, "nearest", 0, 0)
    # The overlap (tile 8, 5 spans 0°..22.5°E, 40.9°N..55.8°N) shows b's inverted colours.
    assert (8, 5) in tiles


def test_raster_write_option_round_trips(spark, tmp_path):
    df = spark.createDataFrame([(0, 0, *raster.from_numpy(np.ones((2, 2), "uint8")).values())], raster.spark_schema())
    desc = {"tileWidth": 2, "tileHeight": 2, "bands": 1, "dtype": "uint8", "nodata": None, "tms": None, "zoom": None}
    sfclayer.write(df, str(tmp_path / "a"), raster=desc)
    with sfclayer.open(spark, str(tmp_path / "a")) as layer:
        assert layer.metadata["raster"] == desc
    sfclayer.write(df, str(tmp_path / "b"))
    with sfclayer.open(spark, str(tmp_path / "b")) as layer:
        assert "raster" not in layer.metadata
    with pytest.raises(sfclayer.InvalidArgument, match="option raster: .* is not a JSON object"):
        sfclayer.write(df, str(tmp_path / "c"), raster="[1, 2")


def test_bad_input_named(spark, dem_tif, tmp_path):
    path = str(tmp_path / "x")
    with pytest.raises(sfclayer.InvalidArgument, match="tms: 'NoSuchQuad' is an unknown tile matrix set"):
        sfclayer.ingest(spark, dem_tif, path, tms="NoSuchQuad")
    with pytest.raises(sfclayer.InvalidArgument, match="tile_size: 512 does not fit WebMercatorQuad's 256 × 256 px tiles"):
        sfclayer.ingest(spark, dem_tif, path, tile_size=512)
    with pytest.raises(sfclayer.InvalidArgument, match="resampling: 'smooth' is unknown"):
        sfclayer.ingest(spark, dem_tif, path, resampling="smooth")
    with pytest.raises(sfclayer.InvalidArgument, match=r"write option extent: \(0, 0, 1, 1\) is set by ingest"):
        sfclayer.ingest(spark, dem_tif, path, extent=(0, 0, 1, 1))
    with pytest.raises(sfclayer.InvalidInput, match="cannot open raster .*missing.tif"):
        sfclayer.ingest(spark, [dem_tif, str(tmp_path / "missing.tif")], path)
    other = write_geotiff(tmp_path / "rgb.tif", np.zeros((3, 4, 4), "uint8"), (-84, 36, -83, 37))
    with pytest.raises(sfclayer.InvalidInput, match="rgb.tif has 3 bands of uint8; .*jacksboro.tif has 1 of int16"):
        sfclayer.ingest(spark, [dem_tif, other], path)
    shifted = write_geotiff(tmp_path / "shifted.tif", np.zeros((1, 4, 4), "int16"), (-84.0001, 36, -83.9, 36.1))
    with pytest.raises(sfclayer.InvalidInput, match="with tms=None every source must share"):
        sfclayer.ingest(spark, [dem_tif, shifted], path, tms=None)
    with pytest.raises(sfclayer.InvalidArgument, match=r"zoom: 30 is outside WebMercatorQuad's zooms \(0\.\.24\)"):
        sfclayer.ingest(spark, dem_tif, path, zoom=30)


def test_float_dem_with_nan_nodata(spark, tmp_path):
    from tests.raster_sources import jacksboro

    e, bounds = jacksboro()
    metres = np.where(e == DEM_NODATA, np.nan, e.astype("float32") * 0.5).astype("float32")
    src = write_geotiff(tmp_path / "dem32.tif", metres[np.newaxis], bounds, nodata=float("nan"))
    path = str(tmp_path / "dem32")
    report = sfclayer.ingest(spark, src, path, zoom=12, resampling="nearest")
    assert np.isnan(report.nodata)
    tiles = layer_tiles(spark, path)
    absent = 0
    for key in sorted(morecantile_tiles("WebMercatorQuad", [src], 12)):
        want = reference_tile([src], "WebMercatorQuad", key[0], key[1], 12, "nearest", np.nan)
        if np.isnan(want).all():
            assert key not in tiles
            absent += 1
        else:
            np.testing.assert_array_equal(raster.to_numpy(tiles[key]), want)  # NaN where NaN
    assert absent >= 1
    with sfclayer.open(spark, path) as layer:
        assert layer.metadata["raster"]["nodata"] == "NaN" and layer.metadata["raster"]["dtype"] == "float32"
    assert np.isnan(next(iter(tiles.values()))["nodata"])
