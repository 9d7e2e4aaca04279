"""One seam (issue 39): sfclayer.open and sfclayer.history ask the transport sfclayer._jvm.transport
chooses, the in-process reader's for a path alone and the session's otherwise, and get the same answers."""

import pytest

import sfclayer
from sfclayer import _jvm
from sfclayer.errors import InvalidArgument
from sfclayer.layer import Layer
from sfclayer.reader.layer import InProcessTransport, LocalLayer


def test_open_and_history_by_path_or_by_session_go_through_the_transport(spark, tmp_path, monkeypatch):
    path = str(tmp_path / "layer")
    df = spark.range(64).selectExpr("int(id % 8) AS col", "int(id DIV 8) AS row", "int(id) AS value")
    sfclayer.write(df, path, bounds=(0, 0, 7, 7))
    sfclayer.write(df.where("value < 5"), path, mode="append")
    asked = []
    for kind in (InProcessTransport, type(_jvm.transport(spark))):
        for method in ("opener", "history"):
            real = getattr(kind, method)
            monkeypatch.setattr(kind, method, lambda self, *a, _real=real, _m=method, **kw: (
                asked.append((type(self).__name__, _m)), _real(self, *a, **kw))[1])
    with sfclayer.open(path) as local, sfclayer.open(spark, path) as remote:
        assert isinstance(local, LocalLayer) and type(remote) is Layer
        keys = [(1, 1), (7, 7), (30, 30)]
        assert local.get_many(keys) == remote.get_many(keys) == [{"value": 9}, {"value": 63}, None]
    assert [v.version for v in sfclayer.history(path)] == [v.version for v in sfclayer.history(spark, path)] == [1, 2]
    session = type(_jvm.transport(spark)).__name__
    assert asked == [("InProcessTransport", "opener"), (session, "opener"), ("InProcessTransport", "history"),
                     (session, "history")]


def test_the_in_process_transport_has_no_driver_and_says_so():
    with pytest.raises(InvalidArgument, match="needs a SparkSession"):
        _jvm.transport(None).call("history", "/some/layer")
    with pytest.raises(InvalidArgument, match="path: None must be a layer's path"):
        sfclayer.open(None)
    with pytest.raises(InvalidArgument, match="path: given twice"):
        sfclayer.history("/a", "/b")
