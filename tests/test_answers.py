"""The one framing of tile answers (sfclayer._answers), read from bytes built here with struct: what the
socket and Spark Connect transports both decode (the JVM side: TileAnswersTest)."""

import struct

import pytest

from sfclayer import errors
from sfclayer._answers import BadAnswer, TileAnswers
from sfclayer._java_errors import error_from_payload


def record(i, data):
    return struct.pack(">ii", i, len(data)) + data


def missing(i):
    return struct.pack(">ii", i, -1)


def error(i, cls, message):
    text = f"{cls}\t{message}".encode()
    return struct.pack(">iii", i, -2, len(text)) + text


def test_answers_land_at_their_positions_whatever_their_order():
    data = record(2, b"two") + missing(0) + record(3, b"") + record(1, b"\x00one")
    out = [None] * 4
    answers = TileAnswers.of_bytes(data, error_from_payload)
    assert answers.many(4, out) is None
    answers.end()
    assert out == [None, b"\x00one", b"two", b""]


def test_an_error_answer_is_raised_by_class_or_kept_in_its_place():
    data = record(1, b"ok") + error(0, "io.sfclayer.SfcLayerException$CorruptLayer", "file part-1 is damaged")
    out = [None] * 2
    first = TileAnswers.of_bytes(data, error_from_payload).many(2, out)
    assert isinstance(first, errors.CorruptLayer) and "file part-1 is damaged" in str(first)
    assert out == [None, b"ok"]
    kept = [None] * 2
    TileAnswers.of_bytes(data, error_from_payload).many(2, kept, errors_as_values=True)
    assert isinstance(kept[0], errors.CorruptLayer) and kept[1] == b"ok"
    with pytest.raises(errors.KeyNotFound, match="no tile at key"):
        TileAnswers.of_bytes(error(0, "io.sfclayer.SfcLayerException$KeyNotFound", "no tile at key (1, 2)")[4:],
                             error_from_payload).one()


@pytest.mark.parametrize("data, n, why", [
    (record(5, b"x"), 2, "answered key 5 of 2"),
    (struct.pack(">ii", 0, -7), 1, "bad answer length -7"),
    (record(0, b"abc")[:-1], 1, "ended early"),
    (record(0, b"a") + b"\x00", 1, "1 bytes after its last answer"),
])
def test_bytes_out_of_the_framing_are_refused_never_returned(data, n, why):
    with pytest.raises(BadAnswer, match=why):
        answers = TileAnswers.of_bytes(data, error_from_payload)
        answers.many(n, [None] * n)
        answers.end()


def test_one_answer_record_or_missing():
    assert TileAnswers.of_bytes(struct.pack(">i", 3) + b"abc", error_from_payload).one() == b"abc"
    assert TileAnswers.of_bytes(struct.pack(">i", -1), error_from_payload).one() is None
