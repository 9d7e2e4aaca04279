"""The client of the driver JVM's look-up socket (``io.sfclayer.lookup.LookupServer``).

py4j moves a tile as base64 text in several writes, which Nagle's algorithm and delayed ACKs turn
into ~40 ms per tile above a few KiB; this loopback socket moves it in one write. The protocol is
described in ``LookupServer``'s Javadoc; this module is its only Python speaker.

Connections: a small bounded pool per layer. A request borrows one connection and gives it back
when its answer is read, so a thread-per-request web server uses at most ``pool_size`` sockets
(and JVM threads), not one per thread it ever ran. A query iterator keeps its connection until it
is exhausted or closed; an abandoned, half-read connection is closed, never reused.
"""

import socket
import struct
import threading

from . import errors

__all__ = ["LookupClient", "MAX_KEYS"]

#: Keys per 'M' request; the server refuses more (``LookupServer.MAX_KEYS``).
MAX_KEYS = 1 << 16
_MISSING = -1
_ERROR = -2
_INT = struct.Struct(">i")
_GET = struct.Struct(">biiq")
_HEAD = struct.Struct(">bi")


class _ConnectionLost(errors.SfcLayerError):
    """The socket broke or the server sent something out of protocol: the connection is dropped."""


class _Connection:
    """One authenticated socket and its buffered reader."""

    def __init__(self, host, port, token, connect_timeout):
        self.sock = socket.create_connection((host, port), timeout=connect_timeout)
        self.sock.settimeout(None)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.sendall(token)
        self.stream = self.sock.makefile("rb", buffering=1 << 16)

    def read_exact(self, n):
        data = self.stream.read(n)
        if data is None or len(data) < n:
            got = 0 if data is None else len(data)
            raise _ConnectionLost(
                f"the JVM's look-up server closed the connection mid-answer (read {got} of {n} bytes)"
            )
        return data

    def read_int(self):
        return _INT.unpack(self.read_exact(4))[0]

    def read_answer(self, error_from_java):
        """One answer: record bytes, None for a missing key; raises the server's error."""
        n = self.read_int()
        if n == _MISSING:
            return None
        if n == _ERROR:
            raise error_from_java(self.read_exact(self.read_int()))
        if n < 0:
            raise _ConnectionLost(f"the JVM's look-up server sent a bad answer length {n}")
        return self.read_exact(n)

    def close(self):
        try:
            self.stream.close()
        finally:
            self.sock.close()


class LookupClient:
    """Look-ups, queries and counts through a ``LookupServer`` at ``host:port``.

    Parameters
    ----------
    host, port : str, int
        The address the server reports (``127.0.0.1``, or ``::1`` on an IPv6-only loopback).
    token : bytes
        The server's 16-byte token.
    error_from_java : callable
        ``payload bytes -> SfcLayerError`` for the server's ``"ErrorClass\\tmessage"`` answers.
    pool_size : int
        Most connections open at once; a caller beyond them waits up to ``wait`` seconds.
    """

    def __init__(self, host, port, token, error_from_java, pool_size=4, wait=60.0, connect_timeout=10.0):
        self._address = (host, int(port))
        self._token = bytes(token)
        self._error = error_from_java
        self._wait = wait
        self._connect_timeout = connect_timeout
        self._pool_size = int(pool_size)
        self._slots = threading.BoundedSemaphore(self._pool_size)
        self._idle = []
        self._lock = threading.Lock()
        self._closed = False
        self._borrowed = set()

    # ------------------------------------------------------------------ the pool

    def _borrow(self):
        if not self._slots.acquire(timeout=self._wait):
            raise errors.SfcLayerError(
                f"all {self._pool_size} look-up connections stayed busy for {self._wait:g} s "
                "(unfinished query iterators hold theirs until exhausted or closed)"
            )
        try:
            with self._lock:
                if self._closed:
                    raise errors.SfcLayerError("the layer is closed")
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                conn = _Connection(*self._address, self._token, self._connect_timeout)
            with self._lock:
                self._borrowed.add(conn)
            return conn
        except BaseException:
            self._slots.release()
            raise

    def _give_back(self, conn, healthy):
        """Returns a connection whose answer was read whole; closes one left mid-answer."""
        with self._lock:
            self._borrowed.discard(conn)
            keep = healthy and not self._closed
            if keep:
                self._idle.append(conn)
        if not keep:
            conn.close()
        self._slots.release()

    def _request(self, payload, read):
        conn = self._borrow()
        healthy = False
        try:
            try:
                conn.sock.sendall(payload)
                out = read(conn)
            except OSError as e:
                raise _ConnectionLost(f"the look-up connection to the JVM failed: {e}") from e
            healthy = True
            return out
        except _ConnectionLost:
            raise
        except errors.SfcLayerError:
            healthy = True  # an error answer: the connection is in step
            raise
        finally:
            self._give_back(conn, healthy)

    def _answer(self, conn):
        return conn.read_answer(self._error)

    # ------------------------------------------------------------------ requests

    def get(self, col, row, time_micros):
        """The encoded tile record at the key, or None."""
        return self._request(_GET.pack(71, col, row, time_micros), self._answer)  # 71 = 'G'

    def get_many(self, packed_keys):
        """Records (or None) for keys packed as big-endian (int col, int row, long time)."""
        n = len(packed_keys) // 16
        out = [None] * n
        first_error = None
        for start in range(0, n, MAX_KEYS):
            chunk = packed_keys[16 * start:16 * min(n, start + MAX_KEYS)]
            m = len(chunk) // 16

            def read(conn, m=m, start=start):
                error = None
                for _ in range(m):
                    i = conn.read_int()
                    if not 0 <= i < m:
                        raise _ConnectionLost(f"the JVM's look-up server answered key {i} of {m}")
                    try:
                        out[start + i] = self._answer(conn)
                    except _ConnectionLost:
                        raise
                    except errors.SfcLayerError as e:  # read every answer before raising
                        error = error or e
                return error

            error = self._request(_HEAD.pack(77, m) + chunk, read)  # 77 = 'M'
            first_error = first_error or error
        if first_error is not None:
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
                conn.sock.sendall(_HEAD.pack(81, len(payload)) + payload)  # 81 = 'Q'
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
            except OSError as e:
                raise _ConnectionLost(f"the look-up connection to the JVM failed: {e}") from e
            healthy = True
        finally:
            self._give_back(conn, healthy)

    def count(self, spec):
        """The number of records a box query matches."""
        payload = spec.encode("utf-8")
        answer = self._request(_HEAD.pack(67, len(payload)) + payload, self._answer)  # 67 = 'C'
        return struct.unpack(">q", answer)[0]

    def open_connections(self):
        """Sockets open now (idle and in use)."""
        with self._lock:
            return len(self._idle) + len(self._borrowed)

    def close(self):
        """Closes every connection; requests in flight fail."""
        with self._lock:
            self._closed = True
            conns = self._idle + list(self._borrowed)
            self._idle = []
        for conn in conns:
            try:
                conn.close()
            except OSError:
                pass
