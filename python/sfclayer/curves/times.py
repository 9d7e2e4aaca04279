"""Time conversion: epoch microseconds from datetimes, and back to ISO-8601 text as Java prints it."""

import datetime as _dt
import re as _re

import numpy as _np

from ..errors import InvalidArgument
from ._common import _int

__all__ = ["to_micros", "format_micros", "describe_key"]

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_MICRO = _dt.timedelta(microseconds=1)


def to_micros(t):
    """Epoch microseconds of ``t``.

    Parameters
    ----------
    t : int, str, datetime.datetime, datetime.date or numpy.datetime64
        An ``int`` is taken as microseconds already. A naive ``datetime`` is taken as UTC; an aware
        one is converted. A ``date`` is its midnight UTC. A ``str`` is ISO-8601, as the JVM's
        ``TimeText.parseInstantMicros`` reads it: ``2020-09-01`` (midnight UTC),
        ``2020-09-01T12:00:00`` (naive: UTC; a space may stand for the ``T``; seconds and up to nine
        fractional digits optional, truncated to microseconds), with ``Z`` or ``+hh:mm`` for an offset; or epoch microseconds.

    Raises
    ------
    InvalidArgument
        If ``t`` is none of these.

    Returns
    -------
    int

    Examples
    --------
    >>> import datetime
    >>> to_micros(datetime.datetime(2020, 1, 1))
    1577836800000000
    >>> to_micros(datetime.datetime(2020, 1, 1, 1, tzinfo=datetime.timezone(datetime.timedelta(hours=1))))
    1577836800000000
    >>> to_micros("2020-01-01"), to_micros("2020-01-01T01:00:00+01:00"), to_micros("2020-01-01T00:00:00.5Z")
    (1577836800000000, 1577836800000000, 1577836800500000)
    """
    if isinstance(t, str):
        return _parse_iso(t)
    if isinstance(t, _dt.datetime):
        if t.tzinfo is None or t.tzinfo.utcoffset(t) is None:
            t = t.replace(tzinfo=_dt.timezone.utc)
        return (t - _EPOCH) // _MICRO
    if isinstance(t, _dt.date):
        return to_micros(_dt.datetime(t.year, t.month, t.day))
    if isinstance(t, _np.datetime64):
        return int(t.astype("datetime64[us]").astype(_np.int64))
    if isinstance(t, bool) or not hasattr(t, "__index__"):
        raise InvalidArgument(f"time: {t!r} is not a time (a datetime, a date, an ISO-8601 string or epoch"
                              " microseconds)")
    return _int(t, "time")


_ISO = _re.compile(r"\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})?)?")


def _parse_iso(text):
    """The one ISO-8601 reader of the Python side (see :func:`to_micros`)."""
    s = text.strip()
    if _re.fullmatch(r"-?\d+", s):
        return int(s)
    t = None
    if _ISO.fullmatch(s):
        # beyond microseconds (the JVM writes nanoseconds) digits are dropped, as the JVM's parser does
        s = _re.sub(r"(\.\d{6})\d+", r"\1", s)
        try:
            t = _dt.datetime.fromisoformat(s)
        except ValueError:
            t = None
    if t is None:
        raise InvalidArgument(f"time: {text!r} is not a time (ISO-8601, e.g. 2020-09-01 or 2020-09-01T12:00:00Z,"
                              " or epoch microseconds)")
    return to_micros(t)


def _to_duration_micros(d):
    if isinstance(d, _dt.timedelta):
        return d // _MICRO
    if isinstance(d, _np.timedelta64):
        return int(d.astype("timedelta64[us]").astype(_np.int64))
    return _int(d, "resolution")


def _civil_from_days(z):
    # Howard Hinnant's civil_from_days: proleptic Gregorian date of day z since 1970-01-01, any year.
    z += 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    return y + (m <= 2), m, d


def format_micros(micros):
    """Epoch microseconds as an ISO-8601 instant, exactly as Java's ``Instant.toString()`` prints it.

    Examples
    --------
    >>> format_micros(0), format_micros(1577836800123000), format_micros(-1)
    ('1970-01-01T00:00:00Z', '2020-01-01T00:00:00.123Z', '1969-12-31T23:59:59.999999Z')
    """
    secs, us = divmod(int(micros), 1_000_000)
    days, sod = divmod(secs, 86400)
    y, mo, d = _civil_from_days(days)
    hh, rem = divmod(sod, 3600)
    mm, ss = divmod(rem, 60)
    if y > 9999:
        ys = f"+{y}"
    elif y < -9999:
        ys = str(y)
    elif y < 0:
        ys = f"-{-y:04d}"
    else:
        ys = f"{y:04d}"
    if us == 0:
        frac = ""
    elif us % 1000 == 0:
        frac = f".{us // 1000:03d}"
    else:
        frac = f".{us:06d}"
    return f"{ys}-{mo:02d}-{d:02d}T{hh:02d}:{mm:02d}:{ss:02d}{frac}Z"


def describe_key(col, row, time_micros=None):
    """A key as messages show it: ``(col=.., row=..)``, or with ``, time=<ISO instant>`` when a time is given.

    Examples
    --------
    >>> describe_key(3, 4), describe_key(3, 4, 0)
    ('(col=3, row=4)', '(col=3, row=4, time=1970-01-01T00:00:00Z)')
    """
    time = "" if time_micros is None else f", time={format_micros(time_micros)}"
    return f"(col={col}, row={row}{time})"
