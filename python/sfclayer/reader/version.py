"""One pinned version of a layer read in-process: its files, their checked indexes, and decoded tiles.

Look-ups, batches and box queries go through two caches: every data file's checked index (process-wide,
keyed by the file's identity: files are immutable) and decoded *blocks* (the records between two index
entries, ``indexInterval`` groups, each decoded on first use; per layer, sized in bytes). A warm
look-up or window reads nothing; a cold one reads the file's index once, then one byte range of
``data`` per block run.

A format 7 version's delta files (docs/FORMAT.md section 11) are read as its base files are, checked
the same way and cached under their own paths: a look-up asks the deltas whose span holds the index,
newest first, then the base file; a box scan merges the base files with every delta meeting its ranges
by index, a later file's tile replacing an earlier one's of the same key.
"""

from __future__ import annotations

import bisect
import datetime as _dt
import io
import json
import os
import threading
import weakref

import fastavro

from ..codecs import decompress
from ..curves import key_index_from_json
from ..errors import CorruptLayer
from .bloom import BloomFilter
from .cache import ByteLRU
from .datafile import DataFile, FileEntry
from .deltas import DeltaFiles, DeltaRecords, file_records, merge_by_key
from .documents import DeltaFile, Document, ManifestTree
from .source import LocalSource

__all__ = ["PinnedVersion", "INDEXES"]

#: Checked data file indexes (and bloom filters) of every layer this process reads: 64 MiB.
INDEXES = ByteLRU(64 << 20)
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_SCHEMAS: dict = {}
_SCHEMAS_LOCK = threading.Lock()


def _array_schema(tile_schema: dict):
    text = json.dumps(tile_schema, sort_keys=True)
    with _SCHEMAS_LOCK:
        s = _SCHEMAS.get(text)
        if s is None:
            s = _SCHEMAS[text] = (fastavro.parse_schema({"type": "array", "items": tile_schema}),
                                  fastavro.parse_schema(tile_schema))
        return s


def micros_of(t) -> int:
    """Epoch microseconds of a decoded ``time`` (fastavro gives aware datetimes for timestamp-micros)."""
    if isinstance(t, int):
        return t
    return (t - _EPOCH) // _dt.timedelta(microseconds=1)


class _Block:
    """The records of one index entry of one file: keys, stored groups, decoded tiles (on first use)."""

    __slots__ = ("key", "keys", "stored", "tiles", "arrays", "nbytes")

    def __init__(self, key, records):
        self.key = key
        self.keys = [k for k, _ in records]
        self.stored = [g for _, g in records]
        self.tiles = [None] * len(records)
        self.arrays = [None] * len(records)  # record j's tiles' pixels as numpy views (windows ask again)
        self.nbytes = sum(len(g) for g in self.stored) + 64 * len(records) + 128


class _Pixels(list):
    """A block record's ``(tile, raster.to_numpy(tile))`` pairs, referred to weakly by a version's tile
    directory: they go when their block leaves the cache, and their directory entries with them."""

    __slots__ = ("ref", "__weakref__")


class PinnedVersion:
    """What a reader of one version needs: its document, key index, files, and the caches."""

    def __init__(self, source, layer: str, document: Document, tiles: ByteLRU):
        doc = document.doc
        self.source, self.layer, self.document = source, layer, document
        self.version = document.version
        self.key_index = key_index_from_json(doc["keyIndex"])
        self.space_time = self.key_index.kind == "z3"
        self.keys = ("col", "row", "time") if self.space_time else ("col", "row")
        self.array_schema, self.schema = _array_schema(doc["tileSchema"])
        self.compression = document.compression
        self.tiles = tiles
        self.bloom_skips = 0
        self.files_opened = 0   # data file indexes read (the process-wide cache may hold more)
        self.filters_read = 0
        self._source_id = getattr(source, "url", layer)
        self._local = isinstance(source, LocalSource)
        self._tree = None
        if document.format_version == 1:  # its `files` are informational: the listing is the version
            files = self._listed_files(doc)
        elif document.files is not None:
            files = document.files
        elif "manifests" in doc:
            files = None
            self._tree = ManifestTree(source, layer, document)
        else:
            files = self._listed_files(doc)
        self._files = files
        self._firsts = [f.first_index for f in files] if files is not None else None
        self.deltas: list[DeltaFile] = document.deltas
        self._deltas = DeltaFiles(document.deltas)
        self._grid = None
        self._ranges = ByteLRU(1 << 20)  # key box -> its SFC ranges: a warm window or count repeats its box
        # (col, row) -> (weak reference to a cached _Pixels, position): where a warm window finds its tiles
        # without a scan, as GDAL's block cache is found by block number; filled by scans for pixels
        self._directory = {}
        # checked bbox -> its _windows.WindowPlan (LocalLayer.to_numpy): emptied when any tile's pixels leave
        # the cache (_forget), so plans keep no evicted tile's bytes past the next eviction
        self.window_plans = {}

    @property
    def grid(self):
        """The version's :class:`~sfclayer.grid.TileGrid` (None without an extent), made once."""
        if self._grid is None:
            from ..grid import TileGrid

            self._grid = TileGrid.from_metadata(self.document.doc) or False
        return self._grid or None

    def ranges(self, c0, r0, c1, r1, t0, t1, max_ranges):
        """``[(lo, hi), ...]``: the SFC index ranges of a key box (the key index's), kept for the next ask."""
        key = (c0, r0, c1, r1, t0, t1, max_ranges)
        out = self._ranges.get(key)
        if out is None:
            if self.space_time:
                found = self.key_index.ranges(c0, r0, c1, r1, t0, t1, max_ranges=max_ranges)
            else:
                found = self.key_index.ranges(c0, r0, c1, r1, max_ranges=max_ranges)
            out = self._ranges.put(key, [(r.lo, r.hi) for r in found], 64 + 72 * len(found))
        return out

    def _listed_files(self, doc) -> list[FileEntry]:
        """Format 1 (docs/FORMAT.md section 1): the ``part-*`` entries of ``dataDir``, listed (a local
        directory's sub-directories, an object store's common prefixes), checked as the JVM's
        ``DataFileListing.list`` checks them: their count against ``fileCount``, no two starting at one
        index, and each among the document's informational ``files`` where it names any."""
        data_dir = doc.get("dataDir")
        list_dirs = getattr(self.source, "list_dirs", None)
        if list_dirs is None:
            raise CorruptLayer(f"layer {self.layer}: a format 1 version, whose files are found by listing "
                               f"directories, which this byte source cannot do; read it through Spark")
        if not isinstance(data_dir, str) or not data_dir:
            raise CorruptLayer(f"layer {self.layer}: version {self.version} is format 1 but names no dataDir")
        names = [n for n in list_dirs(data_dir) if n.startswith("part-")]
        files = sorted((FileEntry.listed(data_dir, n) for n in names), key=lambda f: f.first_index)
        where = f"layer {self.layer} version {self.version}: layer data directory {data_dir}"
        for a, b in zip(files, files[1:]):
            if a.first_index == b.first_index:
                raise CorruptLayer(f"{where} has two data files starting at index {a.first_index}: {a.name} and "
                                   f"{b.name}")
        if len(files) != int(doc["fileCount"]):
            raise CorruptLayer(f"{where} holds {len(files)} data files but the version's metadata lists "
                               f"{doc['fileCount']} (fileCount)")
        named = {f.get("name") for f in doc.get("files") or () if isinstance(f, dict)}
        stray = [f.name for f in files if named and f.name not in named]
        if stray:
            raise CorruptLayer(f"{where}: data file {data_dir}/{stray[0]} is not among the files its metadata "
                               f"lists")
        return files

    # ------------------------------------------------------------------ files

    def file_for(self, index: int) -> FileEntry | None:
        if self._tree is not None:
            return self._tree.find(index)
        i = bisect.bisect_right(self._firsts, index) - 1
        return self._files[i] if i >= 0 else None

    def files_meeting(self, lo: int, hi: int) -> list[FileEntry]:
        if self._tree is not None:
            return self._tree.files(lo, hi)
        i0 = max(0, bisect.bisect_right(self._firsts, lo) - 1)
        i1 = bisect.bisect_right(self._firsts, hi)
        return self._files[i0:i1]

    def deltas_holding(self, index: int) -> list[DeltaFile]:
        """The deltas whose span holds ``index``, newest first (one per version at most: section 11)."""
        return self._deltas.holding(index)

    def all_files(self) -> list[FileEntry]:
        """The base files (a format 7 version's deltas are :attr:`deltas`)."""
        return self._tree.files() if self._tree is not None else list(self._files)

    def described_files(self) -> list[FileEntry]:
        """The files a version's document shows: format 1's own (informational) entries, as the JVM
        gives the document out; else :meth:`all_files`."""
        if self.document.format_version == 1 and self.document.files is not None:
            return list(self.document.files)
        return self.all_files()

    def data_file(self, entry: FileEntry) -> DataFile:
        key = (self._source_id, entry.id, entry.index_crc, entry.data_bytes)
        df = INDEXES.get(key)
        if df is None:
            df = DataFile(self.source, entry, self.layer).load()
            self.files_opened += 1
            INDEXES.put(key, df, df.nbytes)
        return df

    def bloom(self, entry: FileEntry, load: bool = True) -> BloomFilter | None:
        if entry.bloom_crc is None:
            return None
        key = (self._source_id, entry.id, "bloom", entry.bloom_crc)
        f = INDEXES.get(key)
        if f is None and load:
            path = f"{entry.id}/bloom"
            try:
                data = self.source.read(path)
            except FileNotFoundError:
                data = None
            if data is None:
                from .datafile import advice

                raise CorruptLayer(f"layer {self.layer}: bloom filter {self.layer}/{path} is damaged: it is missing "
                                   f"(repair rebuilds it from the data file). {advice(self.layer)}")
            f = BloomFilter.parse(data, entry.bloom_crc, f"{self.layer}/{path}", self.layer)
            INDEXES.put(key, f, f.nbytes)
            self.filters_read += 1
        return f

    # ------------------------------------------------------------------ blocks

    def _block_key(self, entry, i):
        return (entry.id, entry.index_crc, i)

    def blocks(self, entry: FileEntry, wanted: list[int]) -> dict[int, _Block]:
        """The blocks ``wanted`` (sorted entry numbers) of a file: cached, or read in runs of adjacent ones."""
        out, missing = {}, []
        for i in wanted:
            b = self.tiles.get(self._block_key(entry, i))
            if b is None:
                missing.append(i)
            else:
                out[i] = b
        if missing:
            df = self.data_file(entry)
            run = [missing[0]]
            for i in missing[1:] + [None]:
                if i is not None and i == run[-1] + 1:
                    run.append(i)
                    continue
                for j, records in zip(run, df.blocks(run[0], run[-1])):
                    b = _Block(self._block_key(entry, j), records)
                    out[j] = self.tiles.put(self._block_key(entry, j), b, b.nbytes)
                if i is not None:
                    run = [i]
        return out

    def decoded(self, entry: FileEntry, block: _Block, j: int) -> list[tuple[tuple, dict]]:
        """The tiles of a block's record ``j``: ``[((col, row[, micros]), tile), ...]`` (decoded once)."""
        tiles = block.tiles[j]
        if tiles is None:
            try:
                avro = decompress(block.stored[j], self.compression)
                items = fastavro.schemaless_reader(io.BytesIO(avro), self.array_schema)
            except CorruptLayer as e:
                raise CorruptLayer(f"layer {self.layer}: data file {self.layer}/{entry.id}/data, SFC index "
                                   f"{block.keys[j]}: {e}") from None
            except Exception as e:  # fastavro on bytes that are not the schema's
                raise CorruptLayer(f"layer {self.layer}: data file {self.layer}/{entry.id}/data, SFC index "
                                   f"{block.keys[j]}: the group does not decode with the tile schema ({e})") from None
            if self.space_time:
                tiles = [((t["col"], t["row"], micros_of(t["time"])), t) for t in items]
            else:
                tiles = [((t["col"], t["row"]), t) for t in items]
            block.tiles[j] = tiles
            self.tiles.grow(block.key, len(avro) + 96 * len(items))
        return tiles

    # ------------------------------------------------------------------ reads

    def in_bounds(self, col, row, micros) -> bool:
        b = self.key_index.bounds
        if not (b.col_min <= col <= b.col_max and b.row_min <= row <= b.row_max):
            return False
        if self.space_time:
            tb = self.key_index.time_bounds
            return tb.min_micros <= micros <= tb.max_micros
        return True

    def get(self, col: int, row: int, micros: int = 0) -> dict | None:
        """The tile (every column) at the key, or None."""
        if not self.in_bounds(col, row, micros):
            return None
        index = self.key_index.index(col, row, micros) if self.space_time else self.key_index.index(col, row)
        key = (col, row, micros) if self.space_time else (col, row)
        if self.deltas:
            for d in self.deltas_holding(index):  # newest first: the first that holds the key answers
                # every look-up in its span asks a delta: its filter (read once, on object stores too)
                # answers most misses before its index or data is read
                bf = self.bloom(d.file)
                if bf is not None and not bf.might_contain(index):
                    self.bloom_skips += 1
                    continue
                tile = self._find(d.file, index, key)
                if tile is not None:
                    return tile
        entry = self.file_for(index)
        if entry is None:
            return None
        return self._find(entry, index, key)

    def _find(self, entry, index, key):
        block_key = None
        df = None
        # the entry holding the index: from the cached index (a block may be cached without its file's index)
        df = self.data_file(entry)
        i = df.index.floor(index)
        if i < 0:
            return None
        block_key = self._block_key(entry, i)
        block = self.tiles.get(block_key)
        if block is None:
            # on an object store a filter costs a request of its own: a look-up's first touch of a file
            # stays two requests (index, then data) and the filter is used once something else read it
            bf = self.bloom(entry) if self._local else self.bloom(entry, load=False)
            if bf is not None and not bf.might_contain(index):
                self.bloom_skips += 1
                return None
            block = self.blocks(entry, [i])[i]
        j = bisect.bisect_left(block.keys, index)
        if j == len(block.keys) or block.keys[j] != index:
            return None
        for k, tile in self.decoded(entry, block, j):
            if k == key:
                return tile
        return None

    def get_many(self, keys: list[tuple[int, int, int]]) -> list:
        """Tiles (or None, or the CorruptLayer of a damaged file) for ``(col, row, micros)`` keys."""
        out = []
        for col, row, micros in keys:
            try:
                out.append(self.get(col, row, micros))
            except CorruptLayer as e:
                out.append(e)
        return out

    def pixels(self, block: _Block, j: int, tiles) -> "_Pixels":
        """A block's record ``j`` (its decoded ``tiles``) as ``(tile, raster.to_numpy(tile))`` pairs, made once."""
        pairs = block.arrays[j]
        if pairs is None:
            from ..raster import to_numpy

            pairs = _Pixels((t, to_numpy(t)) for _, t in tiles)
            pairs.ref = weakref.ref(pairs, _forget(self._directory, [k for k, _ in tiles], self.window_plans))
            block.arrays[j] = pairs
            self.tiles.grow(block.key, 160 * len(pairs))
        return pairs

    def window_pixels(self, c0: int, r0: int, c1: int, r1: int) -> list | None:
        """``(tile, pixels)`` of every key of a spatial key box, row by row, from the tile directory; None
        when one is not there (not yet scanned, evicted, or not in the layer: the caller scans)."""
        d = self._directory
        out = []
        for r in range(r0, r1 + 1):
            for c in range(c0, c1 + 1):
                hit = d.get((c, r))
                pairs = hit[0]() if hit is not None else None
                if pairs is None:
                    return None
                out.append(pairs[hit[1]])
        return out

    def scan(self, box, ranges, accept=None, pixels=False):
        """Tiles whose key lies in ``box`` ``(c0, r0, c1, r1, t0, t1)`` within the SFC ``ranges``, in index order.

        ``accept``: an extra test of ``(col, row)`` (a geometry's tile cover). ``pixels``: yield
        ``(tile, pixels)`` pairs, the pixels a cached ``raster.to_numpy`` view (raster layers).

        Delta files meeting the ranges (section 11) are read first, their records sorted by index and
        list position, and interleaved with the base files' records as these stream by: an index held by
        several files yields its tiles merged by key (the base's first, then each delta's in list order,
        a later tile replacing an earlier one in its place). Base records between deltas' cost one
        comparison more than without deltas."""
        c0, r0, c1, r1, t0, t1 = box
        if not ranges:
            return
        los = [lo for lo, _ in ranges]
        seen = set()
        entries = []
        for lo, hi in ranges:
            for e in self.files_meeting(lo, hi):
                if e.id not in seen:
                    seen.add(e.id)
                    entries.append(e)
        entries.sort(key=lambda e: e.first_index)
        st = self.space_time
        directory = self._directory

        def emit(picked):
            # ``(entry, block, j, n)`` tiles that the box and ``accept`` take (the merge's rare path)
            for entry, block, j, n in picked:
                group = decoded(entry, block, j)
                k, tile = group[n]
                if not (c0 <= k[0] <= c1 and r0 <= k[1] <= r1) or (st and not (t0 <= k[2] <= t1)) \
                        or (accept is not None and not accept(k[0], k[1])):
                    continue
                if pixels:
                    pairs = block.arrays[j] or self.pixels(block, j, group)
                    if not st:
                        directory[k] = (pairs.ref, n)
                    yield pairs[n]
                else:
                    yield tile

        deltas = DeltaRecords([(index, d.position, d.file, block, j) for d in self._deltas.meeting(ranges)
                               for index, block, j in file_records(self, d.file, ranges, los)])

        def decoded(entry, block, j):
            return block.tiles[j] or self.decoded(entry, block, j)

        def deltas_before(index):  # the tiles of the deltas' indexes below ``index`` (None: all)
            for group in deltas.before(index):
                e, b, j = group[0]
                yield from emit(merge_by_key(group, decoded) if len(group) > 1
                                else [(e, b, j, n) for n in range(len(decoded(e, b, j)))])

        for entry in entries:
            df = self.data_file(entry)
            if len(df.index.keys) == 0:
                continue
            wanted = set()
            for lo, hi in ranges:
                if hi < entry.first_index:
                    continue
                i0, i1 = max(df.index.floor(lo), 0), df.index.floor(hi)
                if i1 < 0:
                    continue
                wanted.update(range(i0, i1 + 1))
            if not wanted:
                continue
            order = sorted(wanted)
            blocks = self.blocks(entry, order)
            for i in order:
                block = blocks[i]
                for j, index in enumerate(block.keys):
                    r = bisect.bisect_right(los, index) - 1
                    if r < 0 or index > ranges[r][1]:
                        continue
                    if deltas.next is not None and deltas.next <= index:
                        yield from deltas_before(index)
                        if deltas.next == index:  # base and deltas hold it: merged, the base's tiles first
                            yield from emit(merge_by_key([(entry, block, j)] + deltas.take(index), decoded))
                            continue
                    group = block.tiles[j] or self.decoded(entry, block, j)  # (a warm window's tiles: no call)
                    if pixels:
                        pairs = block.arrays[j] or self.pixels(block, j, group)
                    for n, (k, tile) in enumerate(group):
                        if not (c0 <= k[0] <= c1 and r0 <= k[1] <= r1):
                            continue
                        if st and not (t0 <= k[2] <= t1):
                            continue
                        if accept is not None and not accept(k[0], k[1]):
                            continue
                        if pixels:
                            if not st:
                                directory[k] = (pairs.ref, n)
                            yield pairs[n]
                        else:
                            yield tile
        yield from deltas_before(None)


def _forget(directory, keys, plans):
    """The callback of a _Pixels' weak reference: its keys leave the directory (unless filled anew since),
    and every window plan goes (one may hold views of these tiles)."""
    def forget(ref):
        plans.clear()
        for k in keys:
            hit = directory.get(k)
            if hit is not None and hit[0] is ref:
                directory.pop(k, None)
    return forget


def _reset_lock():
    global _SCHEMAS_LOCK
    _SCHEMAS_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):  # a lock held by another thread at fork() would stay held in the child
    os.register_at_fork(after_in_child=_reset_lock)
