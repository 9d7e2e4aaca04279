"""Checking a layer's bytes and repairing damage: :func:`verify` and :func:`repair`.

Every record of a layer (format 3) carries a CRC32C, the version document records each data
file's length and its index file's CRC32C, and the document itself ends in a checksum
(docs/FORMAT.md, "Integrity"). :func:`verify` reads a whole version in one Spark job and reports
what is damaged; :func:`repair` writes a new version without the damaged records. Reads check every
record they return; ``read(..., on_corrupt="skip")`` leaves damaged records out instead of failing.
"""

import dataclasses
import json

from . import _jvm
from .errors import CorruptLayer

__all__ = ["verify", "repair", "VerifyReport", "DamagedFile", "RepairReport"]


@dataclasses.dataclass(frozen=True)
class DamagedFile:
    """One data file with damage, as :func:`verify` found it.

    Attributes
    ----------
    name : str
        The data file (MapFile directory) name, ``part-r-<partition>-<first index>``.
    first_index, last_index : int
        The SFC index range the version document gives it (``last_index`` -1 when unknown).
    damaged_records : int
        Records lost (index groups; a file lost whole counts its groups).
    first_offset : int or None
        Byte offset in ``data`` of the first damage, None when it is not in ``data`` (the index,
        a missing file).
    problems : tuple of str
        What is wrong beyond damaged records (index, length, order), one sentence each.
    lost : tuple of dict
        Per damaged record: ``offset``, ``index`` (as stored, unverified, or None), ``after`` (the
        last intact index before it) and ``what``.
    delta_dir : str or None
        For a delta file (format 7): its directory in the layer (delta and base files can share a
        name); None for a base file.
    added_in : int or None
        For a delta file: the version that added it (the version before it does not list it).
    """

    name: str
    first_index: int
    last_index: int
    damaged_records: int
    first_offset: object
    problems: tuple
    lost: tuple
    delta_dir: object = None
    added_in: object = None

    def line(self):
        """One line for a terminal.

        Examples
        --------
        >>> DamagedFile("part-r-00000-0", 0, 99, 1, 1234, (), ()).line()
        'part-r-00000-0  SFC indexes 0..99  1 damaged record, first at byte 1234'
        """
        n = self.damaged_records
        text = self.name if self.delta_dir is None else f"delta {self.delta_dir}/{self.name}"
        text += f"  SFC indexes {self.first_index}..{self.last_index if self.last_index >= 0 else '?'}"
        text += f"  {n} damaged record{'' if n == 1 else 's'}"
        if self.first_offset is not None:
            text += f", first at byte {self.first_offset}"
        if self.problems:
            text += "; " + "; ".join(self.problems)
        return text


@dataclasses.dataclass(frozen=True)
class VerifyReport:
    """What :func:`verify` found in one layer version.

    Attributes
    ----------
    path : str
    version : int or None
        None when the version document itself could not be read.
    format_version : int or None
    files_checked, groups_checked, tiles_checked, damaged_records : int
    damaged_files : tuple of DamagedFile
    problems : tuple of str
        Layer-level problems (a damaged version document, counts that disagree).
    document_damaged, manifests_damaged : bool
        Whether the version document, or a manifest of it (format 6), could not be read.
    """

    path: str
    version: object
    format_version: object
    files_checked: int
    groups_checked: int
    tiles_checked: int
    damaged_records: int
    damaged_files: tuple
    problems: tuple
    document_damaged: bool = False
    manifests_damaged: bool = False

    @property
    def clean(self):
        """True when nothing is damaged."""
        return not self.damaged_files and not self.problems and self.damaged_records == 0

    def lines(self):
        """The report as lines: one per damaged file, one per problem, then a summary."""
        out = [f.line() for f in self.damaged_files]
        out += list(self.problems)
        what = f"layer {self.path} version {self.version}" if self.version is not None else f"layer {self.path}"
        if self.clean:
            out.append(f"{what}: clean ({self.files_checked} files, {self.groups_checked} index groups, "
                       f"{self.tiles_checked} tiles checked)")
        else:
            out.append(f"{what}: DAMAGED: {len(self.damaged_files)} damaged file(s), {self.damaged_records} damaged "
                       f"record(s), {len(self.problems)} other problem(s) ({self.files_checked} files checked); "
                       f"`sfclayer repair {self.path}` writes a version without the damage")
        return out

    def __str__(self):
        return "\n".join(self.lines())

    @classmethod
    def from_json(cls, text):
        d = json.loads(text)
        files = tuple(
            DamagedFile(
                name=f["name"], first_index=int(f["firstIndex"]), last_index=int(f["lastIndex"]),
                damaged_records=int(f["damagedRecords"]),
                first_offset=None if int(f["firstOffset"]) < 0 else int(f["firstOffset"]),
                problems=tuple(f["problems"]), lost=tuple(f["lost"]),
                delta_dir=f.get("dir") if f.get("delta") else None,
                added_in=int(f["addedIn"]) if f.get("delta") else None)
            for f in d.get("files", []))
        return cls(path=d["layer"], version=d.get("version"), format_version=d.get("formatVersion"),
                   files_checked=int(d.get("filesChecked", 0)), groups_checked=int(d.get("groupsChecked", 0)),
                   tiles_checked=int(d.get("tilesChecked", 0)), damaged_records=int(d.get("damagedRecords", 0)),
                   damaged_files=files, problems=tuple(d.get("problems", [])),
                   document_damaged=bool(d.get("documentDamaged", False)),
                   manifests_damaged=bool(d.get("manifestsDamaged", False)))


@dataclasses.dataclass(frozen=True)
class RepairReport:
    """What :func:`repair` did.

    Attributes
    ----------
    path : str
    repaired : bool
        False when the layer was clean (and left as it is).
    damaged_version : int or None
        The version repaired (left in place for forensic reads).
    new_version : int or None
        The version written without the damage.
    dropped : tuple of dict
        The damaged records left out: ``file``, ``offset``, ``index`` (as stored), ``after``, ``what``;
        also recorded in the new version's history entry (operation ``repair``, metric ``dropped``).
    verify : VerifyReport
        The check that found the damage.
    """

    path: str
    repaired: bool
    damaged_version: object
    new_version: object
    dropped: tuple
    verify: VerifyReport

    def lines(self):
        if not self.repaired:
            return [f"layer {self.path} version {self.verify.version} is clean: nothing to repair"]
        out = [f"dropped {d['file']} at byte {d['offset']}" + (f" (SFC index {d['index']})" if d.get("index") is not None
                                                                else "") + f": {d['what']}" for d in self.dropped]
        out.append(f"layer {self.path}: version {self.new_version} written without the damage of version "
                   f"{self.damaged_version} ({len(self.dropped)} damaged record(s)/file(s) dropped; version "
                   f"{self.damaged_version} is left in place)")
        return out

    def __str__(self):
        return "\n".join(self.lines())


def verify(spark, path, version=None, quiet=None):
    """Check every byte of a layer version in one Spark job.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
    path : str
    version : int, optional
        The version to check (default: the newest).
    quiet : bool, optional
        Progress (tasks done of total, rate, time left) on stderr: None shows it in a terminal or a
        notebook (``SFCLAYER_QUIET=1`` turns that off), False always, True never (module
        :mod:`sfclayer._progress`).

    Returns
    -------
    VerifyReport
        ``report.clean`` is True when nothing is damaged; ``str(report)`` prints one line per
        damaged file and a summary.

    Examples
    --------
    >>> report = sfclayer.verify(spark, "/tmp/dem")  # doctest: +SKIP
    >>> report.clean                                 # doctest: +SKIP
    True
    """
    from . import _progress

    with _progress.track(spark, f"verify {path}", quiet):
        return VerifyReport.from_json(_jvm.verify_layer(spark, path, version))


def repair(spark, path, report=None):
    """Write a new version of a damaged layer without its damaged records.

    An update based on the version :func:`verify` checked: only the damaged data files are
    rewritten, from their intact records (so broken index files are rebuilt from their data files);
    every other file and every field of the version (a raster layer's grid, ...) is kept, and
    versions committed after the check are kept too (the repair is rebased over them, or fails with
    :class:`sfclayer.ConcurrentUpdate` when one rewrote a damaged file). The damaged version stays
    in place (readable explicitly, for forensics). A clean layer is left as it is.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
    path : str
    report : VerifyReport, optional
        A :func:`verify` report of this layer to act on (its version is repaired, even if newer
        versions were committed since); by default the newest version is verified first.

    Returns
    -------
    RepairReport
        Lists the dropped records, which the new version's history entry also records (operation
        ``repair``, its metric ``dropped``).

    A damaged newest version document cannot be read, so that version's changes are lost: the
    new version restores the newest readable version, and its history entry says so. A damaged or
    missing manifest (format 6) is rebuilt from the data files it listed, found again on disk by the
    span and totals its reference records, when they are whole: the new version (operation
    ``repair``) lists them again; otherwise :class:`sfclayer.CorruptLayer` names the older version
    to :func:`sfclayer.restore`.

    Examples
    --------
    >>> print(sfclayer.repair(spark, "/tmp/dem"))  # doctest: +SKIP
    """
    if report is None:
        report = verify(spark, path)
    if report.clean:
        return RepairReport(path, False, report.version, None, (), report)
    if report.manifests_damaged:
        done = json.loads(_jvm.rebuild_manifests(spark, path))
        dropped = tuple({"file": None, "offset": None, "index": None, "after": None,
                         "what": f"manifest {m} was damaged or missing; rebuilt from the data files it listed"}
                        for m in done["damagedManifests"])
        if done["newVersion"] is None:  # the newest version is not the one verify checked
            raise CorruptLayer(f"cannot repair layer {path}: {'; '.join(report.problems)}; the newest version "
                               f"({done['repairedVersion']}) has no damaged manifest: verify and repair it, or "
                               f"restore an older version (sfclayer restore)")
        again = verify(spark, path)
        if not again.clean:  # damaged records too: repaired as usual, on top of the rebuilt manifests
            rest = repair(spark, path, again)
            return RepairReport(path, True, report.version, rest.new_version, dropped + rest.dropped, report)
        return RepairReport(path, True, report.version, done["newVersion"], dropped, report)
    if report.document_damaged:
        done = json.loads(_jvm.restore_document(spark, path))
        dropped = ({"file": None, "offset": None, "index": None, "after": None,
                    "what": f"version document {v} is damaged; version {done['newVersion']} restores version "
                            f"{done['restoredVersion']}"} for v in done["damagedVersions"])
        return RepairReport(path, True, report.version, done["newVersion"], tuple(dropped), report)
    deltas = [f for f in report.damaged_files if f.delta_dir is not None]
    if deltas:
        # FORMAT.md section 11: a damaged delta's version is repaired only by a restore (a rewrite of
        # base files by name could take a base file of the same name for it)
        oldest = min(f.added_in for f in deltas)
        raise CorruptLayer(f"cannot repair layer {path} version {report.version}: delta file "
                           f"{deltas[0].delta_dir}/{deltas[0].name} (added in version {deltas[0].added_in}) is damaged; "
                           f"a version whose delta is damaged is repaired by restoring one that does not list it: "
                           f"`sfclayer restore {path} --version {oldest - 1}` (check it first with "
                           f"`sfclayer verify {path} --version {oldest - 1}`)")
    dropped = []
    for f in report.damaged_files:
        for d in f.lost:
            dropped.append({"file": f.name, "offset": d.get("offset"), "index": d.get("index"),
                            "after": d.get("after"), "what": d.get("what")})
        for p in f.problems:
            dropped.append({"file": f.name, "offset": None, "index": None, "after": None, "what": p})
    for p in report.problems:
        dropped.append({"file": None, "offset": None, "index": None, "after": None, "what": p})
    # An update based on the verified version: only the damaged files are rewritten, every other file
    # and field (a raster description, ...) is kept, and versions committed since are rebased over, not
    # erased (a ConcurrentUpdate when one rewrote the same files).
    names = [f.name for f in report.damaged_files]
    done = _jvm.command(spark, "repair", path, int(report.version), json.dumps(names),
                        json.dumps({"repairedVersion": report.version, "dropped": dropped}))
    return RepairReport(path, True, report.version, int(done["version"]), tuple(dropped), report)
