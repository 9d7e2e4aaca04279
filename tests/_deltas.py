"""Hand-made format 7 versions (docs/FORMAT.md section 11) for tests, until a writer makes them.

:func:`publish_delta_version` gives a local layer a new version whose document is its newest one plus
another layer's data files listed as delta files (each a ``files`` entry plus ``addedIn``), sealed
with a correct checksum trailer (section 9). The other layer must have the same key index, tile schema
and compression (write both with the same options): its data directories are copied under the layer,
so its tiles become the delta's. Pure Python: no Spark, no JVM; the JVM writer's tests can reuse it
to build versions with deltas to fold, and the readers' tests to read.

Example::

    sfclayer.write(df_a, a, bounds=..., partitions=3)       # the layer
    sfclayer.write(df_b, b, bounds=..., partitions=2)       # its delta's tiles, in a layer of their own
    v = publish_delta_version(a, b)                         # a's version v: a's files + b's as deltas
"""

import datetime as dt
import json
import os
import secrets
import shutil

import google_crc32c

from .helpers import document_files

__all__ = ["seal", "document", "newest_version", "publish", "publish_delta_version", "delta_entries"]

_LOG = "_sfclayer"
_TAIL = b'"checksum":"00000000"}'


def seal(doc: dict) -> bytes:
    """The document's bytes with ``checksum`` its last member: the CRC32C of the bytes with the 8 hex
    digits zeroed (section 9)."""
    body = {k: v for k, v in doc.items() if k != "checksum"}
    body["checksum"] = "00000000"
    raw = json.dumps(body, separators=(",", ":")).encode()
    assert raw.endswith(_TAIL)
    crc = google_crc32c.value(raw)
    return raw[:-len(_TAIL)] + f'"checksum":"{crc:08x}"}}'.encode()


def newest_version(path: str) -> int:
    names = [n for n in os.listdir(os.path.join(path, _LOG)) if n.startswith("v") and n.endswith(".json")]
    return max(int(n[1:-5]) for n in names)


def document(path: str, version: int | None = None) -> dict:
    """Version ``version``'s document (the newest by default), as stored (format 6: ``manifests``, not files)."""
    version = version or newest_version(path)
    with open(os.path.join(path, _LOG, f"v{version:08d}.json"), "rb") as f:
        return json.loads(f.read())


def publish(path: str, doc: dict) -> int:
    """Publishes ``doc`` (its ``version`` set to the next number) as the layer's newest version; the
    hint follows. Returns the version."""
    version = newest_version(path) + 1
    doc = dict(doc, version=version)
    target = os.path.join(path, _LOG, f"v{version:08d}.json")
    with open(target, "xb") as f:  # never replaces a version
        f.write(seal(doc))
    with open(os.path.join(path, _LOG, "_last_version"), "w") as f:
        f.write(str(version))
    return version


def _stamp(previous: str | None) -> str:
    """Now (UTC, µs), later than ``previous`` by at least 1 µs (section 6, "Stamps")."""
    now = dt.datetime.now(dt.timezone.utc)
    if previous:
        prev = dt.datetime.fromisoformat(previous.replace("Z", "+00:00"))
        now = max(now, prev + dt.timedelta(microseconds=1))
    return now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def delta_entries(source: str, version: int | None = None) -> list[dict]:
    """The ``files`` entries of ``source``'s version (newest by default), sorted by first index."""
    doc = document(source, version)
    if "manifests" in doc:
        files = document_files(source, doc)
    else:
        data_dir = doc.get("dataDir")
        files = [dict(f, dir=f.get("dir", data_dir)) for f in doc["files"]]
    return sorted(files, key=lambda f: int(f["firstIndex"]))


def publish_delta_version(path: str, source: str, files=None) -> int:
    """Publishes a version of the local layer ``path``: its newest document plus the data files of
    ``source``'s newest version (or those of its ``files`` entries chosen by the caller: sorted, disjoint)
    as delta files added in the new version, with ``formatVersion`` 7 and an ``append`` operation marked
    ``"delta": true`` (section 11). Copies the files' directories from ``source`` into ``path``.
    Returns the new version's number."""
    base = document(path)
    src = document(source)
    for field in ("keyIndex", "tileSchema", "compression"):
        if base[field] != src[field]:
            raise ValueError(f"{source} cannot give deltas to {path}: its {field} differs")
    entries = delta_entries(source) if files is None else sorted(files, key=lambda f: int(f["firstIndex"]))
    for e in entries:
        target = os.path.join(path, e["dir"], e["name"])
        if os.path.exists(target):
            raise ValueError(f"{target} exists already (a data file can be given once)")
        shutil.copytree(os.path.join(source, e["dir"], e["name"]), target)
    version = newest_version(path) + 1
    deltas = list(base.get("deltas") or []) + [dict(e, addedIn=version) for e in entries]
    spans = []
    for e in entries:
        lo, hi = int(e["firstIndex"]), int(e["lastIndex"])
        if spans and lo <= spans[-1][1] + 1:
            spans[-1][1] = max(spans[-1][1], hi)
        else:
            spans.append([lo, hi])
    write_id = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S-") + secrets.token_hex(4)
    doc = dict(base)
    doc.update(formatVersion=7, writeId=write_id, createdAt=_stamp(base.get("createdAt")),
               dataDir=entries[0]["dir"].split("/")[0] if entries else base.get("dataDir"), deltas=deltas)
    doc["operation"] = {
        "name": "append", "delta": True, "readVersion": base["version"], "removedFiles": [], "changedRanges": spans,
        "metrics": {"filesAdded": len(entries), "recordsAdded": sum(int(e["records"]) for e in entries),
                    "bytesWritten": sum(int(e["dataBytes"]) for e in entries),
                    "tilesInserted": None, "tilesReplaced": None}}
    assert publish(path, doc) == version
    return version
