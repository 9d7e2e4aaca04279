"""Vectorised (numpy) forms of the curve encodings, bit-identical to the scalar ones."""

import numpy as _np

from ..errors import InvalidArgument
from .hilbert import _check_order
from .zorder import Z2_LIMIT, Z3_LIMIT, _compact2, _compact3, _spread2, _spread3

__all__ = [
    "z2_encode_array",
    "z2_decode_array",
    "z3_encode_array",
    "z3_decode_array",
    "hilbert_encode_array",
    "hilbert_decode_array",
]


def _array(a, name, lo, hi_excl, limit_text):
    arr = _np.asarray(a)
    if arr.dtype.kind not in "iu":
        if arr.dtype.kind == "O" or arr.size == 0:
            try:
                arr = arr.astype(_np.int64)
            except (TypeError, ValueError, OverflowError):
                raise InvalidArgument(f"{name}: dtype {arr.dtype} is not an integer dtype (an integer array)") from None
        else:
            raise InvalidArgument(f"{name}: dtype {arr.dtype} is not an integer dtype (an integer array)")
    if arr.size and (int(arr.min()) < lo or int(arr.max()) >= hi_excl):
        bad = arr[(arr < lo) | (arr >= hi_excl)].flat[0] if arr.dtype.kind == "i" else arr[arr >= hi_excl].flat[0]
        raise InvalidArgument(f"{name}: {int(bad)} is out of range ({lo}..{limit_text})")
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
