"""HTTP details of the tile server that are not about layers: which ``Host`` names it answers
(DNS rebinding), ``If-None-Match`` comparison, and the middleware stack (Host check, CORS, gzip).

DNS rebinding: a web page on ``evil.example`` can make its own name resolve to ``127.0.0.1`` and
then read a loopback server as same-origin; the browser still sends ``Host: evil.example``. So the
server answers only requests whose ``Host`` is an IP address literal (the browser's origin is then
that address itself), ``localhost`` (or a ``*.localhost`` name), the name it was started on, the
machine's host name when listening off loopback, or a name allowed with ``--allowed-host``.

Examples
--------
>>> check = HostCheck(None, bound="127.0.0.1")
>>> [check.allowed(h) for h in ("127.0.0.1:8000", "localhost:8000", "[::1]:8000", "evil.example:8000")]
[True, True, True, False]
>>> etag_matches('W/"v1-a", "v2-b"', '"v1-a"'), etag_matches('"v1-a"', '"v1-b"')
(True, False)
"""

import ipaddress
import json
import socket

from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.middleware.gzip import GZipMiddleware

__all__ = ["HostCheck", "etag_matches", "middleware", "is_loopback"]


def is_loopback(host):
    """Whether ``host`` (an address or a name) is a loopback one."""
    if host in ("localhost", "") or host.endswith(".localhost"):
        return host != ""
    try:
        return ipaddress.ip_address(host.strip("[]").split("%")[0]).is_loopback
    except ValueError:
        return False


def _is_address(name):
    try:
        ipaddress.ip_address(name.strip("[]").split("%")[0])
        return True
    except ValueError:
        return False


def _host_name(header):
    """The name of a ``Host`` header without its port, lower case, without a trailing dot."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[:header.find("]") + 1] if "]" in header else header
    if header.count(":") == 1:
        header = header.split(":", 1)[0]
    return header.rstrip(".")


class HostCheck:
    """ASGI middleware: a request whose ``Host`` names another server gets a 400 (see the module).

    Parameters
    ----------
    app : ASGI app
    bound : str
        The address or name the server listens on.
    allowed : iterable of str
        More names to answer (``*``: any, turning the check off).
    """

    def __init__(self, app, bound="127.0.0.1", allowed=()):
        self.app = app
        names = {_host_name(a) for a in allowed}
        self.any = "*" in names
        names.add(_host_name(bound))
        if not is_loopback(bound):
            names.add(socket.gethostname().lower())
        self.names = names

    def allowed(self, header):
        if self.any or header is None:  # no Host (HTTP/1.0): not a browser
            return True
        name = _host_name(header)
        return name in self.names or name == "localhost" or name.endswith(".localhost") or _is_address(name)

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            header = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"host"), None)
            if not self.allowed(header):
                name = _host_name(header)
                body = json.dumps({"status": 400, "error": (
                    f"Host {name!r} is not a name of this server (requests naming other hosts are refused against "
                    f"DNS rebinding); to serve it under that name, start it with --allowed-host {name}")}).encode()
                await send({"type": "http.response.start", "status": 400, "headers": [
                    (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def etag_matches(header, etag):
    """Whether an ``If-None-Match`` header matches ``etag``: the weak comparison of RFC 9110 §13.1.2
    (``W/"x"`` matches ``"x"``: proxies that compress a response weaken its tag)."""
    if header is None:
        return False
    if header.strip() == "*":
        return True
    opaque = etag[2:] if etag.startswith("W/") else etag
    for tag in header.split(","):
        tag = tag.strip()
        if (tag[2:] if tag.startswith("W/") else tag) == opaque:
            return True
    return False


def middleware(bound, allowed_hosts=(), cors_origins=()):
    """Starlette's middleware list, outermost first: the Host check, CORS (only with origins given:
    ``*`` or exact origins such as ``https://example.org``; preflight ``OPTIONS`` answered), and gzip
    for JSON and text (never for PNG/WebP tiles, already compressed)."""
    out = [Middleware(HostCheck, bound=bound, allowed=tuple(allowed_hosts))]
    if cors_origins:
        out.append(Middleware(CORSMiddleware, allow_origins=list(cors_origins), allow_methods=["GET", "HEAD"],
                              allow_headers=["*"], expose_headers=["ETag", "X-Sfclayer-Error"], max_age=3600))
    out.append(Middleware(GZipMiddleware, minimum_size=500, compresslevel=6))
    return out
