"""Layer windows as xarray DataArrays (issue 24): the same pixels as a rasterio window read of the source,
with pixel-centre coordinates and the CRS as rioxarray reads it."""

import numpy as np
import pytest

xr = pytest.importorskip("xarray")
rioxarray = pytest.importorskip("rioxarray")
import rasterio  # noqa: E402
from rasterio.windows import Window  # noqa: E402

import sfclayer  # noqa: E402
from sfclayer.errors import InvalidArgument  # noqa: E402

from .raster_sources import DEM_NODATA, dem_tif  # noqa: E402,F401


@pytest.fixture(scope="module")
def dem_layer(spark, dem_tif, tmp_path_factory):  # noqa: F811
    path = str(tmp_path_factory.mktemp("arrays") / "dem")
    sfclayer.ingest(spark, [dem_tif], path, tms=None, tile_size=64)
    return path


def source_window(tif, col_off, row_off, width, height):
    with rasterio.open(tif) as ds:
        win = Window(col_off, row_off, width, height)
        return ds.read(window=win), ds.window_transform(win), ds.crs


def test_window_equals_rasterio_window_read(spark, dem_layer, dem_tif):  # noqa: F811
    want, transform, crs = source_window(dem_tif, 50, 30, 250, 170)  # crosses many 64 px tiles and the nodata cut
    west, north = transform * (0, 0)
    east, south = transform * (250, 170)
    inset = 0.2 * transform.a  # a box inside the pixels' edges still takes whole pixels
    with sfclayer.open(spark, dem_layer) as layer:
        da = layer.to_xarray(bbox=(west + inset, south + inset, east - inset, north - inset))
    assert da.dims == ("band", "y", "x") and da.shape == want.shape
    assert da.dtype == want.dtype
    assert np.array_equal(da.values, want)
    assert (da.values == DEM_NODATA).any()  # the window reaches the source's nodata corner
    assert da.attrs["_FillValue"] == DEM_NODATA or da.rio.nodata == DEM_NODATA
    # pixel centres, and the CRS and transform rioxarray reads back
    assert da.x.values[0] == pytest.approx((transform * (0.5, 0.5))[0], rel=1e-12)
    assert da.y.values[-1] == pytest.approx((transform * (0.5, 169.5))[1], rel=1e-12)
    assert da.rio.crs == crs
    assert da.rio.transform().almost_equals(transform, precision=1e-9)
    assert list(da.band.values) == [1]


def test_through_spark_equals_the_driver_path(spark, dem_layer, dem_tif):  # noqa: F811
    want, transform, _ = source_window(dem_tif, 0, 100, 130, 64)
    west, north = transform * (0, 0)
    east, south = transform * (130, 64)
    da = sfclayer.to_xarray(spark, dem_layer, bbox=(west, south, east, north))
    assert np.array_equal(da.values, want)
    with sfclayer.open(spark, dem_layer) as layer:
        assert layer.to_xarray(bbox=(west, south, east, north)).equals(da)


def test_bad_windows(spark, dem_layer):
    with sfclayer.open(spark, dem_layer) as layer:
        with pytest.raises(InvalidArgument, match="bbox"):
            layer.to_xarray(bbox=(1000, 1000, 1001, 1001))
        with pytest.raises(InvalidArgument, match="bands"):
            b = layer.metadata["extent"]
            layer.to_xarray(bbox=(b["xmin"], b["ymin"], b["xmax"], b["ymax"]), bands=[2])
