"""Raster tiles as values: one convention for pixels in a layer.

A raster tile is a row whose value columns are

========  =========  ==========================================================================
column    type       meaning
========  =========  ==========================================================================
pixels    binary     ``bands × height × width`` values, band-sequential, each band row-major,
                     little-endian (numpy ``array.astype(dtype.newbyteorder("<")).tobytes()``)
width     int        pixels per row
height    int        rows
bands     int        bands (1 for a single-band raster)
dtype     string     numpy type name: ``uint8``, ``int16``, ``uint16``, ``int32``, ``float32``, ...
nodata    double     the value that marks a missing pixel, or null when every pixel is valid
========  =========  ==========================================================================

docs/FORMAT.md names the same convention, so any reader can decode a raster layer. Everything in
sfclayer that packs or unpacks pixels (ingest, pyramid, the demo, the tile server) goes through
:func:`from_numpy` and :func:`to_numpy`.

Examples
--------
>>> import numpy as np
>>> from sfclayer import raster
>>> a = np.arange(12, dtype="uint16").reshape(3, 2, 2)   # 3 bands of 2 × 2
>>> tile = raster.from_numpy(a, nodata=0)
>>> tile["width"], tile["height"], tile["bands"], tile["dtype"], tile["nodata"]
(2, 2, 3, 'uint16', 0.0)
>>> bool((raster.to_numpy(tile) == a).all())
True
>>> raster.to_numpy(raster.from_numpy(np.ones((4, 5), "float32"))).shape
(1, 4, 5)
"""

import numpy as np

__all__ = ["COLUMNS", "spark_schema", "value_schema", "from_numpy", "to_numpy", "valid_mask", "is_empty"]

#: The value columns of a raster tile, in order.
COLUMNS = ("pixels", "width", "height", "bands", "dtype", "nodata")


def value_schema():
    """The Spark schema of the value columns of a raster tile (without the key columns).

    Returns
    -------
    pyspark.sql.types.StructType
    """
    from pyspark.sql.types import BinaryType, DoubleType, IntegerType, StringType, StructField, StructType

    return StructType([
        StructField("pixels", BinaryType(), False),
        StructField("width", IntegerType(), False),
        StructField("height", IntegerType(), False),
        StructField("bands", IntegerType(), False),
        StructField("dtype", StringType(), False),
        StructField("nodata", DoubleType(), True),
    ])


def spark_schema(time=False):
    """The Spark schema of a raster tile DataFrame: ``col``, ``row`` (and ``time``), then the values.

    Parameters
    ----------
    time : bool
        Whether the layer is space-time (a ``time`` timestamp key column).

    Returns
    -------
    pyspark.sql.types.StructType
    """
    from pyspark.sql.types import IntegerType, StructField, StructType, TimestampType

    keys = [StructField("col", IntegerType(), False), StructField("row", IntegerType(), False)]
    if time:
        keys.append(StructField("time", TimestampType(), False))
    return StructType(keys + list(value_schema().fields))


def from_numpy(array, nodata=None):
    """The value columns of a raster tile holding ``array``.

    Parameters
    ----------
    array : numpy.ndarray
        ``(bands, height, width)``, or ``(height, width)`` for one band.
    nodata : float, optional
        The value marking missing pixels; None when every pixel is valid.

    Returns
    -------
    dict
        ``pixels``, ``width``, ``height``, ``bands``, ``dtype``, ``nodata``.
    """
    a = np.asarray(array)
    if a.ndim == 2:
        a = a[np.newaxis]
    if a.ndim != 3:
        raise ValueError(f"array: shape {a.shape} is not a raster tile's ((bands, height, width) or (height, width))")
    if a.dtype.kind not in "biuf":
        raise ValueError(f"array: dtype {a.dtype} is not a raster tile's (booleans, integers or floats)")
    little = a.dtype.newbyteorder("<")
    return {
        "pixels": np.ascontiguousarray(a, dtype=little).tobytes(),
        "width": int(a.shape[2]),
        "height": int(a.shape[1]),
        "bands": int(a.shape[0]),
        "dtype": a.dtype.name,
        "nodata": None if nodata is None else float(nodata),
    }


def to_numpy(tile):
    """The pixels of a raster tile as an array ``(bands, height, width)``.

    Parameters
    ----------
    tile : Mapping or pyspark.sql.Row
        Anything with the value columns of :data:`COLUMNS` (a dict from ``Layer.get``, a Row).

    Returns
    -------
    numpy.ndarray
        A read-only view of the tile's bytes, in the tile's dtype (native byte order on
        little-endian machines).
    """
    dtype = np.dtype(tile["dtype"]).newbyteorder("<")
    shape = (int(tile["bands"]), int(tile["height"]), int(tile["width"]))
    buf = tile["pixels"]
    expected = shape[0] * shape[1] * shape[2] * dtype.itemsize
    if len(buf) != expected:
        raise ValueError(f"pixels: {len(buf)} bytes do not fill the tile ({shape} of {dtype.name}: {expected} bytes)")
    return np.frombuffer(buf, dtype=dtype).reshape(shape)


def valid_mask(tile, array=None):
    """Which pixels hold data: ``(height, width)`` booleans, False where every band is nodata (or NaN).

    Parameters
    ----------
    tile : Mapping or pyspark.sql.Row
        A raster tile.
    array : numpy.ndarray, optional
        ``to_numpy(tile)`` when the caller already has it.
    """
    a = to_numpy(tile) if array is None else array
    nodata = tile["nodata"] if "nodata" in _keys(tile) else None
    invalid = np.zeros(a.shape, dtype=bool)
    if a.dtype.kind == "f":
        invalid |= np.isnan(a)
    if nodata is not None and not np.isnan(nodata):
        invalid |= a == a.dtype.type(nodata)
    return ~invalid.all(axis=0)


def is_empty(array, nodata=None):
    """Whether ``array`` (``(bands, h, w)`` or ``(h, w)``) holds no valid pixel: all nodata or NaN."""
    a = np.asarray(array)
    invalid = np.isnan(a) if a.dtype.kind == "f" else np.zeros(a.shape, dtype=bool)
    if nodata is not None and not np.isnan(nodata):
        invalid |= a == a.dtype.type(nodata)
    return bool(invalid.all())


def _keys(tile):
    return tile.asDict().keys() if hasattr(tile, "asDict") else tile.keys()
