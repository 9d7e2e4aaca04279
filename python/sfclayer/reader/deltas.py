"""A pinned version's delta files (format 7, docs/FORMAT.md section 11), as the in-process reader uses them.

:class:`DeltaFiles` finds the deltas a look-up asks (those whose span holds its index, newest first)
and those a scan reads (whose span meets its ranges); :class:`DeltaRecords` holds the records a scan
read from them (:func:`file_records`), sorted by index and list position, for
:meth:`~sfclayer.reader.version.PinnedVersion.scan` to interleave with the base files' records;
:func:`merge_by_key` merges the records at one index.
"""

from __future__ import annotations

import bisect

from .documents import DeltaFile

__all__ = ["DeltaFiles", "DeltaRecords", "file_records", "merge_by_key"]


class DeltaFiles:
    """The delta files of one version, grouped by the version that added them (each group sorted and
    disjoint, so at most one file of a group holds an index)."""

    def __init__(self, deltas: list[DeltaFile]):
        self.deltas = deltas
        groups: dict[int, list[DeltaFile]] = {}
        for d in deltas:
            groups.setdefault(d.added_in, []).append(d)
        # newest first: (first indexes, deltas)
        self._groups = [([d.file.first_index for d in g], g) for _, g in sorted(groups.items(), reverse=True)]

    def holding(self, index: int) -> list[DeltaFile]:
        """The deltas whose span holds ``index``, newest first."""
        out = []
        for firsts, group in self._groups:
            i = bisect.bisect_right(firsts, index) - 1
            if i >= 0 and index <= group[i].file.last_index:
                out.append(group[i])
        return out

    def meeting(self, ranges) -> list[DeltaFile]:
        """The deltas whose span meets one of ``ranges`` (sorted, disjoint ``(lo, hi)``), in list order."""
        if not self.deltas or not ranges:
            return []
        his = [hi for _, hi in ranges]
        out = []
        for d in self.deltas:
            r = bisect.bisect_left(his, d.file.first_index)  # the first range ending at or after the span's start
            if r < len(ranges) and ranges[r][0] <= d.file.last_index:
                out.append(d)
        return out


class DeltaRecords:
    """Records ``(entry, block, j)`` read from deltas, in order of index, then of the deltas' list position.

    ``next`` is the index of the first record not yet taken (None when all are)."""

    def __init__(self, records: list[tuple]):
        # (index, position, entry, block, j): (index, position) pairs are unique, so sorting compares nothing after them
        records.sort(key=lambda r: (r[0], r[1]))
        self._records = records
        self._at = 0
        self.next = records[0][0] if records else None

    def take(self, index: int) -> list[tuple]:
        """The records at ``index`` (the first index not yet taken)."""
        records, at, out = self._records, self._at, []
        while at < len(records) and records[at][0] == index:
            out.append(records[at][2:])
            at += 1
        self._at = at
        self.next = records[at][0] if at < len(records) else None
        return out

    def before(self, index: int | None):
        """The records of each index below ``index`` (None: every index left), a list per index."""
        while self.next is not None and (index is None or self.next < index):
            yield self.take(self.next)


def merge_by_key(records, decoded):
    """``(entry, block, j, n)`` of the tiles of ``records`` (``(entry, block, j)`` at one index, in the order
    their tiles apply), a later record's tile replacing an earlier one of the same key in its place.
    ``decoded(entry, block, j)`` gives a record's ``[(key, tile), ...]``."""
    winners = {}
    for entry, block, j in records:
        for n, (k, _) in enumerate(decoded(entry, block, j)):
            winners[k] = (entry, block, j, n)
    return winners.values()


def file_records(pinned, entry, ranges, los):
    """``(index, block, j)`` of a delta file's records inside ``ranges`` (``los`` their starts), in index
    order, its blocks read at once through ``pinned`` (the :class:`~sfclayer.reader.version.PinnedVersion`:
    its checked index and block cache): what :meth:`~sfclayer.reader.version.PinnedVersion.scan` does
    inline for base files."""
    df = pinned.data_file(entry)
    wanted = set()
    for lo, hi in ranges:
        if hi < entry.first_index or entry.last_index < lo:
            continue
        i0, i1 = max(df.index.floor(lo), 0), df.index.floor(hi)
        if i1 >= 0:
            wanted.update(range(i0, i1 + 1))
    if not wanted or len(df.index.keys) == 0:
        return
    order = sorted(wanted)
    blocks = pinned.blocks(entry, order)
    for i in order:
        block = blocks[i]
        for j, index in enumerate(block.keys):
            r = bisect.bisect_right(los, index) - 1
            if r >= 0 and index <= ranges[r][1]:
                yield index, block, j
