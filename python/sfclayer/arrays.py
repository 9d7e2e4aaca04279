"""``to_xarray``: a window of a raster layer read through Spark, as an ``xarray.DataArray``.

The window's rules (whole pixels, pixel-centre coordinates, ``_FillValue``, CRS) are in
:mod:`sfclayer._windows`, shared with ``Layer.to_xarray``. Needs the ``xarray`` extra.
"""

from ._windows import Window, window
from .errors import InvalidArgument

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
    import json

    from . import _jvm
    from ._args import check_box
    from .layer import read

    bbox = check_box("bbox", bbox, float, "xmin, ymin, xmax, ymax")
    if bbox is None:
        raise InvalidArgument("bbox: None must be four numbers (xmin, ymin, xmax, ymax)")
    if zoom is not None:
        from ._pyramid_levels import level_path

        path = level_path(spark, path, zoom)
    md = json.loads(_jvm.layer_metadata_json(spark, path, files=0))
    w = Window(md, bbox)
    space_time = md["keyIndex"].get("kind") == "z3"
    df = read(spark, path, keys=w.keys, time=time)
    from pyspark.sql import functions as F

    columns = ["col", "row"] + ([F.unix_micros("time").alias("time")] if space_time else []) + [
        "pixels", "width", "height", "bands", "dtype", "nodata"] + (["mask"] if "mask" in df.columns else [])
    tiles = (r.asDict() for r in df.select(*columns).toLocalIterator())
    return window(md, tiles, bbox, bands, "time" if space_time else None)
