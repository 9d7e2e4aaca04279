"""Small value types: index ranges, decoded keys, and a layer's key and time bounds."""

from collections import namedtuple as _namedtuple

from ..errors import InvalidArgument, KeyOutOfBounds
from ._common import _INT_MAX, _INT_MIN, _LONG_MAX, _LONG_MIN, _int
from .times import _to_duration_micros, format_micros, to_micros

__all__ = ["IndexRange", "GridKey", "GridTimeKey", "KeyBounds", "TimeBounds"]


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
            raise InvalidArgument(f"key bounds: cols {vals[0]}..{vals[2]} is empty (min <= max)")
        if vals[1] > vals[3]:
            raise InvalidArgument(f"key bounds: rows {vals[1]}..{vals[3]} is empty (min <= max)")
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
            raise InvalidArgument(f"time resolution: {res} us is not positive (> 0 us)")
        if lo > hi:
            raise InvalidArgument(
                f"time bounds: times {format_micros(lo)}..{format_micros(hi)} is empty (min <= max)"
            )
        if hi - lo > _LONG_MAX:
            raise InvalidArgument(
                f"time bounds: times {format_micros(lo)}..{format_micros(hi)} span too long (at most 2^63-1 us)"
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
            raise KeyOutOfBounds(f"time: {format_micros(t)} is outside the layer's time bounds ({self})")
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
