"""One ISO-8601 rule for times (issue 12): Python's ``sfclayer.curves.to_micros`` and the JVM's
``io.sfclayer.curve.TimeText.parseInstantMicros`` agree, and every Python entry point that takes a time
takes ISO strings through it."""

import datetime as dt

import pytest

import sfclayer
from sfclayer import cli
from sfclayer.curves import to_micros
from sfclayer.errors import InvalidArgument

DAY = 86_400_000_000
T0 = 1_598_918_400_000_000  # 2020-09-01T00:00:00Z

GOOD = {
    "2020-09-01": T0,
    "2020-09-01T12:00:00Z": T0 + DAY // 2,
    "2020-09-01T12:00:00": T0 + DAY // 2,
    "2020-09-01 12:00:00": T0 + DAY // 2,
    "2020-09-01T12:00Z": T0 + DAY // 2,
    "2020-09-01T14:00:00+02:00": T0 + DAY // 2,
    "2020-09-01T12:00:00.25Z": T0 + DAY // 2 + 250_000,
    "2020-09-01T12:00:00.000001": T0 + DAY // 2 + 1,
    "2020-09-01T12:00:00.123456789Z": T0 + DAY // 2 + 123_456,  # Java's Instant.toString (createdAt)
    "2020-09-01T12:00:00.000001999Z": T0 + DAY // 2 + 1,  # nanoseconds, as the JVM writes createdAt
    "1969-12-31T23:59:59Z": -1_000_000,
    str(T0): T0,
    "-5": -5,
}
BAD = ["", "yesterday", "2020-13-01", "2020-09-01T25:00:00Z", "2020/09/01", "2020-09-01T12"]


@pytest.mark.parametrize("text, micros", GOOD.items())
def test_python_and_the_jvm_read_iso_times_alike(spark, text, micros):
    jvm = spark.sparkContext._jvm
    assert to_micros(text) == micros
    assert jvm.io.sfclayer.curve.TimeText.parseInstantMicros("t", text) == micros


@pytest.mark.parametrize("text", BAD)
def test_bad_times_are_invalid_in_both(spark, text):
    with pytest.raises(InvalidArgument, match="not a time"):
        to_micros(text)
    with pytest.raises(InvalidArgument, match="is not an instant"), sfclayer._jvm.translated():
        spark.sparkContext._jvm.io.sfclayer.curve.TimeText.parseInstantMicros("t", text)


@pytest.fixture(scope="module")
def z3_layer(spark, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("times") / "z3")
    rows = [(c, 0, dt.datetime(2020, 9, d, 12, tzinfo=dt.timezone.utc), c * 100 + d) for c in range(2) for d in (1, 2, 3)]
    df = spark.createDataFrame(rows, "col int, row int, time timestamp, v int")
    sfclayer.write(df, path, bounds=(0, 0, 1, 0), time_bounds=("2020-09-01", "2020-09-30"))
    return path


def test_reads_lookups_and_the_cli_take_iso_strings(spark, z3_layer):
    got = sfclayer.read(spark, z3_layer, time=("2020-09-01T12:00:00Z", "2020-09-02T23:00:00"))
    assert sorted(r.v for r in got.collect()) == [1, 2, 101, 102]
    with sfclayer.open(spark, z3_layer) as layer:
        assert layer.get(1, 0, "2020-09-03T12:00:00Z") == {"v": 103}
        assert layer.get(1, 0, "2020-09-03T14:00:00+02:00") == {"v": 103}
        assert layer.get_many([(0, 0, "2020-09-02 12:00:00")]) == [{"v": 2}]
        with pytest.raises(InvalidArgument, match="time: 'noon' is not a time"):
            layer.get(0, 0, "noon")
    assert cli._parse_time("2020-09-01T12:00:00Z") == T0 + DAY // 2
    with pytest.raises(InvalidArgument, match="not a time"):
        sfclayer.read(spark, z3_layer, time=("2020-09-01", "later"))
