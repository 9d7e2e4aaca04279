"""Writing, reading and looking up layers: the Python face of the connector.

Over 500 lines on purpose: write, read, open and the open :class:`Layer` share one table of
option names and one set of argument rules, and a reader checks them side by side here.
"""

import contextlib
import datetime as _dt
import functools
import io
import json
import os
import struct
import threading

import fastavro

from . import _jvm, _transport

from ._args import check_box as _check_box, check_int as _check_int, check_path as _check_path
from ._args import check_time_range as _check_time_range
from ._pyramid_levels import _level_read
from .errors import CorruptLayer, InvalidArgument, KeyNotFound

__all__ = ["write", "read", "open", "Layer", "write_options"]

# The option table: Python keyword → connector option (write options, and read options given as
# keywords). With _READ_ARGUMENTS, exactly the JVM's options (tests/test_tables.py checks them).
_OPTION_NAMES = {
    "key_index": "keyIndex",
    "bounds": "bounds",
    "time_bounds": "timeBounds",
    "time_resolution": "timeResolution",
    "block_size": "blockSize",
    "partitions": "partitions",
    "compression": "compression",
    "extent": "extent",
    "crs": "crs",
    "index_interval": "indexInterval",
    "max_group_bytes": "maxGroupBytes",
    "max_ranges": "maxRanges",
    "on_corrupt": "onCorrupt",
    "repair": "repair",
    "format_version": "formatVersion",
    "on_existing": "onExisting",
    "raster": "raster",
    "bloom_filter": "bloomFilter",
    "bloom_fpp": "bloomFpp",
    "single_writer": "singleWriter",
    "small_append_bytes": "smallAppendBytes",
    "txn_app_id": "txnAppId",
    "txn_version": "txnVersion",
    "append_mode": "appendMode",
    "delta_rewrite_ratio": "deltaRewriteRatio",
    "compact_after_deltas": "compactAfterDeltas",
}
# read()'s own arguments that become read options.
_READ_ARGUMENTS = {"bbox": "bbox", "version": "versionAsOf", "as_of": "timestampAsOf", "geometry": "geometry"}


def _geometry_option(geometry, geometry_crs, layer_crs):
    """The hex WKB of a query geometry in the layer's CRS (``layer_crs()`` asked only when reprojecting)."""
    from .geometry import query_wkb

    return query_wkb(geometry, geometry_crs, layer_crs() if geometry_crs is not None else None)


def _layer_crs(spark, path, version):
    """The CRS in a layer version's document (None when it has none)."""
    return json.loads(_jvm.layer_metadata_json(spark, path, version, files=0)).get("crs")


def _micros(t):
    """Epoch microseconds of a time: :func:`sfclayer.curves.to_micros` (datetimes, dates, ISO-8601
    strings, epoch microseconds)."""
    from .curves import to_micros

    return to_micros(t)


def _option_value(name, value):
    if isinstance(value, dict):  # JSON-valued options (raster)
        return json.dumps(value, separators=(",", ":"))
    if isinstance(value, (tuple, list)):
        if name == "timeBounds":
            return ",".join(str(_micros(v)) for v in value)
        return ",".join(str(v) for v in value)
    if isinstance(value, _dt.timedelta):
        return f"{value // _dt.timedelta(microseconds=1)} us"
    return str(value)


def write_options(**options):
    """Connector options (strings) from Python keywords.

    Parameters
    ----------
    **options
        ``key_index``, ``bounds`` (colMin, rowMin, colMax, rowMax), ``time_bounds`` (start, end),
        ``time_resolution`` (timedelta or '1 day'), ``block_size``, ``partitions``, ``compression``,
        ``extent`` (xmin, ymin, xmax, ymax), ``crs``, ``index_interval``, ``on_existing`` (append: replace, keep, error),
        ``raster`` (a dict: the raster layer description, docs/FORMAT.md "Raster layers"),
        ``bloom_filter`` (bool, default True: a bloom filter per data file, so look-up misses skip it),
        ``bloom_fpp`` (its false-positive probability, default 0.01),
        ``single_writer`` (bool: only one writer at a time writes the layer, which allows commits on a store
        without atomic create-if-absent; docs/FORMAT.md section 6),
        ``txn_app_id`` and ``txn_version`` (together: an idempotent write, e.g. from ``foreachBatch``; a batch
        number the layer already holds for that application is not written again, docs/FORMAT.md section 6),
        ``append_mode`` (append: ``'auto'`` (default), ``'delta'`` or ``'rewrite'``: whether new tiles go into
        delta files beside the base files, docs/FORMAT.md section 11), ``delta_rewrite_ratio`` (auto writes
        deltas when the bytes a rewrite would cost exceed this many times the bytes added; default 4),
        ``compact_after_deltas`` (an append leaving this many delta versions compacts after it; default 10,
        0 never);
        connector names (``keyIndex``) are accepted as they are.

    Examples
    --------
    >>> write_options(bounds=(0, 0, 9, 9), key_index="hilbert")
    {'bounds': '0,0,9,9', 'keyIndex': 'hilbert'}
    """
    out = {}
    for key, value in options.items():
        if value is None:
            continue
        name = _OPTION_NAMES.get(key, key)
        out[name] = _option_value(name, value)
    return out


def write(df, path, mode="errorifexists", quiet=None, **options):
    """Write a DataFrame of tiles as an sfclayer layer.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        Key columns ``col`` and ``row`` (int), ``time`` (timestamp) for space-time layers; every
        other column is a value column.
    path : str
        Layer directory, on any Hadoop filesystem (``/tmp/x``, ``hdfs://nn:8020/layers/x``).
    mode : {'errorifexists', 'overwrite', 'ignore', 'append'}
    quiet : bool, optional
        Progress (tasks done of total, rate, time left) on stderr: None shows it in a terminal or a
        notebook (``SFCLAYER_QUIET=1`` turns that off), False always, True never (module
        :mod:`sfclayer._progress`).
    **options
        See :func:`write_options`.

    Examples
    --------
    With a SparkSession ``spark`` (:func:`sfclayer.session`):

    >>> import sfclayer, tempfile
    >>> path = tempfile.mkdtemp() + "/dem"
    >>> df = spark.range(100).selectExpr("int(id % 10) AS col", "int(id DIV 10) AS row", "int(id) * 3 AS elevation")
    >>> sfclayer.write(df, path, bounds=(0, 0, 9, 9), extent=(0, 0, 1, 1))
    >>> sfclayer.read(spark, path).count()
    100
    """
    # "error" is Spark's other name for errorifexists, the one Spark Connect's client accepts
    mode = "error" if mode == "errorifexists" else mode
    if options.get("crs") is not None:  # checked here, not at the layer's first reprojection
        from ._args import check_crs

        check_crs("crs", options["crs"])
    from . import _progress

    with _progress.track(df.sparkSession, f"write {path}", quiet), _jvm.translated():
        df.write.format("sfclayer").mode(mode).options(**write_options(**options)).save(path)


def _as_of_options(version, as_of):
    """Read options for time travel: ``versionAsOf`` / ``timestampAsOf`` (epoch micros)."""
    if version is not None and as_of is not None:
        raise InvalidArgument("give version or as_of, not both")
    if version is not None:
        return {_READ_ARGUMENTS["version"]: str(int(version))}
    if as_of is not None:
        return {_READ_ARGUMENTS["as_of"]: str(_micros(as_of))}
    return {}


def read(spark, path, bbox=None, keys=None, time=None, version=None, as_of=None, zoom=None, geometry=None,
         geometry_crs=None, **options):
    """Read a layer as a DataFrame, optionally restricted to a box.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
    path : str
    bbox : tuple of float, optional
        (xmin, ymin, xmax, ymax) in map units: tiles whose envelope intersects it. Needs a layer
        written with an ``extent``.
    keys : tuple of int, optional
        (col_min, row_min, col_max, row_max), inclusive.
    time : tuple, optional
        (start, end), inclusive; datetimes (naive = UTC), dates, ISO-8601 strings
        (``"2020-09-01"``, ``"2020-09-01T12:00:00Z"``) or epoch microseconds.
    version : int, optional
        Read this version (read option ``versionAsOf``); the newest by default.
    as_of : datetime, optional
        Read the newest version committed at or before this time (read option ``timestampAsOf``).
    zoom : int, optional
        For raster layers with a pyramid: read that zoom level (:func:`sfclayer.pyramid_levels`).
        A pyramid level exists for the base version the pyramid was built from only: ``version``
        must be that one (the base's newest), ``as_of`` is refused (InvalidArgument).
    geometry : shapely geometry, WKT, WKB or GeoJSON, optional
        The tiles whose envelope meets it (exactly), read through its own tile cover: a thin
        diagonal polygon reads the tiles it crosses, not its bounding box (:mod:`sfclayer.geometry`).
        Needs a layer with an extent.
    geometry_crs : str, optional
        The geometry's CRS (``"EPSG:4326"``) when not the layer's: reprojected with pyproj.
    **options
        Other read options, e.g. ``max_ranges``.

    Returns
    -------
    pyspark.sql.DataFrame

    Examples
    --------
    >>> import sfclayer, tempfile
    >>> path = tempfile.mkdtemp() + "/dem"
    >>> df = spark.range(100).selectExpr("int(id % 10) AS col", "int(id DIV 10) AS row", "int(id) * 3 AS elevation")
    >>> sfclayer.write(df, path, bounds=(0, 0, 9, 9), extent=(0, 0, 10, 10))
    >>> sfclayer.read(spark, path, keys=(2, 2, 4, 5)).count()
    12
    >>> sfclayer.read(spark, path, bbox=(2.5, 2.5, 3.5, 3.5)).count()   # tiles whose envelope meets the box
    4
    """
    path = _check_path(path)
    bbox = _check_box("bbox", bbox, float, "xmin, ymin, xmax, ymax")
    keys = _check_box("keys", keys, int, "col_min, row_min, col_max, row_max")
    time = _check_time_range(time)
    if zoom is not None:
        path, version, as_of = _level_read(spark, path, zoom, version, as_of)
    reader = spark.read.format("sfclayer")
    opts = write_options(**options)
    opts.update(_as_of_options(version, as_of))
    if bbox is not None:
        opts[_READ_ARGUMENTS["bbox"]] = _option_value("bbox", bbox)
    if geometry is not None:
        opts[_READ_ARGUMENTS["geometry"]] = _geometry_option(geometry, geometry_crs,
                                                             lambda: _layer_crs(spark, path, version))
    elif geometry_crs is not None:
        raise InvalidArgument(f"geometry_crs: {geometry_crs!r} given without a geometry")
    # Filters as SQL text: the same on classic and Spark Connect DataFrames (pyspark.sql.functions
    # builds one kind of column or the other, by the process's mode, not the session's).
    with _jvm.translated():
        df = reader.options(**opts).load(path)
        if keys is not None:
            c0, r0, c1, r1 = (int(v) for v in keys)
            df = df.where(f"`col` BETWEEN {c0} AND {c1} AND `row` BETWEEN {r0} AND {r1}")
        if time is not None:
            start, end = (int(_micros(t)) for t in time)
            df = df.where(f"`time` >= timestamp_micros({start}) AND `time` <= timestamp_micros({end})")
        df = _jvm.transport(spark).resolved(df)  # Connect plans lazily: a missing layer fails here as on classic
    return df


def _tile_count(spark, path, md):
    """The tiles of the layer version whose document is ``md``: its ``recordCount``, which counts base files
    only, unless the version has delta files (format 7, FORMAT.md section 11), which are merged by a read."""
    if not md.get("deltas"):
        return int(md["recordCount"])
    return read(spark, path, version=int(md["version"])).count()


@functools.lru_cache(maxsize=64)
def _parsed_schema(text):
    """fastavro's parsed form of a tile schema (JSON text), parsed once per schema in a process."""
    return fastavro.parse_schema(json.loads(text))


def open(spark, path=None, cache_size=None, cache_bytes=None, version=None, as_of=None, zoom=None,  # noqa: A001
         storage_options=None):  # sfclayer.open, like io.open, by intent
    """Open a layer for point look-ups.

    ``sfclayer.open(path)`` (no SparkSession) reads the layer in this process, without a JVM
    (:mod:`sfclayer.reader`: local files and object stores; HDFS layers and GeoTrellis catalogs are read
    through Spark); ``sfclayer.open(spark, path)`` reads it through Spark's driver. Both give a
    :class:`Layer` with the same methods and answers.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession, or the path
        Its driver JVM does the reading: through py4j and a loopback socket on a classic session, through
        sfclayer's relation plugin on a Spark Connect session (each request one round trip to the server,
        no Spark job; README, "Spark Connect"). A path (or None, with ``path``): read in-process.
    path : str
    cache_size : int, optional
        Most data files kept open (an LRU; default 1024, a bound on file descriptors).
    cache_bytes : int, optional
        Most driver memory for open files and their indexes (default 256 MiB); the cache is sized
        by this first.
    version : int, optional
        Pin this version; the newest by default. The layer stays on the version it opened (see
        :meth:`Layer.refresh`).
    as_of : datetime, optional
        Pin the newest version committed at or before this time.
    zoom : int, optional
        For raster layers with a pyramid: open that zoom level (:func:`sfclayer.pyramid_levels`),
        at the level version its pyramid document names. ``version`` must be the base version the
        pyramid was built from; ``as_of`` is refused for a pyramid level (InvalidArgument).
    storage_options : dict, optional
        In-process reads of object stores only: credentials, region, endpoint
        (:func:`sfclayer.reader.source.open_source`).

    Returns
    -------
    Layer
        Use it as a context manager, or close it.

    Examples
    --------
    >>> import sfclayer, tempfile
    >>> path = tempfile.mkdtemp() + "/dem"
    >>> df = spark.range(100).selectExpr("int(id % 10) AS col", "int(id DIV 10) AS row", "int(id) * 3 AS elevation")
    >>> sfclayer.write(df, path, bounds=(0, 0, 9, 9))
    >>> with sfclayer.open(spark, path) as layer:
    ...     layer.get(4, 2)["elevation"]
    72
    """
    spark, path = session_and_path(spark, path)
    zoom = None if zoom is None else _check_int("zoom", zoom)  # not int(): 1.5, "3" or True name another level
    return _jvm.transport(spark).opener()(path, cache_size=cache_size, cache_bytes=cache_bytes, version=version,
                                          as_of=as_of, zoom=zoom, storage_options=storage_options)


def session_and_path(spark, path):
    """``(spark, path)`` of a call that takes ``(spark, path)`` or ``(path)``: spark None for the latter (read
    in-process, without Spark: :func:`sfclayer._transport.in_process`)."""
    if isinstance(spark, (str, os.PathLike)):
        if path is not None:
            raise InvalidArgument(f"path: given twice ({spark!r} and {path!r})")
        return None, os.fspath(spark)
    if path is None:
        raise InvalidArgument("path: None must be a layer's path")
    return spark, path




class _Pinned:
    """One opened version: its reader's handle on the driver, its look-up client and tile schema.

    Closed once nobody uses it after a :meth:`Layer.refresh` moved on (``users``, under the layer's lock).
    """

    def __init__(self, spark, info, client):
        from .curves import key_index_from_json

        self.spark = spark
        self.handle = info["handle"]
        self.version = int(info["version"])
        self.client = client  # the session transport's: the driver's socket, or a Connect server's plugin
        self.key_index = key_index_from_json(info["keyIndex"])
        self.space_time = self.key_index.kind == "z3"
        self.schema = _parsed_schema(info["tileSchema"])
        self.keys = ("col", "row", "time") if self.space_time else ("col", "row")
        self.users = 0
        self.retired = False
        self.closed = False

    def decode(self, record):
        tile = fastavro.schemaless_reader(io.BytesIO(record), self.schema)
        for k in self.keys:
            tile.pop(k, None)
        return tile

    def close(self):
        self.client.close()  # closes the reader on the driver too


class Layer:
    """Point look-ups and box queries on one version of a layer (see :func:`open`)."""

    def __init__(self, spark, path, cache_size=None, cache_bytes=None, version=None, as_of=None, zoom=None,
                 storage_options=None):
        # storage_options: in-process reads only (sfclayer.open's parameters, through Transport.opener)
        if zoom is not None:
            path, version, as_of = _level_read(spark, path, zoom, version, as_of)
        self.path = _check_path(path)
        self._spark = spark
        # the reader's cache bounds, and whether it keeps each data file's index in the driver (always, but
        # for a benchmark's subclass comparing Hadoop's MapFile.Reader: bench/common.py)
        self._cache = (cache_size, cache_bytes, True)
        self._pins = threading.Lock()
        self._pinned = None
        self._open(version, as_of)

    def _open(self, version, as_of):
        # One py4j call: the driver's shared look-up server is started by the first open of the
        # session and reused; the version document as a whole comes only when `metadata` is read.
        _as_of_options(version, as_of)  # checks the pair
        as_of_millis = -1 if as_of is None else _micros(as_of) // 1000
        cache_size, cache_bytes, index_in_driver = self._cache
        info, client = _jvm.transport(self._spark).open_layer(
            self.path, 1024 if cache_size is None else cache_size,  # ValueReader.DEFAULT_CACHE_SIZE
            (256 << 20) if cache_bytes is None else cache_bytes,  # ValueReader.DEFAULT_CACHE_BYTES
            index_in_driver, -1 if version is None else int(version), as_of_millis)
        pinned = _Pinned(self._spark, info, client)
        # Swapped in one step: a look-up running meanwhile finishes on the version it started on,
        # which is closed when its last user is done, never under it.
        with self._pins:
            old, self._pinned, self._last = self._pinned, pinned, pinned
            self._java_reader = None
            self._metadata = None
        self._retire(old)

    def _retire(self, pinned):
        if pinned is None:
            return
        with self._pins:
            pinned.retired = True
            close = pinned.users == 0 and not pinned.closed
            pinned.closed = pinned.closed or close
        if close:
            pinned.close()

    @contextlib.contextmanager
    def _use(self):
        """The pinned version for one request, kept open until the request is done."""
        with self._pins:
            p = self._pinned
            if p is None:
                raise InvalidArgument(f"layer {self.path} is closed")
            p.users += 1
        try:
            yield p
        finally:
            with self._pins:
                p.users -= 1
                close = p.retired and p.users == 0 and not p.closed
                p.closed = p.closed or close
            if close:
                p.close()

    # The pinned version's parts, as attributes (the newest pinned; the last one once closed).
    _handle = property(lambda self: None if self._pinned is None else self._pinned.handle)
    _client = property(lambda self: self._last.client)
    _schema = property(lambda self: self._last.schema)
    key_index = property(lambda self: self._last.key_index, doc="The pinned version's key index.")
    space_time = property(lambda self: self._last.space_time, doc="Whether the layer's keys have a time.")

    @property
    def metadata(self):
        """The pinned version's document (dict): key index, schemas, every file and its statistics.

        Read from the driver on first use (a layer of many files has a large document), then kept.
        """
        if self._metadata is None:
            self._require_open()
            self._metadata = json.loads(self._last.client.metadata_json())
        return self._metadata

    def document(self, files=0):
        """The pinned version's document with at most ``files`` of its data files.

        Unlike :attr:`metadata`, which holds every file and its statistics (read from every manifest
        of a format 6 version: millions of entries for a layer of millions of files), this reads the
        version document and only the manifests on the way to the first ``files`` files.

        Parameters
        ----------
        files : int
            How many data files to list in ``files``, the first in index order (0: no ``files``).

        Returns
        -------
        dict
            The version document: key index, schemas, counts and, for format 6, ``manifests`` (the
            references to its manifests, with their index spans and totals); for format 7, ``deltas``
            (its delta files, each a ``files`` entry plus ``addedIn``, which the counts leave out).
        """
        self._require_open()
        if self._metadata is not None and files == 0:
            return {k: v for k, v in self._metadata.items() if k != "files"}
        return json.loads(_jvm.layer_metadata_json(self._spark, self.path, self.version, files=int(files)))

    @property
    def _reader(self):
        """The driver's ``io.sfclayer.lookup.ValueReader`` behind this layer (a py4j object)."""
        self._require_open()
        if self._java_reader is None:
            self._java_reader = _jvm.lookup_call(self._spark, "reader", self._handle)
        return self._java_reader

    @property
    def version(self):
        """The version this layer is pinned to."""
        return self._last.version

    def refresh(self):
        """Move to the layer's newest version (look-ups stay on the pinned one until then).

        Returns
        -------
        int
            The version now pinned.
        """
        self._open(None, None)
        return self.version

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        """Close the layer's open files (a look-up in flight on another thread fails)."""
        with self._pins:
            pinned, self._pinned, self._java_reader = self._pinned, None, None
            if pinned is not None:
                pinned.users = 0  # closed now, not when the last request ends
        self._retire(pinned)

    def _decode(self, record):
        return self._last.decode(record)

    def _check_time(self, time, space_time):
        if space_time and time is None:
            raise InvalidArgument(f"layer {self.path} is space-time: give a time with the key")
        if not space_time and time is not None:
            raise InvalidArgument(f"layer {self.path} is spatial: its keys have no time")

    def get(self, col, row, time=None):
        """The value columns of one tile.

        Parameters
        ----------
        col, row : int
        time : datetime, date, ISO-8601 str or int, optional
            For space-time layers (naive datetimes are UTC; ints are epoch microseconds).

        Returns
        -------
        dict
            Value column name → value.

        Raises
        ------
        KeyNotFound
            If the layer has no tile at the key (also a KeyError).
        """
        from ._args import check_int

        col, row = check_int("col", col), check_int("row", row)
        with self._use() as p:
            self._check_time(time, p.space_time)
            micros = _micros(time) if p.space_time else 0
            record = p.client.get(col, row, micros)
            if record is None:
                raise KeyNotFound(self._not_found(p, col, row, micros))
            return p.decode(record)

    def _not_found(self, p, col, row, micros):
        from .curves import describe_key

        key = describe_key(col, row, micros if p.space_time else None)
        b = p.key_index.bounds
        outside = not (b.col_min <= col <= b.col_max and b.row_min <= row <= b.row_max)
        tb = p.key_index.time_bounds
        if p.space_time and not (tb.min_micros <= micros <= tb.max_micros):
            outside = True
        why = " (outside its key bounds)" if outside else ""
        return f"no tile at key {key} in layer {self.path}{why}"

    def get_many(self, keys, errors_as_values=False):
        """Many tiles at once, each data file opened and walked once.

        Parameters
        ----------
        keys : iterable of tuple
            ``(col, row)`` or ``(col, row, time)``.
        errors_as_values : bool
            False: the first key whose look-up failed raises its error. True: that key holds its
            error (an :class:`~sfclayer.errors.SfcLayerError`) and the others their tiles.

        Returns
        -------
        list
            A value dict per key, in the keys' order; None where the layer has no tile.
        """
        from ._args import check_key

        with self._use() as p:
            packed = bytearray()
            for key in keys:
                col, row, time = check_key(key, p.space_time)
                packed += struct.pack(">iiq", col, row, _micros(time) if p.space_time else 0)
            records = p.client.get_many(bytes(packed), errors_as_values=errors_as_values)
            return [r if r is None or isinstance(r, Exception) else p.decode(r) for r in records]

    def _spec(self, bbox, keys, time, limit, geometry=None, geometry_crs=None):
        """The text form of a box query (``io.sfclayer.layer.BoxQuery``), checked as :func:`read` checks."""
        bbox = _check_box("bbox", bbox, float, "xmin, ymin, xmax, ymax")
        keys = _check_box("keys", keys, int, "col_min, row_min, col_max, row_max")
        time = _check_time_range(time)
        lines = []
        if bbox is not None:
            lines.append("bbox=" + ",".join(repr(v) for v in bbox))
        if keys is not None:
            lines.append("keys=" + ",".join(str(v) for v in keys))
        if time is not None:
            if not self.space_time:
                raise InvalidArgument(f"time: layer {self.path} is spatial: its keys have no time")
            lines.append("time=" + ",".join(str(_micros(t)) for t in time))
        if geometry is not None:
            lines.append("geometry=" + _geometry_option(geometry, geometry_crs, lambda: self.metadata.get("crs")))
        elif geometry_crs is not None:
            raise InvalidArgument(f"geometry_crs: {geometry_crs!r} given without a geometry")
        if limit is not None:
            if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
                raise InvalidArgument(f"limit: {limit!r} must be a whole number >= 0")
            lines.append(f"limit={limit}")
        return "\n".join(lines)

    def query(self, bbox=None, keys=None, time=None, limit=None, geometry=None, geometry_crs=None):
        """The tiles in a box, read by the driver JVM without a Spark job.

        The same box rules as :func:`read` (files pruned by name, the ranges traversed with this
        layer's open files, records refined), answered over the look-up connection in batches: a
        large box streams, it is never built as one answer.

        Parameters
        ----------
        bbox : tuple of float, optional
            (xmin, ymin, xmax, ymax) in map units: tiles whose envelope intersects it (layers with an extent).
        keys : tuple of int, optional
            (col_min, row_min, col_max, row_max), inclusive.
        time : tuple, optional
            (start, end), inclusive, for space-time layers.
        limit : int, optional
            Stop after this many tiles.
        geometry : shapely geometry, WKT, WKB or GeoJSON, optional
            Tiles whose envelope meets it, read through its tile cover (as :func:`read`).
        geometry_crs : str, optional
            The geometry's CRS when not the layer's.

        Returns
        -------
        iterator of dict
            Each tile's ``col``, ``row`` (``time``, a UTC datetime) and value columns, in index order.

        Examples
        --------
        >>> with sfclayer.open(spark, "/tmp/dem") as layer:  # doctest: +SKIP
        ...     [t["col"] for t in layer.query(keys=(0, 0, 1, 0))]
        [0, 1]
        """
        spec = self._spec(bbox, keys, time, limit, geometry, geometry_crs)  # checked now, not at the first next()
        self._require_open()
        return self._stream(spec)

    def _stream(self, spec):
        read = fastavro.schemaless_reader
        with self._use() as p:
            for count, data in p.client.query(spec):
                # a batch's records back to back: each is self-delimiting for the tile schema
                stream = io.BytesIO(data)
                tiles = [read(stream, p.schema) for _ in range(count)]
                if stream.tell() != len(data):
                    raise CorruptLayer(f"layer {self.path}: a box query's batch of {count} tiles decoded to "
                                       f"{stream.tell()} of its {len(data)} bytes (the records do not match the "
                                       "tile schema)")
                yield from tiles

    def count(self, bbox=None, keys=None, time=None, geometry=None, geometry_crs=None):
        """How many tiles :meth:`query` would return (keys are read, values never decoded).

        Examples
        --------
        >>> layer.count(keys=(0, 0, 9, 9))  # doctest: +SKIP
        100
        """
        spec = self._spec(bbox, keys, time, None, geometry, geometry_crs)
        with self._use() as p:
            return p.client.count(spec)

    def to_xarray(self, bbox, time=None, bands=None):
        """A window of a raster layer as an ``xarray.DataArray`` (:mod:`sfclayer.arrays`), its tiles read
        by the driver as :meth:`query` reads them.

        Parameters
        ----------
        bbox : tuple of float
            ``(xmin, ymin, xmax, ymax)`` in the layer's CRS: the whole pixels meeting it.
        time : tuple, optional
            (start, end) for space-time layers (a ``time`` dimension, one slice per tile time).
        bands : list of int, optional
            1-based band numbers; all by default.

        Returns
        -------
        xarray.DataArray
            ``(band, y, x)``, pixel-centre coordinates, nodata as ``_FillValue`` (NaN for floats), the
            CRS written with rioxarray when it is installed. Needs the ``xarray`` extra.
        """
        from ._windows import Window, window

        bbox = _check_box("bbox", bbox, float, "xmin, ymin, xmax, ymax")
        if bbox is None:
            raise InvalidArgument("bbox: None must be four numbers (xmin, ymin, xmax, ymax)")
        if not self.space_time:  # built on to_numpy: the same window, with coordinates
            array = self.to_numpy(bbox, bands, masked=True)
            return window(self._window_metadata(), (), bbox, bands, None, array=array)
        w = Window(self.metadata, bbox)
        tiles = self.query(keys=w.keys, time=time)
        return window(self.metadata, tiles, bbox, bands, "time" if self.space_time else None)

    def to_numpy(self, bbox, bands=None, masked=False):
        """A window of a spatial raster layer as an array ``(bands, height, width)``, as rasterio's
        ``read(window=)``: the whole pixels meeting ``bbox`` (the rule of :meth:`to_xarray`).

        Parameters
        ----------
        bbox : tuple of float
            ``(xmin, ymin, xmax, ymax)`` in the layer's CRS.
        bands : list of int, optional
            1-based band numbers; all by default.
        masked : bool
            A :class:`numpy.ma.MaskedArray` whose mask is True at missing pixels (missing tiles, and
            pixels the tiles' validity rules out).

        Returns
        -------
        numpy.ndarray or numpy.ma.MaskedArray
            Missing pixels hold ``nodata`` (NaN for float layers, 0 for integer layers without nodata).
        """
        bbox = _check_box("bbox", bbox, float, "xmin, ymin, xmax, ymax")
        if bbox is None:
            raise InvalidArgument("bbox: None must be four numbers (xmin, ymin, xmax, ymax)")
        if self.space_time:
            raise InvalidArgument(f"layer {self.path} is space-time: read its windows with to_xarray(bbox, time=...)")
        return self._window_numpy(bbox, bands, masked)

    def _window_numpy(self, bbox, bands, masked):
        # to_numpy once its arguments are checked (bbox: four floats); the in-process reader replaces it
        from ._windows import Window, window_array

        md = self._window_metadata()
        w = Window(md, bbox, grid=self._window_grid())
        return window_array(md, self._window_tiles(w.keys), bbox, bands, masked, w=w)

    def _window_metadata(self):
        return self.metadata

    def _window_grid(self):
        return None  # Window computes it from the metadata

    def _window_tiles(self, keys):
        return self.query(keys=keys)

    def _require_open(self):
        if self._handle is None:
            raise InvalidArgument(f"layer {self.path} is closed")

    def __getitem__(self, key):
        return self.get(*key)

    def __contains__(self, key):
        try:
            self.get(*key)
            return True
        except KeyNotFound:
            return False

    def stats(self):
        """Look-up counters: files opened, cache hits, files open now, cache memory, indexes kept,
        misses answered by bloom filters without opening a file (``bloom_skips``), filters kept."""
        self._require_open()
        return self._last.client.stats()


_transport.REGISTERED["layer"] = Layer  # the Layer a driver's transport opens (Transport.opener)
