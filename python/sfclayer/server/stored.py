"""Stored tiles straight to PNG (the fast path), and TiTiler's endpoints mounted lazily.

A tile asked on the tile matrix set a layer was ingested onto, at one of its zooms, without
parameters, is its stored tile: one look-up and one PNG encode, without titiler's dependencies.
:class:`TitilerMount` answers everything else under ``/layers/{name}/`` with :mod:`.tiling`'s app,
built at the first request that needs it (or by :meth:`TitilerMount.warm` on a thread when the
server starts): importing fastapi, titiler and rio-tiler (which imports xarray and pandas) takes
~2 s of CPU, which a server that answers stored tiles need not wait for.
"""

import asyncio
import re
import struct
import threading
import zlib

import numpy as np

__all__ = ["stored_png", "TitilerMount", "PNG_LEVEL"]

#: zlib level of PNG tiles (see :func:`_encode_png`): 1; level 0 was faster still but ~7 × larger.
PNG_LEVEL = 1


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

    def app(self):
        """TiTiler's app, built on the first call (thread-safe)."""
        with self._lock:
            if self._app is None:
                from .tiling import titiler_app

                kw = {} if self.max_tiles is None else {"max_tiles": self.max_tiles}
                self._app = titiler_app(self.served, **kw)
            return self._app

    def warm(self):
        """Build TiTiler's app on a daemon thread (call after any fork: a fork during an import would
        leave the child holding the import lock)."""
        threading.Thread(target=self.app, name="sfclayer-titiler-import", daemon=True).start()

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
                        return
        app = self._app
        if app is None:
            app = await asyncio.get_running_loop().run_in_executor(None, self.app)
        await app(scope, receive, send)
