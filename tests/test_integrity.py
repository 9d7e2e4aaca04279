"""Fault injection: every damaged byte is detected, reported, skipped or repaired, and nothing else is lost.
(Over 500 lines on purpose: one written layer shared by every kind of damage, each case beside the others.)

Each case damages a copy of one written layer the way a disk, a copy tool or a person would: a
flipped byte in a tile's values, in a key, in a record length; a truncated data file; a deleted or
damaged index file; a deleted data file the version lists; a damaged or truncated version document;
a format version above the supported one. For each, the test asserts the error class and what its
message names, that everything outside the damage reads exactly (against a Python dict of what was
written), and that ``verify`` finds it, ``onCorrupt=skip`` returns exactly the undamaged tiles and
``repair`` makes the layer whole again without the damaged records.

The records are located by an independent Python parser of the SequenceFile layout (not the
connector's reader). Hadoop's local filesystem keeps a ``.crc`` sidecar per file and would itself
notice the damage; the tests remove it, as a copy made by another tool would not have it.
"""

import io
import os
import re
import shutil
import struct

import fastavro
import pytest

import sfclayer
from sfclayer import CorruptLayer, UnsupportedFormat, _jvm
from sfclayer.cli import main as cli_main

from . import helpers

N = 40  # a 40 x 40 key grid; not every key has a tile


def _value(col, row):
    return row * 1000 + col


def _payload(col, row):
    return bytes((col * 7 + row * 13 + i) % 251 for i in range(300))


@pytest.fixture(scope="module")
def source(spark, tmp_path_factory):
    """A layer of ~1100 tiles in several data files, and the dict of what it holds."""
    keys = [(c, r) for r in range(N) for c in range(N) if (c * 3 + r * 5) % 7 != 0]
    rows = [(c, r, _value(c, r), _payload(c, r)) for c, r in keys]
    df = spark.createDataFrame(rows, "col int, row int, v long, payload binary")
    path = str(tmp_path_factory.mktemp("integrity") / "layer")
    # uncompressed: the tests damage and parse the stored records' bytes themselves
    sfclayer.write(df, path, bounds=(0, 0, N - 1, N - 1), block_size="64k", partitions=2, index_interval=4,
                   compression="none")
    assert len(helpers.data_files(path)) >= 4
    return path, {(c, r): _value(c, r) for c, r in keys}


# --------------------------------------------------------------------------------------------------
# An independent reader of the on-disk records (docs/FORMAT.md, "Data files", "Record framing")


def _vint(buf, pos):
    """Hadoop's WritableUtils.readVInt (short forms: the class names and metadata here)."""
    first = struct.unpack_from(">b", buf, pos)[0]
    if first >= -112:
        return first, pos + 1
    n = (-119 - first) if first < -120 else (-111 - first)
    value = int.from_bytes(buf[pos + 1:pos + 1 + n], "big")
    return (~value if first < -120 else value), pos + 1 + n


def records(mapfile):
    """Every record of a local data file: dicts with offset, index, value (group + CRC) and its end."""
    with open(os.path.join(mapfile, "data"), "rb") as f:
        return parse_records(f.read())


def parse_records(buf):
    """Every record of the bytes of a ``data`` file (see :func:`records`)."""
    assert buf[:4] == b"SEQ\x06"
    pos = 4
    for _ in range(2):  # key and value class names
        n, pos = _vint(buf, pos)
        pos += n
    pos += 2  # compressed, block-compressed
    (entries,) = struct.unpack_from(">i", buf, pos)
    pos += 4
    for _ in range(2 * entries):
        n, pos = _vint(buf, pos)
        pos += n
    sync = buf[pos:pos + 16]
    pos += 16
    out = []
    while pos < len(buf):
        (length,) = struct.unpack_from(">i", buf, pos)
        if length == -1:
            assert buf[pos + 4:pos + 20] == sync
            pos += 20
            continue
        (key_length, index, n) = struct.unpack_from(">iqi", buf, pos + 4)
        assert key_length == 8 and n == length - 12
        out.append({"offset": pos, "index": index, "value_start": pos + 20, "value": buf[pos + 20:pos + 20 + n],
                    "end": pos + 8 + length})
        pos += 8 + length
    return out


def tiles_of(md, record):
    """(col, row) of the tiles in one record's group (the group is the value without its CRC)."""
    schema = fastavro.parse_schema({"type": "array", "items": md["tileSchema"]})
    group = record["value"][:-4]
    return {(t["col"], t["row"]) for t in fastavro.schemaless_reader(io.BytesIO(group), schema)}


def _uncrc(path):
    """Hadoop's local filesystem checksums every file in a `.name.crc` sidecar: gone, as after a copy."""
    crc = os.path.join(os.path.dirname(path), "." + os.path.basename(path) + ".crc")
    if os.path.exists(crc):
        os.remove(crc)


def flip(path, offset, mask=0x5A):
    _uncrc(path)
    with open(path, "r+b") as f:
        f.seek(offset)
        b = f.read(1)
        f.seek(offset)
        f.write(bytes([b[0] ^ mask]))


def truncate(path, size):
    _uncrc(path)
    with open(path, "r+b") as f:
        f.truncate(size)


# --------------------------------------------------------------------------------------------------
# The damage cases: each damages a copy and says which tiles are lost and what the error names


def _victim(path):
    """The second data file, and a record in its middle that no index entry points at."""
    mapfile = helpers.data_files(path)[1]
    recs = records(mapfile)
    return mapfile, recs, len(recs) // 2 + (1 if (len(recs) // 2) % 4 == 0 else 0)


def damage_values(path, md):
    mapfile, recs, i = _victim(path)
    r = recs[i]
    flip(os.path.join(mapfile, "data"), r["value_start"] + len(r["value"]) // 2)
    return tiles_of(md, r), [os.path.basename(mapfile), f"SFC index {r['index']}", f"byte {r['offset']}"]


def damage_key(path, md):
    mapfile, recs, i = _victim(path)
    r = recs[i]
    flip(os.path.join(mapfile, "data"), r["offset"] + 8 + 7, mask=0x01)
    return tiles_of(md, r), [os.path.basename(mapfile), f"byte {r['offset']}"]


def damage_length(path, md):
    mapfile, recs, i = _victim(path)
    r = recs[i]
    flip(os.path.join(mapfile, "data"), r["offset"] + 2, mask=0x01)
    return tiles_of(md, r), [os.path.basename(mapfile), f"byte {r['offset']}", "record length"]


def damage_truncate(path, md):
    mapfile, recs, i = _victim(path)
    size = recs[i]["offset"] + 10
    truncate(os.path.join(mapfile, "data"), size)
    lost = set()
    for r in recs[i:]:
        lost |= tiles_of(md, r)
    return lost, [os.path.basename(mapfile), "truncated", f"{size} bytes"]


def damage_delete_index(path, md):
    mapfile, _, _ = _victim(path)
    os.remove(os.path.join(mapfile, "index"))
    _uncrc(os.path.join(mapfile, "index"))
    return set(), [os.path.join(os.path.basename(mapfile), "index"), "missing"]


def damage_index(path, md):
    mapfile, _, _ = _victim(path)
    index = os.path.join(mapfile, "index")
    flip(index, os.path.getsize(index) - 30)
    return set(), [os.path.join(os.path.basename(mapfile), "index"), "checksum"]


def damage_delete_file(path, md):
    mapfile, recs, _ = _victim(path)
    lost = set()
    for r in recs:
        lost |= tiles_of(md, r)
    shutil.rmtree(mapfile)
    name = os.path.basename(mapfile)
    return lost, [name, "missing", f"SFC indexes {name.rsplit('-', 1)[1]}.."]


DATA_DAMAGE = {
    "values": damage_values,
    "key": damage_key,
    "record-length": damage_length,
    "truncated-data": damage_truncate,
    "deleted-index": damage_delete_index,
    "damaged-index": damage_index,
    "deleted-data-file": damage_delete_file,
}


@pytest.fixture(scope="module")
def damaged(source, tmp_path_factory):
    """A damaged copy per case: (path, model of what survives, lost keys, what messages must name)."""
    path, model = source
    md = helpers.metadata(path)
    out = {}
    for name, fn in DATA_DAMAGE.items():
        copy = str(tmp_path_factory.mktemp("damaged") / name)
        shutil.copytree(path, copy)
        lost, names = fn(copy, md)
        assert lost <= set(model)
        out[name] = (copy, {k: v for k, v in model.items() if k not in lost}, lost, names)
    return out


def _collect(df):
    """Rows of a DataFrame, with sfclayer's Java errors raised as sfclayer's Python ones."""
    with _jvm.translated():
        return df.collect()


def _read_all(spark, path, **options):
    return {(r.col, r.row): r.v for r in _collect(sfclayer.read(spark, path, **options).select("col", "row", "v"))}


def _scan_metrics(spark, df):
    jvm = spark.sparkContext._jvm
    return dict(jvm.io.sfclayer.spark.SfcLayerMetrics.of(df._jdf))


@pytest.mark.parametrize("case", list(DATA_DAMAGE))
def test_reads_fail_naming_the_damage(spark, damaged, case):
    path, survivors, lost, names = damaged[case]
    with pytest.raises(CorruptLayer) as e:
        _read_all(spark, path)
    message = str(e.value)
    for what in names + [path.rstrip("/").split("/")[-1], "sfclayer verify", "onCorrupt=skip"]:
        assert what in message, (what, message)


@pytest.mark.parametrize("case", list(DATA_DAMAGE))
def test_everything_outside_the_damage_reads_exactly(spark, damaged, source, case):
    path, survivors, lost, _ = damaged[case]
    md = helpers.metadata(source[0])
    victim = os.path.basename(_victim(source[0])[0])
    untouched = set()
    for f in helpers.data_files(source[0]):
        if os.path.basename(f) != victim:
            for r in records(f):
                untouched |= tiles_of(md, r)
    # a query whose ranges miss the damaged file reads exactly, with no error
    some = sorted(untouched)[::25]
    df = sfclayer.read(spark, path).where(" OR ".join(f"(col = {c} AND row = {r})" for c, r in some))
    assert {(r.col, r.row): r.v for r in df.select("col", "row", "v").collect()} == {k: survivors[k] for k in some}


@pytest.mark.parametrize("case", list(DATA_DAMAGE))
def test_skip_returns_exactly_the_undamaged_tiles(spark, damaged, case):
    path, survivors, lost, _ = damaged[case]
    df = sfclayer.read(spark, path, on_corrupt="skip").select("col", "row", "v")
    got = {(r.col, r.row): r.v for r in _collect(df)}
    assert got == survivors
    skipped = _scan_metrics(spark, df).get("corruptRecordsSkipped", 0)
    assert (skipped > 0) == bool(lost), skipped


def test_skip_follows_sparks_ignore_switches(spark, damaged):
    path, survivors, _, _ = damaged["values"]
    missing_path, missing_survivors, _, _ = damaged["deleted-data-file"]
    try:
        spark.conf.set("spark.sql.files.ignoreCorruptFiles", "true")
        assert _read_all(spark, path) == survivors
        with pytest.raises(CorruptLayer, match="missing"):  # a gone file is ignoreMissingFiles' business
            _read_all(spark, missing_path)
        spark.conf.set("spark.sql.files.ignoreMissingFiles", "true")
        assert _read_all(spark, missing_path) == missing_survivors
        with pytest.raises(CorruptLayer):  # the option beats the session's switches
            _read_all(spark, path, on_corrupt="fail")
    finally:
        spark.conf.unset("spark.sql.files.ignoreCorruptFiles")
        spark.conf.unset("spark.sql.files.ignoreMissingFiles")


def test_bad_on_corrupt_value_is_named(spark, source):
    with pytest.raises(sfclayer.InvalidArgument, match="onCorrupt.*'sometimes'"):
        _read_all(spark, source[0], on_corrupt="sometimes")


@pytest.mark.parametrize("case", list(DATA_DAMAGE))
def test_look_ups_never_return_a_damaged_tile(spark, damaged, source, case):
    path, survivors, lost, names = damaged[case]
    md = helpers.metadata(source[0])
    mapfile, recs, i = _victim(source[0])
    # the damaged tiles, or (index damage) any tile of the file: never a tile, always the error
    keys = sorted(lost) if lost else sorted(tiles_of(md, recs[i]))
    with sfclayer.open(spark, path) as layer:
        for key in keys[:3]:
            with pytest.raises(CorruptLayer) as e:
                layer.get(*key)
            assert names[0] in str(e.value) and "sfclayer repair" in str(e.value)
        with pytest.raises(CorruptLayer):
            layer.get_many(sorted(survivors)[:2] + keys[:1])
        # tiles in other files still come back exactly
        victim = os.path.basename(_victim(source[0])[0])
        md = helpers.metadata(source[0])
        for f in helpers.data_files(source[0]):
            if os.path.basename(f) != victim:
                for key in sorted(tiles_of(md, records(f)[0])):
                    assert layer.get(*key)["v"] == survivors[key]


def test_clean_layer_verifies_clean(spark, source, capsys):
    path, model = source
    report = sfclayer.verify(spark, path)
    assert report.clean and report.damaged_files == () and report.problems == ()
    assert report.tiles_checked == len(model)
    assert report.files_checked == len(helpers.data_files(path))
    assert cli_main(["verify", path]) == 0
    assert "clean" in capsys.readouterr().out
    # repair leaves a clean layer as it is
    before = helpers.versions(path)
    result = sfclayer.repair(spark, path)
    assert not result.repaired and helpers.versions(path) == before


@pytest.mark.parametrize("case", list(DATA_DAMAGE))
def test_verify_finds_the_damage(spark, damaged, case, capsys):
    path, survivors, lost, names = damaged[case]
    report = sfclayer.verify(spark, path)
    assert not report.clean
    assert len(report.damaged_files) == 1
    f = report.damaged_files[0]
    assert f.name == names[0].split("/")[0]
    mapfile, recs, i = _victim(damaged["values"][0])
    if case == "truncated-data":
        assert f.first_offset == recs[i]["offset"] and f.damaged_records == len(recs) - i
    elif case == "deleted-data-file":
        assert f.first_offset is None and f.damaged_records == len(recs)
    elif lost:
        assert f.first_offset == recs[i]["offset"] and f.damaged_records == 1
    else:  # the index: no record lost, the problem named
        assert f.damaged_records == 0 and "index" in f.problems[0]
    assert cli_main(["verify", path]) == 1
    out = capsys.readouterr().out
    assert f.name in out and "DAMAGED" in out


@pytest.mark.parametrize("case", list(DATA_DAMAGE))
def test_repair_writes_a_version_without_the_damage(spark, damaged, tmp_path, case):
    path, survivors, lost, names = damaged[case]
    copy = str(tmp_path / "layer")
    shutil.copytree(path, copy)
    damaged_version = helpers.versions(copy)[-1]
    if case == "key":  # through the command line
        assert cli_main(["repair", copy]) == 0
        result = sfclayer.RepairReport(copy, True, damaged_version, helpers.versions(copy)[-1], (), None)
    else:
        result = sfclayer.repair(spark, copy)
    assert result.repaired and result.damaged_version == damaged_version
    assert result.new_version == damaged_version + 1
    assert _read_all(spark, copy) == survivors
    assert sfclayer.verify(spark, copy).clean
    entry = helpers.metadata(copy)  # the history entry, as sfclayer.history reads it
    assert entry["operation"]["name"] == "repair" and entry["version"] == result.new_version
    dropped = entry["operation"]["metrics"]["dropped"]
    assert dropped["repairedVersion"] == damaged_version
    assert dropped["dropped"] and all(d["file"] == names[0].split("/")[0] for d in dropped["dropped"])
    # the damaged version stays for forensic reads
    assert damaged_version in helpers.versions(copy)
    if case == "values":
        assert len(_collect(sfclayer.read(spark, copy, version=damaged_version, on_corrupt="skip"))) == len(survivors)


# --------------------------------------------------------------------------------------------------
# Version documents


def _doc(path):
    v = helpers.versions(path)[-1]
    return v, os.path.join(path, "_sfclayer", f"v{v:08d}.json")


@pytest.fixture()
def two_versions(spark, source, tmp_path):
    """A copy of the layer with a second version (the same tiles, deflate-compressed)."""
    path, model = source
    copy = str(tmp_path / "layer")
    shutil.copytree(path, copy)
    df = sfclayer.read(spark, path).select("col", "row", "v", "payload")
    sfclayer.write(df, copy, mode="overwrite", bounds=(0, 0, N - 1, N - 1), block_size="64k", compression="deflate")
    assert len(helpers.versions(copy)) == 2
    return copy, model


def _older_version_reads(spark, path, version, model):
    assert _read_all(spark, path, version=version) == model


@pytest.mark.parametrize("how", ["flipped", "truncated"])
def test_damaged_version_document_is_named(spark, two_versions, how, capsys):
    path, model = two_versions
    version, doc = _doc(path)
    if how == "flipped":
        text = open(doc).read()
        at = text.index('"recordCount"') + len('"recordCount" : ')
        flip(doc, at, mask=0x01)  # one digit of the count: still valid JSON
    else:
        truncate(doc, os.path.getsize(doc) // 2)
    with pytest.raises(CorruptLayer, match=re.escape(os.path.basename(doc)) + ".*damaged") as e:
        _read_all(spark, path)
    assert f"versionAsOf={version - 1}" in str(e.value)
    with pytest.raises(CorruptLayer, match=re.escape(os.path.basename(doc))):
        sfclayer.open(spark, path)
    _older_version_reads(spark, path, version - 1, model)
    report = sfclayer.verify(spark, path)
    assert not report.clean and os.path.basename(doc) in report.problems[0]
    assert cli_main(["verify", path]) == 1
    assert sfclayer.verify(spark, path, version=version - 1).clean
    # repair cannot read the damaged version's changes: it restores the newest readable version
    result = sfclayer.repair(spark, path)
    assert result.repaired and result.new_version == version + 1
    assert "restores version 1" in str(result)
    assert _read_all(spark, path) == model and sfclayer.verify(spark, path).clean
    assert helpers.metadata(path)["operation"]["name"] == "restore"  # a replace-type operation (Conflicts)
    assert os.path.exists(doc)  # the damaged document stays for forensics
    capsys.readouterr()


def test_format_version_above_supported_is_refused_by_name(spark, source, tmp_path):
    path, _ = source
    copy = str(tmp_path / "layer")
    shutil.copytree(path, copy)
    _, doc = _doc(copy)
    text = open(doc).read()
    assert '"formatVersion" : 3' in text
    _uncrc(doc)
    with open(doc, "w") as f:
        f.write(text.replace('"formatVersion" : 3', '"formatVersion" : 8'))
    # its own class (a CorruptLayer to callers that do not ask), not the damage message of other documents
    with pytest.raises(UnsupportedFormat, match=r"format version 8.*reads format versions 1\.\.7.*upgrade sfclayer") as e:
        _read_all(spark, copy)
    assert isinstance(e.value, CorruptLayer) and "Other versions of the layer" not in str(e.value)


def test_format_2_layers_still_read(spark, source, tmp_path):
    path, model = source
    copy = str(tmp_path / "v2")
    df = sfclayer.read(spark, path).select("col", "row", "v", "payload")
    sfclayer.write(df.where("row < 30"), copy, bounds=(0, 0, N - 1, N - 1), block_size="64k", format_version=2)
    md = helpers.metadata(copy)
    assert md["formatVersion"] == 2 and "checksum" not in md
    assert all("indexCrc32c" not in f for f in md["files"])
    assert _read_all(spark, copy) == {k: v for k, v in model.items() if k[1] < 30}
    # an append writes checked files next to the kept unchecked ones: a format 3 version of both
    sfclayer.write(df.where("row >= 30"), copy, mode="append")
    md = helpers.metadata(copy)
    assert md["formatVersion"] == 3 and re.fullmatch(r"[0-9a-f]{8}", md["checksum"])
    assert {"indexCrc32c" in f for f in md["files"]} == {True, False}
    assert _read_all(spark, copy) == model
    with sfclayer.open(spark, copy) as layer:
        key = sorted(model)[17]
        assert layer.get(*key)["v"] == model[key]
    assert sfclayer.verify(spark, copy).clean


def test_checksums_are_in_the_version_document(source):
    path, _ = source
    md = helpers.metadata(path)
    assert md["formatVersion"] == 3 and re.fullmatch(r"[0-9a-f]{8}", md["checksum"])
    for f in md["files"]:
        mapfile = os.path.join(path, f["dir"], f["name"])
        assert f["dataBytes"] == os.path.getsize(os.path.join(mapfile, "data"))
        assert isinstance(f["indexCrc32c"], int)
    # every value ends in the CRC32C of (index, size, group)
    crc32c = pytest.importorskip("google_crc32c")
    for r in records(helpers.data_files(path)[0])[:20]:
        covered = struct.pack(">qi", r["index"], len(r["value"])) + r["value"][:-4]
        assert struct.unpack(">I", r["value"][-4:])[0] == crc32c.value(covered)
    text = open(_doc(path)[1], "rb").read()
    zeroed = re.sub(rb'("checksum"\s*:\s*")[0-9a-f]{8}"', rb'\g<1>00000000"', text)
    assert f"{crc32c.value(zeroed):08x}" == md["checksum"]


@pytest.mark.parametrize("case", list(DATA_DAMAGE))
def test_count_agrees_with_the_rows_when_damage_is_skipped(spark, damaged, case):
    # issue 35: count() answered from the version document while the same read skipped damaged records
    path, survivors, _, _ = damaged[case]
    df = sfclayer.read(spark, path, on_corrupt="skip")
    with _jvm.translated():
        assert df.count() == len(survivors)
        assert df.where("col < 8").count() == sum(1 for c, _ in survivors if c < 8)


def test_count_agrees_with_the_rows_under_ignore_missing_files(spark, damaged):
    path, survivors, _, _ = damaged["deleted-data-file"]
    try:
        spark.conf.set("spark.sql.files.ignoreMissingFiles", "true")
        with _jvm.translated():
            assert sfclayer.read(spark, path).count() == len(survivors) == len(_read_all(spark, path))
    finally:
        spark.conf.unset("spark.sql.files.ignoreMissingFiles")
