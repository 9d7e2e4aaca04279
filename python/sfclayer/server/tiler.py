"""A rio-tiler reader over a served sfclayer layer: tiles on any morecantile tile matrix set, parts,
previews, points, info and statistics, as rio-tiler's ``Reader`` gives them for a GeoTIFF.
Over 500 lines on purpose: rio-tiler's reader interface is one class, kept whole with its window stitching.

Two paths:

- **stored tiles** (the fast path): a tile asked on the tile matrix set the layer (or its pyramid
  level ``z``) was ingested onto is the stored tile itself: one look-up, no warp;
- **warped**: anything else is read from the layer's pixels. The pyramid level nearest the
  request's resolution is chosen (the coarsest whose pixels are not coarser than the request's, as
  GDAL chooses an overview), the level's pixels meeting the request (plus a margin for the
  resampling kernel) are stitched from its tiles into an in-memory GDAL dataset, and rio-tiler's own
  ``Reader`` warps it. So a tile equals rio-tiler reading the source GeoTIFF, pixel for pixel, where
  the layer holds the source's pixels (a layer on the source's own grid).

A request that would read more than :data:`MAX_TILES` tiles of the chosen level is refused
(:class:`TooManyTiles`, a 400): without a pyramid, a far-out zoom would otherwise read the whole
layer; ``sfclayer pyramid`` builds the levels that make it cheap.

Examples
--------
>>> with LayerReader(served, tms=morecantile.tms.get("WebMercatorQuad")) as src:  # doctest: +SKIP
...     img = src.tile(33, 22, 6)
"""

import math
import uuid
import warnings

import attr
import numpy as np
import rasterio
from affine import Affine
from morecantile import Tile, TileMatrixSet
from rasterio.crs import CRS
from rasterio.warp import transform_bounds
from rio_tiler.constants import WEB_MERCATOR_TMS, WGS84_CRS
from rio_tiler.errors import PointOutsideBounds, TileOutsideBounds
from rio_tiler.expression import parse_expression
from rio_tiler.io import Reader
from rio_tiler.io.base import BaseReader
from rio_tiler.models import ImageData, Info

from ..errors import InvalidArgument, KeyNotFound, KeyOutOfBounds

__all__ = ["LayerReader", "TooManyTiles", "MAX_TILES", "read_window", "data_bounds"]

#: The most tiles of one level a warped request may read (a 256 px Web Mercator tile over a layer
#: of 256 px tiles reads 4 to 9 at the level nearest its resolution).
MAX_TILES = 64

#: Pixels read around a warped request's window, so resampling kernels (cubic: 2, lanczos: 3) see
#: the same neighbours as when reading the whole source.
_MARGIN = 4


# A window's in-memory dataset is opened for writing (MEM datasets cannot be reopened read-only) and has
# no overviews (the pyramid is the overviews): rasterio's and rio-tiler's warnings about both say nothing
# here. Filters by message, process-wide: catch_warnings is not thread-safe, and requests run on threads.
warnings.filterwarnings("ignore", message="Source dataset should be opened in read-only mode")
warnings.filterwarnings("ignore", message="The dataset has no Overviews")


class TooManyTiles(InvalidArgument):
    """A warped request would read more tiles than allowed: the layer needs a (coarser) pyramid."""


def _level_geometry(lv):
    """(transform, width, height) of a level's full pixel grid (its key bounds × tile size)."""
    g = lv.grid
    if not g.extent or not g.tile_width:
        raise InvalidArgument(f"layer {lv.name}: it has no extent or tile size, so it has no map to draw "
                              f"(serve its values at /layers/{lv.name}/values/{{col}}/{{row}})")
    w = (g.col_max - g.col_min + 1) * g.tile_width
    h = (g.row_max - g.row_min + 1) * g.tile_height
    xmin, ymin, xmax, ymax = g.extent
    return Affine((xmax - xmin) / w, 0, xmin, 0, -(ymax - ymin) / h, ymax), w, h


def read_window(lv, i0, j0, i1, j1, time=None, max_tiles=MAX_TILES):
    """The pixels ``[j0:j1, i0:i1]`` of a level's pixel grid, stitched from its tiles.

    Parameters
    ----------
    lv : sfclayer.server.catalog.ServedLayer
    i0, j0, i1, j1 : int
        The window, columns ``i0..i1-1`` and rows ``j0..j1-1`` from the grid's top-left pixel
        (clipped to the grid by the caller).
    time : int, optional
        Epoch microseconds, for space-time layers.
    max_tiles : int
        Refuse (:class:`TooManyTiles`) a window meeting more tiles.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray, float or None)
        ``(bands, h, w)`` pixels (missing ones hold the nodata value, else 0), ``(h, w)`` validity,
        the layer's nodata value.
    """
    g = lv.grid
    tw, th = g.tile_width, g.tile_height
    c0, c1 = g.col_min + i0 // tw, g.col_min + (i1 - 1) // tw
    r0, r1 = g.row_min + j0 // th, g.row_min + (j1 - 1) // th
    n = (c1 - c0 + 1) * (r1 - r0 + 1)
    if n > max_tiles:
        raise TooManyTiles(f"layer {lv.name}: this request would read {n} tiles (more than {max_tiles}) at "
                           f"the nearest level it has; build the coarser levels with `sfclayer pyramid PATH`, or "
                           f"ask a finer zoom")
    info = lv.metadata.get("raster") or {}
    if info and lv.pixel_layout == "raster" and not lv.space_time and g.extent:
        return _numpy_window(lv, info, i0, j0, i1, j1)
    # space-time layers, and layers written before raster metadata: stitched here from look-ups
    keys = [lv.key(c, r, time) for r in range(r0, r1 + 1) for c in range(c0, c1 + 1)]
    tiles = lv.layer.get_many(keys)
    bands, dtype, nodata = info.get("bands"), info.get("dtype"), info.get("nodata")
    out = valid = None
    for key, tile in zip(keys, tiles):
        if tile is None:
            continue
        array, tile_nodata = lv.pixels(tile)
        if out is None:
            bands, dtype = array.shape[0], array.dtype
            nodata = tile_nodata if tile_nodata is not None else (None if nodata in (None, "nan") else nodata)
            if nodata is None and dtype.kind == "f":
                nodata = float("nan")
            out = np.full((bands, j1 - j0, i1 - i0), 0 if nodata is None else nodata, dtype=dtype)
            valid = np.zeros((j1 - j0, i1 - i0), dtype=bool)
        c, r = key[0], key[1]
        x0, y0 = (c - g.col_min) * tw, (r - g.row_min) * th  # the tile's top-left pixel
        h, w = array.shape[1], array.shape[2]
        a0, a1 = max(i0, x0), min(i1, x0 + w)
        b0, b1 = max(j0, y0), min(j1, y0 + h)
        if a0 >= a1 or b0 >= b1:
            continue
        part = array[:, b0 - y0:b1 - y0, a0 - x0:a1 - x0]
        out[:, b0 - j0:b1 - j0, a0 - i0:a1 - i0] = np.ma.getdata(part)
        m = np.ma.getmaskarray(part)
        valid[b0 - j0:b1 - j0, a0 - i0:a1 - i0] = ~m.all(axis=0)
    if out is None:  # no tile: nothing valid
        dtype = np.dtype(dtype or "uint8")
        out = np.zeros((int(bands or 1), j1 - j0, i1 - i0), dtype=dtype)
        valid = np.zeros((j1 - j0, i1 - i0), dtype=bool)
    return out, valid, nodata


def _numpy_window(lv, info, i0, j0, i1, j1):
    """:func:`read_window` through ``Layer.to_numpy`` (the window reader layers share): the box of the
    pixel window's centres, a quarter pixel inside its edges, meets exactly its pixels."""
    g = lv.grid
    xmin, ymin, xmax, ymax = g.extent
    px = (xmax - xmin) / ((g.col_max - g.col_min + 1) * g.tile_width)
    py = (ymax - ymin) / ((g.row_max - g.row_min + 1) * g.tile_height)
    bbox = (xmin + (i0 + 0.25) * px, ymax - (j1 - 0.25) * py, xmin + (i1 - 0.25) * px, ymax - (j0 + 0.25) * py)
    window = lv.layer.to_numpy(bbox, masked=True)
    array = np.ma.getdata(window)
    if array.shape[1:] != (j1 - j0, i1 - i0):  # the layer's own pixel grid is the level's: never expected
        raise InvalidArgument(f"layer {lv.name}: a window of {array.shape[1:]} pixels for {(j1 - j0, i1 - i0)}")
    valid = ~np.ma.getmaskarray(window)[0]
    nodata = info.get("nodata")
    nodata = None if nodata in (None, "nan") else (float("nan") if nodata == "NaN" else nodata)
    if array.dtype.kind == "f":
        nodata = float("nan")  # to_numpy's fill of float layers' missing pixels
    return array, valid, nodata


def _mem_dataset(array, valid, nodata, transform, crs):
    """An in-memory GDAL dataset of a window: its nodata when that says which pixels are missing,
    else an explicit mask band."""
    bands, h, w = array.shape
    # a name of its own: requests on other threads build their windows at the same time
    ds = rasterio.open(f"/vsimem/sfclayer-window-{uuid.uuid4().hex}", "w+", driver="MEM", width=w, height=h,
                       count=bands, dtype=array.dtype, crs=crs, transform=transform)
    ds.write(array)
    if nodata is not None:
        from_nodata = ~((np.isnan(array) if math.isnan(nodata) else array == nodata).all(axis=0))
        if np.array_equal(from_nodata, valid):
            ds.nodata = nodata
            return ds
    if not valid.all():
        ds.write_mask(valid)
    return ds


def data_bounds(served):
    """The bounds of the tiles a served layer holds, in its CRS: its key bounds narrowed to the
    columns and rows that have tiles (counted, never read), at its finest level. Cached on ``served``."""
    cached = getattr(served, "_data_bounds", None)
    if cached is not None:
        return cached
    lv = served.base
    g = lv.grid
    transform, _, _ = _level_geometry(lv)

    def has(c0, r0, c1, r1):
        return lv.layer.count(keys=(c0, r0, c1, r1)) > 0

    try:
        if not has(g.col_min, g.row_min, g.col_max, g.row_max):
            found = (g.col_min, g.row_min, g.col_max, g.row_max)
        else:
            found = _narrow(has, g.col_min, g.row_min, g.col_max, g.row_max)
    except Exception:  # counting is an optimisation of the bounds; the key bounds are still right
        found = (g.col_min, g.row_min, g.col_max, g.row_max)
    c0, r0, c1, r1 = found
    tw, th = g.tile_width, g.tile_height
    px = [(c0 - g.col_min) * tw, (r0 - g.row_min) * th, (c1 + 1 - g.col_min) * tw, (r1 + 1 - g.row_min) * th]
    try:
        px = _valid_edges(lv, found, px)
    except Exception:  # as above: whole tiles are still right
        pass
    x0, y0 = transform @ (px[0], px[1])
    x1, y1 = transform @ (px[2], px[3])
    served._data_bounds = (min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1))
    return served._data_bounds


def _valid_edges(lv, box, px, most=16):
    """Narrow the pixel box ``px`` (left, top, right, bottom) of key box ``box`` to the valid pixels of
    its edge tiles: each side's column or row of tiles read whole when it has at most ``most`` tiles."""
    g = lv.grid
    c0, r0, c1, r1 = box
    out = list(px)
    sides = (("left", (c0, r0, c0, r1)), ("right", (c1, r0, c1, r1)), ("top", (c0, r0, c1, r0)),
             ("bottom", (c0, r1, c1, r1)))
    for side, keys in sides:
        if (keys[2] - keys[0] + 1) * (keys[3] - keys[1] + 1) > most:
            continue
        edges = []
        for t in lv.layer.query(keys=keys):
            a, _ = lv.pixels(t)
            valid = ~np.ma.getmaskarray(a).all(axis=0)
            cols, rows = np.flatnonzero(valid.any(axis=0)), np.flatnonzero(valid.any(axis=1))
            if not len(cols):
                continue
            x, y = (t["col"] - g.col_min) * g.tile_width, (t["row"] - g.row_min) * g.tile_height
            edges.append({"left": x + cols[0], "right": x + cols[-1] + 1, "top": y + rows[0],
                          "bottom": y + rows[-1] + 1}[side])
        if edges:
            i = ("left", "top", "right", "bottom").index(side)
            out[i] = min(edges) if side in ("left", "top") else max(edges)
    return out


def _narrow(has, c0, r0, c1, r1):
    """The smallest key box with the same tiles, by bisection on counts (4 × log2(side) counts)."""
    def first(lo, hi, holds):  # smallest k in [lo, hi] with holds(k) (holds(hi) is true)
        while lo < hi:
            mid = (lo + hi) // 2
            if holds(mid):
                hi = mid
            else:
                lo = mid + 1
        return lo

    def last(lo, hi, holds):  # largest k in [lo, hi] with holds(k) (holds(lo) is true)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if holds(mid):
                lo = mid
            else:
                hi = mid - 1
        return lo

    left = first(c0, c1, lambda k: has(c0, r0, k, r1))
    right = last(left, c1, lambda k: has(k, r0, c1, r1))
    top = first(r0, r1, lambda k: has(left, r0, right, k))
    bottom = last(top, r1, lambda k: has(left, k, right, r1))
    return left, top, right, bottom


@attr.s
class LayerReader(BaseReader):
    """rio-tiler's ``BaseReader`` over a served layer and its pyramid levels.

    Parameters
    ----------
    input : sfclayer.server.catalog.Served
        The layer (and its levels), opened by the server.
    tms : morecantile.TileMatrixSet
        The tile matrix set of :meth:`tile` requests.
    time : int, optional
        Epoch microseconds: the time slice of a space-time layer (required for them).
    max_tiles : int
        The most tiles of a level one warped request may read.
    options : dict
        rio-tiler read options applied to every request (``nodata``, ``resampling_method``...).
    """

    input = attr.ib()
    tms: TileMatrixSet = attr.ib(default=WEB_MERCATOR_TMS)
    time = attr.ib(default=None)
    max_tiles: int = attr.ib(default=MAX_TILES)
    options: dict = attr.ib(factory=dict)
    colormap = attr.ib(default=None)

    def __attrs_post_init__(self):
        served = self.input
        base = served.base
        self.transform, self.width, self.height = _level_geometry(base)
        self.crs = CRS.from_user_input(base.grid.crs)
        self.bounds = data_bounds(served)
        if base.space_time and self.time is None:
            raise InvalidArgument(f"time: nothing is given for a space-time layer (layer {served.name}: "
                                  f"?time=ISO-8601)")
        if not base.space_time and self.time is not None:
            raise InvalidArgument(f"time: given for a spatial layer (layer {served.name}: leave time out)")
        # the levels by pixel size, finest first: the pyramid's (any grid) and the base
        levels = dict(getattr(served, "overviews", None) or served.levels)
        self._levels = sorted(((_level_geometry(lv)[0].a, z, lv) for z, lv in levels.items()), key=lambda t: t[0])
        self._on_tms = base.grid.tms is not None and base.grid.tms == self.tms.id

    # -------------------------------------------------------------------------------------------
    # Zooms

    @property
    def minzoom(self):
        if self._on_tms:
            return min(self.input.zooms)
        coarsest = self._levels[-1][0] / self._levels[0][0]  # how much coarser the coarsest level is
        dst, _, _ = self._dst_geom_in_tms_crs
        res = max(abs(dst[0]), abs(dst[4])) * coarsest * 4  # a request reading ~5 × 5 tiles of it
        return max(self._minzoom, min(self.tms.zoom_for_res(res), self.maxzoom))

    @property
    def maxzoom(self):
        return max(self.input.zooms) if self._on_tms else self._maxzoom

    # -------------------------------------------------------------------------------------------
    # Reading

    def _level_for(self, res):
        """The coarsest level whose pixels are not coarser than ``res`` (layer CRS units)."""
        chosen = self._levels[0]
        for level in self._levels:
            if level[0] <= res * (1 + 1e-6):
                chosen = level
        return chosen[2]

    def _reader(self, bbox, res):
        """A rio-tiler ``Reader`` over the pixels of the level nearest ``res`` meeting ``bbox``
        (layer CRS), with a margin; None when the layer has no pixel there."""
        lv = self._level_for(res)
        transform, w, h = _level_geometry(lv)
        inv = ~transform
        cols, rows = zip(*(inv @ (x, y) for x in (bbox[0], bbox[2]) for y in (bbox[1], bbox[3])))
        i0 = max(0, math.floor(min(cols)) - _MARGIN)
        i1 = min(w, math.ceil(max(cols)) + _MARGIN)
        j0 = max(0, math.floor(min(rows)) - _MARGIN)
        j1 = min(h, math.ceil(max(rows)) + _MARGIN)
        if i0 >= i1 or j0 >= j1:
            return None
        array, valid, nodata = read_window(lv, i0, j0, i1, j1, self.time, self.max_tiles)
        ds = _mem_dataset(array, valid, nodata, transform @ Affine.translation(i0, j0), self.crs)
        return Reader(None, dataset=ds, tms=self.tms, options=self.options)

    def _in_layer_crs(self, bbox, crs):
        crs = CRS.from_user_input(crs)
        if crs == self.crs:
            return tuple(bbox)
        return transform_bounds(crs, self.crs, *bbox, densify_pts=21)

    def part(self, bbox, dst_crs=None, bounds_crs=WGS84_CRS, indexes=None, expression=None, max_size=None,
             height=None, width=None, buffer=None, **kwargs):
        """Read a box (``bounds_crs``) as ``width`` × ``height`` pixels in ``dst_crs``: rio-tiler's
        ``Reader.part`` over the nearest level's pixels."""
        dst_crs = dst_crs or bounds_crs
        self._check_indexes(parse_expression(expression) if expression else indexes)
        src_box = self._in_layer_crs(bbox, bounds_crs)
        span = max(src_box[2] - src_box[0], src_box[3] - src_box[1])
        if width and height:
            pixels = max(width, height)
        elif max_size:
            pixels = max_size
        else:
            pixels = span / self._levels[0][0]  # native resolution
        src = self._reader(src_box, span / max(pixels, 1))
        if src is None:
            raise TileOutsideBounds(f"box {tuple(bbox)} is outside layer {self.input.name}")
        try:
            img = src.part(bbox, dst_crs=dst_crs, bounds_crs=bounds_crs, indexes=indexes, expression=expression,
                           max_size=max_size, height=height, width=width, buffer=buffer, **kwargs)
        finally:
            src.dataset.close()
        img.assets = [self.input.name]
        return img

    def tile(self, tile_x, tile_y, tile_z, tilesize=None, indexes=None, expression=None, buffer=None, **kwargs):
        """A tile of :attr:`tms`: the stored tile where the layer is on this tile matrix set (and has
        the zoom), else warped from the nearest level."""
        if not self.tile_exists(tile_x, tile_y, tile_z):
            raise TileOutsideBounds(f"Tile(x={tile_x}, y={tile_y}, z={tile_z}) is outside layer {self.input.name}")
        lv = self.input.level(tile_z) if self._on_tms else None
        if lv is not None and not buffer and tilesize in (None, lv.grid.tile_width) and not kwargs.get("nodata"):
            return self._stored_tile(lv, tile_x, tile_y, tile_z, indexes, expression)
        matrix = self.tms.matrix(tile_z)
        bbox = tuple(self.tms.xy_bounds(Tile(x=tile_x, y=tile_y, z=tile_z)))
        kwargs = {**self.options, **kwargs}
        return self.part(bbox, dst_crs=self.tms.rasterio_crs, bounds_crs=self.tms.rasterio_crs,
                         height=tilesize or matrix.tileHeight, width=tilesize or matrix.tileWidth, max_size=None,
                         indexes=indexes, expression=expression, buffer=buffer, **kwargs)

    def _check_indexes(self, indexes):
        """``indexes`` as a list, each a band of the layer (else :class:`InvalidArgument`, a 400)."""
        if not indexes:
            return indexes
        indexes = [indexes] if isinstance(indexes, int) else list(indexes)
        bands = int((self.input.base.metadata.get("raster") or {}).get("bands") or 3)
        bad = [i for i in indexes if not 1 <= i <= bands]
        if bad:
            raise InvalidArgument(f"bidx: {', '.join(map(str, bad))} are not bands of layer {self.input.name} "
                                  f"(1..{bands})")
        return indexes

    def _stored_tile(self, lv, x, y, z, indexes, expression):
        g = lv.grid
        bounds = tuple(self.tms.xy_bounds(Tile(x=x, y=y, z=z)))
        tile = None
        if g.col_min <= x <= g.col_max and g.row_min <= y <= g.row_max:
            try:
                tile = lv.layer.get_many([lv.key(x, y, self.time)])[0]
            except (KeyNotFound, KeyOutOfBounds):
                tile = None
        if tile is None:
            bands = int((lv.metadata.get("raster") or {}).get("bands") or 1)
            dtype = (lv.metadata.get("raster") or {}).get("dtype") or "uint8"
            array = np.ma.masked_all((bands, g.tile_height, g.tile_width), dtype=dtype)
        else:  # padded to the tile size where smaller (edge tiles of the demo layout)
            a, valid = lv.tile_pixels(tile)
            array = np.ma.MaskedArray(np.array(a), mask=np.repeat(~valid[np.newaxis], a.shape[0], axis=0))
        if expression:
            indexes = parse_expression(expression)
        if indexes:
            indexes = self._check_indexes(indexes)
            array = array[[i - 1 for i in indexes]]
        names = [f"b{i}" for i in (indexes or range(1, array.shape[0] + 1))]
        img = ImageData(array, bounds=bounds, crs=self.tms.rasterio_crs, band_names=names,
                        assets=[self.input.name])
        return img.apply_expression(expression) if expression else img

    def feature(self, shape, dst_crs=None, shape_crs=WGS84_CRS, indexes=None, expression=None, max_size=None,
                height=None, width=None, buffer=None, **kwargs):
        """The pixels inside a GeoJSON feature (rio-tiler's ``Reader.feature``: the part of its bounds,
        pixels outside it masked)."""
        from rasterio.features import bounds as feature_bounds
        from rasterio.features import rasterize
        from rasterio.warp import transform_geom
        from rio_tiler.utils import _validate_shape_input

        shape = _validate_shape_input(shape)
        dst_crs = dst_crs or shape_crs
        img = self.part(feature_bounds(shape), dst_crs=dst_crs, bounds_crs=shape_crs, indexes=indexes,
                        expression=expression, max_size=max_size, height=height, width=width, buffer=buffer,
                        **kwargs)
        if dst_crs != shape_crs:
            shape = transform_geom(shape_crs, dst_crs, shape)
        outside = rasterize([shape], out_shape=(img.height, img.width), transform=img.transform, all_touched=True,
                            default_value=0, fill=1, dtype="uint8").astype(bool)
        img.cutline_mask = outside
        img.array.mask = np.where(~outside, img.array.mask, True)
        return img

    def preview(self, indexes=None, expression=None, max_size=1024, height=None, width=None, **kwargs):
        """The whole layer at most ``max_size`` pixels on a side, from the nearest level."""
        dst_crs = kwargs.pop("dst_crs", None) or self.crs
        return self.part(self.bounds, dst_crs=dst_crs, bounds_crs=self.crs, indexes=indexes, expression=expression,
                         max_size=max_size if not (height and width) else None, height=height, width=width,
                         **kwargs)

    def point(self, lon, lat, coord_crs=WGS84_CRS, indexes=None, expression=None, **kwargs):
        """The base pixel at a point (``coord_crs``): rio-tiler's ``Reader.point`` on the finest level."""
        x, y = (lon, lat)
        if CRS.from_user_input(coord_crs) != self.crs:
            from rasterio.warp import transform as _transform

            xs, ys = _transform(coord_crs, self.crs, [lon], [lat])
            x, y = xs[0], ys[0]
        b = self.bounds
        if not (b[0] <= x <= b[2] and b[1] <= y <= b[3]):
            raise PointOutsideBounds(f"point ({lon}, {lat}) is outside layer {self.input.name}")
        res = self._levels[0][0]
        src = self._reader((x, y, x, y), res)
        if src is None:
            raise PointOutsideBounds(f"point ({lon}, {lat}) is outside layer {self.input.name}")
        try:
            pt = src.point(lon, lat, coord_crs=coord_crs, indexes=indexes, expression=expression,
                           **{**self.options, **kwargs})
        finally:
            src.dataset.close()
        pt.assets = [self.input.name]
        return pt

    def info(self):
        """The layer's description in rio-tiler's ``Info`` model."""
        base = self.input.base
        r = base.metadata.get("raster") or {}
        bands = int(r.get("bands") or 3)
        nodata = r.get("nodata")
        meta = {
            "bounds": self.bounds,
            "crs": self.crs.to_string(),
            "band_metadata": [(f"b{i}", {}) for i in range(1, bands + 1)],
            "band_descriptions": [(f"b{i}", f"b{i}") for i in range(1, bands + 1)],
            "dtype": r.get("dtype") or "uint8",
            "nodata_type": "Nodata" if nodata is not None else "Mask",
            "width": self.width,
            "height": self.height,
            "count": bands,
            "overviews": [round(level[0] / self._levels[0][0]) for level in self._levels[1:]],
            "zooms": self.input.zooms,
            "tms": base.grid.tms,
            "tileWidth": base.grid.tile_width,
            "tileHeight": base.grid.tile_height,
        }
        if nodata is not None:
            meta["nodata_value"] = float(nodata)
        return Info.model_validate(meta)

    def statistics(self, categorical=False, categories=None, percentiles=None, hist_options=None, max_size=1024,
                   indexes=None, expression=None, **kwargs):
        """Band statistics of the preview (at most ``max_size`` pixels on a side), as rio-tiler's."""
        data = self.preview(indexes=indexes, expression=expression, max_size=max_size, **kwargs)
        return data.statistics(categorical=categorical, categories=categories, percentiles=percentiles,
                               hist_options=hist_options)
