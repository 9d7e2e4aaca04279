"""A tile server and web map viewer straight from layers (``sfclayer serve``).

An ASGI app (Starlette on uvicorn) keeps one open :class:`~sfclayer.Layer` per served layer (or
pyramid level), read in-process (no JVM; ``spark=None``, worker processes) or through a Spark
driver, and answers:

==========================================================  ========================================
``/``                                                       the web map viewer (Leaflet, served here)
``/layers``, ``/layers/{name}``                             served layers and their metadata (JSON)
``/layers/{name}/tilejson.json``                            TileJSON 3.0 (layers on WebMercatorQuad only)
``/layers/{name}/tiles/{z}/{x}/{y}.png`` (``.webp``)        a rendered tile (``x``, ``y`` = col, row)
``/layers/{name}/values/{col}/{row}``                       the tile's value columns (JSON, base64)
``/layers/{name}/keys/{col}/{row}``                         the key's curve index and data file
``/collections/{name}/tiles/{tms}/{matrix}/{row}/{col}``    OGC API – Tiles (layers on a standard TMS)
``/tileMatrixSets``, ``/conformance``, ``/collections``      OGC API documents
``/layers/{name}/tiles/{tms}/{z}/{x}/{y}`` and the rest     TiTiler's endpoints (:mod:`.tiling`)
==========================================================  ========================================

Query parameters: ``time`` (ISO-8601, space-time layers), ``colormap_name`` (rio-tiler's colormaps;
``colormap=<name>`` still reads, with a deprecation ``Warning``) and ``rescale=min,max`` (single-band
tiles), ``empty=transparent`` (a transparent PNG with a ``404``). Tiles are drawn by rio-tiler, as
TiTiler's endpoint draws them (:mod:`.tiles`).

HTTP: ``ETag`` on tiles and values, ``If-None-Match`` compared weakly (``304``); JSON gzipped for
clients that accept it; CORS off unless origins are given (``cors_origins``, ``--cors-origin``);
requests whose ``Host`` names another server are refused (DNS rebinding; ``allowed_hosts``,
``--allowed-host``); listening off loopback prints a warning: nothing is authenticated.

Examples
--------
>>> with sfclayer.serve(spark, ["/data/world"], port=0, background=True) as server:  # doctest: +SKIP
...     print(server.url)
http://127.0.0.1:40123/
"""

import contextlib
import ipaddress
import os
import signal
import socket
import sys
import threading

import uvicorn

from ..errors import InvalidArgument
from .app import TileApp
from .catalog import layer_names, open_served

__all__ = ["serve", "TileServer", "TileApp", "DEFAULT_COALESCE_MS"]

#: The coalescing window the server uses unless told otherwise: off, because bench/serving.py
#: measured no win on a local filesystem (bench/RESULTS.md, "Serving"); ``--coalesce-ms 2`` turns it on.
DEFAULT_COALESCE_MS = 0.0


def _stderr(line):
    print(line, file=sys.stderr, flush=True)


class TileServer:
    """A tile server over layers, bound to its socket from construction on.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
    paths : list of str
        ``PATH`` or ``NAME=PATH``; names default to the paths' last parts.
    host : str
        ``127.0.0.1`` (loopback) unless told otherwise.
    port : int
        0 picks a free port.
    coalesce_ms : float
        Request coalescing window in milliseconds; 0 disables.
    workers : int
        Threads doing look-ups and rendering.
    log : callable
        Gets the start message and one line per request (stderr by default).
    allowed_hosts : iterable of str, optional
        ``Host`` names to answer besides IP addresses, ``localhost`` and ``host`` (``*``: any).
    cors_origins : iterable of str, optional
        Origins whose web pages may read the server (``*``: any); none by default.
    processes : int
        Worker processes (:meth:`serve_forever` forks them; in-process reading only).
    max_tiles : int
        The most tiles of a level one warped request may read.
    """

    def __init__(self, spark, paths, host="127.0.0.1", port=8000, coalesce_ms=DEFAULT_COALESCE_MS, workers=8,
                 log=_stderr, cache_size=64, allowed_hosts=(), cors_origins=(), processes=1, max_tiles=None):
        self.log = log
        self.served = {}
        if processes > 1 and spark is not None:
            raise InvalidArgument(f"processes: {processes} worker processes need the in-process reader (a Spark "
                                  f"driver's JVM cannot be forked): leave out --spark, or serve with --processes 1")
        self.processes = int(processes)
        try:
            for name, path in layer_names(paths).items():
                self.served[name] = open_served(spark, name, path, cache_size=cache_size)
            self.app = TileApp(self.served, coalesce_ms=coalesce_ms, workers=workers, log=log, host=host,
                               allowed_hosts=allowed_hosts or (), cors_origins=cors_origins or (), max_tiles=max_tiles)
            family = socket.AF_INET6 if ":" in host else socket.AF_INET
            # proto IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say they are TCP, and
            # without it a response's header and body writes meet delayed ACKs (~40 ms per request).
            self.socket = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.socket.bind((host, int(port)))
            self.socket.listen(1024)  # connections queue from the start message on
        except BaseException:
            self._close_layers()
            raise
        self.host, self.port = self.socket.getsockname()[:2]
        shown = f"[{self.host}]" if ":" in self.host else self.host
        self.url = f"http://{shown}:{self.port}/"
        config = uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan="off",
                                timeout_graceful_shutdown=5, limit_concurrency=1024, backlog=1024)
        self._server = _QuietServer(config)
        self._thread = None
        self.stopped_by = None

    def _close_layers(self):
        app = getattr(self, "app", None)
        if app is not None:
            app.close()
        for s in self.served.values():
            s.close()
        self.served = {}

    def _announce(self):
        names = ", ".join(self.served)
        self.log(f"sfclayer serve: {len(self.served)} layer(s) ({names}) at {self.url}  — open it in a browser; "
                 f"Ctrl-C stops")
        if not ipaddress.ip_address(self.host.split("%")[0]).is_loopback:
            self.log(f"sfclayer serve: warning: listening on {self.host}, not loopback: anyone who can reach this "
                     f"machine reads every served layer (nothing is authenticated); requests must name it by IP "
                     f"address, its host name or an --allowed-host in their Host header")

    def serve_forever(self):
        """Serve until SIGINT or SIGTERM (in the main thread) or :meth:`stop`; then close the layers.

        With ``processes`` > 1 the process forks that many minus one copies of itself, each serving
        the same listening socket with its own open layers (the kernel hands each connection to one):
        serving scales with cores. SIGTERM or SIGINT to this process stops them all."""
        self._announce()
        children = []
        try:
            for _ in range(self.processes - 1):
                pid = os.fork()
                if pid == 0:  # a worker: serve until told to stop, then leave without the parent's clean-up
                    try:
                        self.app.titiler.warm()
                        self._server.run(sockets=[self.socket])
                    finally:
                        os._exit(0)
                children.append(pid)
            self.app.titiler.warm()
            self._server.run(sockets=[self.socket])
        finally:
            for pid in children:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
            for pid in children:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, 0)
            self.stopped_by = self._server.stopped_by
            self._close()

    def start(self):
        """Serve on a background thread; returns once the server accepts connections."""
        self._announce()
        self.app.titiler.warm()
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self.socket]},
                                        name=f"sfclayer-serve-{self.port}", daemon=True)
        self._thread.start()
        while not self._server.started and self._thread.is_alive():
            self._thread.join(0.02)
        if not self._server.started:
            self._close()
            raise RuntimeError(f"the tile server at {self.url} did not start")
        return self

    def stop(self):
        """Stop serving (connections finish within a few seconds) and close the layers."""
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(30)
            self._thread = None
        self._close()

    def _close(self):
        if self.served:
            self._close_layers()
            self.socket.close()
            self.log(f"sfclayer serve: stopped{f' ({self.stopped_by})' if self.stopped_by else ''}; layers closed")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class _QuietServer(uvicorn.Server):
    """uvicorn's server with signal handling that stops cleanly and does not re-raise the signal
    (uvicorn's own re-raises SIGTERM after shutdown, killing the process before its clean-up)."""

    stopped_by = None

    @contextlib.contextmanager
    def capture_signals(self):
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def handle(sig, frame):
            if self.should_exit and sig == signal.SIGINT:
                self.force_exit = True
            self.should_exit = True
            self.stopped_by = signal.Signals(sig).name

        previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def serve(spark, paths, host="127.0.0.1", port=8000, coalesce_ms=DEFAULT_COALESCE_MS, workers=8, log=_stderr,
          background=False, allowed_hosts=(), cors_origins=(), processes=1, max_tiles=None):
    """Serve layers over HTTP: tiles, values, TileJSON, OGC API – Tiles and a web map viewer.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession or None
        Its driver JVM reads the layers; None reads them in-process (no JVM; GeoTrellis catalogs
        ``gt:...`` need a session).
    paths : list of str
        Layer paths, or ``NAME=PATH``.
    host, port : str, int
        Where to listen: loopback unless told otherwise; port 0 picks a free one.
    coalesce_ms : float
        Requests arriving within this many milliseconds are looked up together (0 disables).
    workers : int
        Threads for look-ups and rendering.
    log : callable
        One line per request, and the start message with the URL.
    background : bool
        False: serve until SIGINT/SIGTERM, then close the layers and return None. True: return a
        started :class:`TileServer` (``.url``, ``.stop()``, a context manager).
    allowed_hosts : iterable of str
        ``Host`` header names to answer besides IP addresses, ``localhost`` and ``host``; ``*``
        turns the DNS-rebinding check off.
    cors_origins : iterable of str
        Origins (``https://example.org``, or ``*``) whose pages may read tiles and JSON across
        origins (``Access-Control-Allow-Origin``, preflight answered); none by default.
    processes : int
        Worker processes serving the socket (in-process reader only; ``background`` serves in one).
    max_tiles : int
        The most tiles of a pyramid level one warped tile (TiTiler's endpoints) may read; more is a 400
        saying to build a pyramid.
    """
    server = TileServer(spark, paths, host=host, port=port, coalesce_ms=coalesce_ms, workers=workers, log=log,
                        allowed_hosts=allowed_hosts, cors_origins=cors_origins, processes=processes,
                        max_tiles=max_tiles)
    if background:
        return server.start()
    server.serve_forever()
    return None
