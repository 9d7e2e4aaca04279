"""fastavro decodes sfclayer's tile records from the stored Avro schema alone.

The sample is written by the JVM test io.sfclayer.codec.CodecSampleTest (run
`gradle test --tests 'io.sfclayer.codec.*'` first); without it these tests are skipped.
"""

import io
import json
import math
import zlib
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

import pytest

fastavro = pytest.importorskip("fastavro")

SAMPLE = Path(__file__).resolve().parent.parent / "build" / "codec-sample"

pytestmark = pytest.mark.skipif(
    not (SAMPLE / "group.bin").exists(),
    reason="no codec sample: run the JVM test io.sfclayer.codec.CodecSampleTest first",
)

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
NAIVE_EPOCH = datetime(1970, 1, 1)


def utc(micros):
    return EPOCH + timedelta(microseconds=micros)


# Mirrors CodecSampleTest.
EXPECTED = [
    {
        "col": 1, "row": 2, "time": utc(1_700_000_000_000_000),
        "elev": 1.5, "name": "héllo ✓", "mask": bytes([0, 1, 2, 255]),
        "day": date(1970, 1, 1) + timedelta(days=19000),
        "ntz": NAIVE_EPOCH + timedelta(microseconds=1_600_000_000_123_456),
        "amount": Decimal("12345.67"), "bands": [1.0, 2.5, -3.25],
        "tags": {"a": 1, "b": None}, "meta": {"source": "s2", "quality": 7}, "small": -3,
    },
    {
        "col": -1, "row": 2**31 - 1, "time": utc(0),
        "elev": -2.0, "name": None, "mask": None,
        "day": date(1970, 1, 1), "ntz": NAIVE_EPOCH,
        "amount": Decimal("-0.01"), "bands": [], "tags": {}, "meta": None, "small": 32767,
    },
    {
        "col": 3, "row": 4, "time": utc(-1),
        "elev": 1e300, "name": "", "mask": b"",
        "day": date(1969, 12, 31), "ntz": NAIVE_EPOCH - timedelta(microseconds=1),
        "amount": Decimal("99999999.99"), "bands": [0.5], "tags": {"x": -5},
        "meta": {"source": "", "quality": None}, "small": 0,
    },
]


def load_schema(name):
    return fastavro.parse_schema(json.loads((SAMPLE / name).read_text(encoding="utf-8")))


def assert_record(actual, expected):
    assert set(actual) == set(expected)
    for key, value in expected.items():
        if isinstance(value, float) and math.isnan(value):
            assert math.isnan(actual[key]), key
        else:
            assert actual[key] == value, key


def test_each_record_slice_decodes_with_the_record_schema():
    record_schema = load_schema("record.avsc")
    group = (SAMPLE / "group.bin").read_bytes()
    slices = json.loads((SAMPLE / "slices.json").read_text())
    assert len(slices) == len(EXPECTED)
    for s, expected in zip(slices, EXPECTED):
        buf = io.BytesIO(group[s["offset"]:s["offset"] + s["length"]])
        record = fastavro.schemaless_reader(buf, record_schema)
        assert buf.tell() == s["length"], "the slice is exactly one record"
        assert_record(record, expected)
        assert (record["col"], record["row"]) == (s["col"], s["row"])
        assert record["time"] == utc(s["time"])


def test_whole_group_decodes_with_the_group_schema():
    group = (SAMPLE / "group.bin").read_bytes()
    buf = io.BytesIO(group)
    records = fastavro.schemaless_reader(buf, load_schema("group.avsc"))
    assert buf.tell() == len(group)
    assert len(records) == len(EXPECTED)
    for record, expected in zip(records, EXPECTED):
        assert_record(record, expected)


def test_deflate_stored_form_is_a_length_prefixed_zlib_stream():
    group = (SAMPLE / "group.bin").read_bytes()
    stored = (SAMPLE / "group.deflate").read_bytes()
    assert int.from_bytes(stored[:4], "big") == len(group)
    assert zlib.decompress(stored[4:]) == group


def test_zstd_stored_form_is_a_length_prefixed_zstd_frame():
    import zstandard  # in the test extra: never skipped

    group = (SAMPLE / "group.bin").read_bytes()
    stored = (SAMPLE / "group.zstd").read_bytes()
    assert int.from_bytes(stored[:4], "big") == len(group)
    assert zstandard.ZstdDecompressor().decompress(stored[4:]) == group
