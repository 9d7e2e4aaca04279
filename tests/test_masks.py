"""Honest pixels (issue 25, "Black becomes missing"): a raster layer says which pixels are valid by a
per-tile mask, never by stealing a value the source did not declare. References nobody here wrote:
rasterio's own masked reads of the source (GDAL's mask band) and the alpha band of GDAL's warped VRT
of the source over each tile; numpy's masked arrays for the pyramid's averages."""

import numpy as np
import pytest

import sfclayer
from sfclayer import pyramids, raster
from sfclayer.server import tiles as served_tiles

from tests import serving as sv
from tests.raster_sources import blue_marble_window, jacksboro, needs_basemap, write_geotiff

rasterio = pytest.importorskip("rasterio")
morecantile = pytest.importorskip("morecantile")

TILE = 64
# Europe, 12°W..18°E × 34°N..62°N at 1/15°: 450 × 420 px, so the last tile column and row reach past it.
WINDOW = (-12, 34, 18, 62)
# WebMercatorQuad zoom 5 tile (16, 11): 0°..11.25°E × 48.92°N..55.78°N, wholly inside the black box.
BLACK_BOX = (-1, 40, 24, 57)  # lon0, lat0, lon1, lat1


def _blacken(a):
    """Blue Marble pixels with real black in them: a box, and scattered black pixels."""
    a = a.copy()
    lon0, lat0, lon1, lat1 = BLACK_BOX
    w0, s0 = WINDOW[0], WINDOW[1]
    top = WINDOW[3]
    a[:, round((top - lat1) * 15):round((top - lat0) * 15), round((lon0 - w0) * 15):round((lon1 - w0) * 15)] = 0
    rng = np.random.default_rng(25)
    ys, xs = rng.integers(0, a.shape[1], 500), rng.integers(0, a.shape[2], 500)
    a[:, ys, xs] = 0
    a[:, TILE:2 * TILE, 0:TILE] = 0  # native tile (0, 1): every pixel black
    assert s0 < lat0
    return a


@pytest.fixture(scope="module")
def black_rgb(tmp_path_factory):
    """An RGB uint8 GeoTIFF without nodata holding black pixels, a black box and an all-black tile."""
    path = blue_marble_window(tmp_path_factory.mktemp("masks") / "black.tif", *WINDOW, transform=_blacken)
    with rasterio.open(path) as ds:
        assert ds.nodata is None and (ds.dataset_mask() == 255).all()  # GDAL: every pixel is data
    return path


@pytest.fixture(scope="module")
def sea_dem(tmp_path_factory):
    """An int16 DEM without nodata whose lowest 30 % is sea level 0."""
    e, bounds = jacksboro()
    e = np.where(e == -32768, e.max(), e)  # the test set's cut corner back to land
    sea = np.clip(e - np.percentile(e, 30), 0, None).astype("int16")
    assert (sea == 0).mean() > 0.25
    return write_geotiff(tmp_path_factory.mktemp("masks") / "sea.tif", sea[np.newaxis], bounds)


def _tiles(spark, path):
    rows = sfclayer.read(spark, path).select("col", "row", *raster.COLUMNS).collect()
    return {(r["col"], r["row"]): r for r in rows}


def _stitch(tiles, cols, rows, bands, dtype):
    """The layer's tiles side by side as one masked array (absent tiles masked)."""
    out = np.ma.masked_all((bands, rows * TILE, cols * TILE), dtype=dtype)
    for (c, r), t in tiles.items():
        out[:, r * TILE:(r + 1) * TILE, c * TILE:(c + 1) * TILE] = raster.to_numpy(t, masked=True)
    return out


def _gdal_warp(path, tms_name, x, y, z, resampling):
    """GDAL's warped VRT of the source over the tile, its alpha band (added unless the source has one)
    non-zero where the pixel holds data: (pixels, valid)."""
    from rasterio.enums import ColorInterp, Resampling
    from rasterio.transform import from_bounds
    from rasterio.vrt import WarpedVRT

    t = morecantile.tms.get(tms_name)
    m = t.matrix(z)
    with rasterio.open(path) as ds:
        has_alpha = ColorInterp.alpha in ds.colorinterp
        with WarpedVRT(ds, crs=t.rasterio_crs, transform=from_bounds(*t.xy_bounds(x, y, z), m.tileWidth, m.tileHeight),
                       width=m.tileWidth, height=m.tileHeight, resampling=Resampling[resampling],
                       add_alpha=not has_alpha) as vrt:
            alpha = vrt.colorinterp.index(ColorInterp.alpha) + 1
            return vrt.read(indexes=list(range(1, ds.count + 1))), vrt.read(alpha) != 0


def _check_warped(spark, path, source, z, resampling, tolerance):
    """Every tile the source touches against GDAL: the same valid pixels, the same values there."""
    tiles = _tiles(spark, path)
    t = morecantile.tms.get("WebMercatorQuad")
    with rasterio.open(source) as ds:
        candidates = {(k.x, k.y) for k in t.tiles(*ds.bounds, [z])}
    assert set(tiles) <= candidates
    partial = 0
    for key in sorted(candidates):
        want, want_valid = _gdal_warp(source, "WebMercatorQuad", *key, z, resampling)
        if not want_valid.any():
            assert key not in tiles, f"tile {key} has no valid pixel and should be absent"
            continue
        assert key in tiles, f"tile {key} is missing"
        got = raster.to_numpy(tiles[key], masked=True)
        valid = raster.valid_mask(tiles[key])
        np.testing.assert_array_equal(valid, want_valid, err_msg=f"tile {key}: valid pixels differ from GDAL's alpha")
        diff = np.abs(got.data[:, valid].astype(np.int64) - want[:, valid].astype(np.int64))
        assert diff.size == 0 or diff.max() <= tolerance, f"tile {key}: pixels differ by up to {diff.max()}"
        partial += not valid.all()
    assert partial >= 1  # tiles on the footprint's edge: pixels outside it are invalid
    return tiles


@needs_basemap
def test_black_rgb_without_nodata_keeps_every_pixel_own_grid(spark, black_rgb, tmp_path):
    path = str(tmp_path / "black")
    report = sfclayer.ingest(spark, black_rgb, path, tms=None, tile_size=TILE)
    assert report.nodata is None and (report.grid.width, report.grid.height) == (8, 7)
    tiles = _tiles(spark, path)
    assert len(tiles) == report.candidates == 56  # nothing dropped: the all-black tile (0, 1) is there
    assert (raster.to_numpy(tiles[(0, 1)]) == 0).all() and raster.valid_mask(tiles[(0, 1)]).all()
    assert tiles[(0, 1)]["mask"] is None  # a whole tile of data needs no mask
    with rasterio.open(black_rgb) as ds:
        want = ds.read(masked=True)  # rasterio's own read: every pixel valid, black ones too
    got = _stitch(tiles, 8, 7, 3, "uint8")
    inside = got[:, :420, :450]
    np.testing.assert_array_equal(np.ma.getmaskarray(inside), np.ma.getmaskarray(want))
    np.testing.assert_array_equal(inside.data, want.data)
    # Past the footprint (the padded last column and row): invalid, so transparent and not counted.
    assert np.ma.getmaskarray(got)[:, 420:, :].all() and np.ma.getmaskarray(got)[:, :, 450:].all()
    assert tiles[(7, 0)]["mask"] is not None
    # Statistics count exactly the source's pixels: black ones in, padding out.
    assert got[0].count() == want[0].count() == 450 * 420
    np.testing.assert_allclose(got.mean(axis=(1, 2)), want.mean(axis=(1, 2)), rtol=1e-12)
    with sfclayer.open(spark, path) as layer:
        assert layer.metadata["raster"]["nodata"] is None and layer.metadata["formatVersion"] == 5
        assert raster.valid_mask(layer.get(0, 1)).all()  # look-ups decode the mask too


@needs_basemap
def test_black_rgb_on_web_mercator_matches_gdal_alpha_and_serves_opaque_black(spark, black_rgb, tmp_path):
    from sfclayer import server as srv

    path = str(tmp_path / "black-wm")
    sfclayer.ingest(spark, black_rgb, path, zoom=5, resampling="nearest")
    tiles = _check_warped(spark, path, black_rgb, 5, "nearest", 0)
    black = raster.to_numpy(tiles[(16, 11)], masked=True)
    assert (black == 0).all() and black.count() == black.size  # the all-black tile is data
    edge = next(k for k, t in sorted(tiles.items()) if t["mask"] is not None)
    with srv.serve(spark, [f"black={path}"], port=0, background=True, log=lambda *_: None) as server:
        c = sv.Client(server.url)
        try:
            code, _, body = c.get("/layers/black/tiles/5/16/11.png")
            assert code == 200
            png = sv.decode_png(body)
            assert (png[..., 3] == 255).all() and (png[..., :3] == 0).all()  # opaque black
            code, _, body = c.get(f"/layers/black/tiles/5/{edge[0]}/{edge[1]}.png")
            _, want_valid = _gdal_warp(black_rgb, "WebMercatorQuad", *edge, 5, "nearest")
            np.testing.assert_array_equal(sv.decode_png(body)[..., 3], np.where(want_valid, 255, 0))
        finally:
            c.close()


def test_sea_level_zero_is_data_own_grid_and_web_mercator(spark, sea_dem, tmp_path):
    path = str(tmp_path / "sea")
    report = sfclayer.ingest(spark, sea_dem, path, tms=None, tile_size=TILE)
    assert report.nodata is None
    with rasterio.open(sea_dem) as ds:
        want = ds.read(masked=True)
        h, w = ds.height, ds.width
    got = _stitch(_tiles(spark, path), report.grid.width, report.grid.height, 1, "int16")
    np.testing.assert_array_equal(got[:, :h, :w].filled(-1), want.filled(-1))
    assert np.ma.getmaskarray(got)[:, h:, :].all() and np.ma.getmaskarray(got)[:, :, w:].all()
    assert got.count() == want.count() == h * w and int((got == 0).sum()) == int((want == 0).sum()) > 0
    assert float(got.mean()) == pytest.approx(float(want.mean()), rel=1e-12)
    # Zonal statistics and xarray follow the masks: a zone over the whole layer (its padding too)
    # counts exactly the source's pixels, sea level in; the window's `valid` coordinate says the same.
    x0, y0, x1, y1 = report.grid.extent
    zone = f"POLYGON (({x0} {y0}, {x1} {y0}, {x1} {y1}, {x0} {y1}, {x0} {y0}))"
    [z] = sfclayer.zonal_stats(spark, path, [zone], stats=("count", "mean", "min")).collect()
    assert (z["count"], z["min"]) == (h * w, 0) and z["mean"] == pytest.approx(float(want.mean()), rel=1e-9)
    da = sfclayer.to_xarray(spark, path, bbox=report.grid.extent)
    assert int(da.valid.sum()) == h * w and not bool(da.valid[h:, :].any())
    assert float(da.where(da.valid).mean()) == pytest.approx(float(want.mean()), rel=1e-6)  # xarray sums in float32

    wm = str(tmp_path / "sea-wm")
    sfclayer.ingest(spark, sea_dem, wm, zoom=12, resampling="bilinear")
    tiles = _check_warped(spark, wm, sea_dem, 12, "bilinear", 1)
    assert any((raster.to_numpy(t, masked=True) == 0).sum() > 0 for t in tiles.values())


def test_gdal_per_dataset_mask_and_alpha_band_are_the_validity(spark, tmp_path):
    """Sources that say what is missing by GDAL's mask band or an alpha band, not by nodata."""
    from rasterio.enums import ColorInterp

    rng = np.random.default_rng(3)
    a = rng.integers(0, 4, (3, 90, 100), dtype=np.uint8)  # many black pixels, all data
    valid = np.ones((90, 100), bool)
    valid[10:40, 20:70] = False
    valid[70:, :30] = False
    bounds = (10.0, 40.0, 11.0, 40.9)
    masked = write_geotiff(tmp_path / "masked.tif", a, bounds)
    with rasterio.Env(GDAL_TIFF_INTERNAL_MASK=True), rasterio.open(masked, "r+") as ds:
        ds.write_mask(np.where(valid, 255, 0).astype(np.uint8))
    alpha = write_geotiff(tmp_path / "alpha.tif", np.concatenate([a, np.where(valid, 255, 0)[None]]).astype(np.uint8),
                          bounds)
    with rasterio.open(alpha, "r+") as ds:
        ds.colorinterp = [ColorInterp.red, ColorInterp.green, ColorInterp.blue, ColorInterp.alpha]
    for source, bands in ((masked, 3), (alpha, 4)):
        with rasterio.open(source) as ds:
            want = ds.dataset_mask() != 0  # GDAL's reading of the source's validity
        np.testing.assert_array_equal(want, valid)
        path = str(tmp_path / f"layer-{bands}")
        sfclayer.ingest(spark, source, path, tms=None, tile_size=TILE)
        got = _stitch(_tiles(spark, path), 2, 2, bands, "uint8")
        np.testing.assert_array_equal(~np.ma.getmaskarray(got)[0, :90, :100], want)
        np.testing.assert_array_equal(got.data[:3, :90, :100][:, want], a[:, want])
        # Reprojected: the layer's validity is GDAL's alpha band of the same warp.
        wm = str(tmp_path / f"layer-{bands}-wm")
        sfclayer.ingest(spark, source, wm, zoom=9, resampling="nearest")
        _check_warped(spark, wm, source, 9, "nearest", 0)


@needs_basemap
def test_pyramid_averages_only_valid_pixels_and_keeps_black(spark, black_rgb, tmp_path):
    path = str(tmp_path / "black-pyr")
    sfclayer.ingest(spark, black_rgb, path, tms=None, tile_size=TILE)
    base = _stitch(_tiles(spark, path), 8, 7, 3, "uint8")
    assert sfclayer.pyramid(spark, path) == [0, 1, 2]
    # numpy's masked mean of each 2 × 2 block (the invalid pixels out), rounded half to even.
    want = base.astype(np.float64).reshape(3, 7 * TILE // 2, 2, 8 * TILE // 2, 2).mean(axis=(2, 4))
    with sfclayer.open(spark, path, zoom=2) as level:
        tiles = {(c, r): level.get(c, r) for c in range(4) for r in range(4)}
    got = _stitch(tiles, 4, 4, 3, "uint8")[:, :7 * TILE // 2, :]
    np.testing.assert_array_equal(np.ma.getmaskarray(got), np.ma.getmaskarray(want))
    np.testing.assert_array_equal(got.compressed(), np.rint(want.compressed()).astype(np.uint8))
    assert (got[:, TILE // 2:TILE, 0:TILE // 2] == 0).all()  # the black tile's parent pixels: black, valid
    assert tiles[(3, 0)]["mask"] is not None  # the right edge: invalid past the footprint


def test_layers_written_before_masks_read_as_they_did(spark, tmp_path):
    """A format 3 raster layer (no mask column, nodata 0): zeros stay missing, its pyramid builds."""
    from pyspark.sql.types import StructType

    a = np.arange(2 * 4 * 4, dtype=np.uint8).reshape(2, 4, 4) % 5  # zeros in it
    old_schema = StructType([f for f in raster.spark_schema().fields if f.name != "mask"])
    rows = []
    for c in range(2):
        t = raster.from_numpy(a[c], nodata=0)
        rows.append((c, 0, *[t[k] for k in raster.COLUMNS[:-1]]))
    path = str(tmp_path / "old")
    desc = {"tileWidth": 4, "tileHeight": 4, "bands": 1, "dtype": "uint8", "nodata": 0.0, "tms": None, "zoom": None}
    sfclayer.write(spark.createDataFrame(rows, old_schema), path, bounds=(0, 0, 1, 0), extent=(0, 0, 2, 1),
                   crs="EPSG:4326", raster=desc)
    with sfclayer.open(spark, path) as layer:
        tile = layer.get(0, 0)
        assert "mask" not in tile
        m = raster.to_numpy(tile, masked=True)
        np.testing.assert_array_equal(np.ma.getmaskarray(m)[0], a[0] == 0)
    assert sfclayer.pyramid(spark, path) == [0]
    with sfclayer.open(spark, path, zoom=0) as level:
        parent = raster.to_numpy(level.get(0, 0), masked=True)[0]
    block = np.ma.masked_all((8, 8))  # the children (0, 0) and (1, 0); (0, 1) and (1, 1) absent
    block[:4] = np.ma.masked_equal(np.concatenate([a[0], a[1]], axis=1).astype(float), 0)
    want = block.reshape(4, 2, 4, 2).mean(axis=(1, 3))
    np.testing.assert_array_equal(np.ma.getmaskarray(parent), np.ma.getmaskarray(want))
    np.testing.assert_array_equal(parent.compressed(), np.rint(want.compressed()))


# Without Spark: the convention itself.

def test_from_numpy_stores_a_mask_only_where_nodata_cannot_say_it():
    a = np.zeros((3, 2, 3), np.uint8)
    a[:, 0, 0] = 7
    everything = raster.from_numpy(a, valid=np.ones((2, 3), bool))
    assert everything["mask"] is None and raster.valid_mask(everything).all()
    some = np.array([[True, True, False], [True, False, False]])
    t = raster.from_numpy(a, valid=some)
    assert t["mask"] == bytes([0b11010000])
    np.testing.assert_array_equal(raster.valid_mask(t), some)
    assert raster.from_numpy(np.ma.MaskedArray(a, mask=~np.repeat(some[None], 3, 0)))["mask"] == t["mask"]
    # With nodata 0: the invalid pixels are exactly the zeros, so nodata says it; no mask.
    assert raster.from_numpy(a, nodata=0, valid=(a != 0).any(axis=0))["mask"] is None
    # A valid pixel equal to nodata needs one.
    assert raster.from_numpy(a, nodata=0, valid=some)["mask"] is not None
    with pytest.raises(ValueError, match=r"mask: 2 bytes are not one bit per pixel of a 3 × 2 tile \(1 bytes\)"):
        raster.valid_mask(dict(t, mask=b"\xff\xff"))
    with pytest.raises(ValueError, match=r"valid: shape \(3, 2\)"):
        raster.from_numpy(a, valid=np.ones((3, 2), bool))


def test_masked_tile_drawn_black_is_opaque_and_masked_is_transparent():
    import io

    from PIL import Image

    a = np.zeros((3, 2, 2), np.uint8)
    valid = np.array([[True, False], [True, True]])
    tile = raster.from_numpy(a, valid=valid, nodata=0)  # black is the nodata value, yet valid where the mask says
    png = served_tiles.render_pixels(raster.to_numpy(tile), raster.valid_mask(tile))
    rgba = np.asarray(Image.open(io.BytesIO(png)).convert("RGBA"))
    assert rgba[..., 3].tolist() == [[255, 0], [255, 255]] and (rgba[..., :3] == 0).all()


def test_downsample_with_validity_mask():
    block = np.array([[[0, 0, 9, 9], [0, 0, 9, 3], [5, 6, 0, 0], [7, 8, 0, 0]]], np.uint8)
    valid = np.array([[1, 1, 1, 0], [1, 1, 0, 0], [0, 0, 0, 0], [0, 1, 0, 0]], bool)
    out, out_valid = pyramids.downsample(block, None, "average", valid=valid, with_valid=True)
    assert out.tolist() == [[[0, 9], [8, 0]]] and out_valid.tolist() == [[True, True], [True, False]]
    out, out_valid = pyramids.downsample(block, None, "nearest", valid=valid, with_valid=True)
    assert out_valid.tolist() == [[True, True], [False, False]]
