"""A window of a raster layer as an ``xarray.DataArray``: its tiles' pixels mosaicked, with coordinates.

The window is the layer's pixels that meet a map box (whole pixels: the box's edges rounded outwards
to the pixel grid), ``(band, y, x)`` (and ``time`` first for space-time layers), coordinates at pixel
centres, missing tiles and nodata as the layer's ``nodata`` (``_FillValue``; NaN for float layers), and
the CRS attached the rioxarray way (``rio.write_crs``) when rioxarray is installed. On a layer cut on a
source's own grid (``tms=None``) the pixels are the source's: the same as a rasterio window read.

Needs the ``xarray`` extra (xarray, rioxarray).
"""

import json

from . import _jvm
from ._args import check_box
from ._pyramid_levels import level_path
from ._windows import Window, window
from .errors import InvalidArgument
from .layer import read

__all__ = ["Window", "window", "to_xarray"]


def to_xarray(spark, path, bbox, time=None, bands=None, zoom=None):
    """A window of a raster layer as an ``xarray.DataArray``, its tiles read through Spark (for windows too
    large for the driver's look-up path; the result is still one array on the driver).

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
    path : str
    bbox : tuple of float
        ``(xmin, ymin, xmax, ymax)`` in the layer's CRS.
    time : tuple, optional
        (start, end) for space-time layers.
    bands : list of int, optional
        1-based band numbers.
    zoom : int, optional
        A pyramid level.

    Returns
    -------
    xarray.DataArray
    """
    bbox = check_box("bbox", bbox, float, "xmin, ymin, xmax, ymax")
    if bbox is None:
        raise InvalidArgument("bbox: None must be four numbers (xmin, ymin, xmax, ymax)")
    if zoom is not None:
        path = level_path(spark, path, zoom)
    md = json.loads(_jvm.layer_metadata_json(spark, path))
    w = Window(md, bbox)
    space_time = md["keyIndex"].get("kind") == "z3"
    df = read(spark, path, keys=w.keys, time=time)
    from pyspark.sql import functions as F

    columns = ["col", "row"] + ([F.unix_micros("time").alias("time")] if space_time else []) + [
        "pixels", "width", "height", "bands", "dtype", "nodata"]
    tiles = (r.asDict() for r in df.select(*columns).toLocalIterator())
    return window(md, tiles, bbox, bands, "time" if space_time else None)
