"""Integer checks and the JVM's int/long limits, shared by the curve modules."""

import operator as _operator

from ..errors import InvalidArgument

_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1


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


def _check_box(curve, names, mins, maxs, check):
    mins = [check(f"{n}min", v) for n, v in zip(names, mins)]
    maxs = [check(f"{n}max", v) for n, v in zip(names, maxs)]
    if any(a > b for a, b in zip(mins, maxs)):
        desc = ", ".join(f"{n} {a}..{b}" for n, a, b in zip(names, mins, maxs))
        raise InvalidArgument(f"empty {curve} query box {desc} (min > max)")
    return mins, maxs
