"""The tile server's ASGI app (Starlette): routes, errors, caching headers, one log line a request.

Layers are addressed by the names the server was started with; nothing a request holds reaches
the file system as a path (static files come from a table built at start-up).
"""

import asyncio
import base64
import concurrent.futures
import datetime as _dt
import hashlib
import json
import os
import re
import time
import urllib.parse

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route

from ..errors import InvalidArgument, KeyNotFound, KeyOutOfBounds, SfcLayerError
from . import ogc, tiles
from .coalesce import Coalescer
from .middleware import etag_matches, middleware
from .stored import TitilerMount
from .tiles import COLORMAP_NOTE

__all__ = ["TileApp", "HttpError", "static_files"]

_INT = re.compile(r"^-?[0-9]{1,10}$")
_STATIC_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")
_TILE_PARAMS = {"time", "colormap_name", "colormap", "rescale", "empty", "f"}
CACHE_CONTROL = "public, max-age=300"


class HttpError(Exception):
    """An HTTP error answered as ``{"error": ..., "status": ...}``."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.message = message


def static_files():
    """``{url name: (bytes, media type)}``: the viewer's files and Leaflet's, read once at start."""
    import xstatic.pkg.leaflet as leaflet

    types = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
             ".html": "text/html; charset=utf-8", ".png": "image/png", ".svg": "image/svg+xml",
             ".ico": "image/x-icon"}
    out = {}
    sources = [(_STATIC_DIR, ""), (leaflet.BASE_DIR, "leaflet/"),
               (os.path.join(leaflet.BASE_DIR, "images"), "leaflet/images/")]
    for folder, prefix in sources:
        for entry in sorted(os.listdir(folder)):
            ext = os.path.splitext(entry)[1]
            full = os.path.join(folder, entry)
            if ext in types and os.path.isfile(full):
                with open(full, "rb") as f:
                    out[prefix + entry] = (f.read(), types[ext])
    return out


def _int(text, what):
    if not _INT.match(text or "") or not -2**31 <= int(text) < 2**31:
        raise HttpError(400, f"{what}: {text!r} is not an integer (-2^31..2^31-1)")
    return int(text)


def _json_default(v):
    if isinstance(v, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(v)).decode("ascii")
    if isinstance(v, (_dt.datetime, _dt.date)):
        return v.isoformat()
    if hasattr(v, "tolist"):
        return v.tolist()
    raise TypeError(f"{type(v).__name__} is not JSON")


def _json(payload, status=200, headers=None):
    body = json.dumps(payload, default=_json_default, allow_nan=False, separators=(",", ":")).encode()
    return Response(body, status, headers=headers, media_type="application/json")


def _error(status, message):
    return _json({"error": message, "status": status}, status)


class _TileOptions:
    """How a col/row route draws its tiles: rio-tiler's colormap name (one band), ``rescale``
    (min, max) or None, ``empty`` (None, ``404``, ``transparent``), and the deprecation ``note`` of
    ``?colormap=<name>`` (None, else the ``Warning`` header)."""

    def __init__(self, colormap, rescale, empty, note):
        self.colormap, self.rescale, self.empty, self.note = colormap, rescale, empty, note

    @property
    def headers(self):
        return {"Warning": self.note} if self.note else {}


class TileApp:
    """The ASGI app over served layers.

    Parameters
    ----------
    served : dict
        name → :class:`~sfclayer.server.catalog.Served`.
    coalesce_ms : float
        The coalescing window (0 disables).
    workers : int
        Threads for look-ups and rendering.
    log : callable
        Gets one line per request.
    host : str
        The address (or name) the server listens on: requests must name it, an IP address,
        ``localhost`` or one of ``allowed_hosts`` in their ``Host`` header (DNS rebinding).
    allowed_hosts : iterable of str
        More ``Host`` names to answer; ``*`` answers any.
    cors_origins : iterable of str
        Origins whose pages may read the server (``*`` for any); none by default.
    max_tiles : int, optional
        The most tiles of a level one warped request may read (TiTiler's endpoints; the tiler's
        ``MAX_TILES`` by default).
    """

    def __init__(self, served, coalesce_ms=2.0, workers=8, log=print, host="127.0.0.1", allowed_hosts=(),
                 cors_origins=(), max_tiles=None):
        self.served = dict(served)
        self.log = log
        self.coalesce_ms = float(coalesce_ms)
        self.executor = concurrent.futures.ThreadPoolExecutor(max(1, int(workers)), thread_name_prefix="sfclayer-serve")
        self.coalescers = {(name, z): Coalescer(lv, self.executor, self.coalesce_ms / 1000.0)
                           for name, s in self.served.items() for z, lv in s.levels.items()}
        self.static = static_files()
        self.requests = 0
        self.titiler = TitilerMount(self.served, max_tiles)
        routes = [
            Route("/", self.index),
            Route("/favicon.ico", self.favicon),
            Route("/static/{file:path}", self.static_file),
            Route("/layers", self.layers),
            Route("/layers/{name}", self.layer),
            Route("/layers/{name}/tilejson.json", self.tilejson),
            Route("/layers/{name}/tiles/{z}/{x}/{y}.{fmt}", self.xyz_tile),
            Route("/layers/{name}/values/{col}/{row}", self.values),
            Route("/layers/{name}/keys/{col}/{row}", self.key_info),
            Route("/conformance", self.conformance),
            Route("/collections", self.collections),
            Route("/collections/{name}", self.collection),
            Route("/collections/{name}/tiles", self.tilesets),
            Route("/collections/{name}/tiles/{tms}", self.tileset),
            Route("/collections/{name}/tiles/{tms}/{matrix}/{row}/{col}", self.ogc_tile),
            Route("/tileMatrixSets", self.tile_matrix_sets),
            Route("/tileMatrixSets/{tms}", self.tile_matrix_set),
            # TiTiler's endpoints (titiler.core's factory over sfclayer's rio-tiler reader), after ours
            Mount("", self.titiler),
        ]
        async def http_error(request, e):  # async: Starlette would run a plain function on a thread
            return _error(e.status, e.message)

        async def starlette_error(request, e):
            return _error(e.status_code, f"{e.detail}: {request.url.path}")

        async def layer_error(request, e):  # e.g. CorruptLayer naming the damaged file
            status = 400 if isinstance(e, InvalidArgument) else 404 if isinstance(e, KeyNotFound) else 500
            return _error(status, f"{type(e).__name__}: {e}")

        self.app = Starlette(routes=routes, middleware=middleware(host, allowed_hosts, cors_origins),
                             exception_handlers={HttpError: http_error, HTTPException: starlette_error,
                                                 SfcLayerError: layer_error})

    # ---------------------------------------------------------------------------------------------
    # ASGI, with the request log

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        start = time.perf_counter()
        status, size = [0], [0]

        async def logged_send(message):
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            elif message["type"] == "http.response.body":
                size[0] += len(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, receive, logged_send)
        finally:
            self.requests += 1
            client = scope.get("client") or ("-", 0)
            query = scope.get("query_string", b"").decode("latin-1")
            path = scope.get("raw_path", scope["path"].encode()).decode("latin-1") + (f"?{query}" if query else "")
            ms = (time.perf_counter() - start) * 1000
            self.log(f'{client[0]} "{scope["method"]} {path}" {status[0]} {size[0]} {ms:.1f}ms')

    def close(self):
        self.executor.shutdown(wait=True, cancel_futures=True)

    # ---------------------------------------------------------------------------------------------
    # Helpers

    def _served(self, name):
        s = self.served.get(name)
        if s is None:
            raise HttpError(404, f"no layer named {name!r} (served: {', '.join(sorted(self.served))})")
        return s

    @staticmethod
    def _base(request):
        return str(request.base_url)

    async def _run(self, fn, *args):
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    def _time(self, lv, request):
        text = request.query_params.get("time")
        if not lv.space_time:
            if text is not None:
                raise HttpError(400, f"time: {text!r} is given for a spatial layer (layer {lv.name}: leave time out)")
            return None
        if text is None:
            raise HttpError(400, f"time: nothing is given for a space-time layer (layer {lv.name}: ?time=ISO-8601)")
        try:
            from .catalog import parse_time

            return parse_time(text)
        except InvalidArgument as e:
            raise HttpError(400, str(e)) from None

    @staticmethod
    def _check_params(request, allowed):
        unknown = sorted(set(request.query_params) - allowed)
        if unknown:
            raise HttpError(400, f"query parameters: {', '.join(unknown)} are unknown ({', '.join(sorted(allowed))})")

    def _in_bounds(self, lv, col, row, micros):
        g = lv.grid
        if not (g.col_min <= col <= g.col_max and g.row_min <= row <= g.row_max):
            return False
        if micros is not None:
            tb = lv.key_index.time_bounds
            return tb.min_micros <= micros <= tb.max_micros
        return True

    async def _tile(self, name, z, col, row, micros):
        """(ServedLayer, index, tile or None) for a key; None tile where the layer has none."""
        s = self._served(name)
        lv = s.level(z)
        if lv is None:
            return None, None, None
        if not self._in_bounds(lv, col, row, micros):
            return lv, None, None
        index = lv.index(col, row, micros)
        try:
            tile = await self.coalescers[(name, z)].get(lv.key(col, row, micros))
        except (KeyNotFound, KeyOutOfBounds):
            tile = None
        return lv, index, tile

    def _etag(self, lv, z, col, row, micros, extra, weak=False):
        text = f"{lv.write_id}|{z}|{col}|{row}|{micros}|{extra}"
        digest = hashlib.sha1(text.encode()).hexdigest()[:16]
        return f'{"W/" if weak else ""}"v{lv.version}-z{z}-{col}.{row}-{digest}"'

    @staticmethod
    def _not_modified(request, etag):
        return etag_matches(request.headers.get("if-none-match"), etag)

    # ---------------------------------------------------------------------------------------------
    # The viewer and JSON documents

    async def index(self, request):
        if request.query_params.get("f") == "json":
            return _json(ogc.landing(self._base(request)))
        body, media = self.static["index.html"]
        return Response(body, media_type=media, headers={"Cache-Control": "no-cache"})

    async def favicon(self, request):
        body, media = self.static["favicon.ico"]
        return Response(body, media_type=media, headers={"Cache-Control": "public, max-age=86400"})

    async def static_file(self, request):
        entry = self.static.get(request.path_params["file"])
        if entry is None:
            raise HttpError(404, f"no static file {request.path_params['file']!r}")
        return Response(entry[0], media_type=entry[1], headers={"Cache-Control": "public, max-age=3600"})

    async def layers(self, request):
        return _json({"layers": [self._describe(s) for s in self.served.values()], "coalesceMs": self.coalesce_ms,
                      "formats": list(tiles.formats())})

    async def layer(self, request):
        return _json(self._describe(self._served(request.path_params["name"])))

    @staticmethod
    def _describe(served):
        out = served.describe()
        out["lonlatBounds"] = ogc.lonlat_bounds(served.base.grid)
        return out

    async def tilejson(self, request):
        name = request.path_params["name"]
        s = self._served(name)
        if s.base.grid.tms != "WebMercatorQuad":
            # TileJSON has no way to say another grid: every client would take {z}/{x}/{y} as Web Mercator
            on = f"tile matrix set {s.base.grid.tms}" if s.base.grid.tms else "a grid of its own"
            also = f" and /collections/{name}/tiles/{s.base.grid.tms} (OGC API – Tiles)" if s.base.grid.tms else ""
            raise HttpError(404, f"layer {name} has no TileJSON: it is on {on}, not WebMercatorQuad, and TileJSON "
                                 f"clients read {{z}}/{{x}}/{{y}} as Web Mercator tiles; its grid is described at "
                                 f"/layers/{name}{also}")
        self._check_params(request, _TILE_PARAMS - {"f", "empty"} | {"format"})
        fmt = request.query_params.get("format", "png")
        if fmt not in tiles.formats():
            raise HttpError(400, f"format: {fmt!r} is not served ({', '.join(tiles.formats())})")
        passed = {k: v for k, v in request.query_params.items() if k != "format"}
        options = self._tile_options(s.base, passed)  # a TileJSON never names tiles that would answer 400
        if options.note:  # its tiles by the current name
            passed = {"colormap_name" if k == "colormap" else k: v for k, v in passed.items()}
        query = ("?" + urllib.parse.urlencode(passed, safe=",:")) if passed else ""
        return _json(ogc.tilejson(name, s, self._base(request), fmt, query), headers=options.headers)

    # ---------------------------------------------------------------------------------------------
    # Tiles

    def _tile_options(self, lv, params):
        """The col/row routes' drawing options (:class:`_TileOptions`); 400 naming a bad parameter."""
        name, parameter, note = params.get("colormap_name"), "colormap_name", None
        if "colormap" in params:
            text = params["colormap"]
            if text.lstrip().startswith(("{", "[")):
                raise HttpError(400, f"colormap: a JSON colormap is taken by TiTiler's tile endpoint "
                                     f"(/layers/{lv.name}/tiles/{{tileMatrixSetId}}/{{z}}/{{x}}/{{y}}); here give "
                                     f"colormap_name=<name>")
            if name is not None:
                raise HttpError(400, f"colormap: {text!r} is given with colormap_name={name!r} (give colormap_name "
                                     f"alone: colormap=<name> is its deprecated spelling)")
            name, parameter, note = text, "colormap", COLORMAP_NOTE
        try:
            if name is not None:
                tiles.colormap_table(name, parameter)
            rescale = tiles.parse_rescale(params["rescale"]) if "rescale" in params else None
        except InvalidArgument as e:
            raise HttpError(400, str(e)) from None
        empty = params.get("empty")
        if empty not in (None, "transparent", "404"):
            raise HttpError(400, f"empty: {empty!r} is not a choice (transparent: a transparent PNG with the 404; or "
                                 f"leave it out)")
        if lv.pixel_layout is None:
            raise HttpError(400, f"layer: {lv.name!r} has no raster columns (its values are "
                                 f"{', '.join(lv.value_columns)}: use /layers/{lv.name}/values/{{col}}/{{row}})")
        return _TileOptions((name or "viridis").lower(), rescale, empty, note)

    async def _image(self, request, name, z, col, row, fmt):
        s = self._served(name)
        if fmt != "png" and fmt not in tiles.formats():
            raise HttpError(400 if fmt not in ("png", "webp") else 404,
                            f"image format: {fmt!r} is not served ({', '.join(tiles.formats())})")
        self._check_params(request, _TILE_PARAMS)
        lv0 = s.level(z) or s.base
        options = self._tile_options(lv0, request.query_params)
        micros = self._time(lv0, request)
        extra = f"{fmt}|{options.colormap}|{options.rescale}"
        if s.level(z) is not None and self._in_bounds(lv0, col, row, micros):
            etag = self._etag(lv0, z, col, row, micros, extra)
            if self._not_modified(request, etag):
                return Response(status_code=304, headers={"ETag": etag, "Cache-Control": CACHE_CONTROL,
                                                          **options.headers})
        lv, index, tile = await self._tile(name, z, col, row, micros)
        if tile is None:
            where = f"zoom {z}" if lv is None else f"key ({col}, {row}) at zoom {z}"
            message = f"layer {name} has no tile at {where} (zooms: {', '.join(map(str, s.zooms))})"
            if options.empty == "transparent":
                g = s.base.grid
                return Response(tiles.empty_png(g.tile_width or 256, g.tile_height or 256), 404,
                                media_type="image/png", headers={"X-Sfclayer-Error": message, **options.headers})
            raise HttpError(404, message)

        def draw():
            array, valid = lv.tile_pixels(tile)
            return tiles.render_pixels(array, valid, fmt, options.colormap, options.rescale)

        try:
            body = await self._run(draw)
        except (InvalidArgument, ValueError) as e:
            raise HttpError(500, f"layer {name}, tile ({col}, {row}) cannot be drawn: {e}") from None
        return Response(body, media_type=tiles.formats()[fmt] if fmt != "png" else "image/png",
                        headers={"ETag": self._etag(lv, z, col, row, micros, extra), "Cache-Control": CACHE_CONTROL,
                                 **options.headers})

    async def xyz_tile(self, request):
        p = request.path_params
        z, x, y = _int(p["z"], "z"), _int(p["x"], "x"), _int(p["y"], "y")
        return await self._image(request, p["name"], z, x, y, p["fmt"])

    async def ogc_tile(self, request):
        p = request.path_params
        s = self._served(p["name"])
        if not s.base.grid.tms or p["tms"] != s.base.grid.tms:
            raise HttpError(404, f"layer {p['name']} is not on tile matrix set {p['tms']!r}"
                                 + (f" (it is on {s.base.grid.tms})" if s.base.grid.tms else " (it is on none)"))
        z, row, col = _int(p["matrix"], "tileMatrix"), _int(p["row"], "tileRow"), _int(p["col"], "tileCol")
        fmt = request.query_params.get("f", "png")
        return await self._image(request, p["name"], z, col, row, fmt)

    # ---------------------------------------------------------------------------------------------
    # Values and keys, for programs and the viewer

    def _key_params(self, request):
        p = request.path_params
        s = self._served(p["name"])
        self._check_params(request, {"time", "z"})
        z = _int(request.query_params["z"], "z") if "z" in request.query_params else s.zooms[-1]
        lv = s.level(z)
        if lv is None:
            raise HttpError(404, f"layer {s.name} has no zoom {z} (zooms: {', '.join(map(str, s.zooms))})")
        col, row = _int(p["col"], "col"), _int(p["row"], "row")
        return s, z, lv, col, row, self._time(lv, request)

    async def values(self, request):
        s, z, lv, col, row, micros = self._key_params(request)
        # weak: the JSON may go out gzipped, a different representation of the same values
        etag = self._etag(lv, z, col, row, micros, "values", weak=True) if self._in_bounds(lv, col, row, micros) else None
        if etag and self._not_modified(request, etag):
            return Response(status_code=304, headers={"ETag": etag, "Cache-Control": CACHE_CONTROL})
        _, index, tile = await self._tile(s.name, z, col, row, micros)
        if tile is None:
            raise HttpError(404, f"layer {s.name} has no tile at key ({col}, {row})"
                                 + (f" time {request.query_params['time']}" if micros is not None else ""))
        out = {"layer": s.name, "zoom": z, "col": col, "row": row, "index": index, **lv.files_of(index),
               "values": tile}
        if micros is not None:
            out["time"] = micros
        return _json(out, headers={"ETag": etag, "Cache-Control": CACHE_CONTROL})

    async def key_info(self, request):
        s, z, lv, col, row, micros = self._key_params(request)
        if not self._in_bounds(lv, col, row, micros):
            return _json({"layer": s.name, "zoom": z, "col": col, "row": row, "index": None, "file": None,
                          "inBounds": False})
        index = lv.index(col, row, micros)
        return _json({"layer": s.name, "zoom": z, "col": col, "row": row, "index": index,
                      **lv.files_of(index), "inBounds": True})

    # ---------------------------------------------------------------------------------------------
    # OGC API – Tiles documents

    async def conformance(self, request):
        return _json(ogc.conformance())

    async def collections(self, request):
        base = self._base(request)
        return _json({"collections": [ogc.collection(n, s, base) for n, s in self.served.items()],
                      "links": [{"href": f"{base}collections", "rel": "self", "type": "application/json"}]})

    async def collection(self, request):
        name = request.path_params["name"]
        return _json(ogc.collection(name, self._served(name), self._base(request)))

    def _tms_served(self, name):
        s = self._served(name)
        if not s.base.grid.tms:
            raise HttpError(404, f"layer {name} is not on a standard tile matrix set; use /layers/{name}/tilejson.json")
        return s

    async def tilesets(self, request):
        name = request.path_params["name"]
        s = self._tms_served(name)
        ts = ogc.tileset(name, s, self._base(request))
        return _json({"tilesets": [{k: ts[k] for k in ("title", "dataType", "crs", "links")}]})

    async def tileset(self, request):
        name, tms = request.path_params["name"], request.path_params["tms"]
        s = self._tms_served(name)
        if tms != s.base.grid.tms:
            raise HttpError(404, f"layer {name} is on tile matrix set {s.base.grid.tms}, not {tms!r}")
        return _json(ogc.tileset(name, s, self._base(request)))

    def _tms_ids(self):
        return {s.base.grid.tms for s in self.served.values() if s.base.grid.tms}

    async def tile_matrix_sets(self, request):
        return _json(ogc.tile_matrix_sets(self._base(request), self._tms_ids()))

    async def tile_matrix_set(self, request):
        tms = request.path_params["tms"]
        if tms not in self._tms_ids():
            raise HttpError(404, f"no tile matrix set {tms!r} here (served: {', '.join(sorted(self._tms_ids())) or 'none'})")
        return _json(ogc.tile_matrix_set(tms))
