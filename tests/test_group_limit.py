"""The write option maxGroupBytes reaches the writing tasks (issue 12): a group of tiles sharing one
SFC index over the limit fails naming its index, key and size; under it the layer is written."""

import datetime as dt

import pytest

import sfclayer
from sfclayer.errors import InvalidArgument, InvalidInput


def _tiles(spark, n, payload):
    t0 = dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)
    rows = [(2, 3, t0 + dt.timedelta(hours=h), "x" * payload) for h in range(n)]  # one cell, one yearly bin
    return spark.createDataFrame(rows, "col int, row int, time timestamp, s string")


def test_a_group_over_max_group_bytes_fails_by_name(spark, tmp_path):
    opts = dict(bounds=(0, 0, 3, 3), time_bounds=("2020-01-01", "2020-12-31"), time_resolution="366 days")
    with pytest.raises(InvalidInput, match=r"the tiles sharing SFC index \d+ \(the group of key \(col=2, row=3, "
                                           r"time=.*\d+ tiles so far\) take \d+ bytes, over the limit of 65536"):
        sfclayer.write(_tiles(spark, 40, 4000), str(tmp_path / "big"), max_group_bytes="64k", **opts)
    sfclayer.write(_tiles(spark, 10, 4000), str(tmp_path / "ok"), max_group_bytes="64k", **opts)
    assert sfclayer.read(spark, str(tmp_path / "ok")).count() == 10
    # appends obey it too
    with pytest.raises(InvalidInput, match="over the limit of 65536"):
        sfclayer.write(_tiles(spark, 40, 4000), str(tmp_path / "ok"), mode="append", max_group_bytes="64k")
    with pytest.raises(InvalidArgument, match="option maxGroupBytes: '2g' is outside"):
        sfclayer.write(_tiles(spark, 1, 1), str(tmp_path / "x"), max_group_bytes="2g", **opts)
