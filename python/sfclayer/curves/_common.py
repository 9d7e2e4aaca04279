"""Integer checks and the JVM's int/long limits, shared by the curve modules."""

import operator as _operator

from ..errors import InvalidArgument

_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1


def _int(value, name, lo=None, hi=None, what=None):
    if isinstance(value, bool):
        raise InvalidArgument(f"{name}: {value!r} is not an integer ({what or _allowed(lo, hi)})")
    try:
        v = _operator.index(value)
    except TypeError:
        raise InvalidArgument(f"{name}: {value!r} is not an integer ({what or _allowed(lo, hi)})") from None
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise InvalidArgument(f"{name}: {v} is out of range ({what or _allowed(lo, hi)})")
    return v


def _allowed(lo, hi):
    return "an int" if lo is None and hi is None else f"{lo}..{hi}"


def _check_box(curve, names, mins, maxs, check):
    mins = [check(f"{n}min", v) for n, v in zip(names, mins)]
    maxs = [check(f"{n}max", v) for n, v in zip(names, maxs)]
    if any(a > b for a, b in zip(mins, maxs)):
        desc = ", ".join(f"{n} {a}..{b}" for n, a, b in zip(names, mins, maxs))
        raise InvalidArgument(f"{curve} query box: {desc} is empty (min <= max)")
    return mins, maxs
