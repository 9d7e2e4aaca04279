"""A layer's life after its first write: history, delete, compact and vacuum.

Appends go through :func:`sfclayer.write` with ``mode="append"``; time travel through the
``version=`` / ``as_of=`` arguments of :func:`sfclayer.read` and :func:`sfclayer.open`. In SQL, the
catalog :data:`sfclayer.CATALOG` offers the same as ``CALL sfclayer.system.compact(path => ...)``,
``vacuum(path, retain, dry_run, force)``, ``restore(path, version, as_of)`` and ``history(path)``.

Examples
--------
>>> sfclayer.write(new_tiles, path, mode="append")                          # doctest: +SKIP
>>> sfclayer.delete(spark, path, keys=(0, 0, 9, 9))                         # doctest: +SKIP
>>> [(v.version, v.operation) for v in sfclayer.history(spark, path)]       # doctest: +SKIP
[(1, 'write'), (2, 'append'), (3, 'delete')]
>>> sfclayer.read(spark, path, version=1).count()                           # doctest: +SKIP
>>> sfclayer.vacuum(spark, path, retain=datetime.timedelta(days=7))         # doctest: +SKIP
"""

import dataclasses
import datetime as _dt

from . import _jvm
from .errors import InvalidArgument
from .layer import _micros, session_and_path

__all__ = ["Version", "history", "delete", "compact", "restore", "vacuum", "DEFAULT_RETAIN"]

DEFAULT_RETAIN = _dt.timedelta(days=7)
"""Vacuum's default retention (Delta's); less is refused unless ``enforce_retention=False``."""


@dataclasses.dataclass(frozen=True)
class Version:
    """One committed version of a layer, as :func:`history` reports it.

    Attributes
    ----------
    version : int
    created_at : datetime.datetime
        Commit time (UTC).
    operation : str
        ``write``, ``overwrite``, ``append``, ``delete``, ``compact``, ``repair`` or ``restore``.
    read_version : int or None
        The version the operation read (None for a first write).
    records, files, data_bytes : int
        The totals of the version's base files.
    delta_files, delta_records : int
        Its delta files (format 7, appends that did not rewrite base files) and the records they hold:
        at most the tiles they add, as a key may be in several deltas and a base file. 0 without deltas.
    metrics : dict
        ``filesAdded``, ``filesRemoved``, ``recordsAdded``, ``recordsRemoved``, ``bytesWritten``,
        ``tilesInserted``, ``tilesReplaced``, ``tilesKept``, ``tilesDeleted`` (format version 2).
    write_id : str or None
        The id of the write that committed it (its data directory is ``data-<write_id>``): a
        :class:`~sfclayer.errors.CommitStateUnknown` names it, and the write is committed if a version has it.
    transaction : dict or None
        The batch an idempotent write committed, ``{"appId": ..., "txnVersion": ...}``: a streaming
        query's id and micro-batch id, or a write's options ``txnAppId`` and ``txnVersion``; None for
        other versions (docs/FORMAT.md section 6, "Application transactions").
    """

    version: int
    created_at: _dt.datetime
    operation: str
    read_version: object
    records: int
    files: int
    data_bytes: int
    metrics: dict
    write_id: object = None
    delta_files: int = 0
    delta_records: int = 0
    transaction: object = None

    @classmethod
    def from_json(cls, d):
        created = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc) + _dt.timedelta(
            microseconds=_micros(d["createdAt"]))
        return cls(int(d["version"]), created, d["operation"], d.get("readVersion"), int(d["recordCount"]),
                   int(d["fileCount"]), int(d["dataBytes"]), dict(d.get("metrics") or {}), d.get("writeId"),
                   int(d.get("deltaFiles") or 0), int(d.get("deltaRecords") or 0), d.get("transaction"))

    def __getattr__(self, name):  # metrics by their Python names: v.files_added, v.bytes_written
        parts = name.split("_")
        key = parts[0] + "".join(p.title() for p in parts[1:])
        metrics = self.__dict__.get("metrics") or {}
        if key in metrics:
            return metrics[key]
        raise AttributeError(name)


def history(spark, path=None):
    """The layer's retained versions, oldest first.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession, or the path
        ``history(path)`` reads the version documents in-process, without Spark (:mod:`sfclayer.reader`).
    path : str

    Returns
    -------
    list of Version
    """
    spark, path = session_and_path(spark, path)
    return [Version.from_json(d) for d in _jvm.transport(spark).history(path)]


_FORMS = {"keys": "col_min, row_min, col_max, row_max", "bbox": "xmin, ymin, xmax, ymax"}


def _box(value, n, what):
    if value is None:
        return None
    if len(value) != n:
        raise InvalidArgument(f"{what}: {value!r} must be {n} numbers ({_FORMS[what]})")
    return ",".join(str(v) for v in value)


def delete(spark, path, keys=None, bbox=None, time=None):
    """Delete the tiles in a box, as a new version (the box arguments of :func:`sfclayer.read`).

    Only the data files whose index span meets the box are read and rewritten.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
    path : str
    keys : tuple of int, optional
        (col_min, row_min, col_max, row_max), inclusive.
    bbox : tuple of float, optional
        (xmin, ymin, xmax, ymax) in map units (layers with an extent): tiles whose envelope meets it.
    time : tuple, optional
        (start, end), inclusive, for space-time layers.

    Returns
    -------
    Version
        The new version (``metrics["tilesDeleted"]`` says how many went), or the newest one
        unchanged when no tile was in the box.
    """
    if time is not None:
        if len(time) != 2:
            raise InvalidArgument(f"time: {time!r} must be a pair (start, end)")
        time = f"{_micros(time[0])},{_micros(time[1])}"
    return Version.from_json(_jvm.command(spark, "delete", path, _box(keys, 4, "keys"),
                                          _box(bbox, 4, "bbox"), time))


def compact(spark, path, quiet=None):
    """Fold the newest version's delta files into the base files they fall into (docs/FORMAT.md
    section 11) and rewrite runs of adjacent small data files (under a quarter of the block size) into
    block-sized ones, as a new version; nothing else is touched.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
    path : str
    quiet : bool, optional
        Progress (tasks done of total, rate, time left) on stderr: None shows it in a terminal or a
        notebook (``SFCLAYER_QUIET=1`` turns that off), False always, True never (module
        :mod:`sfclayer._progress`).

    Returns
    -------
    Version
        The new version, or the newest one unchanged when there was nothing to compact.
    """
    from . import _progress

    with _progress.track(spark, f"compact {path}", quiet):
        return Version.from_json(_jvm.command(spark, "compact", path))


def restore(spark, path, version=None, as_of=None):
    """Commit a new version whose content is an older version's (Delta's ``RESTORE``).

    Nothing is copied or deleted: the new version lists the older one's data files (or manifests) and
    every field of its document, with operation ``restore`` (``metrics["restoredVersion"]``). It is a
    replace: a write committed since this call read the log makes it fail with
    :class:`sfclayer.ConcurrentUpdate`. A raster layer's pyramid, built from the version restored over,
    is then stale (not read); ``sfclayer.pyramid`` brings it up to date.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
    path : str
    version : int, optional
        The version to restore.
    as_of : datetime or str or int, optional
        Instead: restore the newest version committed at or before this time (as :func:`sfclayer.read`'s
        ``as_of``).

    Returns
    -------
    Version
        The new version, or the newest one unchanged when it is the one asked for.

    Raises
    ------
    LayerNotFound
        If that version was removed by vacuum (its document, or any of its data files, is gone: the
        message names what), or there is no such version.
    InvalidArgument
        If neither or both of ``version`` and ``as_of`` are given.

    Examples
    --------
    >>> sfclayer.restore(spark, "/tmp/dem", version=3).operation  # doctest: +SKIP
    'restore'
    """
    if (version is None) == (as_of is None):
        raise InvalidArgument("restore: give exactly one of version and as_of")
    if version is not None and (isinstance(version, bool) or not isinstance(version, int) or version < 1):
        raise InvalidArgument(f"version: {version!r} is not a version (1, 2, ...)")
    when = None if as_of is None else str(_micros(as_of))
    return Version.from_json(_jvm.command(spark, "restore", path, -1 if version is None else int(version), when))


def vacuum(spark, path, retain=DEFAULT_RETAIN, dry_run=False, enforce_retention=True, quiet=None):
    """Delete what no version newer than the retention horizon needs.

    Removes version documents committed before ``now - retain`` (never the newest), the data files
    no remaining version references that are older than the horizon (a dropped version's, a failed
    or killed write's), and empty data directories. A raster layer's pyramid levels are vacuumed
    with it, each the same way. Nothing else in sfclayer deletes data.

    Parameters
    ----------
    retain : datetime.timedelta, str or float
        At least 7 days unless ``enforce_retention=False``: a timedelta, ``"7d"``, ``"12 hours"``,
        ``"PT1H"`` (as the CLI and SQL take it) or seconds.
    dry_run : bool
        Only report what would go.
    quiet : bool, optional
        Progress (removals done of those found so far, rate, time left) on stderr: None shows it in a
        terminal or a notebook (``SFCLAYER_QUIET=1`` turns that off), False always, True never.

    Returns
    -------
    dict
        ``versionsRemoved``, ``filesRemoved`` (data files, relative to the layer), ``otherRemoved``
        (temporary documents, stray files and empty directories), ``bytesFreed`` (all of it), ``dryRun``,
        and ``pyramidLevels``: per zoom level of a pyramid (as a string), the same report for it.
    """
    from . import _progress
    from ._args import check_duration

    retain = check_duration("retain", retain)
    millis = retain // _dt.timedelta(milliseconds=1)

    def follow(tracker):  # the JVM counts the vacuum's removals (no Spark tasks to follow)
        def look():
            p = _jvm.command(spark, "vacuumProgress", path)
            if p:
                tracker.stages("polled", [(0, int(p["done"]), int(p["total"]))])

        return _progress.polled(look)

    with _progress.track(spark, f"vacuum {path}", quiet, follow=follow, unit="file") as tracker:
        out = _jvm.command(spark, "vacuum", path, int(millis), bool(dry_run), bool(enforce_retention))
        if tracker is not None:  # the final count (a short vacuum ends between two looks)
            n = _removals(out)
            tracker.stages("polled", [(0, n, n)])
        return out


def _removals(report):
    """Versions, files and other paths a vacuum report says were removed, its pyramid levels' included."""
    return (len(report["versionsRemoved"]) + len(report["filesRemoved"]) + len(report["otherRemoved"])
            + sum(_removals(level) for level in (report.get("pyramidLevels") or {}).values()))
