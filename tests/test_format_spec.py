"""docs/FORMAT.md section 2, "The bytes of `data` and `index`", checked against real files: a parser
written from the section's words alone (vints, strings, the header, `index` blocks of four zlib
buffers, `data` records and sync escapes) reads layers the suite writes, and its answers equal those
of Hadoop's own `SequenceFile.Reader` and `WritableUtils` through the JVM; the section's worked
example is the bytes of a real file."""

import glob
import os
import random
import struct
import zlib

import pytest

import sfclayer

LONG = "org.apache.hadoop.io.LongWritable"
BYTES = "org.apache.hadoop.io.BytesWritable"
CODEC = "org.apache.hadoop.io.compress.DefaultCodec"


# ------------------------------------------------------------------------------------------------
# The parser: FORMAT.md section 2's words, nothing else


def vint(buf, pos):
    """(value, next position) of the vint at ``pos``."""
    b = struct.unpack_from(">b", buf, pos)[0]
    if b >= -112:
        return b, pos + 1
    n = -112 - b if b >= -120 else -120 - b
    v = int.from_bytes(buf[pos + 1:pos + 1 + n], "big")
    return (~v if b < -120 else v), pos + 1 + n


def string(buf, pos):
    n, pos = vint(buf, pos)
    return buf[pos:pos + n].decode("utf-8"), pos + n


def header(buf):
    """The header's fields, and where the header ends."""
    if buf[:4] != b"SEQ\x06":
        raise ValueError(f"not a SequenceFile of version 6: {buf[:4]!r}")
    key_class, pos = string(buf, 4)
    value_class, pos = string(buf, pos)
    compressed, block = buf[pos] != 0, buf[pos + 1] != 0
    pos += 2
    codec = None
    if compressed:
        codec, pos = string(buf, pos)
    (count,) = struct.unpack_from(">i", buf, pos)
    pos += 4
    metadata = {}
    for _ in range(count):
        name, pos = string(buf, pos)
        metadata[name], pos = string(buf, pos)
    return {"key": key_class, "value": value_class, "compressed": compressed, "block": block, "codec": codec,
            "metadata": metadata, "sync": buf[pos:pos + 16], "end": pos + 16}


def sync_escape(buf, pos, sync):
    """Whether a sync escape starts at ``pos`` (a damaged one is an error)."""
    if struct.unpack_from(">i", buf, pos)[0] != -1:
        return False
    if buf[pos + 4:pos + 20] != sync:
        raise ValueError(f"damaged sync escape at byte {pos}")
    return True


def index_entries(buf):
    """(key, offset) of every entry of an ``index`` file."""
    h = header(buf)
    assert (h["key"], h["value"], h["compressed"], h["block"], h["codec"]) == (LONG, LONG, True, True, CODEC)
    pos, out = h["end"], []
    while pos < len(buf):
        assert sync_escape(buf, pos, h["sync"]), f"no sync escape at the block starting at byte {pos}"
        records, pos = vint(buf, pos + 20)
        buffers = []
        for _ in range(4):
            size, pos = vint(buf, pos)
            buffers.append(zlib.decompress(buf[pos:pos + size]))
            pos += size
        key_lengths, keys, value_lengths, values = buffers
        p = q = 0
        for i in range(records):
            (kl, p), (vl, q) = vint(key_lengths, p), vint(value_lengths, q)
            assert kl == vl == 8
        out += zip(struct.unpack(f">{records}q", keys), struct.unpack(f">{records}q", values))
    return out


def data_records(buf):
    """(start, record offset, key, value) of every record of a ``data`` file: ``start`` is where the
    sync escape before it starts, if there is one, else the record's offset."""
    h = header(buf)
    assert (h["key"], h["value"], h["compressed"], h["block"]) == (LONG, BYTES, False, False)
    pos, out = h["end"], []
    while pos < len(buf):
        start = pos
        if sync_escape(buf, pos, h["sync"]):
            pos += 20
        record_length, key_length, key, n = struct.unpack_from(">iiqi", buf, pos)
        assert key_length == 8 and record_length == 12 + n and pos + 8 + record_length <= len(buf)
        out.append((start, pos, key, buf[pos + 20:pos + 20 + n]))
        pos += 8 + record_length
    return out


# ------------------------------------------------------------------------------------------------
# Hadoop's answers


def hadoop_read(spark, path):
    """Hadoop's SequenceFile.Reader on one file: its header fields and (position, key, value) records."""
    jvm = spark._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    opts = spark.sparkContext._gateway.new_array(jvm.org.apache.hadoop.io.SequenceFile.Reader.Option, 1)
    opts[0] = jvm.org.apache.hadoop.io.SequenceFile.Reader.file(jvm.org.apache.hadoop.fs.Path("file:" + path))
    reader = jvm.org.apache.hadoop.io.SequenceFile.Reader(conf, opts)
    try:
        meta = reader.getMetadata().getMetadata()
        codec = reader.getCompressionCodec()
        out = {"key": reader.getKeyClassName(), "value": reader.getValueClassName(),
               "compressed": reader.isCompressed(), "block": reader.isBlockCompressed(),
               "codec": codec.getClass().getName() if codec is not None else None,
               "metadata": {str(k): str(meta.get(k)) for k in meta.keySet().toArray()}, "records": []}
        key = jvm.org.apache.hadoop.io.LongWritable()
        value = reader.getValueClass().newInstance()
        while True:
            pos = reader.getPosition()
            if not reader.next(key, value):
                break
            v = value.get() if out["value"] == LONG else bytes(value.copyBytes())
            out["records"].append((pos, key.get(), v))
        return out
    finally:
        reader.close()


def mapfiles(path):
    return sorted(glob.glob(os.path.join(path, "data-*", "attempt-*", "part-r-*")))


@pytest.fixture(scope="module")
def layers(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("format-spec")
    tiny = str(root / "tiny")  # FORMAT.md's example
    df = spark.createDataFrame([(c, r, c * 10 + r) for c in range(2) for r in range(2)], "col int, row int, v int")
    sfclayer.write(df, tiny, bounds=(0, 0, 1, 1), partitions=1, index_interval=2, compression="none")
    big = str(root / "big")  # > 100 KiB data files: sync escapes; zstd groups; index interval 3
    rows = [(c, r, bytes([(c * 31 + r) % 256]) * 1500 + os.urandom(500)) for c in range(48) for r in range(16)]
    df = spark.createDataFrame(rows, "col int, row int, payload binary")
    sfclayer.write(df, big, bounds=(0, 0, 47, 15), partitions=2, block_size="8m", index_interval=3)
    return {"tiny": tiny, "big": big}


@pytest.mark.parametrize("name", ["tiny", "big"])
def test_the_spec_parser_reads_what_hadoop_reads(spark, layers, name):
    escapes = 0
    for mapfile in mapfiles(layers[name]):
        data_path, index_path = os.path.join(mapfile, "data"), os.path.join(mapfile, "index")
        data, index = open(data_path, "rb").read(), open(index_path, "rb").read()
        for buf, path in ((data, data_path), (index, index_path)):
            ours, theirs = header(buf), hadoop_read(spark, path)
            assert {k: ours[k] for k in ("key", "value", "compressed", "block", "codec", "metadata")} == \
                {k: theirs[k] for k in ("key", "value", "compressed", "block", "codec", "metadata")}
        assert list(header(data)["metadata"]) == ["sfclayer.formatVersion", "sfclayer.writeId"]
        records = data_records(data)
        assert [(s, k, v) for s, _, k, v in records] == hadoop_read(spark, data_path)["records"]
        entries = index_entries(index)
        assert entries == [(k, v) for _, k, v in hadoop_read(spark, index_path)["records"]]
        interval = 2 if name == "tiny" else 3
        # every interval-th record, its offset the record's or the sync escape's just before it
        assert entries == [(k, s) for s, _, k, _ in records[::interval]]
        escapes += sum(s != p for s, p, _, _ in records)
    if name == "big":
        assert escapes > 0  # the files are past SYNC_INTERVAL: the escapes were there to skip


def test_vints_decode_as_hadoop_writes_them(spark):
    jvm = spark._jvm
    examples = {"05": 5, "ff": -1, "8fc8": 200, "8e03e8": 1000, "87c7": -200}
    for hex_bytes, value in examples.items():
        assert vint(bytes.fromhex(hex_bytes), 0) == (value, len(hex_bytes) // 2)
    rng = random.Random(7)
    values = list(examples.values()) + [-112, -113, 127, 128, -(2 ** 63), 2 ** 63 - 1] + \
        [rng.randrange(-(2 ** 63), 2 ** 63) >> rng.randrange(64) for _ in range(200)]
    out = jvm.org.apache.hadoop.io.DataOutputBuffer()
    for v in values:
        jvm.org.apache.hadoop.io.WritableUtils.writeVLong(out, v)
    buf, pos = bytes(out.getData())[:out.getLength()], 0
    for v in values:
        got, pos = vint(buf, pos)
        assert got == v
    assert pos == len(buf)
    assert bytes(out.getData())[:2] == bytes.fromhex("05ff")


def test_the_worked_example_is_the_bytes_of_a_real_file(layers):
    (mapfile,) = mapfiles(layers["tiny"])
    data = open(os.path.join(mapfile, "data"), "rb").read()
    index = open(os.path.join(mapfile, "index"), "rb").read()
    h = header(data)
    write_id = h["metadata"]["sfclayer.writeId"].encode()
    # FORMAT.md's example, with this write's id and the files' sync bytes
    expected_data = (
        b"SEQ\x06" + b"\x21" + LONG.encode() + b"\x22" + BYTES.encode() + b"\x00\x00" + bytes.fromhex("00000002")
        + b"\x16sfclayer.formatVersion\x013" + b"\x10sfclayer.writeId\x18" + write_id + h["sync"]
        + bytes.fromhex("00000016 00000008 0000000000000000 0000000a 020000020000 c3ed9b29")
        + bytes.fromhex("00000016 00000008 0000000000000001 0000000a 020200021400 55f123ed")
        + bytes.fromhex("00000016 00000008 0000000000000002 0000000a 020002020200 70c01135")
        + bytes.fromhex("00000016 00000008 0000000000000003 0000000a 020202021600 e6dca9f1"))
    assert len(write_id) == 24 and data == expected_data and len(data) == 282
    sync = header(index)["sync"]
    expected_index = (
        b"SEQ\x06" + b"\x21" + LONG.encode() + b"\x21" + LONG.encode() + b"\x01\x01" + b"\x2a" + CODEC.encode()
        + bytes.fromhex("00000000") + sync + b"\xff\xff\xff\xff" + sync + b"\x02"
        + bytes.fromhex("0a 789ce3e00000001a0011")
        + bytes.fromhex("0c 789c636040014c0000120003")
        + bytes.fromhex("0a 789ce3e00000001a0011")
        + bytes.fromhex("10 789c6360008345108ae11e0006a00181"))
    assert index == expected_index and len(index) == 210
    assert index_entries(index) == [(0, 0xa2), (2, 0xde)]


def test_damaged_bytes_are_refused_not_misread(layers):
    (mapfile,) = mapfiles(layers["tiny"])
    data = bytearray(open(os.path.join(mapfile, "data"), "rb").read())
    with pytest.raises(ValueError, match="version 6"):
        header(b"SEQ\x05" + bytes(data[4:]))
    bad = bytearray(data)
    bad[0xa2:0xa2] = b"\xff\xff\xff\xff" + bytes(16)  # an escape whose sync bytes are not the header's
    with pytest.raises(ValueError, match="damaged sync escape at byte 162"):
        data_records(bytes(bad))
