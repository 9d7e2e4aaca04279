"""TiTiler's endpoints over the served layers: titiler.core's ``TilerFactory`` with
:class:`~sfclayer.server.tiler.LayerReader` as its reader, mounted at ``/layers/{name}``.

===================================================================  =====================================
``/layers/{name}/tiles/{tileMatrixSetId}/{z}/{x}/{y}[@{s}x][.{fmt}]``  a tile on any morecantile tile matrix set
``/layers/{name}/{tileMatrixSetId}/tilejson.json``                   TileJSON (the data's bounds and zooms)
``/layers/{name}/{tileMatrixSetId}/map.html``                        TiTiler's map viewer
``/layers/{name}/{tileMatrixSetId}/WMTSCapabilities.xml``            WMTS (``/layers/{name}/WMTSCapabilities.xml``)
``/layers/{name}/info``, ``/statistics``, ``/point/{lon},{lat}``      rio-tiler's models as JSON
``/layers/{name}/preview[.{fmt}]``, ``/bbox/{minx},{miny},{maxx},{maxy}[/{w}x{h}].{fmt}``  images
===================================================================  =====================================

TiTiler's query parameters (``bidx``, ``expression``, ``rescale``, ``colormap_name``, ``colormap``,
``resampling``, ``reproject``, ``nodata``, ``return_mask``, ``tilesize``...), plus ``time`` for
space-time layers. ``?colormap=<name>`` (sfclayer's parameter before TiTiler's) still reads as
``colormap_name``, with a ``Deprecation`` note in the response's ``Warning`` header.
"""

import dataclasses
import re
import struct
import zlib
import urllib.parse
from typing import Annotated

import numpy as np
from fastapi import FastAPI, HTTPException, Path, Query
from rio_tiler.colormap import cmap as _cmaps
from rio_tiler.errors import PointOutsideBounds
from titiler.core.dependencies import ColorMapParams, DefaultDependency
from titiler.core.errors import DEFAULT_STATUS_CODES, add_exception_handlers
from titiler.core.factory import TilerFactory
from titiler.extensions import wmtsExtension

from ..errors import CorruptLayer, InvalidArgument, KeyNotFound, SfcLayerError
from .tiler import MAX_TILES, LayerReader, TooManyTiles

__all__ = ["titiler_app", "PREFIX"]

#: Where the factory's routes are mounted.
PREFIX = "/layers/{name}"

_DOCUMENTS = ("/tilejson.json", "/map.html")
_SCALE = re.compile(r"^(?P<head>/layers/[^/]+/tiles/(?P<tms>[^/]+)/[0-9]+/[0-9]+/[0-9]+)@(?P<s>[1-4])x"
                    r"(?P<tail>\.[a-z0-9]+)?$")


#: zlib level of PNG tiles (see :func:`_encode_png`): 1; level 0 was faster still but ~7 × larger.
PNG_LEVEL = 1


def render_tile(image, colormap=None, output_format=None, add_mask=True, rescale=None, color_formula=None,
                **kwargs):
    """titiler.core's ``render_image``, but PNG tiles of 8-bit gray or RGB without a colormap are encoded
    by :func:`_encode_png` (the same pixels in a quarter of the time of GDAL's PNG driver at level 6)."""
    from titiler.core.resources.enums import ImageType
    from titiler.core.utils import render_image

    if output_format == ImageType.png and not colormap and not color_formula and not kwargs:
        if rescale:
            image.rescale(rescale)
            rescale = None
        data = image.data
        if data.dtype == np.uint8 and data.shape[0] in (1, 3):
            bands = [data[i] for i in range(data.shape[0])] + ([image.mask] if add_mask else [])
            return _encode_png(bands), ImageType.png.mediatype
    return render_image(image, colormap=colormap, output_format=output_format, add_mask=add_mask, rescale=rescale,
                        color_formula=color_formula, **kwargs)


def titiler_app(served, max_tiles=MAX_TILES, time_parser=None):
    """The FastAPI app of TiTiler's endpoints over ``served`` (name → Served).

    Parameters
    ----------
    served : dict
        name → :class:`~sfclayer.server.catalog.Served`.
    max_tiles : int
        The most tiles of a level a warped request may read.
    time_parser : callable
        ISO-8601 text → epoch microseconds (``catalog.parse_time``).
    """
    from .catalog import parse_time

    parse = time_parser or parse_time

    def layer_path(name: Annotated[str, Path(description="A served layer's name")]):
        s = served.get(name)
        if s is None:
            raise HTTPException(404, f"no layer named {name!r} (served: {', '.join(sorted(served))})")
        if s.base.pixel_layout is None:
            raise HTTPException(400, f"layer {name!r} has no raster columns: use /layers/{name}/values/{{col}}/{{row}}")
        return s

    @dataclasses.dataclass
    class LayerParams(DefaultDependency):
        """The layer's reading options: ``time`` for space-time layers."""

        time: Annotated[str | None, Query(description="ISO-8601 time of a space-time layer")] = None

        def as_dict(self, exclude_none=True):
            out = {"max_tiles": max_tiles}
            if self.time is not None:
                out["time"] = parse(self.time)
            return out

    def colormap(
        colormap_name: Annotated[str | None, Query(description="Colormap name")] = None,
        colormap: Annotated[str | None, Query(description="JSON encoded custom colormap")] = None,
    ):
        # sfclayer's ?colormap=<name> came before TiTiler's names: still read, noted as deprecated
        if colormap and not colormap.lstrip().startswith(("{", "[")):
            colormap_name, colormap = colormap, None
        if colormap_name is not None and colormap_name not in _cmaps.list():
            raise HTTPException(400, f"colormap_name: {colormap_name!r} is unknown (one of rio-tiler's: "
                                     f"viridis, terrain, gray...)")
        return ColorMapParams(colormap_name=colormap_name, colormap=colormap)

    factory = TilerFactory(reader=LayerReader, path_dependency=layer_path, reader_dependency=LayerParams,
                           colormap_dependency=colormap, router_prefix=PREFIX, render_func=render_tile,
                           extensions=[wmtsExtension(layer_identifier_provider=lambda s: s.name)])
    app = FastAPI(title="sfclayer tiles", openapi_url="/api", docs_url="/api.html")
    app.include_router(factory.router, prefix=PREFIX)
    add_exception_handlers(app, {**DEFAULT_STATUS_CODES, PointOutsideBounds: 404, TooManyTiles: 400, InvalidArgument: 400,
                                 KeyNotFound: 404, CorruptLayer: 500, SfcLayerError: 500})
    return _Aliases(app, served)


def _chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _encode_png(bands):
    """PNG bytes of 1 to 4 ``(h, w)`` uint8 planes (gray, gray + alpha, RGB, RGBA): every row with the
    Sub filter, zlib at :data:`PNG_LEVEL`. Measured on a 256 px Blue Marble RGBA tile (loaded 2-core
    machine): 4.0 ms and 37.8 KB, against Pillow's 9.7 ms and 37.1 KB at the same level (Pillow tries
    the filters per row) and titiler's GDAL PNG at level 6, 18 ms: the encode is most of a stored tile's
    cost. Any PNG decoder reads it (tests decode it with Pillow and GDAL)."""
    n = len(bands)
    a = np.stack(bands, axis=-1) if n > 1 else bands[0][..., np.newaxis]
    h, w = a.shape[:2]
    rows = np.ascontiguousarray(a).reshape(h, w * n)
    out = np.empty((h, w * n + 1), np.uint8)
    out[:, 0] = 1  # the Sub filter: each byte less the same channel's byte to its left
    out[:, 1:n + 1] = rows[:, :n]
    np.subtract(rows[:, n:], rows[:, :-n], out=out[:, n + 1:])
    color = {1: 0, 2: 4, 3: 2, 4: 6}[n]
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color, 0, 0, 0))
            + _chunk(b"IDAT", zlib.compress(out.tobytes(), PNG_LEVEL)) + _chunk(b"IEND", b""))


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
    a, _ = lv.pixels(tile)
    if a.dtype != np.uint8 or a.shape[0] not in (1, 3) or a.shape[1:] != (g.tile_height, g.tile_width):
        return None
    valid = ~np.ma.getmaskarray(a).all(axis=0)
    data = np.ma.getdata(a)
    return _encode_png([data[i] for i in range(data.shape[0])] + [valid.astype(np.uint8) * np.uint8(255)])


_STORED = re.compile(r"^/layers/(?P<name>[^/]+)/tiles/(?P<tms>[A-Za-z0-9_.-]+)/(?P<z>[0-9]{1,2})/(?P<x>[0-9]{1,9})/"
                     r"(?P<y>[0-9]{1,9})\.png$")


class _Aliases:
    """ASGI: ``.../{y}@{s}x[.fmt]`` (TiTiler's high-resolution tiles) → ``.../{y}[.fmt]?tilesize=s × 256``;
    TileJSON and the map viewer on 256 px tiles unless told otherwise; ``?colormap=<name>`` noted as
    deprecated in a ``Warning`` header."""

    def __init__(self, app, served):
        self.app = app
        self.served = served

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        stored = _STORED.match(scope["path"])
        if stored and not scope.get("query_string") and scope["method"] == "GET":
            # the fast path: a stored tile asked without parameters skips the factory's dependencies
            served = self.served.get(stored["name"])
            if served is not None:
                import anyio

                z, x, y = int(stored["z"]), int(stored["x"]), int(stored["y"])
                body = await anyio.to_thread.run_sync(stored_png, served, stored["tms"], z, x, y)
                if body is not None:
                    await send({"type": "http.response.start", "status": 200, "headers": [
                        (b"content-type", b"image/png"), (b"content-length", str(len(body)).encode())]})
                    await send({"type": "http.response.body", "body": body})
                    return
        m = _SCALE.match(scope["path"])
        if m:
            import morecantile

            try:
                size = morecantile.tms.get(m["tms"]).matrices[0].tileWidth
            except Exception:
                size = 256
            query = urllib.parse.parse_qsl(scope.get("query_string", b"").decode("latin-1"))
            query = [(k, v) for k, v in query if k != "tilesize"] + [("tilesize", str(int(m["s"]) * size))]
            path = m["head"] + (m["tail"] or "")
            scope = dict(scope, path=path, raw_path=path.encode(),
                         query_string=urllib.parse.urlencode(query).encode())
        query = scope.get("query_string", b"")
        if scope["path"].endswith(_DOCUMENTS) and b"tilesize=" not in query:
            # TiTiler's TileJSON asks 512 px tiles by default: ask the matrix set's own (the stored tiles
            # of a layer on it, no warp)
            query += (b"&" if query else b"") + b"tilesize=256"
            scope = dict(scope, query_string=query)
        deprecated = False
        if b"colormap=" in query:
            for k, v in urllib.parse.parse_qsl(query.decode("latin-1")):
                if k == "colormap" and not v.lstrip().startswith(("{", "[")):
                    deprecated = True
        if not deprecated:
            return await self.app(scope, receive, send)

        async def noted(message):
            if message["type"] == "http.response.start":
                note = ('299 sfclayer "colormap=<name> is deprecated: use colormap_name=<name> '
                        '(colormap takes TiTiler\'s JSON map)"')
                message = dict(message, headers=list(message.get("headers", [])) + [(b"warning", note.encode())])
            await send(message)

        return await self.app(scope, receive, noted)

