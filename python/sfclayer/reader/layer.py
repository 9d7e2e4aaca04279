"""The in-process :class:`~sfclayer.layer.Layer`: the same methods and answers as the JVM path, read
from a :class:`~sfclayer.reader.source.ByteSource` with no Spark and no JVM.

``sfclayer.open(path)`` (no SparkSession) returns a :class:`LocalLayer`, through the in-process transport
(:class:`InProcessTransport`); ``sfclayer.open(spark, path)`` keeps the JVM path. The seam is the subclass: :class:`~sfclayer.layer.Layer` keeps its argument checks,
``to_xarray`` and ``to_numpy``, and this class replaces what reads bytes; its windows come from the cached
tiles themselves, and a box read before is copied from the plan of its first read (``_windows.WindowPlan``).
"""

from __future__ import annotations

import os
import threading

from .._args import check_box as _check_box, check_path as _check_path, check_time_range as _check_time_range
from ..errors import InvalidArgument, KeyNotFound, LayerNotFound, SfcLayerError
from .. import _transport
from .._transport import Transport
from .._windows import Window, WindowPlan, window_array
from ..layer import Layer, _as_of_options, _micros
from .cache import ByteLRU, after_fork
from .documents import VersionLog
from .source import open_source
from .version import PinnedVersion

__all__ = ["LocalLayer", "InProcessTransport", "open_local", "history_local", "DEFAULT_CACHE_BYTES"]

#: Decoded blocks kept per layer by default (the JVM path's look-up cache default too).
DEFAULT_CACHE_BYTES = 256 << 20
#: Most SFC ranges a box decomposes into (``BoxQuery.DEFAULT_MAX_RANGES``): a superset, refined exactly.
MAX_RANGES = 20000
_I32 = (-(1 << 31), (1 << 31) - 1)
_FLOATS = (float,) * 4  # the types of a bbox whose plan may be looked up before its checks
#: Window plans a version keeps (boxes read again; a plan is a view and an offset per tile).
MAX_PLANS = 64


def open_local(path, cache_size=None, cache_bytes=None, version=None, as_of=None, zoom=None, storage_options=None):
    """``sfclayer.open(path, ...)`` without Spark: see :func:`sfclayer.open`."""
    path = _check_path(path)
    source = open_source(path, **(storage_options or {}))
    if zoom is not None:
        from .pyramid import level_read

        path, version, as_of = level_read(source, path, zoom, version, as_of)
        source = open_source(path, **(storage_options or {}))
    try:
        return LocalLayer(path, source, cache_bytes=cache_bytes, version=version, as_of=as_of)
    except LayerNotFound:
        if source.list("_attributes"):  # a GeoTrellis catalog: its layers are read through the JVM
            raise LayerNotFound(f"no sfclayer layer at {path}: it is a GeoTrellis catalog, which is read through "
                                "Spark: sfclayer.geotrellis.open(spark, catalog, name, zoom) (or convert it with "
                                "sfclayer.geotrellis.convert)") from None
        raise


def history_local(path, storage_options=None):
    """The layer's versions, oldest first, read in-process: dicts of the JVM's history answer
    (``sfclayer.history`` makes them :class:`~sfclayer.maintenance.Version`)."""
    path = _check_path(path)
    log = VersionLog(open_source(path, **(storage_options or {})), path)
    out = []
    for d in log.history():
        doc = d.doc
        op = doc.get("operation") or {}
        out.append({
            "version": doc["version"], "createdAt": doc["createdAt"], "operation": op.get("name", "write"),
            "readVersion": op.get("readVersion"), "recordCount": doc["recordCount"], "fileCount": doc["fileCount"],
            "dataBytes": doc["dataBytes"], "deltaFiles": len(doc.get("deltas") or ()),
            "deltaRecords": sum(int(f["records"]) for f in doc.get("deltas") or ()),
            "metrics": op.get("metrics") or {}, "writeId": doc.get("writeId"), "transaction": op.get("transaction")})
    if not out:
        log.current()  # LayerNotFound naming the path
    return out


class LocalLayer(Layer):
    """A layer read in-process (see the module text); thread-safe, fork-safe."""

    def __init__(self, path, source, cache_bytes=None, version=None, as_of=None):
        self.path = path
        self._spark = None
        self._source = source
        self._log = VersionLog(source, path)
        self._tiles = ByteLRU(DEFAULT_CACHE_BYTES if cache_bytes is None else int(cache_bytes))
        self._pins = threading.Lock()
        after_fork(self)
        self._pinned = None
        self._last = None
        self._metadata = None
        self._open(version, as_of)

    def _open(self, version, as_of):
        _as_of_options(version, as_of)  # checks the pair
        if version is not None:
            doc = self._log.read_existing(int(version))
        elif as_of is not None:
            doc = self._log.as_of(_micros(as_of))
        else:
            doc = self._log.current()
        pinned = PinnedVersion(self._source, self.path, doc, self._tiles)
        with self._pins:
            self._pinned = self._last = pinned
            self._metadata = None

    def _reset_after_fork(self):
        self._pins = threading.Lock()

    def _use_pinned(self) -> PinnedVersion:
        p = self._pinned
        if p is None:
            raise InvalidArgument(f"layer {self.path} is closed")
        return p

    _handle = property(lambda self: self._pinned)
    key_index = property(lambda self: self._last.key_index, doc="The pinned version's key index.")
    space_time = property(lambda self: self._last.space_time, doc="Whether the layer's keys have a time.")

    @property
    def version(self):
        return self._last.version

    def close(self):
        with self._pins:
            self._pinned = None

    def refresh(self):
        self._open(None, None)
        return self.version

    @property
    def metadata(self):
        """The pinned version's document with every base data file in ``files`` (format 6: read from its
        manifests); a format 7 version's delta files are its ``deltas``."""
        if self._metadata is None:
            p = self._use_pinned()
            md = dict(p.document.doc)
            md.pop("manifests", None)
            md.pop("checksum", None)
            md["files"] = [f.to_json() for f in p.described_files()]
            self._metadata = md
        return self._metadata

    def document(self, files=0):
        p = self._use_pinned()
        md = dict(p.document.doc)
        md.pop("checksum", None)
        md.pop("files", None)
        if files:
            md["files"] = [f.to_json() for f in p.described_files()[:int(files)]]
        return md

    def stats(self):
        """Look-up counters, as the JVM path's: data files whose index this version read, hits of the
        decoded-block cache, files open now (none: each read opens and closes its file), the cache's bytes,
        indexes and filters read, and misses a bloom filter answered."""
        p = self._use_pinned()
        return {"files_opened": p.files_opened, "cache_hits": self._tiles.hits,
                "open_files": 0, "cached_bytes": self._tiles.nbytes, "indexes_kept": p.files_opened,
                "bloom_skips": p.bloom_skips, "filters_kept": p.filters_read}

    def _strip(self, p, tile):
        return {k: v for k, v in tile.items() if k not in p.keys}

    def get(self, col, row, time=None):
        p = self._use_pinned()
        self._check_time(time, p.space_time)
        micros = _micros(time) if p.space_time else 0
        col, row = int(col), int(row)
        tile = p.get(col, row, micros) if _I32[0] <= col <= _I32[1] and _I32[0] <= row <= _I32[1] else None
        if tile is None:
            raise KeyNotFound(self._not_found(p, col, row, micros))
        return self._strip(p, tile)

    def get_many(self, keys, errors_as_values=False):
        p = self._use_pinned()
        packed = []
        for key in keys:
            if p.space_time:
                col, row, time = key
                packed.append((int(col), int(row), _micros(time)))
            else:
                col, row = key[:2]
                packed.append((int(col), int(row), 0))
        answers = p.get_many(packed)
        out = []
        for a in answers:
            if isinstance(a, SfcLayerError):
                if not errors_as_values:
                    raise a
                out.append(a)
            else:
                out.append(None if a is None else self._strip(p, a))
        return out

    def _box(self, p, bbox, keys, time, geometry, geometry_crs):
        """``(box, ranges, accept)`` of a query, checked as the JVM's ``BoxQuery`` checks it."""
        bbox = _check_box("bbox", bbox, float, "xmin, ymin, xmax, ymax")
        keys = _check_box("keys", keys, int, "col_min, row_min, col_max, row_max")
        time = _check_time_range(time)
        b = p.key_index.bounds
        c0, r0, c1, r1 = b.col_min, b.row_min, b.col_max, b.row_max
        if p.space_time:
            tb = p.key_index.time_bounds
            t0, t1 = tb.min_micros, tb.max_micros
        else:
            t0 = t1 = 0
        empty = False
        grid = None
        if bbox is not None or geometry is not None:
            grid = p.grid
            if grid is None:
                raise InvalidArgument(f"option bbox: the layer at {self.path} has no extent, so it has no map "
                                      "coordinates; write it with the extent option, or filter on col and row")
        if bbox is not None:
            kb = grid.key_box(*bbox)
            if kb is None:
                empty = True
            else:
                c0, r0, c1, r1 = max(c0, kb.col_min), max(r0, kb.row_min), min(c1, kb.col_max), min(r1, kb.row_max)
        if keys is not None:
            k = [int(v) for v in keys]
            c0, r0, c1, r1 = max(c0, k[0]), max(r0, k[1]), min(c1, k[2]), min(r1, k[3])
        if time is not None:
            if not p.space_time:
                raise InvalidArgument(f"time: layer {self.path} is spatial: its keys have no time")
            s, e = (int(_micros(t)) for t in time)
            t0, t1 = max(t0, s), min(t1, e)
        accept = None
        if geometry is not None:
            from ..geometry import as_shape, reproject, tile_cover

            shape = as_shape(geometry)
            if geometry_crs is not None:
                shape = reproject(shape, geometry_crs, p.document.doc.get("crs"))
            cover = set(tile_cover(grid, shape))
            accept = lambda c, r: (c, r) in cover  # noqa: E731
            if cover:
                c0, r0 = max(c0, min(c for c, _ in cover)), max(r0, min(r for _, r in cover))
                c1, r1 = min(c1, max(c for c, _ in cover)), min(r1, max(r for _, r in cover))
            else:
                empty = True
        elif geometry_crs is not None:
            raise InvalidArgument(f"geometry_crs: {geometry_crs!r} given without a geometry")
        if empty or c0 > c1 or r0 > r1 or t0 > t1:
            return None, [], None
        return (c0, r0, c1, r1, t0, t1), p.ranges(c0, r0, c1, r1, t0, t1, MAX_RANGES), accept

    def query(self, bbox=None, keys=None, time=None, limit=None, geometry=None, geometry_crs=None):
        p = self._use_pinned()
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise InvalidArgument(f"limit: {limit!r} must be a whole number >= 0")
        box, ranges, accept = self._box(p, bbox, keys, time, geometry, geometry_crs)
        return self._stream_local(p, box, ranges, accept, limit)

    @staticmethod
    def _stream_local(p, box, ranges, accept, limit):
        if limit == 0 or box is None:
            return
        n = 0
        for tile in p.scan(box, ranges, accept):
            yield dict(tile)
            n += 1
            if limit is not None and n >= limit:
                return

    def count(self, bbox=None, keys=None, time=None, geometry=None, geometry_crs=None):
        p = self._use_pinned()
        box, ranges, accept = self._box(p, bbox, keys, time, geometry, geometry_crs)
        if box is None:
            return 0
        return sum(1 for _ in p.scan(box, ranges, accept))

    def to_numpy(self, bbox, bands=None, masked=False):
        p = self._pinned
        # a box read before (its plan kept by the version, made after its checks): the copies alone
        if p is not None and bands is None and masked is False and bbox.__class__ is tuple \
                and tuple(map(type, bbox)) == _FLOATS:
            plan = p.window_plans.get(bbox)
            if plan is not None:
                return plan.run()
        return super().to_numpy(bbox, bands, masked)

    to_numpy.__doc__ = Layer.to_numpy.__doc__

    def _window_numpy(self, bbox, bands, masked):
        p = self._use_pinned()
        md = p.document.doc
        w = Window(md, bbox, grid=p.grid)
        tiles = self._window_tiles(w.keys, p)
        if bands is None and masked is False:
            tiles = list(tiles)
            plan = WindowPlan.of(w, tiles)
            if plan is not None:
                plans = p.window_plans
                if len(plans) >= MAX_PLANS:
                    plans.clear()  # (not the oldest alone: _forget may clear them from another thread any time)
                plans[bbox] = plan
                return plan.run()
        return window_array(md, tiles, bbox, bands, masked, w=w)

    def _window_metadata(self):
        return self._use_pinned().document.doc

    def _window_grid(self):
        return self._use_pinned().grid

    def _window_tiles(self, keys, p=None):
        # the cached tiles themselves (read-only here), not query()'s copies, with their cached pixel views;
        # keys: a Window's, inside the key bounds (a spatial layer's; space-time ones read through query)
        p = self._use_pinned() if p is None else p
        if p.space_time:
            box, ranges, _ = self._box(p, None, keys, None, None, None)
        else:
            c0, r0, c1, r1 = keys
            found = p.window_pixels(c0, r0, c1, r1)  # every tile seen by an earlier window: no scan
            if found is not None:
                return found
            box, ranges = (c0, r0, c1, r1, 0, 0), p.ranges(c0, r0, c1, r1, 0, 0, MAX_RANGES)
        return () if box is None else p.scan(box, ranges, pixels=True)

    def _require_open(self):
        self._use_pinned()

    def __repr__(self):
        return f"LocalLayer({self.path!r}, version={self.version})"


class InProcessTransport(Transport):
    """The in-process reader as a transport (:mod:`sfclayer._transport`): ``sfclayer.open(path)`` and
    ``sfclayer.history(path)``, without Spark, open and read through it as ``sfclayer.open(spark, path)``
    does through its session's. It has no driver: named operations (maintenance, writes) need Spark."""

    def __init__(self):
        super().__init__(None)

    def opener(self):
        return open_local

    def history(self, path):
        return history_local(path)

    def _call(self, name, args):
        raise self._no_driver_jvm()

    def open_layer(self, path, cache_size, cache_bytes, index_in_driver, version, as_of_millis):
        raise self._no_driver_jvm()

    def open_geotrellis(self, catalog, name, zoom, cache_size):
        raise self._no_driver_jvm("GeoTrellis catalogs (read through Spark: sfclayer.geotrellis.open(spark, ...))")

    def cores(self):
        return os.cpu_count() or 1

    def _no_driver_jvm(self, what=None):
        return InvalidArgument(f"spark: {what or 'this operation'} needs a SparkSession; a layer opened by its path "
                               "alone is read in this process, without Spark (sfclayer.open(spark, path) reads "
                               "it through Spark)")


_transport.REGISTERED["in-process"] = InProcessTransport()  # sfclayer.open(path): see sfclayer._transport
