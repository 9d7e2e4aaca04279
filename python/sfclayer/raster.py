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
nodata    double     the value held by missing pixels, or null when there is none
mask      binary     null, or the tile's validity: one bit per pixel, row-major from the top-left,
                     most significant bit first (``numpy.packbits``), 1 = valid
========  =========  ==========================================================================

**Which pixels are valid** (docs/FORMAT.md, section 8): where the tile has a ``mask``, exactly the
pixels whose bit is 1; without one, every pixel except those equal to ``nodata`` in every band and
those NaN in every band. So a value is never stolen to say "missing": a black pixel of an RGB image
or sea level 0 in a DEM is data unless the source declared 0 as its nodata. Writers store a mask
only for tiles where ``nodata`` alone would say something else (:func:`from_numpy` decides), and
give missing pixels the value ``nodata`` (0, or NaN for floats, when there is none). Layers written
before masks (format 3 and earlier) have no ``mask`` column and read as they always did.

docs/FORMAT.md names the same convention, so any reader can decode a raster layer. Everything in
sfclayer that packs or unpacks pixels (ingest, pyramid, the demo, the tile server) goes through
:func:`from_numpy` and :func:`to_numpy`.

Examples
--------
>>> import numpy as np
>>> from sfclayer import raster
>>> a = np.arange(12, dtype="uint16").reshape(3, 2, 2)   # 3 bands of 2 × 2
>>> tile = raster.from_numpy(a, nodata=0)
>>> tile["width"], tile["height"], tile["bands"], tile["dtype"], tile["nodata"], tile["mask"]
(2, 2, 3, 'uint16', 0.0, None)
>>> bool((raster.to_numpy(tile) == a).all())
True
>>> raster.to_numpy(raster.from_numpy(np.ones((4, 5), "float32"))).shape
(1, 4, 5)

A black pixel that is data, and one outside the source's footprint:

>>> black = raster.from_numpy(np.zeros((3, 1, 2), "uint8"), valid=np.array([[True, False]]))
>>> raster.valid_mask(black).tolist()
[[True, False]]
>>> raster.to_numpy(black, masked=True)[0].tolist()
[[0, None]]
"""

import functools

import numpy as np

__all__ = ["COLUMNS", "spark_schema", "value_schema", "from_numpy", "to_numpy", "valid_mask", "is_empty",
           "pack_mask", "unpack_mask"]

#: The value columns of a raster tile, in order (layers written before masks lack ``mask``).
COLUMNS = ("pixels", "width", "height", "bands", "dtype", "nodata", "mask")


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
        StructField("mask", BinaryType(), True),
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


def from_numpy(array, nodata=None, valid=None):
    """The value columns of a raster tile holding ``array``.

    Parameters
    ----------
    array : numpy.ndarray or numpy.ma.MaskedArray
        ``(bands, height, width)``, or ``(height, width)`` for one band. A masked array's pixels are
        invalid where every band is masked (unless ``valid`` is given).
    nodata : float, optional
        The value missing pixels hold; None when there is none.
    valid : numpy.ndarray, optional
        ``(height, width)`` booleans, True where a pixel holds data. When they differ from what
        ``nodata`` says on its own (a valid pixel equal to ``nodata``, or an invalid one that is not),
        the tile gets a ``mask``; otherwise its mask is null. Without ``valid`` (and not a masked
        array), validity is ``nodata``'s and the mask null.

    Returns
    -------
    dict
        ``pixels``, ``width``, ``height``, ``bands``, ``dtype``, ``nodata``, ``mask``.
    """
    if valid is None and isinstance(array, np.ma.MaskedArray):
        m = np.ma.getmaskarray(array)
        valid = ~(m.all(axis=0) if m.ndim == 3 else m)
    a = np.asarray(array.data if isinstance(array, np.ma.MaskedArray) else array)
    if a.ndim == 2:
        a = a[np.newaxis]
    if a.ndim != 3:
        raise ValueError(f"array: shape {a.shape} is not a raster tile's ((bands, height, width) or (height, width))")
    if a.dtype.kind not in "biuf":
        raise ValueError(f"array: dtype {a.dtype} is not a raster tile's (booleans, integers or floats)")
    mask = None
    if valid is not None:
        valid = np.asarray(valid, dtype=bool)
        if valid.shape != a.shape[1:]:
            raise ValueError(f"valid: shape {valid.shape} is not the tile's pixels' {a.shape[1:]}")
        if not np.array_equal(valid, _nodata_valid(a, nodata)):
            mask = pack_mask(valid)
    little = a.dtype.newbyteorder("<")
    return {
        "pixels": np.ascontiguousarray(a, dtype=little).tobytes(),
        "width": int(a.shape[2]),
        "height": int(a.shape[1]),
        "bands": int(a.shape[0]),
        "dtype": a.dtype.name,
        "nodata": None if nodata is None else float(nodata),
        "mask": mask,
    }


def to_numpy(tile, masked=False):
    """The pixels of a raster tile as an array ``(bands, height, width)``.

    Parameters
    ----------
    tile : Mapping or pyspark.sql.Row
        Anything with the value columns of :data:`COLUMNS` (a dict from ``Layer.get``, a Row);
        ``nodata`` and ``mask`` may be absent (layers written before them).
    masked : bool
        Return a :class:`numpy.ma.MaskedArray` whose mask is True on every band of the invalid
        pixels (:func:`valid_mask`), so numpy's statistics (``mean``, ``min``, ``std``...) count the
        valid pixels only.

    Returns
    -------
    numpy.ndarray or numpy.ma.MaskedArray
        A read-only view of the tile's bytes, in the tile's dtype (native byte order on
        little-endian machines).
    """
    dtype = _little_endian(tile["dtype"])
    shape = (int(tile["bands"]), int(tile["height"]), int(tile["width"]))
    buf = tile["pixels"]
    expected = shape[0] * shape[1] * shape[2] * dtype.itemsize
    if len(buf) != expected:
        raise ValueError(f"pixels: {len(buf)} bytes do not fill the tile ({shape} of {dtype.name}: {expected} bytes)")
    a = np.frombuffer(buf, dtype=dtype).reshape(shape)
    if not masked:
        return a
    invalid = ~valid_mask(tile, a)
    return np.ma.MaskedArray(a, mask=np.repeat(invalid[np.newaxis], shape[0], axis=0))


@functools.lru_cache(maxsize=64)
def _little_endian(name):
    # a dtype from its name costs microseconds, which a window of many tiles pays per tile
    return np.dtype(name).newbyteorder("<")


def valid_mask(tile, array=None):
    """Which pixels hold data: ``(height, width)`` booleans (the module's rule).

    Parameters
    ----------
    tile : Mapping or pyspark.sql.Row
        A raster tile.
    array : numpy.ndarray, optional
        ``to_numpy(tile)`` when the caller already has it.

    Raises
    ------
    ValueError
        If the tile's mask does not have one bit per pixel.
    """
    a = to_numpy(tile) if array is None else array
    mask = _get(tile, "mask")
    if mask is not None:
        return unpack_mask(mask, a.shape[1], a.shape[2])
    return _nodata_valid(a, _get(tile, "nodata"))


def is_empty(array, nodata=None, valid=None):
    """Whether ``array`` (``(bands, h, w)`` or ``(h, w)``) holds no valid pixel: all invalid by
    ``valid`` when given, else all nodata or NaN."""
    if valid is not None:
        return not bool(np.asarray(valid).any())
    a = np.asarray(array)
    if a.ndim == 2:
        a = a[np.newaxis]
    return not bool(_nodata_valid(a, nodata).any())


def pack_mask(valid):
    """``(height, width)`` booleans → the ``mask`` column's bytes (one bit per pixel, MSB first)."""
    return np.packbits(np.asarray(valid, dtype=bool).ravel(), bitorder="big").tobytes()


def unpack_mask(mask, height, width):
    """The ``mask`` column's bytes → ``(height, width)`` booleans.

    Raises
    ------
    ValueError
        If ``mask`` is not ``ceil(height * width / 8)`` bytes.
    """
    n = height * width
    if len(mask) != (n + 7) // 8:
        raise ValueError(f"mask: {len(mask)} bytes are not one bit per pixel of a {width} × {height} tile "
                         f"({(n + 7) // 8} bytes)")
    bits = np.unpackbits(np.frombuffer(bytes(mask), dtype=np.uint8), count=n, bitorder="big")
    return bits.reshape(height, width).astype(bool)


def _nodata_valid(a, nodata):
    """(h, w): False where every band is nodata or NaN (validity without a mask)."""
    invalid = np.isnan(a) if a.dtype.kind == "f" else np.zeros(a.shape, dtype=bool)
    if nodata is not None and not np.isnan(nodata):
        invalid |= a == a.dtype.type(nodata)
    return ~invalid.all(axis=0)


def _get(tile, name):
    if hasattr(tile, "asDict"):
        return tile[name] if name in tile.__fields__ else None
    return tile.get(name)
