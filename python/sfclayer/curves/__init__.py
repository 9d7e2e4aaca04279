"""Space-filling curves and key indexes, in pure Python (no JVM).

This module is bit-for-bit the same as the JVM package ``io.sfclayer.curve``: the same curves, the
same range decompositions (exact and capped), the same JSON form of a key index and the same error
messages. ``tests/vectors/curves.json`` holds golden vectors both test suites check.

Curves
------
* **Z-order 2D** (``z2_*``): bit ``i`` of ``x`` goes to bit ``2i``, bit ``i`` of ``y`` to bit
  ``2i+1`` (GeoTrellis Z2 / quadkey order); ``0 <= x, y < 2**31``.
* **Z-order 3D** (``z3_*``): ``x``, ``y``, ``t`` bits ``i`` go to bits ``3i``, ``3i+1``, ``3i+2``;
  ``0 <= x, y, t < 2**21``.
* **Hilbert** (``hilbert_*``) of order ``n`` over ``[0, 2**n)**2``: Wikipedia's ``xy2d`` / ``d2xy``
  transcribed literally, including ``rot``'s flip with the *full* side ``n`` in ``xy2d`` (it agrees
  with flipping by the sub-square side modulo that side, so the curve is the classic one).
  Order 1 visits (0,0), (0,1), (1,1), (1,0).

Range decompositions are sorted lists of disjoint inclusive ``(lo, hi)`` ranges with adjacent ranges
merged. With ``max_ranges`` (> 0) they are capped: the smallest gaps are bridged (equal gaps: the
earlier one first) until at most ``max_ranges`` ranges remain, which covers a superset of the box.

Key indexes
-----------
:class:`ZIndex`, :class:`HilbertIndex`, :class:`RowMajorIndex` and :class:`Z3Index` map a layer's
keys, offset by its :class:`KeyBounds` minimums, to indexes starting at 0.

Examples
--------
>>> from sfclayer.curves import KeyBounds, ZIndex, z2_encode
>>> z2_encode(3, 5)
39
>>> zi = ZIndex(KeyBounds(100, 200, 199, 299))
>>> zi.index(103, 205)
39
>>> zi.ranges(100, 200, 101, 201)
[IndexRange(lo=0, hi=3)]

Modules
-------
:mod:`~sfclayer.curves.values` (key and time bounds, index ranges, decoded keys),
:mod:`~sfclayer.curves.times` (epoch microseconds), :mod:`~sfclayer.curves.zorder`,
:mod:`~sfclayer.curves.hilbert`, :mod:`~sfclayer.curves.ranges` (range decomposition),
:mod:`~sfclayer.curves.arrays` (numpy forms), :mod:`~sfclayer.curves.keyindex`,
:mod:`~sfclayer.curves.rowmajor` and :mod:`~sfclayer.curves.metadata` (key indexes from a layer's
metadata). Every public name is re-exported here: ``sfclayer.curves.<name>`` is the stable spelling.
"""

from .arrays import (
    hilbert_decode_array,
    hilbert_encode_array,
    z2_decode_array,
    z2_encode_array,
    z3_decode_array,
    z3_encode_array,
)
from .hilbert import HILBERT_MAX_ORDER, hilbert_decode, hilbert_encode, hilbert_max_index, hilbert_order
from .keyindex import HilbertIndex, KeyIndex, Z3Index, ZIndex
from .metadata import key_index, key_index_from_json
from .ranges import hilbert_ranges, merge_ranges, z2_ranges, z3_ranges
from .rowmajor import RowMajorIndex
from .times import describe_key, format_micros, to_micros
from .values import GridKey, GridTimeKey, IndexRange, KeyBounds, TimeBounds
from .zorder import Z2_LIMIT, Z3_LIMIT, z2_decode, z2_encode, z3_decode, z3_encode

__all__ = [
    "IndexRange",
    "KeyBounds",
    "TimeBounds",
    "GridKey",
    "GridTimeKey",
    "Z2_LIMIT",
    "Z3_LIMIT",
    "HILBERT_MAX_ORDER",
    "z2_encode",
    "z2_decode",
    "z3_encode",
    "z3_decode",
    "hilbert_encode",
    "hilbert_decode",
    "hilbert_order",
    "hilbert_max_index",
    "z2_ranges",
    "z3_ranges",
    "hilbert_ranges",
    "merge_ranges",
    "z2_encode_array",
    "z2_decode_array",
    "z3_encode_array",
    "z3_decode_array",
    "hilbert_encode_array",
    "hilbert_decode_array",
    "to_micros",
    "format_micros",
    "describe_key",
    "KeyIndex",
    "ZIndex",
    "HilbertIndex",
    "RowMajorIndex",
    "Z3Index",
    "key_index",
    "key_index_from_json",
]
