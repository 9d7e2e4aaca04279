"""A window of a raster layer as an ``xarray.DataArray``: its tiles' pixels mosaicked, with coordinates.

The window is the layer's pixels that meet a map box (whole pixels: the box's edges rounded outwards
to the pixel grid), ``(band, y, x)`` (and ``time`` first for space-time layers), coordinates at pixel
centres, missing tiles and pixels as the layer's ``nodata`` (``_FillValue``; NaN for float layers; 0
for an integer layer without nodata), a boolean coordinate ``valid`` (``(y, x)``, or ``(time, y, x)``)
saying which pixels hold data by the tiles' validity masks (``da.where(da.valid)``: a black pixel of a
layer without nodata is data, its missing pixels are not), and
the CRS attached the rioxarray way (``rio.write_crs``) when rioxarray is installed. On a layer cut on a
source's own grid (``tms=None``) the pixels are the source's: the same as a rasterio window read.

Needs the ``xarray`` extra (xarray, rioxarray). Below ``layer`` (whose ``Layer.to_xarray`` uses it);
:mod:`sfclayer.arrays` above it reads windows through Spark.
"""

import functools
import math

import numpy as np

from .errors import InvalidArgument

__all__ = ["Window", "WindowPlan", "window", "window_array"]


class Window:
    """The pixel window of a map box on a raster layer's grid, and the tiles it needs.

    Parameters
    ----------
    metadata : dict
        The layer's version document (``raster`` and ``extent`` needed).
    bbox : tuple of float
        ``(xmin, ymin, xmax, ymax)`` in the layer's CRS.
    grid : sfclayer.grid.TileGrid, optional
        ``TileGrid.from_metadata(metadata)``, when the caller keeps it.
    """

    def __init__(self, metadata, bbox, grid=None):
        from .grid import TileGrid

        raster = metadata.get("raster")
        if grid is None:
            grid = TileGrid.from_metadata(metadata)
        if not raster or grid is None:
            raise InvalidArgument("layer: not a raster layer with an extent (write one with sfclayer.ingest)")
        self.grid, self.raster = grid, raster
        self.tw, self.th = int(raster["tileWidth"]), int(raster["tileHeight"])
        self.px = grid.tile_width / self.tw
        self.py = grid.tile_height / self.th
        b = grid.bounds
        self.x0, self.y1 = grid.xmin(b.col_min), grid.ymax(b.row_min)
        width, height = b.width * self.tw, b.height * self.th
        xmin, ymin, xmax, ymax = bbox
        # whole pixels meeting the box's interior; a box edge on a pixel edge takes no extra pixel
        self.i0 = max(0, math.floor((xmin - self.x0) / self.px + 1e-9))
        self.i1 = min(width, math.ceil((xmax - self.x0) / self.px - 1e-9))
        self.j0 = max(0, math.floor((self.y1 - ymax) / self.py + 1e-9))
        self.j1 = min(height, math.ceil((self.y1 - ymin) / self.py - 1e-9))
        if self.i0 >= self.i1 or self.j0 >= self.j1:
            raise InvalidArgument(f"bbox: {tuple(bbox)!r} holds no pixel of the layer (its extent is "
                                  f"{grid.envelope(b.col_min, b.row_max)[:2] + grid.envelope(b.col_max, b.row_min)[2:]})")

    @property
    def keys(self):
        """``(col_min, row_min, col_max, row_max)`` of the tiles the window needs."""
        b = self.grid.bounds
        return (b.col_min + self.i0 // self.tw, b.row_min + self.j0 // self.th,
                b.col_min + (self.i1 - 1) // self.tw, b.row_min + (self.j1 - 1) // self.th)

    def place(self, out, tile, array):
        """Copy a tile's overlap with the window into ``out`` (``(bands, h, w)``)."""
        b = self.grid.bounds
        ti0 = (tile["col"] - b.col_min) * self.tw
        tj0 = (tile["row"] - b.row_min) * self.th
        a0, a1 = max(self.i0, ti0), min(self.i1, ti0 + array.shape[2])
        c0, c1 = max(self.j0, tj0), min(self.j1, tj0 + array.shape[1])
        if a0 >= a1 or c0 >= c1:
            return
        out[:, c0 - self.j0:c1 - self.j0, a0 - self.i0:a1 - self.i0] = array[:, c0 - tj0:c1 - tj0, a0 - ti0:a1 - ti0]


class WindowPlan:
    """A window's copies, worked out once: each tile's overlap as ``(bands, rows)`` items of one row's bytes.

    numpy copies a 3-d slice row by row through its strided loop, about 9 ns a row besides the bytes; seen
    as items of a void type as wide as the overlap's row, a tile's overlap is one numpy call whose loop
    moves a row with one ``memcpy``: about 40 % less time for a 1 % window of 256 px tiles. The plan
    holds the tiles' views (not a window's pixels): :meth:`run` copies them into a new array each call.

    Made by :meth:`of` for what :func:`window_array` would answer the same without its checks: every tile
    of the window there with its pixels as stored (an integer layer, no tile ``mask``, every band, the
    layer's dtype, native byte order, C order), ``bands=None``, ``masked=False``.
    """

    __slots__ = ("shape", "dtype", "strides", "jobs")

    def __init__(self, shape, dtype, jobs):
        self.shape, self.dtype, self.jobs = shape, dtype, jobs
        self.strides = (shape[1] * shape[2] * dtype.itemsize, shape[2] * dtype.itemsize)

    @classmethod
    def of(cls, w, tiles):
        """The plan of :class:`Window` ``w`` over ``tiles`` (``(tile, pixels)`` pairs), or None where it
        does not apply (the caller mosaics with :func:`window_array`)."""
        r = w.raster
        dtype = _dtype(r.get("dtype", "float64"))
        if dtype.kind == "f" or not dtype.isnative:
            return None
        c0, r0, c1, r1 = w.keys
        if len(tiles) != (c1 - c0 + 1) * (r1 - r0 + 1):
            return None
        n_bands = int(r.get("bands", 1))
        col0, row0 = w.grid.bounds.col_min, w.grid.bounds.row_min
        i0, i1, j0, j1, tw, th = w.i0, w.i1, w.j0, w.j1, w.tw, w.th
        size = dtype.itemsize
        full, strides = (n_bands, th, tw), (th * tw * size, tw * size)
        out_row = (i1 - i0) * size
        cols = {}  # a tile column's overlap: (item, byte offset in the tile's row, in the window's row)
        for c in range(c0, c1 + 1):
            x0 = (c - col0) * tw
            a0, a1 = max(i0, x0), min(i1, x0 + tw)
            cols[c] = (_void((a1 - a0) * size), (a0 - x0) * size, (a0 - i0) * size)
        rows = {}  # a tile row's overlap: (shape of the view, byte offset of its first row in the tile, in the window)
        for r_ in range(r0, r1 + 1):
            y0 = (r_ - row0) * th
            b0, b1 = max(j0, y0), min(j1, y0 + th)
            rows[r_] = ((n_bands, b1 - b0), (b0 - y0) * strides[1], (b0 - j0) * out_row)
        jobs = []
        seen = None  # the pixels' dtype object last found equal to the layer's (tiles share one)
        try:
            for pair in tiles:  # per tile: under a microsecond of Python, a view made once
                if pair.__class__ is not tuple:
                    return None
                t, a = pair
                if t.get("mask") is not None or a.shape != full or a.strides != strides + (size,):
                    return None  # validity to apply, pixels to fill, or not C order: window_array
                if a.dtype is not seen:
                    if a.dtype != dtype:
                        return None
                    seen = a.dtype
                item, sx, dx = cols[t["col"]]
                shape, sy, dy = rows[t["row"]]
                jobs.append((np.ndarray(shape, item, a, sy + sx, strides), shape, item, dy + dx))
        except KeyError:  # a tile outside the window's keys
            return None
        return cls((n_bands, j1 - j0, i1 - i0), dtype, jobs)

    def run(self):
        """The window: a new ``(bands, height, width)`` array, as :func:`window_array` answers it."""
        out = np.empty(self.shape, self.dtype)
        strides = self.strides
        for src, shape, item, offset in self.jobs:
            np.ndarray(shape, item, out, offset, strides)[...] = src
        return out


@functools.lru_cache(maxsize=64)
def _dtype(name):
    return np.dtype(name)


@functools.lru_cache(maxsize=1024)
def _void(nbytes):
    # the item of a row of nbytes (np.dtype((np.void, n)) costs about a microsecond)
    return np.dtype((np.void, nbytes))


def window_array(metadata, tiles, bbox, bands=None, masked=False, w=None):
    """Mosaic the tiles of a spatial raster layer into ``(bands, height, width)``: the window of ``bbox``.

    ``tiles``: tile dicts, or ``(tile, raster.to_numpy(tile))`` pairs from a reader that keeps the latter.

    Missing tiles and pixels hold the fill value of :func:`window` (``nodata``; NaN for floats; 0 for an
    integer layer without nodata); ``masked`` returns a :class:`numpy.ma.MaskedArray` masking them.
    Tiles are copied with numpy slices; a tile's validity is computed only where it can differ from its
    pixels (a ``mask``, a float layer, or ``masked``).
    """
    from .raster import to_numpy, valid_mask

    w = Window(metadata, bbox) if w is None else w
    r = w.raster
    n_bands = int(r.get("bands", 1))
    if bands is None:
        index = None
        n_out = n_bands
    else:
        bands = [int(b) for b in bands]
        bad = [b for b in bands if not 1 <= b <= n_bands]
        if bad or not bands:
            raise InvalidArgument(f"bands: {bad or bands!r} are not the layer's bands (1..{n_bands})")
        index = [b - 1 for b in bands]
        n_out = len(bands)
    dtype = np.dtype(r.get("dtype", "float64"))
    nodata = r.get("nodata")
    nodata = float("nan") if nodata == "NaN" else nodata
    floats = dtype.kind == "f"
    fill = dtype.type(np.nan if floats else (0 if nodata is None else nodata))
    tiles = list(tiles)
    c0, r0, c1, r1 = w.keys
    shape = (n_out, w.j1 - w.j0, w.i1 - w.i0)
    # every tile of the window present: each pixel is written below, nothing to fill first
    covered = len(tiles) == (c1 - c0 + 1) * (r1 - r0 + 1)
    out = np.empty(shape, dtype=dtype) if covered else np.full(shape, fill, dtype=dtype)
    valid = np.zeros((1,) + out.shape[1:], dtype=bool) if masked else None
    # Window.place inlined below: besides the copies, this loop's Python is most of a warm window's time
    col0, row0 = w.grid.bounds.col_min, w.grid.bounds.row_min
    i0, i1, j0, j1, tw, th = w.i0, w.i1, w.j0, w.j1, w.tw, w.th
    check = masked or floats
    for t in tiles:
        if t.__class__ is tuple:  # (tile, its pixels) from a reader that keeps them
            t, full = t
        else:
            full = to_numpy(t)
        a = full if index is None else full[index]
        if check or t.get("mask") is not None:
            ok = valid_mask(t, full)
            if not ok.all():
                a = np.where(ok, a, fill)
            if masked:
                w.place(valid, t, ok[np.newaxis])
        x0 = (t["col"] - col0) * tw
        y0 = (t["row"] - row0) * th
        _, h, wd = a.shape
        a0 = i0 if i0 > x0 else x0
        a1 = i1 if i1 < x0 + wd else x0 + wd
        b0 = j0 if j0 > y0 else y0
        b1 = j1 if j1 < y0 + h else y0 + h
        if a0 < a1 and b0 < b1:
            out[:, b0 - j0:b1 - j0, a0 - i0:a1 - i0] = a[:, b0 - y0:b1 - y0, a0 - x0:a1 - x0]
    if not masked:
        return out
    return np.ma.MaskedArray(out, mask=np.broadcast_to(~valid, out.shape).copy())


def _time64(v):
    """A tile's time as numpy datetime64[us] (UTC): from epoch microseconds or an aware datetime."""
    if isinstance(v, (int, np.integer)):
        return np.datetime64(int(v), "us")
    if getattr(v, "tzinfo", None) is not None:
        import datetime as dt

        v = v.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return np.datetime64(v, "us")


def window(metadata, tiles, bbox, bands=None, time_key=None, array=None):
    """Mosaic ``tiles`` (dicts with ``col``, ``row``, maybe ``time``, and raster values) into a DataArray.

    Parameters
    ----------
    metadata : dict
    tiles : iterable of dict
    bbox : tuple of float
    bands : list of int, optional
        1-based band numbers; all by default.
    time_key : str, optional
        ``"time"`` for space-time layers: one slice per distinct time, sorted.
    array : numpy.ma.MaskedArray, optional
        A spatial layer's window as :func:`window_array` mosaicked it (``masked=True``): ``tiles`` are
        then not read.
    """
    from ._extras import require

    xr = require("xarray", "xarray", "Layer.to_xarray")

    from .raster import to_numpy, valid_mask

    w = Window(metadata, bbox)
    r = w.raster
    n_bands = int(r.get("bands", 1))
    bands = list(range(1, n_bands + 1)) if bands is None else [int(b) for b in bands]
    bad = [b for b in bands if not 1 <= b <= n_bands]
    if bad or not bands:
        raise InvalidArgument(f"bands: {bad or bands!r} are not the layer's bands (1..{n_bands})")
    dtype = np.dtype(r.get("dtype", "float64"))
    nodata = r.get("nodata")
    nodata = float("nan") if nodata == "NaN" else nodata
    floats = dtype.kind == "f"
    fill = (np.nan if floats else (0 if nodata is None else nodata))
    shape = (len(bands), w.j1 - w.j0, w.i1 - w.i0)
    slices, valids = {}, {}
    if array is not None:
        slices[None] = np.ma.getdata(array)
        valids[None] = ~np.ma.getmaskarray(array)[:1]
        tiles = ()
    for t in tiles:
        key = _time64(t.get(time_key)) if time_key else None
        out = slices.get(key)
        if out is None:
            out = slices[key] = np.full(shape, fill, dtype=dtype)
            valids[key] = np.zeros((1,) + shape[1:], dtype=bool)
        a = to_numpy(t)
        ok = valid_mask(t, a)  # the tile's mask, else its nodata (sfclayer.raster)
        a = np.where(ok, a[[b - 1 for b in bands]], dtype.type(fill))  # missing pixels hold the fill value
        w.place(out, t, a)
        w.place(valids[key], t, ok[np.newaxis])
    x = w.x0 + (np.arange(w.i0, w.i1) + 0.5) * w.px
    y = w.y1 - (np.arange(w.j0, w.j1) + 0.5) * w.py
    coords = {"band": bands, "y": y, "x": x}
    if time_key:
        times = sorted(slices)
        data = np.stack([slices[k] for k in times]) if times else np.full((0,) + shape, fill, dtype=dtype)
        valid = np.stack([valids[k][0] for k in times]) if times else np.zeros((0,) + shape[1:], dtype=bool)
        da = xr.DataArray(data, dims=("time", "band", "y", "x"),
                          coords=dict(coords, time=np.array(times, dtype="datetime64[us]"),
                                      valid=(("time", "y", "x"), valid)))
    else:
        data = slices.get(None)
        valid = valids[None][0] if None in valids else np.zeros(shape[1:], dtype=bool)
        da = xr.DataArray(np.full(shape, fill, dtype=dtype) if data is None else data, dims=("band", "y", "x"),
                          coords=dict(coords, valid=(("y", "x"), valid)))
    fill_value = np.nan if floats else nodata
    if fill_value is not None:
        da.attrs["_FillValue"] = fill_value
    crs = metadata.get("crs")
    try:
        import rioxarray  # noqa: F401  (registers the .rio accessor)
    except ImportError:
        if crs:
            da.attrs["crs"] = crs
        return da
    if crs:
        da = da.rio.write_crs(crs)
    if fill_value is not None:
        da = da.rio.write_nodata(fill_value, encoded=False)
    return da
