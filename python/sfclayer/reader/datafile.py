"""One data file (a Hadoop MapFile, docs/FORMAT.md sections 2 and 9) read from a :class:`ByteSource`.

The ``index`` SequenceFile (block-compressed with zlib, Hadoop's ``DefaultCodec``) is read whole, its
CRC32C checked against the version document before a byte of it is parsed; the ``data`` records
are read by range from the index's offsets, each checked (lengths, key length, CRC32C) before its
group is returned. Damage raises :class:`~sfclayer.errors.CorruptLayer` naming the layer, the file,
the byte offset and the SFC index, as the JVM's ``DataFileReader`` does; the reader never reads
around damage (``onCorrupt=skip`` and ``verify`` stay on Spark).
"""

from __future__ import annotations

import bisect
import struct
import threading
import zlib
from dataclasses import dataclass, field

import google_crc32c
import numpy as np

from ..errors import CorruptLayer
from .cache import after_fork

__all__ = ["FileEntry", "Header", "FileIndex", "DataFile", "advice", "crc32c", "read_vlong"]

_SEQ6 = b"SEQ\x06"
_LONG = "org.apache.hadoop.io.LongWritable"
_BYTES = "org.apache.hadoop.io.BytesWritable"
_II = struct.Struct(">ii")
_Q = struct.Struct(">q")
_I = struct.Struct(">i")
#: the first format whose records end in a CRC32C
FIRST_CHECKED = 3
#: bytes read ahead of a record walk when the index gives no end (the file's last span)
_READ_AHEAD = 1 << 16


def crc32c(data) -> int:
    """CRC32C (Castagnoli) of ``data`` as an unsigned int (``java.util.zip.CRC32C``)."""
    return google_crc32c.value(bytes(data)) if not isinstance(data, bytes) else google_crc32c.value(data)


def advice(layer: str) -> str:
    """What to do next, as the JVM's messages say it."""
    return (f"Run `sfclayer verify {layer}` to list all damage, `sfclayer repair {layer}` to write a version "
            "without it, or read with option onCorrupt=skip to skip damaged records")


def read_vlong(b, p: int) -> tuple[int, int]:
    """Hadoop's ``WritableUtils.readVLong`` at ``b[p]``: (value, next position)."""
    first = b[p]
    first = first - 256 if first > 127 else first
    if first >= -112:
        return first, p + 1
    negative = first < -120
    n = -(first + 120) if negative else -(first + 112)
    if p + 1 + n > len(b):
        raise IndexError("vint past the end")
    v = int.from_bytes(b[p + 1:p + 1 + n], "big")
    return (~v if negative else v), p + 1 + n


def _text(b, p):
    n, p = read_vlong(b, p)
    if n < 0 or n > 1 << 20 or p + n > len(b):
        raise ValueError(f"bad string length {n}")
    return bytes(b[p:p + n]).decode("utf-8"), p + n


@dataclass(frozen=True)
class FileEntry:
    """What a version document says about one data file (a ``files`` item)."""

    dir: str
    name: str
    first_index: int
    last_index: int
    records: int
    indexes: int
    data_bytes: int          # -1: unknown (not checked against the file)
    index_crc: int | None    # the index file's CRC32C; None for files of formats 1 and 2
    bloom_crc: int | None
    checked: bool            # written in format 3 or later: records carry a CRC32C
    raw: dict = field(default=None, compare=False, repr=False)  # the entry as the document or manifest has it

    def to_json(self) -> dict:
        return dict(self.raw) if self.raw is not None else {"dir": self.dir, "name": self.name}

    @property
    def id(self) -> str:
        return f"{self.dir}/{self.name}"

    def range_text(self) -> str:
        return f"SFC indexes {self.first_index}..{self.last_index if self.last_index >= 0 else '?'}"

    @classmethod
    def from_json(cls, m: dict, default_dir: str | None, document_format: int) -> "FileEntry":
        d = m.get("dir", default_dir)
        name = m.get("name")
        if not isinstance(d, str) or not isinstance(name, str):
            raise CorruptLayer(f"a files entry lacks its dir or name: {m}")
        first = _first_index(name)

        def num(field):
            v = m.get(field)
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise CorruptLayer(f"files entry {name}: field '{field}' is missing or not a number")
            return int(v)

        crc = m.get("indexCrc32c")
        checked = document_format >= FIRST_CHECKED and isinstance(crc, int)
        bloom = m.get("bloomCrc32c")
        if bloom is not None and not isinstance(bloom, int):
            raise CorruptLayer(f"files entry {name}: field 'bloomCrc32c' is not a number")
        return cls(d, name, first, num("lastIndex"), num("records"), num("indexes"),
                   num("dataBytes") if checked else -1, crc if checked else None, bloom, checked, m)

    @classmethod
    def listed(cls, d: str, name: str) -> "FileEntry":
        """A format 1 file found by listing its directory: nothing recorded about it."""
        return cls(d, name, _first_index(name), -1, -1, -1, -1, None, None, False)


def _first_index(name: str) -> int:
    # part-r-<partition>-<first index> (docs/FORMAT.md section 2)
    parts = name.split("-")
    try:
        if len(parts) < 4 or parts[0] != "part":
            raise ValueError
        return int(parts[-1])
    except ValueError:
        raise CorruptLayer(f"data file name {name!r} is not part-r-<partition>-<first index>") from None


@dataclass(frozen=True)
class Header:
    """A ``data`` file's SequenceFile header."""

    format_version: int
    write_id: str | None
    sync: bytes
    data_start: int

    @classmethod
    def parse(cls, b: bytes) -> "Header":
        """From the file's first bytes; ValueError saying what is wrong (IndexError: too short)."""
        if b[:4] != _SEQ6:
            raise ValueError(f"not a SequenceFile version 6 (starts with bytes {bytes(b[:4]).hex(' ')})")
        key, p = _text(b, 4)
        value, p = _text(b, p)
        if key != _LONG or value != _BYTES:
            raise ValueError(f"a SequenceFile of {key} -> {value}, expected LongWritable -> BytesWritable")
        if b[p] or b[p + 1]:
            raise ValueError("a compressed SequenceFile (sfclayer data files are uncompressed)")
        (entries,) = _I.unpack_from(b, p + 2)
        p += 6
        if not 0 <= entries <= 1024:
            raise ValueError(f"bad metadata entry count {entries}")
        meta = {}
        for _ in range(entries):
            k, p = _text(b, p)
            v, p = _text(b, p)
            meta[k] = v
        if p + 16 > len(b):
            raise IndexError("header past the end")
        fv = meta.get("sfclayer.formatVersion")
        try:
            format_version = 1 if fv is None else int(fv)
        except ValueError:
            raise ValueError(f"bad sfclayer.formatVersion '{fv}'") from None
        return cls(format_version, meta.get("sfclayer.writeId"), bytes(b[p:p + 16]), p + 16)


class FileIndex:
    """A checked ``index`` file: sorted SFC indexes and their records' byte offsets (numpy int64)."""

    __slots__ = ("keys", "offsets", "nbytes", "_keys")

    def __init__(self, keys: np.ndarray, offsets: np.ndarray):
        self.keys, self.offsets = keys, offsets
        self._keys = keys.tolist()  # bisect on a list beats numpy's per-call overhead for one key
        self.nbytes = keys.nbytes + offsets.nbytes + 32 * len(self._keys) + 64

    @classmethod
    def parse(cls, b: bytes, data_start: int, data_end: int) -> "FileIndex":
        """Parse a block-compressed (zlib) SequenceFile of LongWritable → LongWritable.

        Hadoop's block layout: after the header (``SEQ 6``, key and value class, compressed and
        blockCompressed true, the codec class, metadata, 16 sync bytes) come blocks of: ``-1`` and the
        sync bytes, a vint record count, then four zlib buffers, each a vint length and its bytes: the
        keys' lengths (vints), the keys, the values' lengths, the values. ValueError when it is not that.
        """
        try:
            if b[:4] != _SEQ6:
                raise ValueError("not a SequenceFile version 6")
            key, p = _text(b, 4)
            value, p = _text(b, p)
            if key != _LONG or value != _LONG:
                raise ValueError(f"a SequenceFile of {key} -> {value}, expected LongWritable -> LongWritable")
            if not (b[p] and b[p + 1]):
                raise ValueError("not block-compressed")
            codec, p = _text(b, p + 2)
            if codec not in ("org.apache.hadoop.io.compress.DefaultCodec", "org.apache.hadoop.io.compress.DeflateCodec"):
                raise ValueError(f"codec {codec} (this reader knows zlib, Hadoop's DefaultCodec)")
            (entries,) = _I.unpack_from(b, p)
            p += 4
            for _ in range(entries):
                _, p = _text(b, p)
                _, p = _text(b, p)
            sync = bytes(b[p:p + 16])
            p += 16
            keys, values = [], []
            while p < len(b):
                if _I.unpack_from(b, p)[0] != -1 or b[p + 4:p + 20] != sync:
                    raise ValueError(f"no sync marker at byte {p}")
                records, p = read_vlong(b, p + 20)
                bufs = []
                for _ in range(4):
                    n, p = read_vlong(b, p)
                    if n < 0 or p + n > len(b):
                        raise ValueError("truncated")
                    bufs.append(zlib.decompress(b[p:p + n]))
                    p += n
                klens, kbytes, vlens, vbytes = bufs
                if klens != b"\x08" * records or vlens != b"\x08" * records \
                        or len(kbytes) != 8 * records or len(vbytes) != 8 * records:
                    raise ValueError("entries are not 8-byte longs")
                keys.append(np.frombuffer(kbytes, ">i8"))
                values.append(np.frombuffer(vbytes, ">i8"))
        except (IndexError, struct.error, zlib.error) as e:
            raise ValueError(f"unreadable ({len(b)} bytes): {e}") from None
        k = np.concatenate(keys).astype(np.int64) if keys else np.zeros(0, np.int64)
        v = np.concatenate(values).astype(np.int64) if values else np.zeros(0, np.int64)
        if len(k) > 1:
            bad = np.flatnonzero((np.diff(k) <= 0) | (np.diff(v) <= 0))
            if len(bad):
                i = int(bad[0]) + 1
                raise ValueError(f"entry {i} (index {k[i]} at byte {v[i]}) is not after entry {i - 1} "
                                 f"(index {k[i - 1]} at byte {v[i - 1]})")
        out = np.flatnonzero((v < data_start) | (v >= data_end))
        if len(out):
            i = int(out[0])
            raise ValueError(f"entry {i} (index {k[i]}) points at byte {v[i]}, outside the data file's records "
                             f"[{data_start}, {data_end})")
        return cls(k, v)

    def floor(self, index: int) -> int:
        """The entry with the greatest key ≤ ``index``, or -1."""
        return bisect.bisect_right(self._keys, index) - 1


class DataFile:
    """One data file of a pinned version: its checked index and header, read once, then records by range.

    Thread-safe: the first caller loads the index under the file's lock; reads after that hold no lock.
    """

    __slots__ = ("source", "entry", "layer", "_lock", "index", "header", "end", "_sync", "__weakref__")

    def __init__(self, source, entry: FileEntry, layer: str):
        self.source, self.entry, self.layer = source, entry, layer
        self._lock = threading.Lock()
        after_fork(self)  # a lock held by another thread at fork() would stay held in the child
        self.index: FileIndex | None = None
        self.header: Header | None = None
        self.end = -1
        self._sync = None

    @property
    def path(self) -> str:
        return self.entry.id

    def _reset_after_fork(self):
        self._lock = threading.Lock()

    @property
    def nbytes(self) -> int:
        return (self.index.nbytes if self.index is not None else 0) + 256

    def corrupt(self, what: str) -> CorruptLayer:
        return CorruptLayer(f"layer {self.layer}: {what}. {advice(self.layer)}")

    def _unreadable(self, why: str) -> CorruptLayer:
        return self.corrupt(f"data file {self.layer}/{self.path} ({self.entry.range_text()}) is unreadable: {why}")

    def load(self) -> "DataFile":
        """Reads and checks the index (and, for files of unknown format, the header): once."""
        if self.index is not None:
            return self
        with self._lock:
            if self.index is None:
                self._load()
        return self

    def _load(self):
        e, src = self.entry, self.source
        data = f"{self.path}/data"
        if e.checked:
            end = e.data_bytes
            # a local stat is cheap; on an object store the recorded length is trusted (no HEAD): a file
            # shorter than recorded fails at the read that passes its end, as damage (the JVM does the same)
            try:
                size = src.size(data) if _cheap_stat(src) else end
            except FileNotFoundError:
                raise self._unreadable("the listed data file is missing") from None
            if size != end:
                what = (f"truncated: {size} bytes, the version records {end}" if size < end
                        else f"longer than recorded: {size} bytes, the version records {end}")
                raise self.corrupt(f"data file {self.layer}/{data} is {what}")
            data_start = 0
        else:
            try:
                end = src.size(data)
            except FileNotFoundError:
                raise self._unreadable("the listed data file is missing") from None
            self.header = self._read_header()
            data_start = self.header.data_start
        try:
            raw = src.read(f"{self.path}/index")
        except FileNotFoundError:
            raise self.corrupt(f"the index of data file {self.layer}/{self.path} ({e.range_text()}) is missing") from None
        if e.index_crc is not None:
            actual = crc32c(raw)
            if actual != e.index_crc:
                raise self.corrupt(f"the index of data file {self.layer}/{self.path} is damaged: checksum mismatch: CRC32C "
                                   f"{actual:x}, the version records {e.index_crc:x} ({len(raw)} bytes)")
        try:
            index = FileIndex.parse(raw, data_start, end)
        except ValueError as err:
            raise self.corrupt(f"the index of data file {self.layer}/{self.path} is damaged: {err}") from None
        self.end = end
        self.index = index

    def _read_header(self) -> Header:
        try:
            head = self.source.read_range(f"{self.path}/data", 0, 4096)
        except FileNotFoundError:
            raise self._unreadable("the listed data file is missing") from None
        try:
            h = Header.parse(head)
        except IndexError:
            head = self.source.read(f"{self.path}/data")
            try:
                h = Header.parse(head)
            except (ValueError, IndexError) as err:
                raise self._unreadable(f"its header is unreadable ({err})") from None
        except ValueError as err:
            raise self._unreadable(f"its header is unreadable ({err})") from None
        if self.entry.checked and h.format_version < FIRST_CHECKED:
            raise self._unreadable(f"its header says format version {h.format_version} but the layer's version "
                                   f"document lists it as a format {FIRST_CHECKED} file")
        return h

    def sync(self) -> bytes:
        """The header's sync bytes (read when a sync escape is first met: a look-up rarely needs them)."""
        if self.header is None:
            with self._lock:
                if self.header is None:
                    self.header = self._read_header()
        return self.header.sync

    @property
    def checked(self) -> bool:
        return self.entry.checked or (self.header is not None and self.header.format_version >= FIRST_CHECKED)

    def blocks(self, i0: int, i1: int) -> list[list[tuple[int, bytes]]]:
        """The records of index entries ``i0..i1`` (each entry's block runs to the next entry's record),
        read in one ranged read, each record checked: ``[[(sfc index, stored group), ...], ...]``."""
        idx, data, end = self.index, f"{self.path}/data", self.end
        offsets = idx.offsets
        start = int(offsets[i0])
        stop = int(offsets[i1 + 1]) if i1 + 1 < len(offsets) else end
        buf = self.source.read_range(data, start, stop - start)
        if len(buf) < stop - start:
            raise self.corrupt(f"data file {self.layer}/{data} is truncated: it ends at byte {start + len(buf)}, "
                               f"the version records {end} bytes")
        checked = self.checked
        out, p, last = [], 0, None
        mv = memoryview(buf)
        for i in range(i0, i1 + 1):
            block_end = (int(offsets[i + 1]) if i + 1 < len(offsets) else end) - start
            records = []
            first = True
            while p < block_end:
                at = start + p
                if p + 8 > len(buf):
                    raise self.corrupt(f"data file {self.layer}/{data} at byte {at}: a record runs past the end of the file")
                rec_len, key_len = _II.unpack_from(buf, p)
                if rec_len == -1:
                    # the sync bytes are checked against the header where reading it costs nothing more; on
                    # an object store a checked file's header is not fetched for it (a request per file): a
                    # damaged marker loses nothing, and the record after it is checked (lengths, CRC32C)
                    if (self.header is not None or not self.checked or _cheap_stat(self.source)) \
                            and buf[p + 4:p + 20] != self.sync():
                        raise self.corrupt(f"data file {self.layer}/{data} at byte {at}: a damaged sync marker")
                    p += 20
                    continue
                why = _check_lengths(rec_len, key_len, stop - at - 8, checked)
                if why is not None:
                    raise self.corrupt(f"data file {self.layer}/{data} at byte {at}"
                                       + (f" (after SFC index {last})" if last is not None else "") + f": {why}")
                body = mv[p + 8:p + 8 + rec_len]
                (key,) = _Q.unpack_from(body, 0)
                (n,) = _I.unpack_from(body, 8)
                if n != rec_len - 12:
                    raise self.corrupt(f"data file {self.layer}/{data} at byte {at} (SFC index {key}): value size {n} "
                                       f"disagrees with record length {rec_len}")
                if checked:
                    (stored,) = _I.unpack_from(body, rec_len - 4)
                    actual = google_crc32c.value(bytes(body[:rec_len - 4]))
                    if actual != stored & 0xFFFFFFFF:
                        raise self.corrupt(f"data file {self.layer}/{data} at byte {at} (SFC index {key}): checksum "
                                           f"mismatch (CRC32C {actual:08x}, stored {stored & 0xFFFFFFFF:08x})")
                    group = bytes(body[12:rec_len - 4])
                else:
                    group = bytes(body[12:])
                if (last is not None and key <= last) or (first and key != int(idx.keys[i])):
                    raise self.corrupt(f"data file {self.layer}/{data} at byte {at}: SFC index {key} is out of order "
                                       f"(index entry {i} says {int(idx.keys[i])})")
                if i + 1 < len(offsets) and key >= int(idx.keys[i + 1]):
                    raise self.corrupt(f"data file {self.layer}/{data} at byte {at}: SFC index {key} is past index "
                                       f"entry {i + 1} ({int(idx.keys[i + 1])})")
                first = False
                last = key
                records.append((key, group))
                p += 8 + rec_len
            if p != block_end:
                raise self.corrupt(f"data file {self.layer}/{data} at byte {start + p}: a record crosses index entry "
                                   f"{i + 1}'s offset {block_end + start}")
            if not records:
                raise self.corrupt(f"data file {self.layer}/{data}: index entry {i} (SFC index {int(idx.keys[i])}) "
                                   f"points at byte {int(offsets[i])}, where no record starts")
            out.append(records)
        return out


def _cheap_stat(source) -> bool:
    from .source import LocalSource

    return isinstance(source, LocalSource)


def _check_lengths(rec_len, key_len, available, checked):
    if key_len != 8:
        return f"key length {key_len} (must be 8)"
    least = 12 + (4 if checked else 0)
    if rec_len < least:
        return f"record length {rec_len} (at least {least})"
    if rec_len > available:
        return f"record length {rec_len} runs past the end of the file ({available} bytes left)"
    return None
