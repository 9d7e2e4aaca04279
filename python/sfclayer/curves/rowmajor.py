"""The row-major key index: ``(row - row_min) * width + (col - col_min)``."""

import numpy as _np

from ..errors import InvalidArgument
from ._common import _LONG_MAX
from .keyindex import KeyIndex
from .ranges import _budget, _Collector
from .values import KeyBounds  # noqa: F401  (the doctest uses it)

__all__ = ["RowMajorIndex"]


class RowMajorIndex(KeyIndex):
    """``(row - row_min) * width + (col - col_min)``; at most ``2**63 - 1`` keys.

    Examples
    --------
    >>> ri = RowMajorIndex(KeyBounds(0, 0, 9, 9))
    >>> ri.index(3, 2), ri.ranges(0, 1, 9, 2), ri.ranges(2, 1, 3, 2)
    (23, [IndexRange(lo=10, hi=29)], [IndexRange(lo=12, hi=13), IndexRange(lo=22, hi=23)])
    """

    kind = "rowmajor"

    def __init__(self, bounds):
        super().__init__(bounds)
        b = self._bounds
        if b.width * b.height > _LONG_MAX:
            raise InvalidArgument(
                f"key bounds: {b} hold {b.width} cols x {b.height} rows, too many for a rowmajor index "
                f"(at most 9223372036854775807 = 2^63-1 keys)"
            )
        self._max_index = b.width * b.height - 1

    def _offset_index(self, x, y):
        return y * self._bounds.width + x

    def _offset_index_array(self, x, y):
        return y * _np.int64(self._bounds.width) + x

    def _decode_offsets(self, index):
        y, x = divmod(index, self._bounds.width)
        return x, y

    def _offset_ranges(self, x0, y0, x1, y1, t0, t1, max_ranges):
        w = self._bounds.width
        out = _Collector(max_ranges)
        rows = y1 - y0 + 1
        if x0 == 0 and x1 == w - 1:
            out.add(y0 * w, y1 * w + w - 1)
        elif out.cap and rows > _budget(out.cap):
            # too many rows for the cap's budget: cap bands of consecutive rows (JVM: RowMajorKeyIndex)
            per = -(-rows // out.cap)
            for y in range(y0, y1 + 1, per):
                out.add(y * w + x0, min(y1, y + per - 1) * w + x1)
        else:
            for y in range(y0, y1 + 1):
                out.add(y * w + x0, y * w + x1)
        return out.result()
