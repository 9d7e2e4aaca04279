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
import threading

import numpy as np

from .. import raster as _raster

__all__ = ["stored_png", "TitilerMount", "PNG_LEVEL", "WARM_DELAY_S"]

#: Seconds :meth:`TitilerMount.warm` waits for a first stored tile before importing TiTiler's app.
WARM_DELAY_S = 1.0

from .png import PNG_LEVEL, encode_png as _encode_png


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
