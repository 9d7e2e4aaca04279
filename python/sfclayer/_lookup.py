"""The client of the driver JVM's look-up socket (``io.sfclayer.lookup.LookupServer``).

py4j moves a tile as base64 text in several writes, which Nagle's algorithm and delayed ACKs turn
into ~40 ms per tile above a few KiB; this loopback socket moves it in one write. The protocol is
described in ``LookupServer``'s Javadoc; this module is its only Python speaker.

Connections: one small bounded pool per server address, shared by every layer of the process (a
tile server with many pyramid levels opens one layer per level: per-layer pools would multiply the
JVM's connections and threads by the levels). A connection is bound to one layer's reader by its
token and moves to another with an ``'A'`` request sent in front of that layer's next request. A
request borrows a connection and gives it back when its answer is read, so a thread-per-request
web server uses at most ``pool_size`` sockets (and JVM threads). A query iterator keeps its
connection until it is exhausted or closed. A connection whose handshake failed (the server was
busy, the token unknown), that broke, timed out or was left half-read is closed, never pooled; an
idle one the server closed meanwhile is noticed before it is reused. A layer closed while others
stay open closes its idle connections. When the last layer on a server closes, its pool lingers
:data:`LINGER` seconds with its idle connections (unbound from the closed layer's reader): a layer
opened meanwhile (a cold open per request) re-binds one instead of connecting and shaking hands
again; then a reaper thread closes the pool (and itself stops), so the JVM's shared server can go idle.
"""

import select
import socket
import struct
import threading
import time

from . import errors
from ._answers import ERROR as _ERROR
from ._answers import BadAnswer, TileAnswers

__all__ = ["LookupClient", "LINGER", "MAX_KEYS", "POOL_SIZE", "READ_TIMEOUT"]

#: Keys per 'M' request; the server refuses more (``LookupServer.MAX_KEYS``).
MAX_KEYS = 1 << 16
#: Connections of the pool each server address gets (shared by all layers on it).
POOL_SIZE = 16
#: Longest wait, in seconds, for the next bytes of an answer; the JVM's own work (a count over
#: many files) happens before the answer starts, so this is generous: it catches a hung JVM.
READ_TIMEOUT = 600.0
#: Seconds a server's pool keeps its idle connections after its last layer closed (see the module text).
LINGER = 1.0
# The requests' opcodes, the first byte of each request: the JVM's LookupServer.OP_* (its Javadoc gives
# each request's form). Bind the connection to a reader, get one key, many keys, query a box, count one.
_BIND = ord("A")
_GET_ONE = ord("G")
_GET_MANY = ord("M")
_QUERY = ord("Q")
_COUNT = ord("C")
_INT = struct.Struct(">i")
_GET = struct.Struct(">biiq")
_HEAD = struct.Struct(">bi")


class _ConnectionLost(BadAnswer):
    """The socket broke or the server sent something out of protocol: the connection is dropped (as after
    any :class:`~sfclayer._answers.BadAnswer`)."""


class _Connection:
    """One socket past its handshake, bound to a reader's token, and its buffered reader."""

    def __init__(self, address, token, error_from_java, connect_timeout, read_timeout):
        self.read_timeout = read_timeout
        self.broken = False   # set when the server will close it (a failed re-binding)
        self._rebinding = False
        try:
            self.sock = socket.create_connection(address, timeout=connect_timeout)
        except OSError as e:
            raise _ConnectionLost(f"the look-up connection to the JVM failed: cannot connect to "
                                  f"{address[0]}:{address[1]}: {e}") from e
        try:
            self.sock.settimeout(read_timeout)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.stream = self.sock.makefile("rb", buffering=1 << 16)
            self.sock.sendall(token)
            self._acknowledged(error_from_java)  # busy or a wrong token: raised here, never pooled
        except OSError as e:
            self.close()
            raise _ConnectionLost(f"the look-up connection to the JVM failed: {e}") from e
        except BaseException:
            self.close()
            raise
        self.token = token

    def _acknowledged(self, error_from_java):
        n = self.read_int()
        if n == _ERROR:
            self.broken = True
            raise error_from_java(self.read_exact(self.read_int()))
        if n != 0:
            raise _ConnectionLost(f"the JVM's look-up server sent {n} in place of its handshake")

    def send(self, token, payload):
        """Sends a request for the reader of ``token``, moving the connection to it first if needed."""
        if token != self.token:
            payload = bytes([_BIND]) + token + payload
            self._rebinding = True
            self.token = None  # unknown until the server acknowledges it
        self.sock.sendall(payload)

    def start_answer(self, token, error_from_java):
        """Reads the acknowledgement of a re-binding sent with the request, if there was one."""
        if self._rebinding:
            self._rebinding = False
            self._acknowledged(error_from_java)
            self.token = token

    def read_exact(self, n):
        try:
            data = self.stream.read(n)
        except TimeoutError as e:
            self.broken = True
            raise _ConnectionLost(f"no answer from the JVM's look-up server within {self.read_timeout:g} s "
                                  "(the connection is closed)") from e
        if data is None or len(data) < n:
            got = 0 if data is None else len(data)
            raise _ConnectionLost(
                f"the JVM's look-up server closed the connection mid-answer (read {got} of {n} bytes)"
            )
        return data

    def read_int(self):
        return _INT.unpack(self.read_exact(4))[0]

    def usable(self):
        """Whether an idle connection can be reused: nothing to read on it (no EOF, no stray bytes)."""
        if self.broken:
            return False
        try:
            readable, _, _ = select.select([self.sock], [], [], 0)
        except (OSError, ValueError):
            return False
        return not readable

    def close(self):
        try:
            stream = getattr(self, "stream", None)
            if stream is not None:
                stream.close()
        finally:
            self.sock.close()


class _Pool:
    """The bounded connections to one server address, shared by the clients (layers) on it."""

    def __init__(self, address, size, wait, connect_timeout, read_timeout):
        self.address = address
        self.size = size
        self.wait = wait
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.slots = threading.BoundedSemaphore(size)
        self.lock = threading.Lock()
        self.idle = []        # most recently used last
        self.borrowed = set()
        self.clients = 0
        self.idle_since = 0.0  # time.monotonic() when the last client left

    def borrow(self, token, error_from_java):
        if not self.slots.acquire(timeout=self.wait):
            raise errors.SfcLayerError(
                f"all {self.size} look-up connections stayed busy for {self.wait:g} s "
                "(unfinished query iterators hold theirs until exhausted or closed)"
            )
        try:
            while True:
                with self.lock:
                    if not self.idle:
                        conn = None
                        break
                    # one already bound to this reader if there is one, else the most recently used
                    pos = next((i for i in range(len(self.idle) - 1, -1, -1) if self.idle[i].token == token),
                               len(self.idle) - 1)
                    conn = self.idle.pop(pos)
                if conn.usable():
                    break
                conn.close()  # the server closed it meanwhile (its layer closed, the server stopped)
            if conn is None:
                conn = _Connection(self.address, token, error_from_java, self.connect_timeout, self.read_timeout)
            with self.lock:
                self.borrowed.add(conn)
            return conn
        except BaseException:
            self.slots.release()
            raise

    def give_back(self, conn, healthy):
        """Pools a connection whose answer was read whole; closes any other."""
        keep = healthy and not conn.broken
        with self.lock:
            self.borrowed.discard(conn)
            if keep:
                self.idle.append(conn)
        if not keep:
            conn.close()
        self.slots.release()

    def forget(self, token):
        """Lets go of the idle connections bound to ``token`` (its reader is going away). If its client
        is the pool's last, they stay pooled unbound for the linger (a layer opened meanwhile re-binds one:
        'A'; the server unbinds them when it drops the reader); otherwise they are closed, so closing a
        layer gives back its sockets while other layers keep the pool open."""
        with self.lock:
            mine = [c for c in self.idle if c.token == token]
            if self.clients <= 1:
                for conn in mine:
                    conn.token = None
                return
            self.idle = [c for c in self.idle if c.token != token]
        for conn in mine:
            _close_quietly(conn)

    def count(self, token=None):
        with self.lock:
            conns = self.idle + list(self.borrowed)
        return sum(1 for c in conns if token is None or c.token == token)

    def close(self):
        with self.lock:
            conns, self.idle = self.idle + list(self.borrowed), []
        for conn in conns:
            _close_quietly(conn)


def _close_quietly(conn):
    try:
        conn.close()
    except OSError:
        pass


_POOLS = {}
_POOLS_LOCK = threading.Lock()


_reaper = None  # the thread closing pools whose linger ran out; None while no pool lingers


def _pool(address, size, wait, connect_timeout, read_timeout):
    """The shared pool of ``address`` (and size), one more client on it (a lingering pool is taken back)."""
    key = (address, size)
    with _POOLS_LOCK:
        pool = _POOLS.get(key)
        if pool is None:
            pool = _POOLS[key] = _Pool(address, size, wait, connect_timeout, read_timeout)
        pool.clients += 1
        return pool


def _release(pool):
    """One client fewer; the last one leaves the pool to linger (:data:`LINGER`), then the reaper closes it."""
    global _reaper
    with _POOLS_LOCK:
        pool.clients -= 1
        if pool.clients > 0:
            return
        pool.idle_since = time.monotonic()
        dropped = _POOLS.get((pool.address, pool.size)) is not pool  # not pooled any more: close it now
        if not dropped and _reaper is None:
            _reaper = threading.Thread(target=_reap, name="sfclayer-lookup-pool-reaper", daemon=True)
            _reaper.start()
    if dropped:
        pool.close()


def _reap():
    """Closes each pool whose last client left :data:`LINGER` seconds ago (and is still gone); returns
    once no pool lingers."""
    global _reaper
    while True:
        with _POOLS_LOCK:
            now = time.monotonic()
            due = [key for key, p in _POOLS.items() if p.clients == 0 and now - p.idle_since >= LINGER]
            gone = [_POOLS.pop(key) for key in due]
            waits = [LINGER - (now - p.idle_since) for p in _POOLS.values() if p.clients == 0]
            if not gone and not waits:
                _reaper = None
                return
        for pool in gone:
            pool.close()
        if waits:
            time.sleep(max(0.01, min(waits)))


class LookupClient:
    """Look-ups, queries and counts for one reader (token) of a ``LookupServer`` at ``host:port``.

    Parameters
    ----------
    host, port : str, int
        The address the server reports (``127.0.0.1``, or ``::1`` on an IPv6-only loopback).
    token : bytes
        The reader's 16-byte token.
    error_from_java : callable
        ``payload bytes -> SfcLayerError`` for the server's ``"ErrorClass\\tmessage"`` answers.
    pool_size : int, optional
        Most connections open at once to this address, shared by every client with the same size
        (default :data:`POOL_SIZE`); a caller beyond them waits up to ``wait`` seconds.
    read_timeout : float, optional
        Longest wait for the next bytes of an answer (default :data:`READ_TIMEOUT`).
    """

    def __init__(self, host, port, token, error_from_java, pool_size=None, wait=60.0, connect_timeout=10.0,
                 read_timeout=None):
        self._address = (host, int(port))
        self._token = bytes(token)
        self._error = error_from_java
        self._pool_size = int(pool_size or POOL_SIZE)
        self._pool = _pool(self._address, self._pool_size, wait, connect_timeout,
                           READ_TIMEOUT if read_timeout is None else float(read_timeout))
        self._lock = threading.Lock()
        self._closed = False

    # ------------------------------------------------------------------ the pool

    def _borrow(self):
        with self._lock:
            if self._closed:
                raise errors.SfcLayerError("the layer is closed")
        return self._pool.borrow(self._token, self._error)

    def _request(self, payload, read):
        conn = self._borrow()
        healthy = False
        try:
            try:
                conn.send(self._token, payload)
                conn.start_answer(self._token, self._error)
                out = read(conn)
            except errors.SfcLayerError:
                raise  # the server's answer (LayerNotFound and StorageError are OSErrors too): handled below
            except OSError as e:
                raise _ConnectionLost(f"the look-up connection to the JVM failed: {e}") from e
            healthy = True
            return out
        except BadAnswer:
            raise  # the connection is out of step: closed
        except errors.SfcLayerError:
            healthy = True  # an error answer: the connection is in step (unless marked broken)
            raise
        finally:
            self._pool.give_back(conn, healthy)

    def _answer(self, conn):
        return TileAnswers(conn.read_exact, self._error).one()

    # ------------------------------------------------------------------ requests

    def get(self, col, row, time_micros):
        """The encoded tile record at the key, or None."""
        return self._request(_GET.pack(_GET_ONE, col, row, time_micros), self._answer)

    def get_many(self, packed_keys, errors_as_values=False):
        """Records (or None) for keys packed as big-endian (int col, int row, long time).

        With ``errors_as_values`` a key whose look-up failed holds its error (an ``SfcLayerError``)
        in place of a record, and nothing is raised for it: one damaged file fails its own keys only.
        """
        n = len(packed_keys) // 16
        out = [None] * n
        first_error = None
        for start in range(0, n, MAX_KEYS):
            chunk = packed_keys[16 * start:16 * min(n, start + MAX_KEYS)]
            m = len(chunk) // 16

            def read(conn, m=m, start=start):  # every answer read before an error is raised
                return TileAnswers(conn.read_exact, self._error).many(m, out, start, errors_as_values)

            error = self._request(_HEAD.pack(_GET_MANY, m) + chunk, read)
            first_error = first_error or error
        if first_error is not None and not errors_as_values:
            raise first_error
        return out

    def query(self, spec):
        """Encoded records of a box query (``spec``: UTF-8 lines ``name=value``), in batches: (count,
        the count records back to back as bytes)."""
        payload = spec.encode("utf-8")
        conn = self._borrow()
        healthy = False
        try:
            try:
                conn.send(self._token, _HEAD.pack(_QUERY, len(payload)) + payload)
                conn.start_answer(self._token, self._error)
                while True:
                    count = conn.read_int()
                    if count == 0:
                        break
                    if count == _ERROR:
                        message = conn.read_exact(conn.read_int())
                        healthy = True
                        raise self._error(message)
                    size = conn.read_int()
                    if count < 0 or size < 0:
                        raise _ConnectionLost(f"the JVM's look-up server sent a bad batch ({count} records, {size} bytes)")
                    yield count, conn.read_exact(size)
            except errors.SfcLayerError:
                raise  # the server's answer, not a broken connection (LayerNotFound is an OSError too)
            except OSError as e:
                raise _ConnectionLost(f"the look-up connection to the JVM failed: {e}") from e
            healthy = True
        finally:
            self._pool.give_back(conn, healthy)

    def count(self, spec):
        """The number of records a box query matches."""
        payload = spec.encode("utf-8")
        answer = self._request(_HEAD.pack(_COUNT, len(payload)) + payload, self._answer)
        return struct.unpack(">q", answer)[0]

    def open_connections(self):
        """Sockets open now bound to this client's reader (idle and in use)."""
        return self._pool.count(self._token)

    def pool_connections(self):
        """Sockets open now in the pool this client shares with the other layers on its server."""
        return self._pool.count()

    def close(self):
        """Unbinds this client's idle connections and leaves the shared pool (which lingers, then closes,
        if this was its last client).

        A request still in flight on another thread fails when the server drops the reader."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._pool.forget(self._token)
        _release(self._pool)
