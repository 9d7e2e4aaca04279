"""The Hilbert curve (Wikipedia's ``xy2d`` / ``d2xy``): scalar encode and decode, order, largest index in a box.

The quadrant walk (:func:`_hilbert_child`) is shared with :func:`sfclayer.curves.ranges.hilbert_ranges`.
"""

from ..errors import InvalidArgument
from ._common import _check_box, _int

__all__ = ["HILBERT_MAX_ORDER", "hilbert_encode", "hilbert_decode", "hilbert_order", "hilbert_max_index"]

#: Largest Hilbert order (indexes then fit in 62 bits).
HILBERT_MAX_ORDER = 31


def _check_order(order):
    order = _int(order, "hilbert order")
    if not 0 <= order <= HILBERT_MAX_ORDER:
        raise InvalidArgument(f"hilbert order: {order} is out of range (0..{HILBERT_MAX_ORDER})")
    return order


def _check_h(name, v, order):
    v = _int(v, f"hilbert {name}")
    if not 0 <= v < (1 << order):
        raise InvalidArgument(f"hilbert {name}: {v} is out of range (0..{(1 << order) - 1} for order {order})")
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
        raise InvalidArgument(f"hilbert index: {t} is out of range (0..{n * n - 1} for order {order})")
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
