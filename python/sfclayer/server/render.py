"""Tile pixels to images: 3/4-band uint8 as they are, one band through a matplotlib colormap,
missing pixels transparent (the tile's validity mask, or its nodata value), edge tiles padded to the
layer's tile size; PNG, and WebP where Pillow has it.

Examples
--------
>>> import numpy as np
>>> rgba = to_rgba(np.full((1, 2, 2), 5.0), colormap="gray", rescale=(0, 10))
>>> rgba.shape, rgba[0, 0].tolist()
((2, 2, 4), [128, 128, 128, 255])
"""

import functools
import io

import numpy as np

from ..errors import InvalidArgument

__all__ = ["FORMATS", "to_rgba", "encode", "empty_png", "parse_rescale", "check_colormap"]


def _webp():
    from PIL import features

    return bool(features.check("webp"))


#: Image formats by file extension → MIME type (webp only where Pillow was built with it).
FORMATS = {"png": "image/png"}
if _webp():
    FORMATS["webp"] = "image/webp"


@functools.lru_cache(maxsize=64)
def _colormap_lut(name):
    import matplotlib

    try:
        cmap = matplotlib.colormaps[name]
    except KeyError:
        raise InvalidArgument(f"colormap: {name!r} is unknown (any of matplotlib's, e.g. viridis, terrain, gray)") from None
    return (cmap(np.linspace(0, 1, 256)) * 255).round().astype(np.uint8)  # 256 × RGBA


def check_colormap(name):
    """Raise :class:`InvalidArgument` unless matplotlib knows the colormap ``name``."""
    _colormap_lut(name)


def parse_rescale(text):
    """``"min,max"`` → (min, max) floats."""
    try:
        lo, hi = (float(v) for v in text.split(","))
    except ValueError:
        raise InvalidArgument(f"rescale: {text!r} is not two numbers ('min,max')") from None
    if not (np.isfinite(lo) and np.isfinite(hi)) or hi <= lo:
        raise InvalidArgument(f"rescale: {text!r} is not a range ('min,max', finite, min < max)")
    return lo, hi


def _valid(a, nodata):
    """(h, w) True where some band holds data: a masked array's unmasked pixels; else not nodata, not NaN."""
    if isinstance(a, np.ma.MaskedArray):
        return ~np.ma.getmaskarray(a).all(axis=0)
    invalid = np.isnan(a) if a.dtype.kind == "f" else np.zeros(a.shape, dtype=bool)
    if nodata is not None and not np.isnan(nodata):
        invalid |= a == a.dtype.type(nodata)
    return ~invalid.all(axis=0)


def to_rgba(array, nodata=None, colormap="viridis", rescale=None, size=None):
    """An ``(h, w, 4)`` uint8 image of a ``(bands, h, w)`` tile.

    Parameters
    ----------
    array : numpy.ndarray or numpy.ma.MaskedArray
        ``(bands, h, w)``; a masked array's masked pixels become transparent, and no others
        (``sfclayer.raster.to_numpy(tile, masked=True)``: a black pixel that is data stays opaque).
    nodata : float, optional
        For a plain array: pixels equal to it in every band (and NaN pixels) become transparent.
    colormap : str
        For one band: a matplotlib colormap name.
    rescale : (float, float), optional
        For one band: the values mapped to the colormap's ends; the tile's own min/max otherwise.
        3/4-band tiles of other types than uint8 are scaled from it to 0..255 too.
    size : (int, int), optional
        (width, height) to pad the image to (transparent) when the tile is smaller: edge tiles.
    """
    valid = _valid(array, nodata)
    a = np.ma.getdata(array)
    bands, h, w = a.shape
    if bands in (3, 4):
        if a.dtype == np.uint8:
            rgb = a
        else:
            vals = a[:, valid]
            lo, hi = rescale if rescale else (
                (float(np.nanmin(vals)), float(np.nanmax(vals))) if vals.size else (0.0, 1.0))
            rgb = (np.clip((a.astype(np.float64) - lo) / ((hi - lo) or 1.0), 0, 1) * 255).round().astype(np.uint8)
        out = np.empty((h, w, 4), np.uint8)
        out[..., :3] = rgb[:3].transpose(1, 2, 0)
        out[..., 3] = rgb[3] if bands == 4 else 255
    else:
        # One band (or 2: the first is drawn) through the colormap.
        v = a[0].astype(np.float64)
        if rescale:
            lo, hi = rescale
        else:
            vals = v[valid]
            lo, hi = (float(vals.min()), float(vals.max())) if vals.size else (0.0, 1.0)
        scaled = np.clip((v - lo) / ((hi - lo) or 1.0), 0, 1)
        idx = np.nan_to_num(scaled * 255, nan=0).round().astype(np.uint8)
        out = _colormap_lut(colormap)[idx]
    out[..., 3] = np.where(valid, out[..., 3], 0)
    if size is not None and (size[0] > w or size[1] > h):
        padded = np.zeros((max(size[1], h), max(size[0], w), 4), np.uint8)
        padded[:h, :w] = out
        out = padded
    return out


def encode(rgba, fmt="png"):
    """PNG or WebP bytes of an ``(h, w, 4)`` uint8 image."""
    from PIL import Image

    if fmt not in FORMATS:
        raise InvalidArgument(f"image format: {fmt!r} is not served ({', '.join(FORMATS)})")
    image = Image.fromarray(rgba, "RGBA")
    buf = io.BytesIO()
    if fmt == "png":
        image.save(buf, "PNG", compress_level=1)  # fast: tiles are made per request
    else:
        image.save(buf, "WEBP", lossless=True, method=0)
    return buf.getvalue()


@functools.lru_cache(maxsize=16)
def empty_png(width=256, height=256):
    """A fully transparent PNG (the body of ``404``s asked for with ``?empty=transparent``)."""
    return encode(np.zeros((height, width, 4), np.uint8), "png")
