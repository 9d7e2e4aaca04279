"""The col/row routes' tiles (``/layers/{name}/tiles/{z}/{x}/{y}.{fmt}``, OGC API – Tiles, the
TileJSON's and the viewer's tiles), drawn by rio-tiler as TiTiler's tile endpoint draws an image:
``ImageData.rescale``, rio-tiler's colormap tables through ``apply_cmap`` (the mask combined as
titiler.core's ``render_image`` does), WebP by rio-tiler's ``render``; PNG by :mod:`.png`'s writer.

These routes address a layer's own keys, on any grid, and keep their defaults: one band through
``viridis`` stretched to the tile's values unless ``rescale`` is given, 3/4-band uint8 as they are.
8-bit RGB(A) PNGs, the viewer's usual tiles, are encoded straight from the tile as the stored-tile
fast path (:mod:`.stored`) does, without importing rio-tiler (~1-2 s of CPU, with xarray and pandas).

Examples
--------
>>> import io
>>> from PIL import Image
>>> valid = np.array([[True, False], [True, True]])
>>> png = render_pixels(np.full((1, 2, 2), 5.0), valid, colormap="gray", rescale=(0, 10))
>>> np.asarray(Image.open(io.BytesIO(png)))[0].tolist()  # 5 of 0..10: rio-tiler's 127, and a missing pixel
[[127, 127, 127, 255], [0, 0, 0, 0]]
"""

import functools
import math

import numpy as np

from ..errors import InvalidArgument
from .png import encode_png as _encode_png

__all__ = ["COLORMAP_NOTE", "formats", "parse_rescale", "colormap_table", "render_pixels", "empty_png"]

#: The ``Warning`` header of responses to ``?colormap=<name>`` (sfclayer's parameter before TiTiler's),
#: on these routes and TiTiler's (:mod:`.tiling`).
COLORMAP_NOTE = ('299 sfclayer "colormap=<name> is deprecated: use colormap_name=<name> '
                 '(colormap takes TiTiler\'s JSON map)"')


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
        ``(bands, h, w)`` pixels (``ServedLayer.tile_pixels``).
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
