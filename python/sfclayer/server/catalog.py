"""The layers a tile server serves: one open :class:`~sfclayer.Layer` per layer (or pyramid level),
addressed only by the names the server was started with.

A served layer knows its tile grid — key bounds, extent, CRS, the tile matrix set and zoom it was
ingested onto (the ``raster`` metadata object) — and how its tiles hold pixels:

- ``raster``: the :mod:`sfclayer.raster` convention (band-sequential), told by a ``raster``
  metadata object or a ``nodata`` value column next to the other raster columns;
- ``hwc``: the demo's older layout (``pixels`` row-major with bands last, no ``nodata`` column);
- ``None``: no pixel columns; only the values endpoint serves such a layer.
"""

import dataclasses
import os
import re

import numpy as np

from .. import raster as _raster
from .._pyramid_levels import pyramid_levels
from ..layer import open as _open_layer
from ..errors import InvalidArgument

__all__ = ["Served", "ServedLayer", "open_served", "Grid", "layer_names", "parse_time", "NAME_PATTERN"]

#: What a served layer's name may hold (it appears in URLs, never in a file path).
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")

_PIXEL_COLUMNS = {"pixels", "width", "height", "bands", "dtype"}


def layer_names(specs):
    """``{name: path}`` from ``PATH`` or ``NAME=PATH`` items; a name defaults to the path's last part.

    Examples
    --------
    >>> layer_names(["/data/world/", "dem=/data/x", "/other/world"])
    {'world': '/data/world/', 'dem': '/data/x', 'world-2': '/other/world'}
    """
    out = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or "/" in name or not name:
            name, path = "", spec
        if not name and path.startswith(_GT):  # gt:CATALOG#name/zoom: the GeoTrellis layer's name
            name = re.sub(r"[^A-Za-z0-9._-]", "-", path.rpartition("#")[2].partition("/")[0]).lstrip(".-_")
        if not name:
            name = re.sub(r"[^A-Za-z0-9._-]", "-", os.path.basename(path.rstrip("/")) or "layer").lstrip(".-_")
            name = name or "layer"
        base, i = name[:60], 2
        while name in out:
            name, i = f"{base}-{i}", i + 1
        if not NAME_PATTERN.match(name):
            raise InvalidArgument(f"layer name: {name!r} is not a name (letters, digits, '.', '_' or '-', at most 64)")
        out[name] = path
    return out


def parse_time(text):
    """Epoch microseconds of an ISO-8601 date or date-time (naive = UTC): sfclayer's one reader."""
    from ..curves import to_micros

    return to_micros(str(text))


@dataclasses.dataclass(frozen=True)
class Grid:
    """Where a layer's tiles lie: key bounds, map extent and CRS, tile size, tile matrix set."""

    col_min: int
    row_min: int
    col_max: int
    row_max: int
    extent: tuple = None        # (xmin, ymin, xmax, ymax) of the whole key bounds, or None
    crs: str = None
    tile_width: int = None      # pixels, when known
    tile_height: int = None
    tms: str = None             # a morecantile tile matrix set id, e.g. "WebMercatorQuad"
    zoom: int = 0

    def to_json(self):
        return {
            "keyBounds": [self.col_min, self.row_min, self.col_max, self.row_max],
            "extent": list(self.extent) if self.extent else None,
            "crs": self.crs, "tileWidth": self.tile_width, "tileHeight": self.tile_height,
            "tms": self.tms, "zoom": self.zoom,
        }


_MERCATOR_HALF = 20037508.342789244  # WebMercatorQuad's half side, metres


def _web_mercator_zoom(b, ext, crs):
    """The zoom at which key bounds ``b`` and ``ext`` are WebMercatorQuad tiles, or None."""
    if (crs or "").upper() not in ("EPSG:3857", "EPSG:900913"):
        return None
    side = (ext["xmax"] - ext["xmin"]) / (b.col_max - b.col_min + 1)
    for z in range(0, 31):
        size = 2 * _MERCATOR_HALF / 2 ** z
        tol = size * 1e-6
        if abs(side - size) <= tol:
            ok = (abs(ext["xmin"] - (-_MERCATOR_HALF + b.col_min * size)) <= tol
                  and abs(ext["ymax"] - (_MERCATOR_HALF - b.row_min * size)) <= tol
                  and abs((ext["ymax"] - ext["ymin"]) / (b.row_max - b.row_min + 1) - size) <= tol)
            return z if ok else None
    return None


class ServedLayer:
    """One layer (or one pyramid level) the server keeps open.

    Parameters
    ----------
    name : str
    layer : sfclayer.Layer
        Open for look-ups; :meth:`close` closes it.
    """

    def __init__(self, name, layer):
        self.name = name
        self.layer = layer
        md = layer.document()  # the version document alone: a layer of millions of files opens as fast
        self.metadata = md
        self.version = md.get("version")
        self.write_id = md.get("writeId", "")
        self.space_time = layer.space_time
        self.key_index = layer.key_index
        fields = [f["name"] for f in (md.get("valueSchema") or {}).get("fields", [])]
        self.value_columns = fields
        info = md.get("raster") or {}
        if info or (_PIXEL_COLUMNS <= set(fields) and "nodata" in fields):
            self.pixel_layout = "raster"
        elif _PIXEL_COLUMNS <= set(fields):
            self.pixel_layout = "hwc"
        else:
            self.pixel_layout = None
        b = self.key_index.bounds
        ext = md.get("extent")
        tw, th = info.get("tileWidth"), info.get("tileHeight")
        if self.pixel_layout and not tw:
            tw, th = self._first_tile_size(b)
        zoom = info.get("zoom")
        tms = info.get("tms")
        if not info and ext:  # written before raster metadata: maybe a WebMercatorQuad grid all the same
            found = _web_mercator_zoom(b, ext, md.get("crs"))
            if found is not None:
                tms, zoom = "WebMercatorQuad", found
        self.grid = Grid(b.col_min, b.row_min, b.col_max, b.row_max,
                         extent=(ext["xmin"], ext["ymin"], ext["xmax"], ext["ymax"]) if ext else None,
                         crs=md.get("crs"), tile_width=tw, tile_height=th,
                         tms=tms, zoom=int(zoom) if zoom is not None else 0)
        self._files = None  # (files, their first indexes), read on the first file_of (format 6: every manifest)

    def _first_tile_size(self, b):
        """The nominal tile size of a layer without ``raster`` metadata: its top-left tile's size
        (edge tiles on the right and bottom may be smaller and are padded to it)."""
        keys = [(b.col_min, b.row_min)]
        if self.space_time:
            keys = [(b.col_min, b.row_min, self.key_index.time_bounds.min_micros)]
        try:
            tile = self.layer.get_many(keys)[0]
        except Exception:  # a look-up failure here only loses the padding, not the layer
            tile = None
        if tile is None:
            return None, None
        return int(tile["width"]), int(tile["height"])

    @property
    def zooms(self):
        return [self.grid.zoom]

    def key(self, col, row, time_micros=None):
        """The look-up key tuple for ``Layer.get_many``."""
        return (col, row, time_micros) if self.space_time else (col, row)

    def index(self, col, row, time_micros=None):
        """The key's space-filling-curve index."""
        return int(self.key_index.index(col, row, time_micros if self.space_time else None))

    def files_of(self, index):
        """``{"file": file_of(index)}``, plus ``"deltas"``: the names of the delta files (format 7) whose span
        holds ``index``, newest first, asked before that base file (docs/FORMAT.md section 11), if any."""
        deltas = self.metadata.get("deltas") or []  # the version document lists them (never in manifests)
        held = [d["name"] for d in reversed(deltas) if int(d["firstIndex"]) <= index <= int(d["lastIndex"])]
        return {"file": self.file_of(index), "deltas": held} if held else {"file": self.file_of(index)}

    def file_of(self, index):
        """The name of the data file whose index range holds ``index``, or None."""
        if self._files is None:  # (threads racing here build the same pair; each assigns it whole)
            files = sorted(self.layer.metadata.get("files") or [], key=lambda f: int(f["firstIndex"]))
            self._files = (files, np.array([int(f["firstIndex"]) for f in files], dtype=np.int64))
        files, first = self._files
        if not files:
            return None
        pos = int(np.searchsorted(first, index, side="right")) - 1
        if pos < 0 or index > int(files[pos]["lastIndex"]):
            return None
        return files[pos]["name"]

    def pixels(self, tile):
        """A tile's pixels as ``(bands, h, w)`` (a masked array for raster tiles: their validity
        mask applied) and its nodata value (or None)."""
        if self.pixel_layout == "raster":
            return _raster.to_numpy(tile, masked=True), tile.get("nodata")
        if self.pixel_layout == "hwc":
            dtype = np.dtype(tile["dtype"]).newbyteorder("<")
            h, w, n = int(tile["height"]), int(tile["width"]), int(tile["bands"])
            a = np.frombuffer(tile["pixels"], dtype=dtype).reshape(h, w, n)
            return a.transpose(2, 0, 1), None
        raise InvalidArgument(f"layer: {self.name!r} has no raster columns (pixels, width, height, bands, dtype; "
                              f"its value columns are {', '.join(self.value_columns)}: use /layers/{self.name}/values)")

    def tile_pixels(self, tile):
        """A tile's ``(bands, h, w)`` pixels and ``(h, w)`` validity (its mask, else its nodata),
        padded with invalid pixels to the level's tile size where the tile is smaller (the edge tiles of
        the demo's older layout). Plain arrays: no masked array to build for a tile drawn at once."""
        if self.pixel_layout == "raster":
            a = _raster.to_numpy(tile)
            valid = _raster.valid_mask(tile, a)
        else:
            a, _ = self.pixels(tile)
            valid = ~np.isnan(a).all(axis=0) if a.dtype.kind == "f" else np.ones(a.shape[1:], bool)
        g = self.grid
        h, w = a.shape[1:]
        if g.tile_width and (w < g.tile_width or h < g.tile_height):
            padded = np.zeros((a.shape[0], max(h, g.tile_height), max(w, g.tile_width)), a.dtype)
            padded[:, :h, :w] = a
            pad_valid = np.zeros(padded.shape[1:], bool)
            pad_valid[:h, :w] = valid
            a, valid = padded, pad_valid
        return a, valid

    def describe(self):
        """The layer's summary for ``/layers``."""
        md = self.metadata
        out = {
            "name": self.name,
            "version": self.version,
            "spaceTime": self.space_time,
            "keyIndex": md.get("keyIndex"),
            "recordCount": md.get("recordCount"),
            "fileCount": md.get("fileCount"),  # the base files (recordCount too); format 7 adds delta files:
            "deltaFileCount": len(md.get("deltas") or []),
            "valueColumns": self.value_columns,
            "pixelLayout": self.pixel_layout,
            "raster": md.get("raster"),
            "grid": self.grid.to_json(),
            "zooms": self.zooms,
        }
        if self.space_time:
            tb = self.key_index.time_bounds
            out["timeBounds"] = {"min": tb.min_micros, "max": tb.max_micros, "resolution": tb.resolution_micros}
        return out

    def close(self):
        self.layer.close()


class Served:
    """A served name: one layer, or a pyramid's levels (zoom → :class:`ServedLayer`).

    A single layer has one zoom: its tile matrix's zoom when ingested onto a tile matrix set,
    else 0.
    """

    def __init__(self, name, path, levels, overviews=None):
        self.name = name
        self.path = path
        self.levels = dict(sorted(levels.items()))
        self.zooms = list(self.levels)
        self.base = self.levels[self.zooms[-1]]  # the finest level: the layer itself
        #: Every level by pixel size for the warped endpoints: the levels, or for a layer on its own grid
        #: its pyramid's levels (keyed by their zoom) with the base.
        self.overviews = dict(self.levels) if not overviews else {**overviews, -1: self.base}

    def level(self, z):
        return self.levels.get(z)

    def describe(self):
        out = self.base.describe()
        out["name"] = self.name
        out["zooms"] = self.zooms
        out["levels"] = {str(z): lv.grid.to_json() for z, lv in self.levels.items()}
        return out

    def close(self):
        for lv in {id(lv): lv for lv in (*self.levels.values(), *self.overviews.values())}.values():
            lv.close()


_GT = "gt:"  # sfclayer.geotrellis.SERVE_PREFIX (not imported: the server loads it only when a spec uses it)


def _open_geotrellis(spark, name, spec, cache_size):
    """A GeoTrellis layer read in place: ``gt:CATALOG#name/zoom``, or ``gt:CATALOG#name`` for every zoom of
    the name as levels (when they are a tile matrix set's)."""
    from .. import geotrellis

    catalog, layer, zoom = geotrellis.parse_spec(spec)
    zooms = [zoom] if zoom is not None else [z for n, z in geotrellis.layers(spark, catalog) if n == layer]
    if not zooms:
        raise InvalidArgument(f"layer: {spec!r}: the GeoTrellis catalog {catalog} has no layer {layer!r}")
    levels = {}
    try:
        for z in sorted(zooms):
            lv = ServedLayer(name, geotrellis.ServedLayer(spark, catalog, layer, z, cache_size=cache_size))
            levels[lv.grid.zoom if lv.grid.tms else z] = lv
        if len(levels) > 1 and not all(lv.grid.tms for lv in levels.values()):
            raise InvalidArgument(f"layer: {spec!r}: its zooms {sorted(zooms)} are not one tile matrix set's levels; "
                                  f"serve one: gt:{catalog}#{layer}/<zoom>")
        return Served(name, spec, levels)
    except BaseException:
        for lv in levels.values():
            lv.close()
        raise


def _pyramid_levels(spark, path, base):
    """The layer's zoom levels, ascending (its pyramid's and its own): through the JVM with a session,
    else read in-process (the newest ``_pyramid/pyramid-<N>.json``)."""
    if spark is not None:
        return pyramid_levels(spark, path)
    from .._pyramid_levels import _base_zoom
    from ..reader.pyramid import pyramid_document
    from ..reader.source import open_source

    md = base.metadata
    zoom = _base_zoom(md, path)
    doc = pyramid_document(open_source(path), path)
    levels = set(doc["levels"]) if doc and doc.get("baseVersion") == md.get("version") else set()
    return sorted(levels | {zoom})


def _own_grid_levels(spark, name, path, cache_size, opened):
    """The pyramid levels of a layer on its own grid, zoom → ServedLayer, the base left out (the
    warped endpoints read them as overviews; the col/row endpoints serve the base alone)."""
    try:
        zooms = list(_pyramid_levels(spark, path, opened[0]))
    except InvalidArgument:
        return {}
    out = {}
    for z in zooms[:-1]:  # the last is the base's own zoom
        lv = ServedLayer(name, _open_layer(spark, path, zoom=z, cache_size=cache_size))
        opened.append(lv)
        out[z] = lv
    return out


def open_served(spark, name, path, cache_size=64):
    """Open the layer at ``path`` (and its pyramid levels, where sfclayer has pyramids); ``gt:...`` specs
    name GeoTrellis layers, read in place (through Spark). ``spark`` None reads in-process (no JVM)."""
    if path.startswith(_GT):
        if spark is None:
            raise InvalidArgument(f"layer: {path!r} is a GeoTrellis layer, read through Spark: serve it with --spark")
        return _open_geotrellis(spark, name, path, cache_size)
    opened = []
    try:
        base = ServedLayer(name, _open_layer(spark, path, cache_size=cache_size))
        opened.append(base)
        levels = {base.grid.zoom: base}
        zooms = []
        if base.grid.tms:  # only layers on a tile matrix set have levels
            try:
                zooms = list(_pyramid_levels(spark, path, base))
            except InvalidArgument:
                zooms = []
        elif base.pixel_layout == "raster":  # a layer on its own grid: its pyramid levels are overviews
            overviews = _own_grid_levels(spark, name, path, cache_size, opened)
            return Served(name, path, levels, overviews=overviews)
        if zooms and base.grid.zoom not in zooms:  # the base is the finest level
            base.grid = dataclasses.replace(base.grid, zoom=zooms[-1])
            levels = {base.grid.zoom: base}
        for z in zooms:
            if z in levels:
                continue
            lv = ServedLayer(name, _open_layer(spark, path, zoom=z, cache_size=cache_size))
            opened.append(lv)
            if lv.grid.zoom != z:  # a level without raster metadata: its zoom is the pyramid's
                lv.grid = dataclasses.replace(lv.grid, zoom=z)
            levels[z] = lv
        return Served(name, path, levels)
    except BaseException:
        for lv in opened:
            lv.close()
        raise
