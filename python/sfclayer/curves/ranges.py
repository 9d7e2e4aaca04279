"""Range decomposition: the index ranges of the curve cells in a query box, exact or capped.

Range decompositions are sorted lists of disjoint inclusive ``(lo, hi)`` ranges with adjacent ranges
merged. With ``max_ranges`` (> 0) they are capped: the smallest gaps are bridged (equal gaps: the
earlier one first) until at most ``max_ranges`` ranges remain, which covers a superset of the box.
Users plan queries with these; the key indexes' ``ranges`` methods call them.
"""

import heapq as _heapq

from ..errors import InvalidArgument
from ._common import _check_box, _int
from .hilbert import _check_hbox, _hilbert_child
from .values import IndexRange
from .zorder import Z2_LIMIT, Z3_LIMIT, _check

__all__ = ["merge_ranges", "z2_ranges", "z3_ranges", "hilbert_ranges"]


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
            raise InvalidArgument(f"index range: [{lo}, {hi}] is empty (lo <= hi)")
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


_MIN_BUDGET = 4096
_MAX_BUDGET = 1 << 20


def _budget(cap):
    """Work budget of a capped decomposition: ``clamp(4 * cap, 4096, 2**20)`` (JVM: CappedDescent)."""
    return min(_MAX_BUDGET, max(_MIN_BUDGET, 4 * cap))


def _capped(mins, maxs, side, cap, hilbert=False):
    """Capped ranges in time bounded by the cap, as the JVM's ``CappedDescent``: the tree is descended
    level by level; once the ranges found plus the next level's partly covered nodes exceed
    :func:`_budget`, those nodes are taken whole (a coarser superset). Within the budget the answer
    is the exact ranges capped by the gap rule."""
    dims = len(mins)
    x0, y0 = mins[0], mins[1]
    x1, y1 = maxs[0], maxs[1]
    t0, t1 = (mins[2], maxs[2]) if dims == 3 else (0, 0)
    found = []
    # nodes: (x, y, t, base, swap, comp); swap/comp are Hilbert's orientation bits
    if x0 == 0 and y0 == 0 and t0 == 0 and side - 1 <= min(x1, y1) and (dims == 2 or side - 1 <= t1):
        found.append((0, side ** dims - 1))
        level = []
    else:
        level = [(0, 0, 0, 0, 0, 0)]
    budget = _budget(cap)
    while level:
        h = side >> 1
        f = h - 1
        q = h ** dims
        nxt = []
        add_found, add_next = found.append, nxt.append
        for nx, ny, nt, base, swap, comp in level:
            if hilbert:
                children = []
                for k in range(4):
                    cx, cy, s2, c2 = _hilbert_child(nx, ny, h, k, swap, comp)
                    children.append((cx, cy, 0, base + k * q, s2, c2))
            elif dims == 2:
                children = [(nx, ny, 0, base, 0, 0), (nx + h, ny, 0, base + q, 0, 0),
                            (nx, ny + h, 0, base + 2 * q, 0, 0), (nx + h, ny + h, 0, base + 3 * q, 0, 0)]
            else:
                children = [(nx + (k & 1) * h, ny + ((k >> 1) & 1) * h, nt + (k >> 2) * h, base + k * q, 0, 0)
                            for k in range(8)]
            for c in children:
                cx, cy, ct = c[0], c[1], c[2]
                if cx > x1 or cx + f < x0 or cy > y1 or cy + f < y0 or ct > t1 or ct + f < t0:
                    continue
                if cx >= x0 and cx + f <= x1 and cy >= y0 and cy + f <= y1 and (dims == 2 or (ct >= t0 and ct + f <= t1)):
                    add_found((c[3], c[3] + q - 1))
                else:
                    add_next(c)
        side = h
        if len(found) + len(nxt) > budget:
            found.extend((c[3], c[3] + q - 1) for c in nxt)  # whole: a superset
            break
        level = nxt
    found.sort()
    out = _Collector(cap)
    for lo, hi in found:
        out.add(lo, hi)
    return out.result()


def _cover_side(m):
    return 1 if m == 0 else 1 << m.bit_length()


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
    if out.cap:
        return _capped((x0, y0), (x1, y1), _cover_side(max(x1, y1)), out.cap)
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
    if out.cap:
        return _capped((x0, y0, t0), (x1, y1, t1), _cover_side(max(x1, y1, t1)), out.cap)
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
    if out.cap:
        return _capped((x0, y0), (x1, y1), 1 << order, out.cap, hilbert=True)
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
