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
        out = _unfilter_group(_unzstd(stored[at:], n), n, regions)
    if len(out) != n:
        raise CorruptLayer(f"stored group ({compression}): {len(out)} bytes, the length prefix says {n}")
    return out


def _unfilter_group(raw, n, regions):
    """The group from its zstd-raster frame's bytes: unfiltered region by region straight into one new
    buffer (the bytes between regions copied as they are), then one copy out to ``bytes``."""
    if len(raw) != n:
        raise CorruptLayer(f"stored group (zstd-raster): {len(raw)} bytes, the length prefix says {n}")
    src = np.frombuffer(raw, dtype=np.uint8)
    out = np.empty(n, dtype=np.uint8)
    end = 0
    for start, length, size, filters, width in regions:
        out[end:start] = src[end:start]
        _unfilter_into(src[start:start + length], out[start:start + length], size, filters, width)
        end = start + length
    out[end:] = src[end:]
    return out.tobytes()


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
    src = np.frombuffer(region, dtype=np.uint8)
    out = np.empty(len(src), dtype=np.uint8)
    _unfilter_into(src, out, item_size, filters, width)
    return out.tobytes()


def _unfilter_into(src, out, item_size, filters, width):
    """:func:`unfilter` of the uint8 array ``src`` written into ``out`` (as long, not overlapping)."""
    if filters & _SHUFFLE and item_size > 1:
        # byte j of value i sat at j·N + i: one strided copy puts each value's bytes together
        out.reshape(-1, item_size)[:] = src.reshape(item_size, -1).T
    else:
        out[:] = src
    if filters & _DELTA:
        # unsigned sums wrap modulo 2^(8·item_size), as the deltas did; each row from its first value
        _delta_decode(out.view(f"<u{item_size}").reshape(-1, width))


def _delta_decode(values):
    """Running sums along each row of ``values``, in place. imagecodecs' C loop (the TIFF predictor's,
    without the GIL) is ~6x numpy's cumsum on a 256 px tile (0.08 ms against 0.5 ms: numpy's
    accumulate along the last axis waits on each previous sum); numpy's where imagecodecs is missing."""
    dc = _delta_codec()
    if dc is not None and values.dtype.isnative:
        dc(values, axis=-1, out=values)
    else:
        np.cumsum(values, axis=1, dtype=values.dtype, out=values)


_DELTA_CODEC = []


def _delta_codec():
    if not _DELTA_CODEC:  # imported on first use: the CLI's read commands start without it
        try:
            from imagecodecs import delta_decode
        except ImportError:  # pragma: no cover - a platform without imagecodecs' wheels
            delta_decode = None
        _DELTA_CODEC.append(delta_decode)
    return _DELTA_CODEC[0]


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
