"""The one binary framing of tile answers, whichever transport brings them (the JVM's
``io.sfclayer.lookup.TileAnswers`` writes it): the loopback look-up socket reads it from its connection
(:mod:`sfclayer._lookup`), a Spark Connect client from the bytes of its answer (:mod:`sfclayer._connect`).

Big-endian. An *answer* is ``int length, length bytes`` (an encoded tile record), ``int -1`` for a
missing key, or ``int -2, int length, UTF-8 "ErrorClass\\tmessage"`` for an error (the JVM's exception,
raised here as sfclayer's). The answer to ``n`` look-ups is ``n x (int position, answer)`` in the order the
JVM found them, ``position`` the key's place in the request.
"""

import struct

from . import errors

__all__ = ["TileAnswers", "BadAnswer", "MISSING", "ERROR"]

MISSING = -1
ERROR = -2
_INT = struct.Struct(">i")
_PAIR = struct.Struct(">ii")


class BadAnswer(errors.SfcLayerError):
    """Bytes out of the framing (or too few of them): the answer cannot be trusted, nor what follows it."""


class TileAnswers:
    """Reads answers from ``read`` (``n -> exactly n bytes``, raising :class:`BadAnswer` when fewer come).

    Parameters
    ----------
    read : callable
        ``read(n)``: the next ``n`` bytes.
    error_from_java : callable
        ``payload bytes -> SfcLayerError`` for an error answer's ``"ErrorClass\\tmessage"``.
    """

    __slots__ = ("_read", "_error")

    def __init__(self, read, error_from_java):
        self._read = read
        self._error = error_from_java

    @classmethod
    def of_bytes(cls, data, error_from_java):
        """A reader of the answers held in ``data`` (bytes); :meth:`end` checks nothing is left over."""
        return _BytesAnswers(data, error_from_java)

    def int(self):
        """The next big-endian int."""
        return _INT.unpack(self._read(4))[0]

    def one(self):
        """The next answer: the record's bytes, or None for a missing key; an error answer is raised."""
        n = _INT.unpack(self._read(4))[0]
        if n >= 0:
            return self._read(n)
        if n == MISSING:
            return None
        if n == ERROR:
            raise self._error(self._read(self.int()))
        raise BadAnswer(f"the JVM sent a bad answer length {n}")

    def many(self, n, out, start=0, errors_as_values=False):
        """Reads the answer to ``n`` look-ups into ``out[start:start + n]`` (each by its position); returns the
        first error answer (an ``SfcLayerError``), or None. With ``errors_as_values`` a failed key's place
        holds its error. Every answer is read before returning, so the stream stays in step."""
        first_error = None
        read, error = self._read, self._error
        for _ in range(n):
            (i,) = _INT.unpack(read(4))
            if not 0 <= i < n:
                raise BadAnswer(f"the JVM answered key {i} of {n}")
            (length,) = _INT.unpack(read(4))
            if length >= 0:
                out[start + i] = read(length)
            elif length == MISSING:
                out[start + i] = None
            elif length == ERROR:
                e = error(read(self.int()))
                first_error = first_error or e
                out[start + i] = e if errors_as_values else None
            else:
                raise BadAnswer(f"the JVM sent a bad answer length {length}")
        return first_error


class _BytesAnswers(TileAnswers):
    """:class:`TileAnswers` over bytes already received whole, read in place (``struct.unpack_from`` and
    slices: a Connect answer of 10,000 tiles decodes at the speed of the lengths-only form it replaced)."""

    __slots__ = ("_data", "_pos")

    def __init__(self, data, error_from_java):
        self._data = bytes(data)
        self._pos = 0
        super().__init__(self._take, error_from_java)

    def _take(self, n):
        pos = self._pos
        end = pos + n
        if end > len(self._data):
            raise BadAnswer(f"the JVM's answer ended early: {len(self._data)} bytes, byte {end} wanted")
        self._pos = end
        return self._data[pos:end]

    def many(self, n, out, start=0, errors_as_values=False):
        data, pos, size = self._data, self._pos, len(self._data)
        pair = _PAIR.unpack_from
        first_error = None
        for _ in range(n):
            if pos + 8 > size:
                raise BadAnswer(f"the JVM's answer ended early: {size} bytes, byte {pos + 8} wanted")
            i, length = pair(data, pos)
            pos += 8
            if not 0 <= i < n:
                raise BadAnswer(f"the JVM answered key {i} of {n}")
            if length >= 0:
                if pos + length > size:
                    raise BadAnswer(f"the JVM's answer ended early: {size} bytes, byte {pos + length} wanted")
                out[start + i] = data[pos:pos + length]
                pos += length
            elif length == MISSING:
                out[start + i] = None
            elif length == ERROR:
                self._pos = pos
                e = self._error(self._take(self.int()))
                pos = self._pos
                first_error = first_error or e
                out[start + i] = e if errors_as_values else None
            else:
                raise BadAnswer(f"the JVM sent a bad answer length {length}")
        self._pos = pos
        return first_error

    def end(self):
        """Raises :class:`BadAnswer` unless every byte was read."""
        if self._pos != len(self._data):
            raise BadAnswer(f"the JVM's answer holds {len(self._data) - self._pos} bytes after its last answer")
