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
from .png import encode_png as _encode_png
from .tiler import MAX_TILES, LayerReader, TooManyTiles
from .tiles import COLORMAP_NOTE

__all__ = ["titiler_app", "PREFIX"]

#: Where the factory's routes are mounted.
PREFIX = "/layers/{name}"

_DOCUMENTS = ("/tilejson.json", "/map.html")
_SCALE = re.compile(r"^(?P<head>/layers/[^/]+/tiles/(?P<tms>[^/]+)/[0-9]+/[0-9]+/[0-9]+)@(?P<s>[1-4])x"
                    r"(?P<tail>\.[a-z0-9]+)?$")




def render_tile(image, colormap=None, output_format=None, add_mask=True, rescale=None, color_formula=None,
                **kwargs):
    """titiler.core's ``render_image``, but PNG tiles of 8-bit gray or RGB without a colormap are encoded
    by :func:`sfclayer.server.png.encode_png` (the same pixels in a quarter of the time of GDAL's PNG driver at level 6)."""
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
    return _Aliases(app)


class _Aliases:
    """ASGI: ``.../{y}@{s}x[.fmt]`` (TiTiler's high-resolution tiles) → ``.../{y}[.fmt]?tilesize=s × 256``;
    TileJSON and the map viewer on 256 px tiles unless told otherwise; ``?colormap=<name>`` noted as
    deprecated in a ``Warning`` header."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
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
                message = dict(message, headers=list(message.get("headers", [])) + [(b"warning", COLORMAP_NOTE.encode())])
            await send(message)

        return await self.app(scope, receive, noted)

