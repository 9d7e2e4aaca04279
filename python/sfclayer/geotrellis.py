"""GeoTrellis catalogs read in place: list, read, look up and convert GeoTrellis layers.

A GeoTrellis Hadoop (or file) catalog — ``_attributes/<name>___<zoom>___metadata.json`` and the
layer's ``<name>/<zoom>/part-r-<partition>-<first index>`` MapFiles, on any Hadoop filesystem — is
read as it lies: the JVM decodes GeoTrellis' Avro tile records with the writer schema stored in the
attributes, finds files and records through GeoTrellis' own key index (Z, Hilbert, row-major) and
gives tiles in sfclayer's raster convention (:mod:`sfclayer.raster`), so :func:`sfclayer.raster.to_numpy`
and everything else that reads raster layers read them.

Examples
--------
>>> from sfclayer import geotrellis
>>> geotrellis.layers(spark, "hdfs:///catalog")                      # doctest: +SKIP
[('dem', 5), ('dem', 6)]
>>> df = geotrellis.read(spark, "hdfs:///catalog", "dem", 6, keys=(10, 10, 20, 20))  # doctest: +SKIP
>>> with geotrellis.open(spark, "hdfs:///catalog", "dem", 6) as layer:  # doctest: +SKIP
...     tile = layer.get(12, 14)
"""

import datetime as _dt
import struct

from . import _jvm, _progress
from ._args import check_box as _check_box, check_time_range as _check_time_range
from .curves import to_micros as _micros
from .errors import InvalidArgument, KeyNotFound

__all__ = ["layers", "info", "read", "open", "Layer", "convert", "OPTION"]

#: The read option naming a GeoTrellis layer (``name/zoom``) in the catalog given as the path.
OPTION = "geotrellisLayer"


def _check_id(name, zoom):
    if not isinstance(name, str) or not name or "/" in name:
        raise InvalidArgument(f"name: {name!r} is not a GeoTrellis layer name (a non-empty string without '/')")
    if isinstance(zoom, bool) or not isinstance(zoom, int) or zoom < 0:
        raise InvalidArgument(f"zoom: {zoom!r} is not a zoom level (a whole number >= 0)")
    return name, zoom


def layers(spark, catalog):
    """The layers of a GeoTrellis catalog.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
    catalog : str
        The catalog's root (``file:``, ``hdfs://``, ``s3a://``...): the directory holding ``_attributes``.

    Returns
    -------
    list of tuple
        ``(name, zoom)`` of every layer with a metadata attribute, sorted.

    Raises
    ------
    LayerNotFound
        If there is no catalog at ``catalog``.
    """
    return [(n, int(z)) for n, z in _jvm.command(spark, "geotrellisLayers", str(catalog))]


def info(spark, catalog, name, zoom):
    """A GeoTrellis layer's attributes as sfclayer reads them.

    Returns
    -------
    dict
        ``spaceTime``, ``multiband``, ``cellType``, ``crs`` (proj4), ``keyIndex`` (its kind),
        ``layoutExtent``, ``layoutCols``, ``layoutRows``, ``tileCols``, ``tileRows``, ``bounds``,
        ``timeBounds`` (epoch ms), ``dataPath``, and ``metadata``: GeoTrellis' own TileLayerMetadata.
    """
    name, zoom = _check_id(name, zoom)
    return _jvm.command(spark, "geotrellisInfo", str(catalog), name, zoom)


def read(spark, catalog, name, zoom, keys=None, bbox=None, time=None):
    """A GeoTrellis layer as a DataFrame of raster tiles, through sfclayer's scan.

    The same as ``spark.read.format("sfclayer").option("geotrellisLayer", "name/zoom").load(catalog)``
    with filters: the box's ranges in GeoTrellis' key index, files pruned by their names, each range
    sought, records refined by key (the scan metrics of :func:`sfclayer.metrics` apply).

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
    catalog : str
    name : str
    zoom : int
    keys : tuple of int, optional
        (col_min, row_min, col_max, row_max), inclusive.
    bbox : tuple of float, optional
        (xmin, ymin, xmax, ymax) in the layer's map units: tiles whose envelope meets it.
    time : tuple, optional
        (start, end), inclusive, for space-time layers.

    Returns
    -------
    pyspark.sql.DataFrame
        ``col``, ``row``, (``time``), ``pixels``, ``width``, ``height``, ``bands``, ``dtype``, ``nodata``,
        ``mask`` (always null), ``xmin``, ``ymin``, ``xmax``, ``ymax``.
    """
    name, zoom = _check_id(name, zoom)
    bbox = _check_box("bbox", bbox, float, "xmin, ymin, xmax, ymax")
    keys = _check_box("keys", keys, int, "col_min, row_min, col_max, row_max")
    time = _check_time_range(time)
    reader = spark.read.format("sfclayer").option(OPTION, f"{name}/{zoom}")
    if bbox is not None:
        reader = reader.option("bbox", ",".join(repr(float(v)) for v in bbox))
    with _jvm.translated():
        df = reader.load(str(catalog))
        if keys is not None:
            c0, r0, c1, r1 = (int(v) for v in keys)
            df = df.where(f"`col` BETWEEN {c0} AND {c1} AND `row` BETWEEN {r0} AND {r1}")
        if time is not None:
            if "time" not in df.columns:
                raise InvalidArgument(f"time: GeoTrellis layer {name}/{zoom} is spatial: its keys have no time")
            start, end = (int(_micros(t)) for t in time)
            df = df.where(f"`time` >= timestamp_micros({start}) AND `time` <= timestamp_micros({end})")
    return df


def open(spark, catalog, name, zoom, cache_size=16):  # noqa: A001 - the name the API fixes
    """A GeoTrellis layer for look-ups and box queries from the driver (no Spark job).

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
    catalog, name, zoom
        The layer.
    cache_size : int
        MapFiles kept open between look-ups.

    Returns
    -------
    Layer
        A context manager.
    """
    return Layer(spark, catalog, name, zoom, cache_size)


_HEAD = struct.Struct(">iiqiii")
_NODATA = struct.Struct(">bd")
_INT = struct.Struct(">i")
_KEY = struct.Struct(">iiq")


def _decode(data, p=0):
    """One tile record of ``io.sfclayer.lookup.GtTileSource`` at ``p``: (dict, the offset after it)."""
    col, row, millis, width, height, bands = _HEAD.unpack_from(data, p)
    p += _HEAD.size
    (n,) = _INT.unpack_from(data, p)
    dtype = bytes(data[p + 4:p + 4 + n]).decode("ascii")
    p += 4 + n
    has_nodata, nodata = _NODATA.unpack_from(data, p)
    p += _NODATA.size
    (size,) = _INT.unpack_from(data, p)
    pixels = bytes(data[p + 4:p + 4 + size])
    p += 4 + size
    return ({"col": col, "row": row, "millis": millis, "pixels": pixels, "width": width, "height": height,
             "bands": bands, "dtype": dtype, "nodata": nodata if has_nodata else None, "mask": None}, p)


def _utc(millis):
    return _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc) + _dt.timedelta(milliseconds=millis)


class Layer:
    """An open GeoTrellis layer: :meth:`get`, :meth:`get_many`, :meth:`query` and :meth:`count`
    answer as :class:`sfclayer.Layer`'s do, tiles as dicts in the raster convention."""

    _VALUES = ("pixels", "width", "height", "bands", "dtype", "nodata", "mask")

    def __init__(self, spark, catalog, name, zoom, cache_size=16):
        name, zoom = _check_id(name, zoom)
        self._spark = spark
        self.catalog, self.name, self.zoom = str(catalog), name, zoom
        # one request (it reads the attributes once and answers them with the handle); look-ups,
        # queries and counts then go through the session's transport: the driver's socket, or Connect's plugin
        self.info, self._client = _jvm.transport(spark).open_geotrellis(self.catalog, name, zoom, int(cache_size))
        self._closed = False
        self.space_time = bool(self.info["spaceTime"])

    def __repr__(self):
        return f"<sfclayer.geotrellis.Layer {self.name}/{self.zoom} in {self.catalog}>"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        """Closes the layer's open files; further calls raise InvalidArgument."""
        if not self._closed:
            self._closed = True
            self._client.close()  # closes the reader on the driver too

    def _require_open(self):
        if self._closed:
            raise InvalidArgument(f"GeoTrellis layer {self.name}/{self.zoom} is closed")

    def _micros(self, time):
        if self.space_time and time is None:
            raise InvalidArgument(f"GeoTrellis layer {self.name}/{self.zoom} is space-time: give a time with the key")
        if not self.space_time and time is not None:
            raise InvalidArgument(f"GeoTrellis layer {self.name}/{self.zoom} is spatial: its keys have no time")
        return int(_micros(time)) if self.space_time else 0  # the JVM floors it to GeoTrellis' ms

    def _tile(self, t, keys):
        if t is None:
            return None
        if not keys:
            return {k: t[k] for k in self._VALUES}
        out = {"col": t["col"], "row": t["row"]}
        if self.space_time:
            out["time"] = _utc(t["millis"])
        out.update((k, t[k]) for k in self._VALUES)
        return out

    def get(self, col, row, time=None):
        """The value columns of one tile.

        Raises
        ------
        KeyNotFound
            If the layer has no tile at the key.
        """
        self._require_open()
        micros = self._micros(time)
        record = self._client.get(int(col), int(row), micros)
        if record is None:
            key = f"({col}, {row}" + (f", {_utc(micros // 1000).isoformat()})" if self.space_time else ")")
            raise KeyNotFound(f"no tile at key {key} in GeoTrellis layer {self.name}/{self.zoom}")
        return self._tile(_decode(record)[0], False)

    def get_many(self, keys):
        """Many tiles: a value dict per key, in the keys' order; None where the layer has no tile."""
        self._require_open()
        packed = bytearray()
        for key in keys:
            if self.space_time:
                col, row, time = key
            else:
                (col, row), time = key[:2], None
            packed += _KEY.pack(int(col), int(row), self._micros(time))
        return [None if r is None else self._tile(_decode(r)[0], False) for r in self._client.get_many(bytes(packed))]

    def _box(self, bbox, keys, time):
        bbox = _check_box("bbox", bbox, float, "xmin, ymin, xmax, ymax")
        keys = _check_box("keys", keys, int, "col_min, row_min, col_max, row_max")
        time = _check_time_range(time)
        c0, r0, c1, r1 = self.info["bounds"]
        if keys is not None:
            c0, r0, c1, r1 = max(c0, keys[0]), max(r0, keys[1]), min(c1, keys[2]), min(r1, keys[3])
        if bbox is not None:
            ex, cols, rows = self.info["layoutExtent"], self.info["layoutCols"], self.info["layoutRows"]
            tw, th = (ex[2] - ex[0]) / cols, (ex[3] - ex[1]) / rows
            # tiles whose closed envelope meets the box (as the scan's bbox option)
            import math
            c0 = max(c0, math.ceil((bbox[0] - ex[0]) / tw) - 1)
            c1 = min(c1, math.floor((bbox[2] - ex[0]) / tw))
            r0 = max(r0, math.ceil((ex[3] - bbox[3]) / th) - 1)
            r1 = min(r1, math.floor((ex[3] - bbox[1]) / th))
        t0, t1 = -(1 << 63), (1 << 63) - 1
        if time is not None:
            if not self.space_time:
                raise InvalidArgument(f"time: GeoTrellis layer {self.name}/{self.zoom} is spatial: its keys have "
                                      "no time")
            t0, t1 = (-(-_micros(time[0]) // 1000), _micros(time[1]) // 1000)
        return c0, r0, c1, r1, t0, t1

    @staticmethod
    def _spec(c0, r0, c1, r1, t0, t1, limit=-1):
        """A box query as ``io.sfclayer.lookup.GtTileSource`` reads it."""
        return f"c0={c0}\nr0={r0}\nc1={c1}\nr1={r1}\nt0={t0}\nt1={t1}\nlimit={limit}\n"

    def query(self, bbox=None, keys=None, time=None, limit=None):
        """The tiles in a box, read by the driver: dicts with ``col``, ``row`` (``time``) and the values,
        in index order (streamed: the iterator holds a look-up connection until exhausted or closed)."""
        self._require_open()
        c0, r0, c1, r1, t0, t1 = self._box(bbox, keys, time)
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise InvalidArgument(f"limit: {limit!r} must be a whole number >= 0")
        if c0 > c1 or r0 > r1 or t0 > t1 or limit == 0:
            return iter(())
        return self._records(self._spec(c0, r0, c1, r1, t0, t1, -1 if limit is None else int(limit)))

    def _records(self, spec):
        for count, data in self._client.query(spec):
            view, p = memoryview(data), 0
            for _ in range(count):
                t, p = _decode(view, p)
                yield self._tile(t, True)

    def count(self, bbox=None, keys=None, time=None):
        """How many tiles :meth:`query` would return."""
        self._require_open()
        c0, r0, c1, r1, t0, t1 = self._box(bbox, keys, time)
        if c0 > c1 or r0 > r1 or t0 > t1:
            return 0
        return int(self._client.count(self._spec(c0, r0, c1, r1, t0, t1)))


def _as_sfclayer(spark, catalog, name, zoom):
    """The layer's tiles as an sfclayer raster DataFrame, and the write options its metadata gives."""
    from . import _geotrellis_layout

    meta = info(spark, catalog, name, zoom)
    df = read(spark, catalog, name, zoom).drop("xmin", "ymin", "xmax", "ymax")
    bands = 1
    if meta["multiband"]:
        first = df.select("bands").first()
        bands = int(first.bands) if first is not None else 1
    return df, _geotrellis_layout.layout_options(meta["metadata"], bands=bands)


def convert(spark, catalog, name, zoom, dest, zooms=None, quiet=None, **write_options):
    """Write a GeoTrellis layer as an sfclayer raster layer: same keys, pixels, nodata, extent and CRS.

    The CRS becomes an EPSG code where GeoTrellis' proj4 string is one; a layout that is exactly
    WebMercatorQuad or WorldCRS84Quad at some zoom becomes that tile matrix (tile server, pyramids).

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
    catalog, name, zoom
        The GeoTrellis layer: the base of the result.
    dest : str
        The sfclayer layer to write.
    zooms : iterable of int, optional
        Lower zoom levels of the same GeoTrellis layer name, written as the result's pyramid levels
        (``dest/_pyramid/<z>``, read with ``sfclayer.read(..., zoom=z)``), as GeoTrellis resampled them.
    quiet : bool, optional
        Each zoom's progress (tasks done of total, rate, time left) on stderr: None shows it in a terminal or a
        notebook (``SFCLAYER_QUIET=1`` turns that off), False always, True never (module
        :mod:`sfclayer._progress`).
    **write_options
        sfclayer write options (``mode``, ``partitions``, ``compression``...); they override those the
        GeoTrellis metadata gives (``bounds``, ``extent``, ``crs``, ``raster``, ``time_bounds``).

    Returns
    -------
    dict
        ``{"tiles": {zoom: count, ...}, "options": <the base's write options>}``.

    Examples
    --------
    >>> geotrellis.convert(spark, "hdfs:///catalog", "dem", 6, "hdfs:///layers/dem", zooms=[5, 4])  # doctest: +SKIP
    """
    from . import pyramids as _pyramids
    from ._pyramid_levels import PYRAMID_DIR, _base_metadata, _join
    from .layer import _tile_count, write

    name, zoom = _check_id(name, zoom)
    levels = sorted({int(z) for z in (zooms or ())} - {zoom})
    for z in levels:
        _check_id(name, z)
        if z > zoom:
            raise InvalidArgument(f"zooms: {z} is above the base zoom {zoom} (the levels of a pyramid are below "
                                  "its base)")
    mode = write_options.pop("mode", "errorifexists")
    df, options = _as_sfclayer(spark, catalog, name, zoom)
    options.update(write_options)
    with _progress.track(spark, f"convert {name} zoom {zoom}", quiet):
        write(df, dest, mode=mode, **options)
    counts = {zoom: _tile_count(spark, dest, _base_metadata(spark, dest))}
    if not levels:
        return {"tiles": counts, "options": options}
    # The levels and their document under the pyramid's lease, as a pyramid run writes them: a run or
    # another convert at the same time fails with ConcurrentUpdate rather than mixing levels.
    with _pyramids._leased(spark, dest, f"write the pyramid levels of {dest}"):
        number, _ = _pyramids._numbered_document(spark, dest)
        level_versions = {}
        for z in levels:
            level_df, level_options = _as_sfclayer(spark, catalog, name, z)
            level_options.update({k: v for k, v in write_options.items() if k not in level_options})
            level = _join(dest, PYRAMID_DIR, z)
            with _progress.track(spark, f"convert {name} zoom {z}", quiet):
                write(level_df, level, mode="overwrite", **level_options)
            md = _base_metadata(spark, level)
            counts[z] = _tile_count(spark, level, md)
            level_versions[str(z)] = int(md["version"])
        base = _base_metadata(spark, dest)
        doc = {"format": "sfclayer-pyramid", "formatVersion": _pyramids._DOC_VERSION,
               "tms": (base.get("raster") or {}).get("tms"), "baseZoom": zoom, "levels": levels,
               "resampling": "nearest"}
        _pyramids._write_document(spark, dest, number, doc, int(base["version"]), "full", {}, level_versions)
    return {"tiles": counts, "options": options}


#: The prefix of a GeoTrellis layer in ``sfclayer serve``'s layer specs: ``gt:CATALOG#name/zoom`` (one zoom)
#: or ``gt:CATALOG#name`` (every zoom of the name, served as its levels).
SERVE_PREFIX = "gt:"


def parse_spec(spec):
    """``(catalog, name, zoom or None)`` of a ``gt:CATALOG#name[/zoom]`` layer spec.

    Raises
    ------
    InvalidArgument
        If the spec is not of that form.
    """
    body = spec[len(SERVE_PREFIX):] if spec.startswith(SERVE_PREFIX) else spec
    catalog, sep, layer = body.rpartition("#")
    name, slash, zoom = layer.partition("/")
    if not sep or not catalog or not name or (slash and not zoom.isdigit()):
        raise InvalidArgument(f"layer: {spec!r} is not a GeoTrellis layer (gt:CATALOG#name/zoom or gt:CATALOG#name)")
    return catalog, name, int(zoom) if slash else None


class _ServedIndex:
    """What the tile server asks of a layer's key index: its bounds, time bounds and a key's index (GeoTrellis' own)."""

    def __init__(self, layer, bounds):
        from .curves import KeyBounds, TimeBounds

        self._layer = layer
        self.bounds = KeyBounds(*bounds)
        tb = layer.info["timeBounds"]
        self.time_bounds = TimeBounds(tb[0] * 1000, tb[1] * 1000, 1000) if tb else None
        self.kind = layer.info["keyIndex"]

    def index(self, col, row, micros=None):
        self._layer._require_open()
        return self._layer._client.index(int(col), int(row), int(micros or 0) // 1000)


class ServedLayer(Layer):
    """A GeoTrellis layer as the tile server opens layers: :class:`Layer` plus an sfclayer-like
    ``metadata`` (the raster description, extent and CRS :func:`convert` would write) and ``key_index``."""

    def __init__(self, spark, catalog, name, zoom, cache_size=16):
        from . import _geotrellis_layout

        super().__init__(spark, catalog, name, zoom, cache_size)
        try:
            bands = 1
            if self.info["multiband"]:
                c0, r0, c1, r1 = self.info["bounds"]
                first = next(iter(self.query(keys=(c0, r0, c1, r1), limit=1)), None)
                bands = first["bands"] if first else 1
            o = _geotrellis_layout.layout_options(self.info["metadata"], bands=bands)
            ext = o["extent"]
            self.metadata = {
                "version": 0, "writeId": f"gt:{self.catalog}#{name}/{zoom}", "crs": o["crs"],
                "extent": {"xmin": ext[0], "ymin": ext[1], "xmax": ext[2], "ymax": ext[3]},
                "raster": o["raster"], "keyIndex": self.info["keyIndex"], "recordCount": None, "fileCount": None,
                "files": [], "valueSchema": {"fields": [{"name": c} for c in self._VALUES]},
            }
            self.key_index = _ServedIndex(self, o["bounds"])
        except BaseException:
            self.close()
            raise

    def document(self, files=0):
        """:attr:`metadata` as :meth:`sfclayer.Layer.document` gives a version document (the tile server's
        catalog opens layers from it); a GeoTrellis layer lists no sfclayer files, whatever ``files``."""
        return dict(self.metadata)
