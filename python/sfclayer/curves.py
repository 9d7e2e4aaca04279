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
"""

import datetime as _dt
import heapq as _heapq
import json as _json
import operator as _operator
from collections import namedtuple as _namedtuple

import numpy as _np

from .errors import InvalidArgument, KeyOutOfBounds

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
    "KeyIndex",
    "ZIndex",
    "HilbertIndex",
    "RowMajorIndex",
    "Z3Index",
    "key_index",
    "key_index_from_json",
]

#: Exclusive upper limit of Z2 coordinates (``2**31``).
Z2_LIMIT = 1 << 31
#: Exclusive upper limit of Z3 coordinates (``2**21``).
Z3_LIMIT = 1 << 21
#: Largest Hilbert order (indexes then fit in 62 bits).
HILBERT_MAX_ORDER = 31

_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_MICRO = _dt.timedelta(microseconds=1)


# ----------------------------------------------------------------------------------------------
# value types


class IndexRange(_namedtuple("IndexRange", ["lo", "hi"])):
    """An inclusive range ``lo..hi`` of curve indexes (a plain 2-tuple too).

    Examples
    --------
    >>> r = IndexRange(4, 7)
    >>> r.lo, r.hi, 5 in r
    (4, 7, True)
    """

    __slots__ = ()

    def __contains__(self, index):
        return self.lo <= index <= self.hi


GridKey = _namedtuple("GridKey", ["col", "row"])
GridKey.__doc__ = """A decoded 2D key ``(col, row)``."""

GridTimeKey = _namedtuple("GridTimeKey", ["col", "row", "time_bin"])
GridTimeKey.__doc__ = """A decoded space-time key ``(col, row, time_bin)``; see :meth:`TimeBounds.bin_start`."""


def _int(value, name, lo=None, hi=None, what=None):
    if isinstance(value, bool):
        raise InvalidArgument(f"{name} must be an integer, got {value!r}")
    try:
        v = _operator.index(value)
    except TypeError:
        raise InvalidArgument(f"{name} must be an integer, got {value!r}") from None
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise InvalidArgument(f"{name} = {v} is outside {what or f'{lo}..{hi}'}")
    return v


class KeyBounds(_namedtuple("KeyBounds", ["col_min", "row_min", "col_max", "row_max"])):
    """Inclusive bounds of a layer's keys: cols ``col_min..col_max``, rows ``row_min..row_max``.

    Values are 32-bit ints (as on the JVM).

    Raises
    ------
    InvalidArgument
        If a range is empty (min > max) or a value is not a 32-bit int.

    Examples
    --------
    >>> b = KeyBounds(0, 0, 99, 499)
    >>> str(b), b.width, b.height, b.contains(5, 900)
    ('cols 0..99, rows 0..499', 100, 500, False)
    >>> b.intersection(KeyBounds(50, 450, 150, 550))
    KeyBounds(col_min=50, row_min=450, col_max=99, row_max=499)
    """

    __slots__ = ()

    def __new__(cls, col_min, row_min, col_max, row_max):
        vals = [
            _int(v, n, _INT_MIN, _INT_MAX, "the 32-bit int range")
            for v, n in ((col_min, "col_min"), (row_min, "row_min"), (col_max, "col_max"), (row_max, "row_max"))
        ]
        if vals[0] > vals[2]:
            raise InvalidArgument(f"invalid key bounds: cols {vals[0]}..{vals[2]} is empty (min > max)")
        if vals[1] > vals[3]:
            raise InvalidArgument(f"invalid key bounds: rows {vals[1]}..{vals[3]} is empty (min > max)")
        return super().__new__(cls, *vals)

    @property
    def width(self):
        """Number of columns."""
        return self.col_max - self.col_min + 1

    @property
    def height(self):
        """Number of rows."""
        return self.row_max - self.row_min + 1

    def contains(self, col, row):
        """Whether ``(col, row)`` is inside the bounds."""
        return self.col_min <= col <= self.col_max and self.row_min <= row <= self.row_max

    def intersection(self, other):
        """The keys in both bounds, or ``None`` when they do not overlap."""
        c0, c1 = max(self.col_min, other[0]), min(self.col_max, other[2])
        r0, r1 = max(self.row_min, other[1]), min(self.row_max, other[3])
        if c0 > c1 or r0 > r1:
            return None
        return KeyBounds(c0, r0, c1, r1)

    def __str__(self):
        return f"cols {self.col_min}..{self.col_max}, rows {self.row_min}..{self.row_max}"


def to_micros(t):
    """Epoch microseconds of ``t``.

    Parameters
    ----------
    t : int, datetime.datetime, datetime.date or numpy.datetime64
        An ``int`` is taken as microseconds already. A naive ``datetime`` is taken as UTC; an aware
        one is converted. A ``date`` is its midnight UTC.

    Returns
    -------
    int

    Examples
    --------
    >>> import datetime
    >>> to_micros(datetime.datetime(2020, 1, 1))
    1577836800000000
    >>> to_micros(datetime.datetime(2020, 1, 1, 1, tzinfo=datetime.timezone(datetime.timedelta(hours=1))))
    1577836800000000
    """
    if isinstance(t, _dt.datetime):
        if t.tzinfo is None or t.tzinfo.utcoffset(t) is None:
            t = t.replace(tzinfo=_dt.timezone.utc)
        return (t - _EPOCH) // _MICRO
    if isinstance(t, _dt.date):
        return to_micros(_dt.datetime(t.year, t.month, t.day))
    if isinstance(t, _np.datetime64):
        return int(t.astype("datetime64[us]").astype(_np.int64))
    return _int(t, "time")


def _to_duration_micros(d):
    if isinstance(d, _dt.timedelta):
        return d // _MICRO
    if isinstance(d, _np.timedelta64):
        return int(d.astype("timedelta64[us]").astype(_np.int64))
    return _int(d, "resolution")


def _civil_from_days(z):
    # Howard Hinnant's civil_from_days: proleptic Gregorian date of day z since 1970-01-01, any year.
    z += 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    return y + (m <= 2), m, d


def format_micros(micros):
    """Epoch microseconds as an ISO-8601 instant, exactly as Java's ``Instant.toString()`` prints it.

    Examples
    --------
    >>> format_micros(0), format_micros(1577836800123000), format_micros(-1)
    ('1970-01-01T00:00:00Z', '2020-01-01T00:00:00.123Z', '1969-12-31T23:59:59.999999Z')
    """
    secs, us = divmod(int(micros), 1_000_000)
    days, sod = divmod(secs, 86400)
    y, mo, d = _civil_from_days(days)
    hh, rem = divmod(sod, 3600)
    mm, ss = divmod(rem, 60)
    if y > 9999:
        ys = f"+{y}"
    elif y < -9999:
        ys = str(y)
    elif y < 0:
        ys = f"-{-y:04d}"
    else:
        ys = f"{y:04d}"
    if us == 0:
        frac = ""
    elif us % 1000 == 0:
        frac = f".{us // 1000:03d}"
    else:
        frac = f".{us:06d}"
    return f"{ys}-{mo:02d}-{d:02d}T{hh:02d}:{mm:02d}:{ss:02d}{frac}Z"


def describe_key(col, row, time_micros=None):
    """A key as messages show it: ``(col=.., row=..)``, or with ``, time=<ISO instant>`` when a time is given.

    Examples
    --------
    >>> describe_key(3, 4), describe_key(3, 4, 0)
    ('(col=3, row=4)', '(col=3, row=4, time=1970-01-01T00:00:00Z)')
    """
    time = "" if time_micros is None else f", time={format_micros(time_micros)}"
    return f"(col={col}, row={row}{time})"


class TimeBounds(_namedtuple("TimeBounds", ["min_micros", "max_micros", "resolution_micros"])):
    """Inclusive time bounds in epoch microseconds, cut into bins of ``resolution_micros``.

    Time ``t`` is in bin ``(t - min_micros) // resolution_micros``. Values are 64-bit (as on the JVM).

    Raises
    ------
    InvalidArgument
        If ``min > max``, ``resolution <= 0`` or ``max - min`` does not fit in a signed 64-bit long.

    Examples
    --------
    >>> import datetime
    >>> tb = TimeBounds.of(datetime.datetime(2020, 1, 1), datetime.datetime(2020, 1, 1, 23), datetime.timedelta(hours=1))
    >>> tb.bins, tb.bin(to_micros(datetime.datetime(2020, 1, 1, 5, 30)))
    (24, 5)
    >>> str(tb)
    'times 2020-01-01T00:00:00Z..2020-01-01T23:00:00Z, resolution 3600000000 us'
    """

    __slots__ = ()

    def __new__(cls, min_micros, max_micros, resolution_micros):
        lo = _int(min_micros, "min_micros", _LONG_MIN, _LONG_MAX, "the 64-bit range")
        hi = _int(max_micros, "max_micros", _LONG_MIN, _LONG_MAX, "the 64-bit range")
        res = _int(resolution_micros, "resolution_micros", _LONG_MIN, _LONG_MAX, "the 64-bit range")
        if res <= 0:
            raise InvalidArgument(f"invalid time resolution {res} us: it must be > 0")
        if lo > hi:
            raise InvalidArgument(
                f"invalid time bounds: times {format_micros(lo)}..{format_micros(hi)} is empty (min > max)"
            )
        if hi - lo > _LONG_MAX:
            raise InvalidArgument(
                f"invalid time bounds: times {format_micros(lo)}..{format_micros(hi)} span more than 2^63-1 us"
            )
        return super().__new__(cls, lo, hi, res)

    @classmethod
    def of(cls, start, end, resolution):
        """Bounds from datetimes (or micros) and a ``timedelta`` (or micros) resolution."""
        return cls(to_micros(start), to_micros(end), _to_duration_micros(resolution))

    def contains(self, t):
        """Whether time ``t`` (micros or datetime) is inside the bounds."""
        return self.min_micros <= to_micros(t) <= self.max_micros

    def bin(self, t):
        """The bin of time ``t`` (micros or datetime).

        Raises
        ------
        KeyOutOfBounds
            If ``t`` is outside the bounds.
        """
        t = to_micros(t)
        if not self.min_micros <= t <= self.max_micros:
            raise KeyOutOfBounds(f"time {format_micros(t)} is outside the layer's {self}")
        return (t - self.min_micros) // self.resolution_micros

    @property
    def bins(self):
        """Number of bins."""
        return (self.max_micros - self.min_micros) // self.resolution_micros + 1

    def bin_start(self, time_bin):
        """First microsecond of bin ``time_bin``."""
        return self.min_micros + time_bin * self.resolution_micros

    def __str__(self):
        return (
            f"times {format_micros(self.min_micros)}..{format_micros(self.max_micros)}, "
            f"resolution {self.resolution_micros} us"
        )


# ----------------------------------------------------------------------------------------------
# bit twiddling (works on Python ints and on numpy uint64 arrays alike)

_M2 = [0x0000FFFF0000FFFF, 0x00FF00FF00FF00FF, 0x0F0F0F0F0F0F0F0F, 0x3333333333333333, 0x5555555555555555]
_M3 = [0x001F00000000FFFF, 0x001F0000FF0000FF, 0x100F00F00F00F00F, 0x10C30C30C30C30C3, 0x1249249249249249]


def _spread2(v, c=int):
    v = v & c(0xFFFFFFFF)
    for shift, mask in zip((16, 8, 4, 2, 1), _M2):
        v = (v | (v << c(shift))) & c(mask)
    return v


def _compact2(v, c=int):
    v = v & c(0x5555555555555555)
    for shift, mask in zip((1, 2, 4, 8, 16), _M2[-2::-1] + [0xFFFFFFFF]):
        v = (v | (v >> c(shift))) & c(mask)
    return v


def _spread3(v, c=int):
    v = v & c(0x1FFFFF)
    for shift, mask in zip((32, 16, 8, 4, 2), _M3):
        v = (v | (v << c(shift))) & c(mask)
    return v


def _compact3(v, c=int):
    v = v & c(0x1249249249249249)
    for shift, mask in zip((2, 4, 8, 16, 32), _M3[-2::-1] + [0x1FFFFF]):
        v = (v ^ (v >> c(shift))) & c(mask)
    return v


def _check(curve, name, v, limit, limit_text):
    v = _int(v, f"{curve} {name}")
    if not 0 <= v < limit:
        raise InvalidArgument(f"{curve} {name} = {v} is outside 0..{limit_text}")
    return v


# ----------------------------------------------------------------------------------------------
# scalar encodings


def z2_encode(x, y):
    """Z-order index of ``(x, y)``: x's bit i to bit 2i, y's bit i to bit 2i+1.

    Parameters
    ----------
    x, y : int
        ``0 <= x, y < 2**31``.

    Returns
    -------
    int
        ``0 <= z < 2**62``.

    Raises
    ------
    InvalidArgument
        If ``x`` or ``y`` is out of range.

    Examples
    --------
    >>> z2_encode(1, 0), z2_encode(0, 1), z2_encode(3, 5)
    (1, 2, 39)
    """
    x = _check("z2", "x", x, Z2_LIMIT, "2^31-1")
    y = _check("z2", "y", y, Z2_LIMIT, "2^31-1")
    return _spread2(x) | (_spread2(y) << 1)


def z2_decode(z):
    """``(x, y)`` of Z-order index ``z`` (``0 <= z < 2**62``).

    Examples
    --------
    >>> z2_decode(39)
    (3, 5)
    """
    z = _int(z, "z2 index")
    if not 0 <= z < (1 << 62):
        raise InvalidArgument(f"z2 index {z} is outside 0..2^62-1")
    return _compact2(z), _compact2(z >> 1)


def z3_encode(x, y, t):
    """Z-order index of ``(x, y, t)``: bits i to 3i, 3i+1, 3i+2.

    Parameters
    ----------
    x, y, t : int
        ``0 <= x, y, t < 2**21``.

    Returns
    -------
    int
        ``0 <= z < 2**63``.

    Examples
    --------
    >>> z3_encode(1, 0, 0), z3_encode(0, 1, 0), z3_encode(0, 0, 1), z3_encode(2, 0, 0)
    (1, 2, 4, 8)
    """
    x = _check("z3", "x", x, Z3_LIMIT, "2^21-1")
    y = _check("z3", "y", y, Z3_LIMIT, "2^21-1")
    t = _check("z3", "t", t, Z3_LIMIT, "2^21-1")
    return _spread3(x) | (_spread3(y) << 1) | (_spread3(t) << 2)


def z3_decode(z):
    """``(x, y, t)`` of Z3 index ``z`` (``0 <= z < 2**63``).

    Examples
    --------
    >>> z3_decode(z3_encode(5, 6, 7))
    (5, 6, 7)
    """
    z = _int(z, "z3 index")
    if not 0 <= z <= _LONG_MAX:
        raise InvalidArgument(f"z3 index {z} is outside 0..2^63-1")
    return _compact3(z), _compact3(z >> 1), _compact3(z >> 2)


def _check_order(order):
    order = _int(order, "hilbert order")
    if not 0 <= order <= HILBERT_MAX_ORDER:
        raise InvalidArgument(f"hilbert order {order} is outside 0..{HILBERT_MAX_ORDER}")
    return order


def _check_h(name, v, order):
    v = _int(v, f"hilbert {name}")
    if not 0 <= v < (1 << order):
        raise InvalidArgument(f"hilbert {name} = {v} is outside 0..{(1 << order) - 1} for order {order}")
    return v


def hilbert_encode(x, y, order):
    """Hilbert index of ``(x, y)`` on the order-``order`` curve (Wikipedia's ``xy2d``).

    Parameters
    ----------
    x, y : int
        ``0 <= x, y < 2**order``.
    order : int
        ``0 <= order <= 31``.

    Returns
    -------
    int
        ``0 <= d < 4**order``.

    Examples
    --------
    >>> [hilbert_encode(x, y, 1) for x, y in [(0, 0), (0, 1), (1, 1), (1, 0)]]
    [0, 1, 2, 3]
    """
    order = _check_order(order)
    x = _check_h("x", x, order)
    y = _check_h("y", y, order)
    n = 1 << order
    d = 0
    s = n // 2
    while s > 0:
        rx = 1 if x & s else 0
        ry = 1 if y & s else 0
        d += s * s * ((3 * rx) ^ ry)
        # rot(n, &x, &y, rx, ry), exactly as Wikipedia writes it
        if ry == 0:
            if rx == 1:
                x = n - 1 - x
                y = n - 1 - y
            x, y = y, x
        s //= 2
    return d


def hilbert_decode(h, order):
    """``(x, y)`` of Hilbert index ``h`` on the order-``order`` curve (Wikipedia's ``d2xy``).

    Examples
    --------
    >>> hilbert_decode(2, 1), hilbert_decode(hilbert_encode(5, 9, 4), 4)
    ((1, 1), (5, 9))
    """
    order = _check_order(order)
    n = 1 << order
    t = _int(h, "hilbert index")
    if not 0 <= t < n * n:
        raise InvalidArgument(f"hilbert index {t} is outside 0..{n * n - 1} for order {order}")
    x = y = 0
    s = 1
    while s < n:
        rx = 1 & (t // 2)
        ry = 1 & (t ^ rx)
        # rot(s, &x, &y, rx, ry)
        if ry == 0:
            if rx == 1:
                x = s - 1 - x
                y = s - 1 - y
            x, y = y, x
        x += s * rx
        y += s * ry
        t //= 4
        s *= 2
    return x, y


def hilbert_order(width, height):
    """The order a :class:`HilbertIndex` uses for a ``width x height`` grid.

    ``max(1, ceil(log2(max(width, height))))``.

    Examples
    --------
    >>> hilbert_order(1, 1), hilbert_order(100, 500), hilbert_order(512, 3)
    (1, 9, 9)
    """
    m = max(width, height)
    order = 1
    while (1 << order) < m:
        order += 1
    return order


# ----------------------------------------------------------------------------------------------
# range decomposition


class _Collector:
    """Ascending ranges in; adjacent ones merged; capped by bridging the smallest gaps (streaming)."""

    __slots__ = ("cap", "any", "first_lo", "lo", "hi", "out", "heap", "ngaps")

    def __init__(self, max_ranges):
        if max_ranges is not None:
            max_ranges = _int(max_ranges, "max_ranges")
        self.cap = max_ranges if max_ranges is not None and max_ranges > 0 else 0
        self.any = False
        self.out = []
        self.heap = []
        self.ngaps = 0

    def add(self, lo, hi):
        if not self.any:
            self.any = True
            self.first_lo = self.lo = lo
            self.hi = hi
            return
        if lo <= self.hi:
            raise AssertionError(f"ranges out of order: {lo}..{hi} after {self.hi}")
        if lo == self.hi + 1:
            self.hi = hi
            return
        if self.cap:
            gap = lo - self.hi - 1
            # positions only grow: when the heap is full, a gap narrower than its smallest is bridged
            if len(self.heap) < self.cap - 1:
                _heapq.heappush(self.heap, (gap, self.ngaps, self.hi, lo))
            elif self.cap > 1 and gap >= self.heap[0][0]:  # on a tie the older gap is bridged
                _heapq.heapreplace(self.heap, (gap, self.ngaps, self.hi, lo))
            self.ngaps += 1
        else:
            self.out.append(IndexRange(self.lo, self.hi))
        self.lo = lo
        self.hi = hi

    def result(self):
        if not self.any:
            return []
        if not self.cap:
            self.out.append(IndexRange(self.lo, self.hi))
            return self.out
        out = []
        lo = self.first_lo
        for _, _, hi_before, lo_after in sorted(self.heap, key=lambda g: g[1]):
            out.append(IndexRange(lo, hi_before))
            lo = lo_after
        out.append(IndexRange(lo, self.hi))
        return out


def merge_ranges(ranges, max_ranges=None):
    """Sort ranges, merge overlapping and adjacent ones, and optionally cap their number.

    Parameters
    ----------
    ranges : iterable of (lo, hi)
        Inclusive ranges, in any order.
    max_ranges : int, optional
        When > 0, bridge the smallest gaps (equal gaps: the earlier one first) until at most this
        many ranges remain. ``None`` (or <= 0, as on the JVM) keeps them exact.

    Returns
    -------
    list of IndexRange

    Examples
    --------
    >>> merge_ranges([(10, 12), (0, 3), (4, 5), (20, 20)])
    [IndexRange(lo=0, hi=5), IndexRange(lo=10, hi=12), IndexRange(lo=20, hi=20)]
    >>> merge_ranges([(10, 12), (0, 3), (4, 5), (20, 20)], max_ranges=2)
    [IndexRange(lo=0, hi=12), IndexRange(lo=20, hi=20)]
    """
    out = _Collector(max_ranges)
    cur = None
    for lo, hi in sorted((_int(a, "lo"), _int(b, "hi")) for a, b in ranges):
        if lo > hi:
            raise InvalidArgument(f"invalid index range [{lo}, {hi}]: lo > hi")
        if cur is not None and lo <= cur[1] + 1:
            if hi > cur[1]:
                cur[1] = hi
            continue
        if cur is not None:
            out.add(cur[0], cur[1])
        cur = [lo, hi]
    if cur is not None:
        out.add(cur[0], cur[1])
    return out.result()


def _cover_side(m):
    return 1 if m == 0 else 1 << m.bit_length()


def _check_box(curve, names, mins, maxs, check):
    mins = [check(f"{n}min", v) for n, v in zip(names, mins)]
    maxs = [check(f"{n}max", v) for n, v in zip(names, maxs)]
    if any(a > b for a, b in zip(mins, maxs)):
        desc = ", ".join(f"{n} {a}..{b}" for n, a, b in zip(names, mins, maxs))
        raise InvalidArgument(f"empty {curve} query box {desc} (min > max)")
    return mins, maxs


def z2_ranges(xmin, ymin, xmax, ymax, max_ranges=None):
    """Index ranges of the Z-order cells in the inclusive box ``xmin..xmax, ymin..ymax``.

    Parameters
    ----------
    xmin, ymin, xmax, ymax : int
        Raw curve coordinates, ``0 <= v < 2**31``, ``min <= max``.
    max_ranges : int, optional
        Cap on the number of ranges (see :func:`merge_ranges`); exact when ``None``.

    Returns
    -------
    list of IndexRange
        Sorted, disjoint, adjacent ranges merged.

    Examples
    --------
    >>> z2_ranges(0, 0, 1, 1)
    [IndexRange(lo=0, hi=3)]
    >>> z2_ranges(1, 0, 2, 1)
    [IndexRange(lo=1, hi=1), IndexRange(lo=3, hi=4), IndexRange(lo=6, hi=6)]
    >>> z2_ranges(1, 0, 2, 1, max_ranges=1)
    [IndexRange(lo=1, hi=6)]
    """
    (x0, y0), (x1, y1) = _check_box(
        "z2", "xy", (xmin, ymin), (xmax, ymax), lambda n, v: _check("z2", n, v, Z2_LIMIT, "2^31-1")
    )
    out = _Collector(max_ranges)
    add = out.add

    def visit(cx0, cy0, side, base):
        if cx0 >= x0 and cx0 + side - 1 <= x1 and cy0 >= y0 and cy0 + side - 1 <= y1:
            add(base, base + side * side - 1)
            return
        h = side >> 1
        q = h * h
        for i in range(4):
            cx = cx0 + (i & 1) * h
            cy = cy0 + (i >> 1) * h
            if cx <= x1 and cx + h - 1 >= x0 and cy <= y1 and cy + h - 1 >= y0:
                visit(cx, cy, h, base + i * q)

    visit(0, 0, _cover_side(max(x1, y1)), 0)
    return out.result()


def z3_ranges(xmin, ymin, tmin, xmax, ymax, tmax, max_ranges=None):
    """Index ranges of the Z3 cells in the inclusive box ``xmin..xmax, ymin..ymax, tmin..tmax``.

    Coordinates are raw, ``0 <= v < 2**21``; see :func:`z2_ranges`.

    Examples
    --------
    >>> z3_ranges(0, 0, 0, 1, 1, 1)
    [IndexRange(lo=0, hi=7)]
    >>> z3_ranges(0, 0, 1, 1, 1, 1)
    [IndexRange(lo=4, hi=7)]
    """
    (x0, y0, t0), (x1, y1, t1) = _check_box(
        "z3", "xyt", (xmin, ymin, tmin), (xmax, ymax, tmax), lambda n, v: _check("z3", n, v, Z3_LIMIT, "2^21-1")
    )
    out = _Collector(max_ranges)
    add = out.add

    def visit(cx0, cy0, ct0, side, base):
        e = side - 1
        if cx0 >= x0 and cx0 + e <= x1 and cy0 >= y0 and cy0 + e <= y1 and ct0 >= t0 and ct0 + e <= t1:
            add(base, base + side * side * side - 1)
            return
        h = side >> 1
        q = h * h * h
        f = h - 1
        for i in range(8):
            cx = cx0 + (i & 1) * h
            cy = cy0 + ((i >> 1) & 1) * h
            ct = ct0 + (i >> 2) * h
            if cx <= x1 and cx + f >= x0 and cy <= y1 and cy + f >= y0 and ct <= t1 and ct + f >= t0:
                visit(cx, cy, ct, h, base + i * q)

    visit(0, 0, 0, _cover_side(max(x1, y1, t1)), 0)
    return out.result()


# Curve-order quadrants of a Hilbert square in the curve's local frame: (rx, ry) for k = 0..3.
_HQ = [(0, 0), (0, 1), (1, 1), (1, 0)]


def _hilbert_child(x0, y0, h, k, swap, comp):
    """Actual origin of the k-th (curve order) quadrant and the child's (swap, comp) state."""
    rx, ry = _HQ[k]
    ux, uy = rx ^ comp, ry ^ comp
    if swap:
        ux, uy = uy, ux
    if ry == 0:
        swap ^= 1
        comp ^= rx
    return x0 + ux * h, y0 + uy * h, swap, comp


def _check_hbox(xmin, ymin, xmax, ymax, order):
    order = _check_order(order)
    (x0, y0), (x1, y1) = _check_box("hilbert", "xy", (xmin, ymin), (xmax, ymax), lambda n, v: _check_h(n, v, order))
    return x0, y0, x1, y1, order


def hilbert_ranges(xmin, ymin, xmax, ymax, order, max_ranges=None):
    """Index ranges of the order-``order`` Hilbert cells in the inclusive box.

    Descends the quadtree tracking the curve's orientation (a swap and a complement bit); a
    sub-square inside the box is one contiguous range.

    Examples
    --------
    >>> hilbert_ranges(0, 0, 1, 1, 1)
    [IndexRange(lo=0, hi=3)]
    >>> hilbert_ranges(0, 0, 3, 0, 2)
    [IndexRange(lo=0, hi=1), IndexRange(lo=14, hi=15)]
    """
    x0, y0, x1, y1, order = _check_hbox(xmin, ymin, xmax, ymax, order)
    out = _Collector(max_ranges)
    add = out.add

    def visit(cx0, cy0, side, base, swap, comp):
        if cx0 >= x0 and cx0 + side - 1 <= x1 and cy0 >= y0 and cy0 + side - 1 <= y1:
            add(base, base + side * side - 1)
            return
        h = side >> 1
        q = h * h
        for k in range(4):
            cx, cy, s2, c2 = _hilbert_child(cx0, cy0, h, k, swap, comp)
            if cx <= x1 and cx + h - 1 >= x0 and cy <= y1 and cy + h - 1 >= y0:
                visit(cx, cy, h, base + k * q, s2, c2)

    visit(0, 0, 1 << order, 0, 0, 0)
    return out.result()


def hilbert_max_index(xmin, ymin, xmax, ymax, order):
    """The largest Hilbert index of any cell in the inclusive box (O(order)).

    Examples
    --------
    >>> hilbert_max_index(0, 0, 3, 0, 2)
    15
    """
    x0, y0, x1, y1, order = _check_hbox(xmin, ymin, xmax, ymax, order)
    cx0 = cy0 = base = swap = comp = 0
    side = 1 << order
    while True:
        if cx0 >= x0 and cx0 + side - 1 <= x1 and cy0 >= y0 and cy0 + side - 1 <= y1:
            return base + side * side - 1
        h = side >> 1
        for k in (3, 2, 1, 0):
            cx, cy, s2, c2 = _hilbert_child(cx0, cy0, h, k, swap, comp)
            if cx <= x1 and cx + h - 1 >= x0 and cy <= y1 and cy + h - 1 >= y0:
                cx0, cy0, swap, comp = cx, cy, s2, c2
                base += k * h * h
                break
        side = h


# ----------------------------------------------------------------------------------------------
# vectorised (numpy) encodings


def _array(a, name, lo, hi_excl, limit_text):
    arr = _np.asarray(a)
    if arr.dtype.kind not in "iu":
        if arr.dtype.kind == "O" or arr.size == 0:
            try:
                arr = arr.astype(_np.int64)
            except (TypeError, ValueError, OverflowError):
                raise InvalidArgument(f"{name} must be an integer array, got dtype {arr.dtype}") from None
        else:
            raise InvalidArgument(f"{name} must be an integer array, got dtype {arr.dtype}")
    if arr.size and (int(arr.min()) < lo or int(arr.max()) >= hi_excl):
        bad = arr[(arr < lo) | (arr >= hi_excl)].flat[0] if arr.dtype.kind == "i" else arr[arr >= hi_excl].flat[0]
        raise InvalidArgument(f"{name} = {int(bad)} is outside {lo}..{limit_text}")
    return arr.astype(_np.uint64)


_U = _np.uint64


def z2_encode_array(xs, ys):
    """Vectorised :func:`z2_encode`.

    Parameters
    ----------
    xs, ys : array_like of int
        Broadcastable integer arrays, ``0 <= v < 2**31``.

    Returns
    -------
    numpy.ndarray of int64

    Examples
    --------
    >>> z2_encode_array([1, 0, 3], [0, 1, 5]).tolist()
    [1, 2, 39]
    """
    x = _array(xs, "z2 x", 0, Z2_LIMIT, "2^31-1")
    y = _array(ys, "z2 y", 0, Z2_LIMIT, "2^31-1")
    return (_spread2(x, _U) | (_spread2(y, _U) << _U(1))).astype(_np.int64)


def z2_decode_array(zs):
    """Vectorised :func:`z2_decode`: returns ``(xs, ys)`` int64 arrays.

    Examples
    --------
    >>> [a.tolist() for a in z2_decode_array([1, 2, 39])]
    [[1, 0, 3], [0, 1, 5]]
    """
    z = _array(zs, "z2 index", 0, 1 << 62, "2^62-1")
    return _compact2(z, _U).astype(_np.int64), _compact2(z >> _U(1), _U).astype(_np.int64)


def z3_encode_array(xs, ys, ts):
    """Vectorised :func:`z3_encode` (int64 result).

    Examples
    --------
    >>> z3_encode_array([1, 0, 0], [0, 1, 0], [0, 0, 1]).tolist()
    [1, 2, 4]
    """
    x = _array(xs, "z3 x", 0, Z3_LIMIT, "2^21-1")
    y = _array(ys, "z3 y", 0, Z3_LIMIT, "2^21-1")
    t = _array(ts, "z3 t", 0, Z3_LIMIT, "2^21-1")
    return (_spread3(x, _U) | (_spread3(y, _U) << _U(1)) | (_spread3(t, _U) << _U(2))).astype(_np.int64)


def z3_decode_array(zs):
    """Vectorised :func:`z3_decode`: returns ``(xs, ys, ts)`` int64 arrays.

    Examples
    --------
    >>> [a.tolist() for a in z3_decode_array([1, 2, 4])]
    [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
    """
    z = _array(zs, "z3 index", 0, 1 << 63, "2^63-1")
    return tuple(_compact3(z >> _U(k), _U).astype(_np.int64) for k in range(3))


def hilbert_encode_array(xs, ys, order):
    """Vectorised :func:`hilbert_encode` (int64 result).

    Examples
    --------
    >>> hilbert_encode_array([0, 0, 1, 1], [0, 1, 1, 0], 1).tolist()
    [0, 1, 2, 3]
    """
    order = _check_order(order)
    n = 1 << order
    x = _array(xs, "hilbert x", 0, n, str(n - 1)).astype(_np.int64)
    y = _array(ys, "hilbert y", 0, n, str(n - 1)).astype(_np.int64)
    x, y = _np.broadcast_arrays(x, y)
    x, y = x.copy(), y.copy()
    d = _np.zeros(x.shape, dtype=_np.int64)
    s = n // 2
    while s > 0:
        rx = (x & s) > 0
        ry = (y & s) > 0
        d += s * s * ((3 * rx.astype(_np.int64)) ^ ry.astype(_np.int64))
        m = ~ry
        f = m & rx
        x = _np.where(f, n - 1 - x, x)
        y = _np.where(f, n - 1 - y, y)
        x, y = _np.where(m, y, x), _np.where(m, x, y)
        s //= 2
    return d


def hilbert_decode_array(hs, order):
    """Vectorised :func:`hilbert_decode`: returns ``(xs, ys)`` int64 arrays.

    Examples
    --------
    >>> [a.tolist() for a in hilbert_decode_array([0, 1, 2, 3], 1)]
    [[0, 0, 1, 1], [0, 1, 1, 0]]
    """
    order = _check_order(order)
    n = 1 << order
    t = _array(hs, "hilbert index", 0, n * n, str(n * n - 1)).astype(_np.int64)
    x = _np.zeros(t.shape, dtype=_np.int64)
    y = _np.zeros(t.shape, dtype=_np.int64)
    s = 1
    while s < n:
        rx = 1 & (t // 2)
        ry = 1 & (t ^ rx)
        m = ry == 0
        f = m & (rx == 1)
        x = _np.where(f, s - 1 - x, x)
        y = _np.where(f, s - 1 - y, y)
        x, y = _np.where(m, y, x), _np.where(m, x, y)
        x = x + s * rx
        y = y + s * ry
        t = t // 4
        s *= 2
    return x, y


# ----------------------------------------------------------------------------------------------
# key indexes


def _as_bounds(b):
    if isinstance(b, KeyBounds):
        return b
    if b is None:
        raise InvalidArgument("key bounds are required")
    return KeyBounds(*b)


def _check_side(b, kind, limit, limit_text):
    for axis, n in (("cols", b.width), ("rows", b.height)):
        if n > limit:
            raise InvalidArgument(
                f"key bounds {b} are too large for a {kind} index: {n} {axis}, "
                f"but a {kind} index allows at most {limit} ({limit_text}) per axis"
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
            raise KeyOutOfBounds(f"key {describe_key(col, row)} is outside the layer's key bounds {self._bounds}")
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
                raise InvalidArgument("cols and rows must be integer arrays")
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
        return KeyOutOfBounds(f"index {index} is not the index of any key in the layer's key bounds {self._bounds_text()}")

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
            raise InvalidArgument(f"invalid query box: cols {q[0]}..{q[2]} is empty (min > max)")
        if q[1] > q[3]:
            raise InvalidArgument(f"invalid query box: rows {q[1]}..{q[3]} is empty (min > max)")
        t0 = _LONG_MIN if time_min is None else to_micros(time_min)
        t1 = _LONG_MAX if time_max is None else to_micros(time_max)
        if t0 > t1:
            raise InvalidArgument(f"invalid query box: times {t0}..{t1} us is empty (min > max)")
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
                f"key bounds {b} are too large for a hilbert index: {max(b.width, b.height)} keys on a side "
                f"need order {order}, but a hilbert index allows at most order {HILBERT_MAX_ORDER} "
                f"(2147483648 per axis)"
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
                f"key bounds {b} are too large for a rowmajor index: {b.width} cols x {b.height} rows "
                f"is more than 9223372036854775807 (2^63-1) keys"
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
        if x0 == 0 and x1 == w - 1:
            out.add(y0 * w, y1 * w + w - 1)
        else:
            for y in range(y0, y1 + 1):
                out.add(y * w + x0, y * w + x1)
        return out.result()


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
            raise InvalidArgument("a z3 key index needs time bounds")
        tb = time_bounds if isinstance(time_bounds, TimeBounds) else TimeBounds(*time_bounds)
        _check_side(self._bounds, "z3", Z3_LIMIT, "2^21")
        if tb.bins > Z3_LIMIT:
            raise InvalidArgument(
                f"time bounds {tb} are too large for a z3 index: {tb.bins} time bins, "
                f"but a z3 index allows at most {Z3_LIMIT} (2^21)"
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
            raise InvalidArgument("a z3 key index needs a time: pass time=<epoch micros or datetime>")
        col = _int(col, "col")
        row = _int(row, "row")
        t = to_micros(time)
        b, tb = self._bounds, self._time
        if not b.contains(col, row) or not tb.min_micros <= t <= tb.max_micros:
            raise KeyOutOfBounds(
                f"key {describe_key(col, row, t)} is outside the layer's key bounds "
                f"{self._bounds_text()}"
            )
        return z3_encode(col - b.col_min, row - b.row_min, tb.bin(t))

    def index_array(self, cols, rows, times=None):
        """Vectorised :meth:`index`; ``times`` are int64 micros or ``datetime64``."""
        if times is None:
            raise InvalidArgument("a z3 key index needs times: pass times=<epoch micros or datetime64 array>")
        t = _np.asarray(times)
        if t.dtype.kind == "M":
            t = t.astype("datetime64[us]").astype(_np.int64)
        c, r, t = _np.broadcast_arrays(_np.asarray(cols), _np.asarray(rows), t)
        if c.size and (c.dtype.kind not in "iu" or r.dtype.kind not in "iu" or t.dtype.kind not in "iu"):
            raise InvalidArgument("cols, rows and times must be integer (or datetime64) arrays")
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


def key_index(kind, bounds, time_bounds=None):
    """The key index of ``kind`` (``"z"``, ``"hilbert"``, ``"rowmajor"`` or ``"z3"``) over ``bounds``.

    ``kind`` is case-insensitive; ``"row-major"`` and ``"row_major"`` are accepted. ``time_bounds``
    is required for z3 and refused for the others.

    Examples
    --------
    >>> key_index("hilbert", (0, 0, 99, 499)).order
    9
    """
    k = str(kind).strip().lower().replace("-", "").replace("_", "")
    if k != "z3" and time_bounds is not None:
        raise InvalidArgument(f"a {k} key index takes no time bounds (only z3 does)")
    if k == "z":
        return ZIndex(bounds)
    if k == "hilbert":
        return HilbertIndex(bounds)
    if k == "rowmajor":
        return RowMajorIndex(bounds)
    if k == "z3":
        return Z3Index(bounds, time_bounds)
    raise InvalidArgument(f'unknown key index kind "{kind}" (expected z, hilbert, rowmajor or z3)')


def _json_long(d, name):
    v = d.get(name)
    if v is None:
        raise InvalidArgument(f'invalid key index JSON: "{name}" is missing')
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int) or not _LONG_MIN <= v <= _LONG_MAX:
        raise InvalidArgument(f'invalid key index JSON: "{name}" must be a 64-bit integer, got {v}')
    return v


def _json_int(d, name):
    v = _json_long(d, name)
    if not _INT_MIN <= v <= _INT_MAX:
        raise InvalidArgument(f'invalid key index JSON: "{name}" must be a 32-bit integer, got {v}')
    return v


def key_index_from_json(d):
    """Read :meth:`KeyIndex.to_json`'s form (a dict, or its JSON text); the JVM reads the same.

    Unknown keys are ignored; hilbert's ``"order"`` may be absent but must match if present.

    Raises
    ------
    InvalidArgument
        If ``d`` is not a valid key index.

    Examples
    --------
    >>> key_index_from_json('{"kind": "z", "colMin": 0, "rowMin": 0, "colMax": 99, "rowMax": 499}')
    ZIndex(KeyBounds(col_min=0, row_min=0, col_max=99, row_max=499))
    """
    if isinstance(d, (str, bytes)):
        d = _json.loads(d)
    if not isinstance(d, dict):
        raise InvalidArgument(f"invalid key index JSON: expected an object, got {type(d).__name__}")
    kind = d.get("kind")
    if not isinstance(kind, str):
        raise InvalidArgument('invalid key index JSON: "kind" is missing or not a string')
    b = KeyBounds(*(_json_int(d, n) for n in ("colMin", "rowMin", "colMax", "rowMax")))
    if kind == "z":
        return ZIndex(b)
    if kind == "rowmajor":
        return RowMajorIndex(b)
    if kind == "hilbert":
        h = HilbertIndex(b)
        if d.get("order") is not None and _json_long(d, "order") != h.order:
            raise InvalidArgument(
                f'invalid key index JSON: hilbert "order" is {d["order"]} but key bounds {b} give order {h.order}'
            )
        return h
    if kind == "z3":
        return Z3Index(b, TimeBounds(_json_long(d, "timeMin"), _json_long(d, "timeMax"), _json_long(d, "timeResolution")))
    raise InvalidArgument(f'unknown key index kind "{kind}" (expected z, hilbert, rowmajor or z3)')
