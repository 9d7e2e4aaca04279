"""Z-order (Morton) curves in 2D and 3D: scalar encode and decode.

The bit twiddling here works on Python ints and on numpy ``uint64`` arrays alike (``c`` is the
constant's type), so :mod:`sfclayer.curves.arrays` shares it.
"""

from ..errors import InvalidArgument
from ._common import _LONG_MAX, _int

__all__ = ["Z2_LIMIT", "Z3_LIMIT", "z2_encode", "z2_decode", "z3_encode", "z3_decode"]

#: Exclusive upper limit of Z2 coordinates (``2**31``).
Z2_LIMIT = 1 << 31
#: Exclusive upper limit of Z3 coordinates (``2**21``).
Z3_LIMIT = 1 << 21


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
        raise InvalidArgument(f"{curve} {name}: {v} is out of range (0..{limit_text})")
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
        raise InvalidArgument(f"z2 index: {z} is out of range (0..2^62-1)")
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
        raise InvalidArgument(f"z3 index: {z} is out of range (0..2^63-1)")
    return _compact3(z), _compact3(z >> 1), _compact3(z >> 2)
