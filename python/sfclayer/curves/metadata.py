"""Key indexes from a layer's metadata: by kind name, or from the JSON the JVM writes."""

import json as _json

from ..errors import InvalidArgument
from ._common import _INT_MAX, _INT_MIN, _LONG_MAX, _LONG_MIN
from .keyindex import HilbertIndex, Z3Index, ZIndex
from .rowmajor import RowMajorIndex
from .values import KeyBounds, TimeBounds

__all__ = ["key_index", "key_index_from_json"]


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
