"""Argument checks shared by :func:`sfclayer.read` and :meth:`sfclayer.Layer.query`: one rule each for
a layer path, a box (``bbox`` in map units, ``keys`` in col/row) and a time range, checked in Python
before any Spark job or JVM call, with messages of the form ``<argument>: <value> <why> (<form>)``.

The message pattern (every bad argument, Python and Java)
---------------------------------------------------------
``<name>: <value> <why> (<allowed>)``: what was given, by the name the caller knows it by, then the
value as given, a short reason, and what is allowed, last and in parentheses.

* ``bbox: (1, 2, 3) must be four numbers (xmin, ymin, xmax, ymax)``: arguments of the Python API;
* ``option blockSize: '1k' is below the minimum (at least 64k)``: connector options (``option
  <name>``, the value quoted as given: ReadOptions, LayerWriteOptions);
* ``z2 x: -1 is out of range (0..2^31-1)``, ``key index kind: "zz" is unknown (z, hilbert, rowmajor
  or z3)``: the curves, the same text in both languages (tests/vectors/curves.json holds the cases);
* ``colormap: 'nosuchmap' is unknown (...)``: the tile server's HTTP 400 answers;
* ``argument --retain: '7x' is not a retention (...)``: the CLI (argparse puts the name in front).

tests/test_messages.py (and io.sfclayer.curve.CurveMessagesTest) call a sample of every area with
a bad value and check the shape.

Examples
--------
>>> from sfclayer._args import check_box
>>> check_box("keys", "0,0,9,9", int, "col_min, row_min, col_max, row_max")
(0, 0, 9, 9)
>>> check_box("bbox", (1, 2, 3), float, "xmin, ymin, xmax, ymax")
Traceback (most recent call last):
...
sfclayer.errors.InvalidArgument: bbox: (1, 2, 3) must be four numbers (xmin, ymin, xmax, ymax)
"""

import datetime as _dt
import math as _math
import numbers as _numbers
import os as _os
import re as _re

from .curves import to_micros
from .errors import InvalidArgument

__all__ = ["check_path", "check_box", "check_time_range", "check_int", "check_key", "check_duration", "check_crs"]

INT32 = (-(1 << 31), (1 << 31) - 1)
_INT32_TEXT = "a 32-bit integer, -2^31..2^31-1"


def check_int(name, value, lo=INT32[0], hi=INT32[1], allowed=None):
    """``value`` as an int in ``lo..hi``: ints and numpy integers only (not bool, float, str, NaN);
    InvalidArgument naming ``name`` else.

    >>> check_int("col", 1.5)
    Traceback (most recent call last):
    ...
    sfclayer.errors.InvalidArgument: col: 1.5 is not an integer (a 32-bit integer, -2^31..2^31-1)
    """
    allowed = allowed or (_INT32_TEXT if (lo, hi) == INT32 else f"{lo}..{hi}")
    if isinstance(value, bool) or not isinstance(value, _numbers.Integral):
        raise InvalidArgument(f"{name}: {value!r} is not an integer ({allowed})")
    v = int(value)
    if not lo <= v <= hi:
        raise InvalidArgument(f"{name}: {value!r} is out of range ({allowed})")
    return v


def check_key(key, space_time):
    """A look-up key ``(col, row)`` or ``(col, row, time)`` as ``(col, row, time)`` (time None when
    spatial), each part checked; InvalidArgument names the part."""
    if isinstance(key, (str, bytes)) or not hasattr(key, "__len__"):
        raise InvalidArgument(f"key: {key!r} is not a tuple ({'(col, row, time)' if space_time else '(col, row)'})")
    if len(key) != (3 if space_time else 2):
        raise InvalidArgument(f"key: {key!r} must be {'(col, row, time)' if space_time else '(col, row)'}"
                              f" (the layer is {'space-time' if space_time else 'spatial'})")
    return check_int("col", key[0]), check_int("row", key[1]), (key[2] if space_time else None)


# The duration grammar of the JVM's TimeText.parseDurationMicros: a whole number and a unit, or ISO-8601.
_DURATION = _re.compile(r"(\d+)\s*(us|micros?|microseconds?|ms|millis?|milliseconds?|s|secs?|seconds?|m|mins?|"
                        r"minutes?|h|hours?|d|days?|w|weeks?)", _re.IGNORECASE)
_ISO_DURATION = _re.compile(r"([-+]?)P(?:([-+]?\d+)D)?(?:T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?"
                            r"(?:([-+]?\d+(?:[.,]\d{1,9})?)S)?)?", _re.IGNORECASE)
_DURATION_FORMS = "a timedelta, seconds, or text: '7d', '12 hours', '30m', 'PT1H'"


def _unit_micros(unit):
    unit = unit.lower()
    if unit.startswith("us") or unit.startswith("micro"):
        return 1
    if unit == "ms" or unit.startswith("milli"):
        return 1_000
    if unit.startswith("s"):
        return 1_000_000
    if unit == "m" or unit.startswith("min"):
        return 60_000_000
    if unit.startswith("h"):
        return 3_600_000_000
    if unit.startswith("d"):
        return 86_400_000_000
    return 7 * 86_400_000_000


def check_duration(name, value):
    """A duration as a :class:`datetime.timedelta` (at least 0): a timedelta, a number of seconds, or
    text in the JVM's grammar (``"7d"``, ``"12 hours"``, ``"PT1H"``): the one duration parser of the
    Python side (vacuum's ``retain``, the CLI's ``--retain``), accepting what the CLI and SQL accept.

    >>> check_duration("retain", "7d")
    datetime.timedelta(days=7)
    >>> check_duration("retain", "7x")
    Traceback (most recent call last):
    ...
    sfclayer.errors.InvalidArgument: retain: '7x' is not a duration (a timedelta, seconds, or text: '7d', '12 hours', '30m', 'PT1H')
    """
    if isinstance(value, _dt.timedelta):
        out = value
    elif isinstance(value, _numbers.Real) and not isinstance(value, bool):
        if not _math.isfinite(value):
            raise InvalidArgument(f"{name}: {value!r} is not a finite number of seconds ({_DURATION_FORMS})")
        out = _dt.timedelta(seconds=float(value))
    elif isinstance(value, str):
        text = value.strip()
        m, iso = _DURATION.fullmatch(text), _ISO_DURATION.fullmatch(text)
        if m:
            out = _dt.timedelta(microseconds=int(m.group(1)) * _unit_micros(m.group(2)))
        elif iso and text.upper() not in ("P", "PT") and not text.upper().endswith("T"):
            sign = -1 if iso.group(1) == "-" else 1
            d, h, mi = (int(g or 0) for g in iso.group(2, 3, 4))
            sec = float((iso.group(5) or "0").replace(",", "."))
            out = sign * _dt.timedelta(days=d, hours=h, minutes=mi, seconds=sec)
        else:
            raise InvalidArgument(f"{name}: {value!r} is not a duration ({_DURATION_FORMS})")
    else:
        raise InvalidArgument(f"{name}: {value!r} is not a duration ({_DURATION_FORMS})")
    if out < _dt.timedelta(0):
        raise InvalidArgument(f"{name}: {value!r} must not be negative ({_DURATION_FORMS})")
    return out


def check_crs(name, crs):
    """``crs`` unchanged when PROJ parses it (pyproj, else rasterio's copy of PROJ), InvalidArgument
    else: a layer's CRS is checked before anything is written, not at its first reprojection."""
    if not isinstance(crs, str) or not crs.strip():
        raise InvalidArgument(f"{name}: {crs!r} is not a CRS (text such as 'EPSG:4326', a WKT or PROJ string)")
    try:
        from pyproj import CRS
        from pyproj.exceptions import CRSError as _Bad
    except ImportError:  # rasterio (a dependency) carries PROJ too
        from rasterio.crs import CRS
        from rasterio.errors import CRSError as _Bad
    try:
        CRS.from_user_input(crs)
    except _Bad as e:
        found = _re.search(r"proj_create: ([^)]*)", str(e))
        why = found.group(1) if found else str(e)
        raise InvalidArgument(f"{name}: {crs!r} is not a CRS PROJ knows ({why}; e.g. 'EPSG:4326')") from None
    return crs


def check_path(path):
    """``path`` as a non-empty string (path-like objects accepted); InvalidArgument else."""
    if isinstance(path, _os.PathLike):
        path = _os.fspath(path)
    if not isinstance(path, str) or not path.strip():
        raise InvalidArgument(f"path: {path!r} is not a layer path (give a non-empty string)")
    return path


def check_box(name, box, kind, form):
    """``box`` as a tuple of four numbers of ``kind`` with min <= max, or None; InvalidArgument else."""
    if box is None:
        return None
    parts = box.split(",") if isinstance(box, str) else box
    try:
        values = tuple(parts)
    except TypeError:
        values = None
    if values is None or len(values) != 4:
        raise InvalidArgument(f"{name}: {box!r} must be four numbers ({form})")
    out = []
    for v in values:
        try:
            if isinstance(v, bool) or (kind is int and isinstance(v, float) and not v.is_integer()):
                raise ValueError
            x = kind(v.strip() if isinstance(v, str) else v)
        except (TypeError, ValueError, OverflowError):
            raise InvalidArgument(f"{name}: {v!r} in {box!r} is not {'an integer' if kind is int else 'a number'}"
                                  f" ({form})") from None
        if kind is float and x != x or x in (float("inf"), float("-inf")):
            raise InvalidArgument(f"{name}: {v!r} in {box!r} is not a finite number ({form})")
        out.append(x)
    if out[0] > out[2] or out[1] > out[3]:
        raise InvalidArgument(f"{name}: {box!r} has a minimum above its maximum ({form})")
    return tuple(out)


def check_time_range(time):
    """``time`` as given when it is a pair (start, end) of times with start <= end; InvalidArgument else."""
    if time is None:
        return None
    if isinstance(time, (str, bytes)) or not hasattr(time, "__len__") or len(time) != 2:
        raise InvalidArgument(f"time: {time!r} must be a pair (start, end)")
    start, end = to_micros(time[0]), to_micros(time[1])
    if start > end:
        raise InvalidArgument(f"time: start {time[0]!r} is after end {time[1]!r}")
    return time
