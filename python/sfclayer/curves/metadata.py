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
        raise InvalidArgument(f"time bounds: {time_bounds} are given to a {k} key index (only z3 takes them)")
    if k == "z":
        return ZIndex(bounds)
    if k == "hilbert":
        return HilbertIndex(bounds)
    if k == "rowmajor":
        return RowMajorIndex(bounds)
    if k == "z3":
        return Z3Index(bounds, time_bounds)
    raise InvalidArgument(f'key index kind: "{kind}" is unknown (z, hilbert, rowmajor or z3)')


def _json_long(d, name):
    v = d.get(name)
    if v is None:
        raise InvalidArgument(f'key index JSON "{name}": null is missing (a required field)')
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int) or not _LONG_MIN <= v <= _LONG_MAX:
        raise InvalidArgument(f'key index JSON "{name}": {v} is not a 64-bit integer (-2^63..2^63-1)')
    return v


def _json_int(d, name):
    v = _json_long(d, name)
    if not _INT_MIN <= v <= _INT_MAX:
        raise InvalidArgument(f'key index JSON "{name}": {v} is not a 32-bit integer (-2^31..2^31-1)')
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
        raise InvalidArgument(f"key index JSON: a {type(d).__name__} is not an object (a JSON object)")
    kind = d.get("kind")
    if not isinstance(kind, str):
        raise InvalidArgument(f'key index JSON "kind": {_json.dumps(kind)} is not a string (z, hilbert, rowmajor or z3)')
    b = KeyBounds(*(_json_int(d, n) for n in ("colMin", "rowMin", "colMax", "rowMax")))
    if kind == "z":
        return ZIndex(b)
    if kind == "rowmajor":
        return RowMajorIndex(b)
    if kind == "hilbert":
        h = HilbertIndex(b)
        if d.get("order") is not None and _json_long(d, "order") != h.order:
            raise InvalidArgument(
                f'key index JSON "order": {d["order"]} does not match the key bounds ({b} give order {h.order})'
            )
        return h
    if kind == "z3":
        return Z3Index(b, TimeBounds(_json_long(d, "timeMin"), _json_long(d, "timeMax"), _json_long(d, "timeResolution")))
    raise InvalidArgument(f'key index kind: "{kind}" is unknown (z, hilbert, rowmajor or z3)')
