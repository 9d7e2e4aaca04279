"""A data file's bloom filter sidecar (docs/FORMAT.md section 5, "Bloom filters"), bit-identical to the
JVM's ``io.sfclayer.format.BloomFilter``: the same sizing, the same hash scheme, the same bytes."""

from __future__ import annotations

import math
import struct

import numpy as np

from ..errors import CorruptLayer

__all__ = ["BloomFilter"]

_MAGIC = b"SFCB"
_HEAD = struct.Struct(">4sbbhqq")
_MAX_HASHES = 30
_MAX_BITS = 1 << 40
_C1 = np.uint64(0xFF51AFD7ED558CCD)
_C2 = np.uint64(0xC4CEB9FE1A85EC53)
_S33 = np.uint64(33)


def _fmix64(h: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        h = h ^ (h >> _S33)
        h = h * _C1
        h = h ^ (h >> _S33)
        h = h * _C2
        return h ^ (h >> _S33)


_MASK = (1 << 64) - 1


def _fmix64_int(h: int) -> int:
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & _MASK
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & _MASK
    return h ^ (h >> 33)


class BloomFilter:
    """Kirsch–Mitzenmacher double hashing over ``fmix64`` (MurmurHash3's finalizer); ``m`` bits, ``k`` hashes."""

    __slots__ = ("k", "m", "n", "words", "nbytes")

    def __init__(self, k: int, m: int, n: int, words: np.ndarray):
        self.k, self.m, self.n, self.words = k, m, n, words
        self.nbytes = words.nbytes + 48

    def _bits(self, indexes) -> np.ndarray:
        idx = np.asarray(indexes, dtype=np.int64).astype(np.uint64).reshape(-1, 1)
        h1 = _fmix64(idx)
        h2 = _fmix64(h1) | np.uint64(1)
        with np.errstate(over="ignore"):
            return (h1 + np.arange(self.k, dtype=np.uint64) * h2) % np.uint64(self.m)

    @classmethod
    def build(cls, indexes, fpp: float) -> "BloomFilter":
        """The filter a writer makes for a file's SFC indexes at false-positive probability ``fpp``."""
        count = len(indexes)
        n = max(1, count)
        ln2 = math.log(2)
        bits = math.ceil(-n * math.log(fpp) / (ln2 * ln2))
        m = max(64, (bits + 63) // 64 * 64)
        k = int(max(1, min(_MAX_HASHES, math.floor(m / n * ln2 + 0.5))))  # Java's Math.round
        f = cls(k, m, count, np.zeros(m // 64, np.uint64))
        if count:
            b = f._bits(indexes).ravel()
            np.bitwise_or.at(f.words, (b >> np.uint64(6)).astype(np.int64), np.uint64(1) << (b & np.uint64(63)))
        return f

    def might_contain(self, index: int) -> bool:
        # one index: Python ints (numpy's per-call overhead is larger than the arithmetic)
        h1 = _fmix64_int(index & _MASK)
        h2 = _fmix64_int(h1) | 1
        words, m = self.words, self.m
        for i in range(self.k):
            b = ((h1 + i * h2) & _MASK) % m
            if not (int(words[b >> 6]) >> (b & 63)) & 1:
                return False
        return True

    def to_bytes(self) -> bytes:
        return _HEAD.pack(_MAGIC, 1, 1, self.k, self.m, self.n) + self.words.astype(">u8").tobytes()

    @classmethod
    def parse(cls, data: bytes, expected_crc: int, where: str, layer: str) -> "BloomFilter":
        """Checked against the CRC32C the version document records; CorruptLayer naming ``where`` if not."""
        from .datafile import advice, crc32c

        def damaged(why):
            return CorruptLayer(f"layer {layer}: bloom filter {where} is damaged: {why} (repair rebuilds it from the "
                                f"data file). {advice(layer)}")

        crc = crc32c(data)
        if crc != expected_crc:
            raise damaged(f"checksum mismatch: CRC32C {crc:x}, the version records {expected_crc:x} ({len(data)} bytes)")
        if len(data) < _HEAD.size:
            raise damaged(f"truncated: {len(data)} bytes, shorter than its header")
        magic, layout, scheme, k, m, n = _HEAD.unpack_from(data)
        if magic != _MAGIC:
            raise damaged("not a bloom filter (bad magic)")
        if layout != 1 or scheme != 1:
            raise damaged(f"layout {layout} with hash scheme {scheme} is not one this sfclayer reads (layout 1, hash 1)")
        if not (1 <= k <= _MAX_HASHES and 64 <= m <= _MAX_BITS and m % 64 == 0 and n >= 0):
            raise damaged(f"bad parameters: k={k}, m={m}, n={n}")
        if len(data) != _HEAD.size + m // 8:
            raise damaged(f"{len(data)} bytes where its header says {_HEAD.size + m // 8}")
        return cls(k, m, n, np.frombuffer(data, ">u8", offset=_HEAD.size).astype(np.uint64))
