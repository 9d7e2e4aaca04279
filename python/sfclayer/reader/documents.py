"""The commit log of a layer read in-process: version documents, the newest one, manifests, delta files
(docs/FORMAT.md sections 5, 6, 9, 10 and 11).

Every document and manifest is checked before it is used (its CRC32C trailer from format 3 on, its
format version, its fields), and damage raises :class:`~sfclayer.errors.CorruptLayer` naming it, with
the advice the JVM gives. Parsed documents are cached by content (SHA-256), manifests by path and
checksum (they are immutable).
"""

from __future__ import annotations

import bisect
import datetime as _dt
import hashlib
import json
import os
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass

from ..errors import CorruptLayer, LayerNotFound, UnsupportedFormat
from .datafile import FileEntry, crc32c
from .source import LocalSource

__all__ = ["MAX_FORMAT_VERSION", "VersionLog", "Document", "DeltaFile", "ManifestTree", "check_trailer"]

#: The newest format version this reader reads (docs/FORMAT.md).
MAX_FORMAT_VERSION = 7
#: The first format whose documents list manifests (section 10), and the one of delta files (section 11).
MANIFEST_FORMAT_VERSION = 6
DELTA_FORMAT_VERSION = 7
LOG_DIR = "_sfclayer"
HINT = f"{LOG_DIR}/_last_version"
#: A copy of the newest version document, kept by writers on object stores (section 6).
NEWEST_COPY = f"{LOG_DIR}/_newest.json"
_VERSION_FILE = re.compile(r"^v(\d{8,})\.json$")
_TRAILER = re.compile(rb'"checksum"\s*:\s*"([0-9a-f]{8})"\s*}\s*$')


#: Keys one LIST request returns (S3's page).
_PAGE = 1000


def _listed_versions(listed, etags=None) -> dict:
    """``{version: length}`` of the version documents among ``(key under the layer, size, etag)`` entries
    (and their ETags into ``etags`` when given)."""
    out = {}
    for name, size, *rest in listed:
        tail = name[len(LOG_DIR) + 1:] if name.startswith(LOG_DIR + "/") else ""
        m = _VERSION_FILE.match(tail)
        if m:
            out[int(m.group(1))] = size
            if etags is not None and rest:
                etags[int(m.group(1))] = rest[0]
    return out


def _read_hint(src) -> int:
    """The ``_last_version`` hint's version, 0 when it is missing or unparsable."""
    try:
        return max(0, int(src.read(HINT).decode("ascii").strip()))
    except (OSError, ValueError, UnicodeDecodeError):
        return 0


def _may_miss_longer_names(vs: dict, n: int) -> bool:
    """Whether a listing from just before ``v<n>.json`` may have missed longer names, which sort by their
    leading digits (``v100000000.json`` before ``v99999999.json``): only when it lists the last name of
    ``n``'s length (section 6, "Names of more digits")."""
    digits = max(8, len(str(n)))
    return (10 ** digits - 1) in vs


def version_file(version: int) -> str:
    return f"{LOG_DIR}/v{version:08d}.json"


def check_trailer(data: bytes) -> str | None:
    """None when the document's ``checksum`` trailer matches its bytes, else what is wrong (section 9)."""
    m = _TRAILER.search(data)
    if m is None:
        return "no checksum trailer (the document is truncated or not written by sfclayer)"
    at = m.start(1)
    actual = crc32c(data[:at] + b"00000000" + data[at + 8:])
    said = m.group(1).decode()
    return None if f"{actual:08x}" == said else f"checksum mismatch (CRC32C {actual:08x}, the document says {said})"


def _micros(iso: str) -> int:
    t = _dt.datetime.fromisoformat(iso.replace("Z", "+00:00"))
    if t.tzinfo is None:
        t = t.replace(tzinfo=_dt.timezone.utc)
    return (t - _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)) // _dt.timedelta(microseconds=1)


@dataclass(frozen=True)
class DeltaFile:
    """One entry of a format 7 document's ``deltas`` (section 11): a data file and the version that added it.

    ``position`` is its place in the list (oldest first): at a key held by several files, the base
    file's tile comes first, then each delta's in this order, a later one replacing an earlier one.
    """

    file: FileEntry
    added_in: int
    position: int

    @classmethod
    def from_json(cls, m, position: int, document_format: int) -> "DeltaFile":
        if not isinstance(m, dict):
            raise CorruptLayer(f"deltas entry {position} is not an object")
        added = m.get("addedIn")
        if isinstance(added, bool) or not isinstance(added, int) or added < 1:
            raise CorruptLayer(f"deltas entry {m.get('name')}: field 'addedIn' is missing or not a version number")
        return cls(FileEntry.from_json(m, None, document_format), added, position)

    @staticmethod
    def check_order(deltas: "list[DeltaFile]", version: int) -> str | None:
        """None when ``deltas`` follow section 11's order rules (as the JVM's ``DeltaFile.checkOrder``), else
        what is wrong: ``addedIn`` never decreases and is at most ``version``; one version's files are sorted
        by first index with disjoint spans."""
        prev = None
        for d in deltas:
            f = d.file
            if f.last_index < f.first_index:
                return f"delta {f.id} ends ({f.last_index}) before it starts"
            if d.added_in > version:
                return f"delta {f.id} says it was added in version {d.added_in}, after the document's version {version}"
            if prev is not None:
                if d.added_in < prev.added_in:
                    return f"deltas {prev.file.id} and {f.id} are not in the order they were added"
                if d.added_in == prev.added_in and f.first_index <= prev.file.last_index:
                    return f"deltas {prev.file.id} and {f.id} of one version are not sorted and disjoint"
            prev = d
        return None


class Document:
    """One parsed, checked version document: the raw JSON (``doc``) and what reading needs from it.

    ``files``: the base files (None when the document lists manifests); ``deltas``: its delta files
    (format 7), oldest first, empty without."""

    def __init__(self, doc: dict, source: str, layer: str):
        self.doc = doc
        self.source = source
        self.format_version = int(doc["formatVersion"])
        self.version = int(doc["version"])
        self.compression = doc.get("compression", "none")
        self.created_micros = _micros(doc["createdAt"]) if doc.get("createdAt") else 0
        self.files: list[FileEntry] | None = None
        if "manifests" not in doc and doc.get("files") is not None:
            fv, data_dir = self.format_version, doc.get("dataDir")
            self.files = sorted((FileEntry.from_json(f, data_dir, fv) for f in doc["files"]),
                                key=lambda f: f.first_index)
        deltas = doc.get("deltas") or []
        if not isinstance(deltas, list):
            raise CorruptLayer("field 'deltas' is not a list")
        if deltas and self.format_version < DELTA_FORMAT_VERSION:
            raise CorruptLayer(f"it lists deltas but says format version {self.format_version}")
        self.deltas: list[DeltaFile] = [DeltaFile.from_json(d, i, self.format_version) for i, d in enumerate(deltas)]
        bad = DeltaFile.check_order(self.deltas, self.version)
        if bad is not None:
            raise CorruptLayer(bad)

    @classmethod
    def parse(cls, data: bytes, source: str, layer: str, version: int) -> "Document":
        """Checks and parses a document's bytes as the JVM's ``LayerMetadata.fromJsonBytes`` does."""
        damage = check_trailer(data)
        try:
            doc = json.loads(data)
        except ValueError as e:
            raise _damaged(f"bad layer metadata in {source}: the version document is damaged or truncated: "
                           + (f"{damage}; " if damage else "") + f"not JSON ({e})", layer, version) from None
        fv = doc.get("formatVersion") if isinstance(doc, dict) else None
        newer = isinstance(fv, int) and not isinstance(fv, bool) and fv > MAX_FORMAT_VERSION
        if damage is not None and not newer:
            # formats 1 and 2 have no trailer: only a document that should have one is damaged by lacking it
            if not (isinstance(fv, int) and fv < 3 and "no checksum trailer" in damage):
                raise _damaged(f"version document {source} is damaged: {damage}", layer, version)
        if not isinstance(doc, dict) or doc.get("format") != "sfclayer":
            raise _damaged(f'not sfclayer metadata: {source} (format is not "sfclayer")', layer, version)
        if not isinstance(fv, int) or isinstance(fv, bool) or not 1 <= fv <= MAX_FORMAT_VERSION:
            if isinstance(fv, int) and not isinstance(fv, bool):
                raise UnsupportedFormat(f"layer version document {source} has format version {fv}; this sfclayer "
                                        f"reads format versions 1..{MAX_FORMAT_VERSION} (upgrade sfclayer to read it)")
            raise _damaged(f"bad layer metadata in {source}: field 'formatVersion' is not a number", layer, version)
        for field in ("version", "keyIndex", "valueSchema", "tileSchema", "compression", "recordCount", "fileCount"):
            if field not in doc:
                raise _damaged(f"bad layer metadata in {source}: field '{field}' is missing", layer, version)
        if fv >= 3 and "checksum" not in doc:
            raise _damaged(f"version document {source} is damaged: format version {fv} but no checksum", layer, version)
        if "manifests" in doc:
            if fv < MANIFEST_FORMAT_VERSION or "files" in doc:
                raise _damaged(f"bad layer metadata in {source}: it lists manifests but says format version {fv}"
                               + (" and lists files too" if "files" in doc else ""), layer, version)
            if sum(int(r["fileCount"]) for r in doc["manifests"]) != int(doc["fileCount"]):
                raise _damaged(f"bad layer metadata in {source}: its manifests hold a different number of files "
                               f"than fileCount {doc['fileCount']}", layer, version)
        elif fv == MANIFEST_FORMAT_VERSION:  # format 7 (deltas) lists its base files either way
            raise _damaged(f"bad layer metadata in {source}: field 'manifests' is missing", layer, version)
        elif fv >= 2 and doc.get("files") is None:
            raise _damaged(f"bad layer metadata in {source}: field 'files' is missing", layer, version)
        try:
            out = cls(doc, source, layer)
        except CorruptLayer as e:
            raise _damaged(f"bad layer metadata in {source}: {e}", layer, version) from None
        except (KeyError, TypeError, ValueError) as e:
            raise _damaged(f"bad layer metadata in {source}: {e}", layer, version) from None
        if out.version != version:
            raise CorruptLayer(f"bad layer metadata in {source}: it says version {out.version}")
        if fv >= 2 and out.files is not None and len(out.files) != int(doc["fileCount"]):
            raise _damaged(f"bad layer metadata in {source}: it lists {len(out.files)} files but fileCount is "
                           f"{doc['fileCount']}", layer, version)
        return out


def _damaged(what: str, layer: str, version: int) -> CorruptLayer:
    return CorruptLayer(what + ". Other versions of the layer are not affected"
                        + (f" (read version {version - 1} with option versionAsOf={version - 1})" if version > 1 else "")
                        + f"; `sfclayer verify {layer}` checks the whole layer")


class VersionLog:
    """The ``_sfclayer/`` log of one layer root: which versions exist, and their documents."""

    _DOCS: "OrderedDict[str, Document]" = OrderedDict()  # by SHA-256 of the bytes, shared by every layer
    _DOCS_LOCK = threading.Lock()

    def __init__(self, source, layer: str):
        self.source, self.layer = source, layer

    def versions(self) -> list[tuple[int, int]]:
        """``(version, document length)`` of every committed version, ascending."""
        out = []
        for name, size in self.source.list(LOG_DIR):
            m = _VERSION_FILE.match(name)
            if m:
                out.append((int(m.group(1)), size))
        return sorted(out)

    def _newest_from_hint(self) -> int:
        src = self.source
        try:
            n = int(src.read(HINT).decode("ascii").strip())
        except (OSError, ValueError, UnicodeDecodeError):
            return 0
        if n < 1 or not src.exists(version_file(n)):
            return 0
        while src.exists(version_file(n + 1)):
            n += 1
        return n

    def _newest_from_copy(self):
        """On an object store that lists from a key (S3's start-after), section 6: the writers' copy of the
        newest document ``_sfclayer/_newest.json`` (or, without a usable one, the hint) names the version to
        LIST from; the copy is the newest document only when that version is the highest listed and its
        ETag is the copy's MD5 (2 requests). Returns the document, ``(version, length)`` of the newest to
        read (a stale copy, or the hint), or None (neither names a listed document) to look otherwise."""
        src = self.source
        try:
            data = src.read(NEWEST_COPY)
            n = json.loads(data).get("version")
        except (FileNotFoundError, ValueError, AttributeError):
            data, n = None, None
        if not isinstance(n, bool) and isinstance(n, int) and n >= 1:
            found = self._listed_from(n, data)
            if found is not None:
                return found
        # no usable copy (or its version is not listed: writers that predate it committed since, and a
        # vacuum removed it): the hint says where to list from
        hint = _read_hint(src)
        return self._listed_from(hint, None) if hint >= 1 and hint != n else None

    def _listed_from(self, n: int, data: bytes | None):
        """One LIST from just before ``v<n>.json``: the newest document (``data`` when it is that
        document's bytes), its ``(version, length)`` to read, or None when ``v<n>.json`` is not listed."""
        etags = {}
        got = self.source.list_from(LOG_DIR, version_file(n - 1) if n > 1 else f"{LOG_DIR}/v")
        if got is None:
            return None  # a client without start-after (fsspec's, in a forked process)
        vs = _listed_versions(got[0], etags)
        if n not in vs or _may_miss_longer_names(vs, n):
            return None
        newest = max(vs)
        if (data is not None and newest == n and vs[n] == len(data)
                and etags.get(n) == hashlib.md5(data, usedforsecurity=False).hexdigest()):
            return self._parsed(data, n)
        return newest, vs[newest]

    def _newest_from_first_page(self) -> tuple[int, int] | None:
        """On an object store whose client lists from a key: ``(version, length)`` of the newest document
        when all the documents (the keys after ``_sfclayer/v``) fit one LIST page, else None (list the log)."""
        first = self.source.list_from(LOG_DIR, f"{LOG_DIR}/v", _PAGE)
        if first is None:
            return None
        entries, complete = first
        vs = _listed_versions(entries)
        return max(vs.items()) if complete and vs else None

    def current(self) -> Document:
        """The newest version's document (section 6: hint and probes locally; on object stores the
        writers' copy of the newest document, or the hint, and one LIST from the version it names; else
        one LIST of the documents when they fit a page, else the whole log listed)."""
        hinted = self._newest_from_hint() if isinstance(self.source, LocalSource) else 0
        if hinted:
            return self.read(hinted)
        if not isinstance(self.source, LocalSource):
            if hasattr(self.source, "list_from"):
                found = self._newest_from_copy() or self._newest_from_first_page()
                if isinstance(found, Document):
                    return found
                if found is not None:
                    return self.read(*found)
        vs = self.versions()
        if vs:
            return self.read(*vs[-1])
        if isinstance(self.source, LocalSource) and not self.source.exists(""):
            raise LayerNotFound(f"no sfclayer layer at {self.layer}: path does not exist")
        raise LayerNotFound(f"no sfclayer layer at {self.layer}: no committed version in {self.layer}/{LOG_DIR} "
                            "(not an sfclayer layer, or never committed)")

    def read(self, version: int, length: int = -1) -> Document:
        """Version ``version``'s document; LayerNotFound if it is absent."""
        path = version_file(version)
        try:
            data = self.source.read(path)
        except FileNotFoundError:
            raise LayerNotFound(f"layer {self.layer} has no version {version} ({self.layer}/{path})") from None
        return self._parsed(data, version)

    def _parsed(self, data: bytes, version: int) -> Document:
        """Version ``version``'s document from its bytes (cached by content)."""
        path = version_file(version)
        digest = hashlib.sha256(data).hexdigest()
        with self._DOCS_LOCK:
            doc = self._DOCS.get(digest)
            if doc is not None and doc.version == version:
                self._DOCS.move_to_end(digest)
                return doc
        doc = Document.parse(data, f"{self.layer}/{path}", self.layer, version)
        with self._DOCS_LOCK:
            self._DOCS[digest] = doc
            while len(self._DOCS) > 256:
                self._DOCS.popitem(last=False)
        return doc

    def read_existing(self, version: int) -> Document:
        """As :meth:`read`, a missing version named with the versions that exist."""
        if not self.source.exists(version_file(version)):
            vs = [v for v, _ in self.versions()]
            raise LayerNotFound(f"layer {self.layer} has no version {version}"
                                + (" (it has no versions)" if not vs else f"; its versions are {_describe(vs)}"))
        return self.read(version)

    def as_of(self, micros: int) -> Document:
        """The newest version committed at or before ``micros`` (compared in milliseconds, as the JVM)."""
        millis = micros // 1000
        best, oldest = None, None
        vs = self.versions()
        for v, size in vs:
            d = self.read(v, size)
            if oldest is None:
                oldest = f"version {v} at {d.doc.get('createdAt')}"
            if d.created_micros // 1000 <= millis:
                best = d
        if best is None:
            when = _dt.datetime.fromtimestamp(millis / 1000, _dt.timezone.utc).isoformat().replace("+00:00", "Z")
            raise LayerNotFound(f"layer {self.layer} has no version committed at or before {when}"
                                + (" (it has no versions)" if oldest is None
                                   else f"; its oldest is {oldest} (versions {_describe([v for v, _ in vs])})"))
        return best

    def history(self) -> list[Document]:
        """Every committed version's document, oldest first."""
        return [self.read(v, size) for v, size in self.versions()]


def _describe(vs):
    if len(vs) <= 12:
        return "[" + ", ".join(map(str, vs)) + "]"
    return f"[{vs[0]}, {vs[1]}, ... {vs[-1]}] ({len(vs)} versions)"


class ManifestTree:
    """The data files of a format 6 version, reached through its manifests (section 10), read lazily:
    a look-up reads the manifests on its way only; each is checked before use and cached."""

    _CACHE: "OrderedDict[tuple, object]" = OrderedDict()  # (layer url, path, checksum) -> checked manifest
    _LOCK = threading.Lock()

    def __init__(self, source, layer: str, document: Document):
        self.source, self.layer, self.document = source, layer, document
        self.refs = document.doc["manifests"]
        self._key = getattr(source, "url", layer)

    def _load(self, ref: dict) -> list:
        """The checked entries under ``ref``: FileEntry items (level 0) or references (level > 0)."""
        key = (self._key, ref["path"], ref.get("checksum"))
        with self._LOCK:
            hit = self._CACHE.get(key)
            if hit is not None:
                self._CACHE.move_to_end(key)
                return hit
        where = f"{self.layer}/{LOG_DIR}/manifests/{ref['path']}"

        def bad(why):
            return CorruptLayer(f"manifest {where} is damaged: {why}. The versions that list it cannot be read; "
                                f"`sfclayer verify {self.layer}` checks the whole layer")

        try:
            data = self.source.read(f"{LOG_DIR}/manifests/{ref['path']}")
        except FileNotFoundError:
            raise bad("it is missing") from None
        damage = check_trailer(data)
        if damage:
            raise bad(damage)
        try:
            m = json.loads(data)
        except ValueError as e:
            raise bad(f"not JSON ({e})") from None
        if not isinstance(m, dict) or m.get("format") != "sfclayer-manifest":
            raise bad("not an sfclayer manifest")
        if m.get("checksum") != ref.get("checksum"):
            raise bad(f"its checksum {m.get('checksum')} is not the {ref.get('checksum')} its reference records")
        level = int(ref["level"])
        if m.get("level") != level:
            raise bad(f"level {m.get('level')}, its reference says {level}")
        try:
            if level == 0:
                items = [FileEntry.from_json(f, None, 6) for f in m["files"]]
                firsts = [f.first_index for f in items]
                totals = (len(items), sum(f.records for f in items), sum(f.indexes for f in items),
                          sum(int(f["dataBytes"]) for f in m["files"]))
                last = items[-1].last_index if items else None
            else:
                items = m["manifests"]
                firsts = [int(r["firstIndex"]) for r in items]
                totals = tuple(sum(int(r[k]) for r in items) for k in ("fileCount", "records", "indexes", "dataBytes"))
                last = int(items[-1]["lastIndex"]) if items else None
        except (KeyError, TypeError, ValueError, CorruptLayer) as e:
            raise bad(f"unreadable entries ({e})") from None
        if not items:
            raise bad("it lists nothing")
        if any(b <= a for a, b in zip(firsts, firsts[1:])):
            raise bad("its entries are not sorted by first index")
        want = tuple(int(ref[k]) for k in ("fileCount", "records", "indexes", "dataBytes"))
        if totals != want or firsts[0] != int(ref["firstIndex"]) or last != int(ref["lastIndex"]):
            raise bad(f"its totals or span (files, records, indexes, bytes {totals}, indexes {firsts[0]}..{last}) "
                      f"are not its reference's ({want}, {ref['firstIndex']}..{ref['lastIndex']})")
        with self._LOCK:
            self._CACHE[key] = items
            while len(self._CACHE) > 4096:
                self._CACHE.popitem(last=False)
        return items

    def find(self, index: int) -> FileEntry | None:
        """The file with the greatest first index ≤ ``index`` (None when every file starts above it)."""
        refs = self.refs
        while True:
            i = bisect.bisect_right([int(r["firstIndex"]) for r in refs], index) - 1
            if i < 0:
                return None
            items = self._load(refs[i])
            if int(refs[i]["level"]) == 0:
                j = bisect.bisect_right([f.first_index for f in items], index) - 1
                return items[j] if j >= 0 else None
            refs = items

    def files(self, lo: int | None = None, hi: int | None = None) -> list[FileEntry]:
        """The files whose span (up to the next file's first index − 1) meets ``[lo, hi]``; all by default."""
        out: list[FileEntry] = []

        def walk(refs, end):
            for i, r in enumerate(refs):
                first = int(r["firstIndex"])
                r_end = int(refs[i + 1]["firstIndex"]) - 1 if i + 1 < len(refs) else end
                if hi is not None and first > hi:
                    return
                if lo is not None and r_end is not None and r_end < lo:
                    continue
                items = self._load(r)
                if int(r["level"]) == 0:
                    out.extend(items)
                else:
                    walk(items, r_end)

        walk(self.refs, None)
        return out


def _reset_locks():
    VersionLog._DOCS_LOCK = threading.Lock()
    ManifestTree._LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):  # a lock held by another thread at fork() would stay held in the child
    os.register_at_fork(after_in_child=_reset_locks)
