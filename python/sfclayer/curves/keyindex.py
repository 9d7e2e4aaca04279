"""Key indexes: a layer's keys, offset by its key bounds' minimums, to curve indexes starting at 0.

:class:`KeyIndex` is the common part; :class:`ZIndex`, :class:`HilbertIndex` and :class:`Z3Index`
are here, :class:`~sfclayer.curves.rowmajor.RowMajorIndex` in its own module, and the factories
(:func:`~sfclayer.curves.metadata.key_index`, :func:`~sfclayer.curves.metadata.key_index_from_json`)
in :mod:`sfclayer.curves.metadata`.
"""

import numpy as _np

from ..errors import InvalidArgument, KeyOutOfBounds
from ._common import _LONG_MAX, _LONG_MIN, _int
from .arrays import hilbert_encode_array, z2_encode_array, z3_encode_array
from .hilbert import HILBERT_MAX_ORDER, hilbert_decode, hilbert_encode, hilbert_max_index, hilbert_order
from .ranges import hilbert_ranges, z2_ranges, z3_ranges
from .times import describe_key, to_micros
from .values import GridKey, GridTimeKey, KeyBounds, TimeBounds
from .zorder import Z2_LIMIT, Z3_LIMIT, z2_decode, z2_encode, z3_decode, z3_encode

__all__ = ["KeyIndex", "ZIndex", "HilbertIndex", "Z3Index"]


def _as_bounds(b):
    if isinstance(b, KeyBounds):
        return b
    if b is None:
        raise InvalidArgument("key bounds: None is missing (col_min, row_min, col_max, row_max)")
    return KeyBounds(*b)


def _check_side(b, kind, limit, limit_text):
    for axis, n in (("cols", b.width), ("rows", b.height)):
        if n > limit:
            raise InvalidArgument(
                f"key bounds: {b} span {n} {axis}, too many for a {kind} index "
                f"(at most {limit} = {limit_text} per axis)"
            )


class KeyIndex:
    """Maps a layer's keys to curve indexes (0 for the smallest), and query boxes to index ranges.

    Use :class:`ZIndex`, :class:`HilbertIndex`, :class:`RowMajorIndex`, :class:`Z3Index`,
    :func:`key_index` or :func:`key_index_from_json`. Instances are immutable and hashable.

    Attributes
    ----------
    kind : str
        ``"z"``, ``"hilbert"``, ``"rowmajor"`` or ``"z3"``.
    bounds : KeyBounds
    time_bounds : TimeBounds or None
        Only for ``z3``.
    is_space_time : bool
    max_index : int
        The largest index of any key in bounds.
    """

    kind = None
    is_space_time = False

    def __init__(self, bounds):
        self._bounds = _as_bounds(bounds)

    @property
    def bounds(self):
        return self._bounds

    @property
    def time_bounds(self):
        return None

    @property
    def max_index(self):
        return self._max_index

    def _bounds_text(self):
        return str(self._bounds)

    def index(self, col, row, time=None):
        """Index of key ``(col, row)`` (``time`` is ignored by the 2D kinds).

        Raises
        ------
        KeyOutOfBounds
            If the key is outside the bounds.
        """
        col = _int(col, "col")
        row = _int(row, "row")
        if not self._bounds.contains(col, row):
            raise KeyOutOfBounds(f"key: {describe_key(col, row)} is outside the layer's key bounds ({self._bounds})")
        return self._offset_index(col - self._bounds.col_min, row - self._bounds.row_min)

    def index_array(self, cols, rows, times=None):
        """Vectorised :meth:`index` (int64 result).

        Raises
        ------
        KeyOutOfBounds
            Naming the first key outside the bounds.
        """
        c, r = _np.broadcast_arrays(_np.asarray(cols), _np.asarray(rows))
        if c.dtype.kind not in "iu" or r.dtype.kind not in "iu":
            if c.size:
                raise InvalidArgument(f"cols, rows: dtypes {c.dtype}, {r.dtype} are not integer dtypes (integer arrays)")
            c, r = c.astype(_np.int64), r.astype(_np.int64)
        c = c.astype(_np.int64)
        r = r.astype(_np.int64)
        b = self._bounds
        bad = (c < b.col_min) | (c > b.col_max) | (r < b.row_min) | (r > b.row_max)
        if bad.any():
            i = _np.flatnonzero(bad.ravel())[0]
            self.index(int(c.ravel()[i]), int(r.ravel()[i]))  # raises
        return self._offset_index_array(c - b.col_min, r - b.row_min)

    def decode(self, index):
        """The key of ``index``: a :class:`GridKey` (``GridTimeKey`` for z3).

        Raises
        ------
        KeyOutOfBounds
            If no key in bounds has this index.
        """
        index = _int(index, "index")
        xy = self._decode_offsets(index) if 0 <= index <= self._max_index else None
        if xy is None or xy[0] >= self._bounds.width or xy[1] >= self._bounds.height:
            raise self._not_an_index(index)
        return GridKey(self._bounds.col_min + xy[0], self._bounds.row_min + xy[1])

    def _not_an_index(self, index):
        return KeyOutOfBounds(f"index: {index} is not the index of any key in the layer's key bounds "
                              f"({self._bounds_text()})")

    def ranges(self, col_min, row_min, col_max, row_max, time_min=None, time_max=None, max_ranges=None):
        """Index ranges of the keys in a query box, clipped to the bounds.

        Parameters
        ----------
        col_min, row_min, col_max, row_max : int
            Inclusive query box (may extend past the bounds).
        time_min, time_max : int or datetime, optional
            Inclusive time range (micros or datetimes); ``None`` is unbounded. Ignored by 2D kinds.
        max_ranges : int, optional
            Cap on the number of ranges (superset, smallest gaps bridged); exact when ``None``.

        Returns
        -------
        list of IndexRange
            Sorted, disjoint, adjacent ranges merged; empty if the box misses the bounds.

        Raises
        ------
        InvalidArgument
            If a range of the box is empty (min > max).
        """
        q = [_int(v, n) for v, n in ((col_min, "col_min"), (row_min, "row_min"), (col_max, "col_max"), (row_max, "row_max"))]
        if q[0] > q[2]:
            raise InvalidArgument(f"query box: cols {q[0]}..{q[2]} is empty (min <= max)")
        if q[1] > q[3]:
            raise InvalidArgument(f"query box: rows {q[1]}..{q[3]} is empty (min <= max)")
        t0 = _LONG_MIN if time_min is None else to_micros(time_min)
        t1 = _LONG_MAX if time_max is None else to_micros(time_max)
        if t0 > t1:
            raise InvalidArgument(f"query box: times {t0}..{t1} us is empty (min <= max)")
        if max_ranges is not None:
            _int(max_ranges, "max_ranges")
        b = self._bounds
        c0, c1 = max(q[0], b.col_min), min(q[2], b.col_max)
        r0, r1 = max(q[1], b.row_min), min(q[3], b.row_max)
        if c0 > c1 or r0 > r1:
            return []
        return self._offset_ranges(c0 - b.col_min, r0 - b.row_min, c1 - b.col_min, r1 - b.row_min, t0, t1, max_ranges)

    def to_json(self):
        """The JSON form (a dict), as the JVM's ``KeyIndex.toJson()`` writes it."""
        b = self._bounds
        return {"kind": self.kind, "colMin": b.col_min, "rowMin": b.row_min, "colMax": b.col_max, "rowMax": b.row_max}

    def __eq__(self, other):
        return type(other) is type(self) and self.to_json() == other.to_json()

    def __hash__(self):
        return hash(tuple(self.to_json().items()))

    def __repr__(self):
        tb = f", {self.time_bounds!r}" if self.is_space_time else ""
        return f"{type(self).__name__}({self._bounds!r}{tb})"

    def __str__(self):
        return f"{self.kind} key index over {self._bounds_text()}"


class ZIndex(KeyIndex):
    """Z-order of ``(col - col_min, row - row_min)``; at most ``2**31`` cols and rows.

    Examples
    --------
    >>> zi = ZIndex(KeyBounds(10, 20, 13, 23))
    >>> zi.index(11, 20), zi.max_index, zi.decode(15)
    (1, 15, GridKey(col=13, row=23))
    >>> zi.ranges(0, 0, 11, 21)
    [IndexRange(lo=0, hi=3)]
    """

    kind = "z"

    def __init__(self, bounds):
        super().__init__(bounds)
        _check_side(self._bounds, "z", Z2_LIMIT, "2^31")
        self._max_index = z2_encode(self._bounds.width - 1, self._bounds.height - 1)

    def _offset_index(self, x, y):
        return z2_encode(x, y)

    def _offset_index_array(self, x, y):
        return z2_encode_array(x, y)

    def _decode_offsets(self, index):
        return z2_decode(index)

    def _offset_ranges(self, x0, y0, x1, y1, t0, t1, max_ranges):
        return z2_ranges(x0, y0, x1, y1, max_ranges)


class HilbertIndex(KeyIndex):
    """Hilbert curve of the offsets, order ``max(1, ceil(log2(max(width, height))))`` (at most 31).

    Attributes
    ----------
    order : int

    Examples
    --------
    >>> hi = HilbertIndex(KeyBounds(-2, -2, 1, 1))
    >>> hi.order, hi.index(-2, -1), hi.max_index
    (2, 3, 15)
    >>> hi.to_json()
    {'kind': 'hilbert', 'colMin': -2, 'rowMin': -2, 'colMax': 1, 'rowMax': 1, 'order': 2}
    """

    kind = "hilbert"

    def __init__(self, bounds):
        super().__init__(bounds)
        b = self._bounds
        order = hilbert_order(b.width, b.height)
        if order > HILBERT_MAX_ORDER:
            raise InvalidArgument(
                f"key bounds: {b} need order {order} ({max(b.width, b.height)} keys on a side), too large for a "
                f"hilbert index (at most order {HILBERT_MAX_ORDER} = 2147483648 per axis)"
            )
        self.order = order
        self._max_index = hilbert_max_index(0, 0, b.width - 1, b.height - 1, order)

    def _offset_index(self, x, y):
        return hilbert_encode(x, y, self.order)

    def _offset_index_array(self, x, y):
        return hilbert_encode_array(x, y, self.order)

    def _decode_offsets(self, index):
        return hilbert_decode(index, self.order)

    def _offset_ranges(self, x0, y0, x1, y1, t0, t1, max_ranges):
        return hilbert_ranges(x0, y0, x1, y1, self.order, max_ranges)

    def to_json(self):
        d = super().to_json()
        d["order"] = self.order
        return d

    def __str__(self):
        return f"hilbert key index (order {self.order}) over {self._bounds_text()}"


class Z3Index(KeyIndex):
    """Z-order of the col and row offsets and the time bin; at most ``2**21`` cols, rows and bins.

    Examples
    --------
    >>> import datetime
    >>> tb = TimeBounds.of(datetime.datetime(2020, 1, 1), datetime.datetime(2020, 1, 31), datetime.timedelta(days=1))
    >>> zi = Z3Index(KeyBounds(0, 0, 9, 9), tb)
    >>> zi.index(0, 0, datetime.datetime(2020, 1, 2, 12)), zi.decode(4)
    (4, GridTimeKey(col=0, row=0, time_bin=1))
    >>> zi.ranges(0, 0, 1, 1, datetime.datetime(2020, 1, 1), datetime.datetime(2020, 1, 2, 23))
    [IndexRange(lo=0, hi=7)]
    """

    kind = "z3"
    is_space_time = True

    def __init__(self, bounds, time_bounds):
        super().__init__(bounds)
        if time_bounds is None:
            raise InvalidArgument("time bounds: None is missing (a z3 key index needs them)")
        tb = time_bounds if isinstance(time_bounds, TimeBounds) else TimeBounds(*time_bounds)
        _check_side(self._bounds, "z3", Z3_LIMIT, "2^21")
        if tb.bins > Z3_LIMIT:
            raise InvalidArgument(
                f"time bounds: {tb} span {tb.bins} time bins, too many for a z3 index "
                f"(at most {Z3_LIMIT} = 2^21)"
            )
        self._time = tb
        self._max_index = z3_encode(self._bounds.width - 1, self._bounds.height - 1, tb.bins - 1)

    @property
    def time_bounds(self):
        return self._time

    def _bounds_text(self):
        return f"{self._bounds}, {self._time}"

    def index(self, col, row, time=None):
        """Index of key ``(col, row, time)``; ``time`` (micros or datetime) is required."""
        if time is None:
            raise InvalidArgument("time: None is missing (a z3 key index needs a time: epoch micros or a datetime)")
        col = _int(col, "col")
        row = _int(row, "row")
        t = to_micros(time)
        b, tb = self._bounds, self._time
        if not b.contains(col, row) or not tb.min_micros <= t <= tb.max_micros:
            raise KeyOutOfBounds(
                f"key: {describe_key(col, row, t)} is outside the layer's key bounds "
                f"({self._bounds_text()})"
            )
        return z3_encode(col - b.col_min, row - b.row_min, tb.bin(t))

    def index_array(self, cols, rows, times=None):
        """Vectorised :meth:`index`; ``times`` are int64 micros or ``datetime64``."""
        if times is None:
            raise InvalidArgument("times: None is missing (a z3 key index needs times: epoch micros or a datetime64 array)")
        t = _np.asarray(times)
        if t.dtype.kind == "M":
            t = t.astype("datetime64[us]").astype(_np.int64)
        c, r, t = _np.broadcast_arrays(_np.asarray(cols), _np.asarray(rows), t)
        if c.size and (c.dtype.kind not in "iu" or r.dtype.kind not in "iu" or t.dtype.kind not in "iu"):
            raise InvalidArgument(f"cols, rows, times: dtypes {c.dtype}, {r.dtype}, {t.dtype} are not all integer dtypes (integer or datetime64 arrays)")
        c, r, t = c.astype(_np.int64), r.astype(_np.int64), t.astype(_np.int64)
        b, tb = self._bounds, self._time
        bad = (c < b.col_min) | (c > b.col_max) | (r < b.row_min) | (r > b.row_max)
        bad |= (t < tb.min_micros) | (t > tb.max_micros)
        if bad.any():
            i = _np.flatnonzero(bad.ravel())[0]
            self.index(int(c.ravel()[i]), int(r.ravel()[i]), int(t.ravel()[i]))  # raises
        bins = (t - _np.int64(tb.min_micros)) // _np.int64(tb.resolution_micros)
        return z3_encode_array(c - b.col_min, r - b.row_min, bins)

    def decode(self, index):
        """The key of ``index`` as a :class:`GridTimeKey` ``(col, row, time_bin)``."""
        index = _int(index, "index")
        b = self._bounds
        xyt = z3_decode(index) if 0 <= index <= self._max_index else None
        if xyt is None or xyt[0] >= b.width or xyt[1] >= b.height or xyt[2] >= self._time.bins:
            raise self._not_an_index(index)
        return GridTimeKey(b.col_min + xyt[0], b.row_min + xyt[1], xyt[2])

    def _offset_ranges(self, x0, y0, x1, y1, t0, t1, max_ranges):
        tb = self._time
        t0, t1 = max(t0, tb.min_micros), min(t1, tb.max_micros)
        if t0 > t1:
            return []
        return z3_ranges(x0, y0, tb.bin(t0), x1, y1, tb.bin(t1), max_ranges)

    def to_json(self):
        d = super().to_json()
        d["timeMin"] = self._time.min_micros
        d["timeMax"] = self._time.max_micros
        d["timeResolution"] = self._time.resolution_micros
        return d
