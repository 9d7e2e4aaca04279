"""Stored tiles straight to PNG (the fast path), the col/row routes' tiles drawn by rio-tiler, and
TiTiler's endpoints mounted lazily.

A tile asked on the tile matrix set a layer was ingested onto, at one of its zooms, without
parameters, is its stored tile: one look-up and one PNG encode, without titiler's dependencies.
:class:`TitilerMount` answers everything else under ``/layers/{name}/`` with :mod:`.tiling`'s app,
built at the first request that needs it (or by :meth:`TitilerMount.warm` on a thread when the
server starts): importing fastapi, titiler and rio-tiler (which imports xarray and pandas) takes
~2 s of CPU, which a server that answers stored tiles need not wait for.

The older routes (``/layers/{name}/tiles/{z}/{x}/{y}.{fmt}``, OGC API – Tiles, the viewer's tiles)
address a layer's own keys, on any grid: :func:`render_pixels` draws them as TiTiler's tile endpoint
draws an image (rio-tiler's ``ImageData.rescale``, its colormap tables and ``apply_cmap``, its
``render`` for WebP), with their own defaults: one band through ``viridis`` stretched to the tile's
values unless ``rescale`` is given, 3/4-band uint8 as they are. 8-bit RGB(A) PNGs, the viewer's
usual tiles, are encoded straight from the tile as the stored-tile fast path does, without
importing rio-tiler.
"""

import asyncio
import functools
import math
import re
import threading

import numpy as np

from .. import raster as _raster
from ..errors import InvalidArgument
from .png import PNG_LEVEL, encode_png as _encode_png

__all__ = ["stored_png", "TitilerMount", "PNG_LEVEL", "WARM_DELAY_S", "COLORMAP_NOTE", "formats", "parse_rescale",
           "colormap_table", "tile_pixels", "render_pixels", "empty_png"]

#: Seconds :meth:`TitilerMount.warm` waits for a first stored tile before importing TiTiler's app.
WARM_DELAY_S = 1.0

#: The ``Warning`` header of responses to ``?colormap=<name>`` (sfclayer's parameter before TiTiler's).
COLORMAP_NOTE = ('299 sfclayer "colormap=<name> is deprecated: use colormap_name=<name> '
                 '(colormap takes TiTiler\'s JSON map)"')


def stored_png(served, tms, z, x, y):
    """The PNG of a stored tile as TiTiler's endpoint renders it without parameters (its bands, the
    validity mask as alpha), made straight from the tile: one look-up, one encode. None where the
    answer needs the full path (another matrix set or zoom, no tile, not 8-bit gray or RGB)."""
    base = served.base
    lv = served.levels.get(z)
    if lv is None or base.grid.tms != tms or base.space_time or base.pixel_layout != "raster":
        return None
    g = lv.grid
    if not (g.col_min <= x <= g.col_max and g.row_min <= y <= g.row_max):
        return None
    tile = lv.layer.get_many([(x, y)])[0]
    if tile is None:
        return None
    a = _raster.to_numpy(tile)
    if a.dtype != np.uint8 or a.shape[0] not in (1, 3) or a.shape[1:] != (g.tile_height, g.tile_width):
        return None
    alpha = _raster.valid_mask(tile, a).view(np.uint8) * np.uint8(255)  # the mask (else nodata) as alpha
    return _encode_png([a[i] for i in range(a.shape[0])] + [alpha])


@functools.lru_cache(maxsize=1)
def formats():
    """Image formats of the col/row routes, by extension → media type: PNG, and WebP where GDAL
    (rasterio's, which rio-tiler renders with) has its driver."""
    import rasterio

    with rasterio.Env() as env:
        webp = "WEBP" in env.drivers()
    return {"png": "image/png", **({"webp": "image/webp"} if webp else {})}


def parse_rescale(text):
    """``"min,max"`` → (min, max) floats; :class:`InvalidArgument` naming ``rescale`` else."""
    try:
        lo, hi = (float(v) for v in text.split(","))
    except ValueError:
        raise InvalidArgument(f"rescale: {text!r} is not two numbers ('min,max')") from None
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        raise InvalidArgument(f"rescale: {text!r} is not a range ('min,max', finite, min < max)")
    return lo, hi


def colormap_table(name, parameter="colormap_name"):
    """rio-tiler's colormap ``name`` (its names are matplotlib's, lower case: case is ignored), as
    the ``{value: (r, g, b, a)}`` table ``apply_cmap`` takes; :class:`InvalidArgument` naming
    ``parameter`` where rio-tiler has no such colormap."""
    from rio_tiler.colormap import cmap

    key = str(name).lower()
    if key not in cmap.list():
        raise InvalidArgument(f"{parameter}: {name!r} is unknown (one of rio-tiler's colormaps: viridis, terrain, "
                              f"gray, rdylgn...)")
    return cmap.get(key)


def tile_pixels(lv, tile):
    """A stored tile's ``(bands, h, w)`` pixels and ``(h, w)`` validity (its mask, else its nodata),
    padded with invalid pixels to the level's tile size where the tile is smaller (the edge tiles of
    the demo's older layout)."""
    if lv.pixel_layout == "raster":
        a = _raster.to_numpy(tile)
        valid = _raster.valid_mask(tile, a)
    else:
        a, _ = lv.pixels(tile)
        valid = ~np.isnan(a).all(axis=0) if a.dtype.kind == "f" else np.ones(a.shape[1:], bool)
    g = lv.grid
    h, w = a.shape[1:]
    if g.tile_width and (w < g.tile_width or h < g.tile_height):
        padded = np.zeros((a.shape[0], max(h, g.tile_height), max(w, g.tile_width)), a.dtype)
        padded[:, :h, :w] = a
        pad_valid = np.zeros(padded.shape[1:], bool)
        pad_valid[:h, :w] = valid
        a, valid = padded, pad_valid
    return a, valid


def _span(a, valid):
    """The valid pixels' (min, max) (a one-value span widened to 1: the colormap's low end)."""
    values = a[:, valid]
    if a.dtype.kind == "f":
        values = values[~np.isnan(values)]
    if not values.size:
        return 0.0, 1.0
    lo, hi = float(values.min()), float(values.max())
    return (lo, hi) if hi > lo else (lo, lo + 1.0)


def render_pixels(array, valid, fmt="png", colormap="viridis", rescale=None):
    """A tile of the col/row routes as PNG or WebP bytes, drawn by rio-tiler as TiTiler draws one.

    Parameters
    ----------
    array : numpy.ndarray
        ``(bands, h, w)`` pixels (:func:`tile_pixels`).
    valid : numpy.ndarray
        ``(h, w)`` booleans: the pixels that hold data (the others are transparent).
    fmt : str
        ``png`` or ``webp`` (lossless).
    colormap : str
        One band (the first of 1, 2 or more than 4): the rio-tiler colormap it is drawn through.
    rescale : (float, float), optional
        The values mapped to 0 and 255: for one band, and for 3/4 bands of types other than uint8;
        the tile's own valid min and max otherwise. 3/4-band uint8 tiles are drawn as they are (a
        fourth band is the alpha, under the validity).

    Examples
    --------
    >>> import io
    >>> from PIL import Image
    >>> valid = np.array([[True, False], [True, True]])
    >>> png = render_pixels(np.full((1, 2, 2), 5.0), valid, colormap="gray", rescale=(0, 10))
    >>> np.asarray(Image.open(io.BytesIO(png)))[0].tolist()  # 5 of 0..10: rio-tiler's 127, and a missing pixel
    [[127, 127, 127, 255], [0, 0, 0, 0]]
    """
    bands = array.shape[0]
    color = bands in (3, 4)
    if color and array.dtype == np.uint8 and fmt == "png":  # the fast path: the stored bytes, one encode
        alpha = valid.view(np.uint8) * np.uint8(255) if bands == 3 else np.where(valid, array[3], np.uint8(0))
        return _encode_png([array[0], array[1], array[2], alpha])
    from rio_tiler.colormap import apply_cmap
    from rio_tiler.models import ImageData

    data = array if color else array[:1]
    invalid = ~valid if data.dtype.kind != "f" else ~valid | np.isnan(data).all(axis=0)
    # a copy: rio-tiler rescales in place, and a tile's pixels are a read-only view of its bytes
    img = ImageData(np.ma.MaskedArray(np.array(data), mask=np.broadcast_to(invalid, data.shape).copy()))
    if not (color and data.dtype == np.uint8):
        img.rescale(in_range=(rescale or _span(data, ~invalid),))
    if color:
        out, mask = img.data[:3], img.mask
        if bands == 4:
            mask = np.where(mask != 0, img.data[3], np.uint8(0))
    else:  # rio-tiler's colormap, its alpha under the mask (titiler.core's render_image)
        out, alpha = apply_cmap(img.data, colormap_table(colormap))
        mask = np.where(img.mask != 0, alpha, np.uint8(0)).astype(np.uint8)
    if fmt == "png":
        return _encode_png([out[i] for i in range(out.shape[0])] + [mask])
    if fmt not in formats():
        raise InvalidArgument(f"image format: {fmt!r} is not served ({', '.join(formats())})")
    from rio_tiler.utils import render

    return render(out, mask, img_format=fmt.upper(), lossless=True, method=0)  # method 0: libwebp's fastest


@functools.lru_cache(maxsize=16)
def empty_png(width=256, height=256):
    """A fully transparent RGBA PNG (the body of ``404``s asked for with ``?empty=transparent``)."""
    zero = np.zeros((height, width), np.uint8)
    return _encode_png([zero] * 4)


_STORED = re.compile(r"^/layers/(?P<name>[^/]+)/tiles/(?P<tms>[A-Za-z0-9_.-]+)/(?P<z>[0-9]{1,2})/(?P<x>[0-9]{1,9})/"
                     r"(?P<y>[0-9]{1,9})\.png$")



class TitilerMount:
    """ASGI: stored tiles asked without parameters answered from :func:`stored_png`; the rest by
    TiTiler's app (:func:`sfclayer.server.tiling.titiler_app`), built once, on first need.

    Parameters
    ----------
    served : dict
        name → :class:`~sfclayer.server.catalog.Served`.
    max_tiles : int, optional
        The warped reads' tile budget (the tiler's default when None).
    """

    def __init__(self, served, max_tiles=None):
        self.served = served
        self.max_tiles = max_tiles
        self._app = None
        self._lock = threading.Lock()
        self._answered = None

    def app(self):
        """TiTiler's app, built on the first call (thread-safe)."""
        with self._lock:
            if self._app is None:
                from .tiling import titiler_app

                kw = {} if self.max_tiles is None else {"max_tiles": self.max_tiles}
                self._app = titiler_app(self.served, **kw)
            return self._app

    def warm(self, delay=WARM_DELAY_S):
        """Build TiTiler's app on a daemon thread (call after any fork: a fork during an import would
        leave the child holding the import lock), once the first stored tile was answered or after
        ``delay`` seconds: the import holds the GIL for most of its ~2 s, which would otherwise delay
        the server's first tiles (a request needing the app builds it at once, as before)."""
        answered = self._answered = threading.Event()

        def build():
            answered.wait(delay)
            self.app()

        threading.Thread(target=build, name="sfclayer-titiler-import", daemon=True).start()

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            stored = _STORED.match(scope["path"])
            if stored and not scope.get("query_string") and scope["method"] == "GET":
                served = self.served.get(stored["name"])
                if served is not None:
                    import anyio

                    z, x, y = int(stored["z"]), int(stored["x"]), int(stored["y"])
                    body = await anyio.to_thread.run_sync(stored_png, served, stored["tms"], z, x, y)
                    if body is not None:
                        await send({"type": "http.response.start", "status": 200, "headers": [
                            (b"content-type", b"image/png"), (b"content-length", str(len(body)).encode())]})
                        await send({"type": "http.response.body", "body": body})
                        if self._answered is not None:
                            self._answered.set()
                        return
        app = self._app
        if app is None:
            app = await asyncio.get_running_loop().run_in_executor(None, self.app)
        await app(scope, receive, send)
