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

import os as _os

from .curves import to_micros
from .errors import InvalidArgument

__all__ = ["check_path", "check_box", "check_time_range"]


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
