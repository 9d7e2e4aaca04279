"""Stored groups back to their Avro bytes, in Python alone (docs/FORMAT.md section 4).

A layer's metadata names its ``compression``; a data file's value (a *group*) is stored as:

============  ===============================================================================
none          the group's Avro bytes
deflate       a 4-byte big-endian length, then a zlib stream
zstd          a 4-byte big-endian length, then one zstd frame
zstd-raster   a 4-byte big-endian length, a table of filtered regions, then one zstd frame of
              the group with each region's pixels filtered (horizontal delta, byte shuffle)
============  ===============================================================================

zstd needs the ``zstandard`` package (``pip install zstandard``); the rest numpy and the standard
library. The JVM connector decodes the same bytes; this module lets other readers (and the tests)
decode a layer without it.

Examples
--------
>>> from sfclayer import codecs
>>> codecs.decompress(b"\\x00\\x00\\x00\\x01x\\x9cc\\x00\\x00\\x00\\x01\\x00\\x01", "deflate")
b'\\x00'
"""

import zlib

import numpy as np

from .errors import CorruptLayer, InvalidArgument

__all__ = ["COMPRESSIONS", "decompress", "unfilter"]

#: The compressions a layer may name, as its metadata spells them.
COMPRESSIONS = ("none", "deflate", "zstd", "zstd-raster")

_DELTA, _SHUFFLE = 1, 2


def decompress(stored, compression):
    """The Avro bytes of a group from its stored form.

    Parameters
    ----------
    stored : bytes
        A data file's value (without the record's CRC).
    compression : str
        The layer's ``compression`` (metadata).

    Returns
    -------
    bytes

    Raises
    ------
    sfclayer.errors.InvalidArgument
        For a compression not in :data:`COMPRESSIONS`.
    sfclayer.errors.CorruptLayer
        For a stored form that is damaged.
    """
    stored = bytes(stored)
    if compression == "none":
        return stored
    if compression not in COMPRESSIONS:
        raise InvalidArgument(f"compression: {compression!r} is not one of {', '.join(COMPRESSIONS)}")
    if len(stored) < 4:
        raise CorruptLayer(f"stored group ({compression}): {len(stored)} bytes, shorter than its length prefix")
    n = int.from_bytes(stored[:4], "big")
    if compression == "deflate":
        try:
            out = zlib.decompress(stored[4:])
        except zlib.error as e:
            raise CorruptLayer(f"stored group (deflate): {e}") from e
    elif compression == "zstd":
        out = _unzstd(stored[4:], n)
    else:
        regions, at = _regions(stored, 4, n)
        out = bytearray(_unzstd(stored[at:], n))
        for start, length, size, filters, width in regions:
            out[start:start + length] = unfilter(out[start:start + length], size, filters, width)
        out = bytes(out)
    if len(out) != n:
        raise CorruptLayer(f"stored group ({compression}): {len(out)} bytes, the length prefix says {n}")
    return out


def unfilter(region, item_size, filters, width):
    """Undo the raster filters of one region: the byte shuffle, then the horizontal delta.

    Parameters
    ----------
    region : bytes
        The filtered bytes, a multiple of ``item_size × width``.
    item_size : int
        Bytes per value: 1, 2, 4 or 8.
    filters : int
        Bit 0: horizontal delta; bit 1: byte shuffle.
    width : int
        Values per row (each row's delta starts afresh).

    Returns
    -------
    bytes
        The pixels as stored in the tile (little-endian values).
    """
    a = np.frombuffer(region, dtype=np.uint8)
    if filters & _SHUFFLE and item_size > 1:
        a = a.reshape(item_size, -1).T  # byte j of value i sat at j·N + i
    values = np.ascontiguousarray(a).view(f"<u{item_size}")
    if filters & _DELTA:
        # unsigned cumulative sums wrap modulo 2^(8·item_size), as the deltas did
        values = np.cumsum(values.reshape(-1, width), axis=1, dtype=values.dtype)
    return values.tobytes()


def _unzstd(frame, n):
    try:
        import zstandard
    except ImportError as e:  # pragma: no cover - depends on the installation
        raise ImportError("decoding zstd-compressed groups in Python needs the zstandard package "
                          "(pip install zstandard)") from e
    try:
        return zstandard.ZstdDecompressor().decompress(frame, max_output_size=n)
    except zstandard.ZstdError as e:
        raise CorruptLayer(f"stored group (zstd): {e}") from e


def _uvarint(b, p):
    v = shift = 0
    while True:
        if p >= len(b) or shift > 28:
            raise CorruptLayer("stored group (zstd-raster): damaged region table")
        x = b[p]
        p += 1
        v |= (x & 0x7F) << shift
        shift += 7
        if not x & 0x80:
            return v, p


def _regions(b, p, n):
    """The region table of a zstd-raster stored form: ([(start, length, itemSize, filters, width)], frame start)."""
    count, p = _uvarint(b, p)
    regions, end = [], 0
    for _ in range(count):
        gap, p = _uvarint(b, p)
        length, p = _uvarint(b, p)
        if p + 2 > len(b):
            raise CorruptLayer("stored group (zstd-raster): damaged region table")
        size, filters = b[p], b[p + 1]
        width, p = _uvarint(b, p + 2)
        start = end + gap
        if size not in (1, 2, 4, 8) or filters > 3 or width < 1 or start + length > n or length % (size * width):
            raise CorruptLayer(f"stored group (zstd-raster): region {start}+{length} (item size {size}, width {width}) "
                             f"does not fit a {n}-byte group")
        regions.append((start, length, size, filters, width))
        end = start + length
    return regions, p
