"""The Python API on a Spark Connect session as on a classic one (issue 21, first slice).

Each test of the shared part runs twice, on the run's classic session (``spark``) and on its Spark
Connect session (``connect``: a thin ``sc://`` client of a Connect server set up by
``sfclayer.configure``), asserting the same results and the same sfclayer error classes.
"""

import pytest

import sfclayer
from sfclayer import _java_errors, _jvm


@pytest.fixture(params=["classic", "connect"])
def session(request):
    return request.getfixturevalue("spark" if request.param == "classic" else "connect")


def grid(spark, side=16, mult=1, col0=0, row0=0):
    """side x side tiles from (col0, row0), value = (col * 100 + row) * mult: SQL expressions only, the
    same on both kinds of session."""
    return spark.range(side * side).selectExpr(
        f"int(id % {side}) + {col0} AS col", f"int(id DIV {side}) + {row0} AS row",
    ).selectExpr("col", "row", f"(col * 100 + row) * {mult} AS value")


def rows(df):
    return sorted((r.col, r.row, r.value) for r in df.collect())


def test_write_read_bbox_keys_and_versions(session, tmp_path):
    path = str(tmp_path / "layer")
    sfclayer.write(grid(session), path, bounds=(0, 0, 15, 15), extent=(0, 0, 16, 16))  # the default mode
    assert rows(sfclayer.read(session, path)) == sorted((c, r, c * 100 + r) for c in range(16) for r in range(16))
    assert rows(sfclayer.read(session, path, bbox=(10.5, 10.5, 12.5, 12.5))) == [
        (c, r, c * 100 + r) for c in (10, 11, 12) for r in (3, 4, 5)]  # rows count from the top
    assert sfclayer.read(session, path, keys=(2, 2, 4, 5)).count() == 12
    sfclayer.write(grid(session, 4, mult=2), path, mode="append", on_existing="replace")
    assert rows(sfclayer.read(session, path, keys=(1, 1, 1, 1))) == [(1, 1, 202)]
    assert rows(sfclayer.read(session, path, keys=(1, 1, 1, 1), version=1)) == [(1, 1, 101)]
    sfclayer.write(grid(session, 2), path, mode="overwrite", bounds=(0, 0, 1, 1))
    assert sfclayer.read(session, path).count() == 4


def test_errors_are_sfclayer_classes(session, tmp_path):
    path = str(tmp_path / "layer")
    with pytest.raises(sfclayer.LayerNotFound, match="no sfclayer layer at .*layer"):
        sfclayer.read(session, path)
    sfclayer.write(grid(session, 2), path, bounds=(0, 0, 1, 1))
    with pytest.raises(sfclayer.LayerExists):
        sfclayer.write(grid(session, 2), path, bounds=(0, 0, 1, 1))
    with pytest.raises(sfclayer.InvalidArgument, match="option blockSize"):
        sfclayer.write(grid(session, 2), str(tmp_path / "other"), bounds=(0, 0, 1, 1), block_size="lots")
    with pytest.raises(sfclayer.InvalidInput, match="duplicate"):  # found by a write task, wrapped by Spark
        sfclayer.write(grid(session, 2).union(grid(session, 2)), str(tmp_path / "dup"), bounds=(0, 0, 1, 1))
    assert sfclayer.read(session, path).count() == 4  # nothing of the failed writes was published


def test_sql_and_procedures(session, tmp_path):
    path = str(tmp_path / "layer")
    sfclayer.write(grid(session, 4), path, bounds=(0, 0, 3, 3))
    sfclayer.write(grid(session, 2, mult=3), path, mode="append", on_existing="replace")
    assert session.sql(f"SELECT value FROM sfclayer.`{path}` WHERE col = 1 AND row = 1").collect()[0].value == 303
    assert [r.version for r in session.sql(f"CALL sfclayer.system.history(path => '{path}')").collect()] == [1, 2]
    assert [r.value for r in session.sql(f"SELECT value FROM sfclayer.`{path}` VERSION AS OF 1 "
                                         "WHERE col = 1 AND row = 1").collect()] == [101]
    with pytest.raises(sfclayer.LayerNotFound, match="no sfclayer layer at .*missing"):
        with _jvm.translated():
            session.sql(f"CALL sfclayer.system.history(path => '{tmp_path / 'missing'}')").collect()


def test_history_and_compact_on_connect_are_classics(spark, connect, tmp_path):
    path = str(tmp_path / "layer")
    sfclayer.write(grid(connect, 16), path, bounds=(0, 0, 15, 15), block_size="64k", partitions=4)
    for i in range(3):  # small appends: runs of small files to compact
        sfclayer.write(grid(connect, 2, 3, 4 * i, 4 * i), path, mode="append", on_existing="replace", partitions=4)
    assert sfclayer.history(connect, path) == sfclayer.history(spark, path)
    assert [v.operation for v in sfclayer.history(connect, path)] == ["write"] + ["append"] * 3
    v = sfclayer.compact(connect, path)
    assert v.operation == "compact" and v.metrics["filesRemoved"] > v.metrics["filesAdded"] >= 1
    assert sfclayer.history(spark, path)[-1] == v == sfclayer.history(connect, path)[-1]
    assert sfclayer.compact(connect, path) == v  # nothing more to do: the newest version, unchanged
    assert rows(sfclayer.read(connect, path, keys=(4, 4, 5, 5))) == [
        (c, r, (c * 100 + r) * 3) for c in (4, 5) for r in (4, 5)]
    with pytest.raises(sfclayer.LayerNotFound, match="no sfclayer layer at .*missing"):
        sfclayer.history(connect, str(tmp_path / "missing"))


def test_delete_on_connect_is_classics(spark, connect, tmp_path):
    by_classic, by_connect = str(tmp_path / "classic"), str(tmp_path / "connect")
    for path in (by_classic, by_connect):
        sfclayer.write(grid(connect, 8), path, bounds=(0, 0, 7, 7), extent=(0, 0, 8, 8))
    for kwargs in ({"keys": (0, 0, 1, 2)}, {"bbox": (5.5, 5.5, 6.5, 6.5)}, {"keys": (20, 20, 30, 30)}):
        a, b = sfclayer.delete(spark, by_classic, **kwargs), sfclayer.delete(connect, by_connect, **kwargs)
        assert (a.version, a.operation, a.records, a.metrics) == (b.version, b.operation, b.records, b.metrics), kwargs
    assert rows(sfclayer.read(connect, by_connect)) == rows(sfclayer.read(spark, by_classic))
    assert sfclayer.read(connect, by_connect).count() == 64 - 6 - 4
    with pytest.raises(sfclayer.InvalidArgument, match="no box is given"):
        sfclayer.delete(connect, by_connect)


def test_connect_clients_see_sfclayer_conditions(connect, tmp_path):
    # what a Connect user (or any client) sees without the facade: Spark's error with sfclayer's condition
    from pyspark.errors import PySparkException

    with pytest.raises(PySparkException) as caught:
        connect.read.format("sfclayer").load(str(tmp_path / "missing")).schema
    assert caught.value.getCondition() == "SFCLAYER_LAYER_NOT_FOUND"
    assert caught.value.getSqlState() == "42P01"


def test_condition_table_is_the_jars(spark):
    # each Java error class's condition (asked of the jar) names the same Python class as its class name
    jvm = spark.sparkContext._jvm
    for name, cls in _java_errors._JAVA_ERRORS.items():
        java = getattr(jvm.io.sfclayer, name[len("io.sfclayer."):])
        try:
            instance = java("m")
        except Exception:  # the errors that always have a cause
            instance = java("m", None)
        assert _java_errors._CONDITIONS[instance.getCondition()] is cls, name
    assert len(set(_java_errors._CONDITIONS.values())) == len(_java_errors._CONDITIONS) == len(_java_errors._JAVA_ERRORS)


def test_pyramid_on_connect_refuses_a_layer_without_zoom_levels_as_classic_does(spark, connect, tmp_path):
    path = str(tmp_path / "layer")
    sfclayer.write(grid(connect, 2), path, bounds=(0, 0, 1, 1))
    for session in (connect, spark):  # refused before anything is written (no lease, no document)
        with pytest.raises(sfclayer.InvalidArgument, match="not a raster layer"):
            sfclayer.pyramid(session, path)
    assert not (tmp_path / "layer" / "_pyramid").exists()


def test_configure_for_a_separate_connect_server_sets_the_catalog_only():
    pytest.importorskip("grpc", reason="the Spark Connect client needs pyspark[connect] (make setup)")
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    options = sfclayer.configure(ConnectSession.builder.remote("sc://server.example:15002"))._options
    assert options["spark.sql.catalog.sfclayer"] == sfclayer.CATALOG
    assert "spark.jars" not in options  # a static setting of the server, which a client cannot make


def test_open_get_query_count_as_classic(session, tmp_path):
    path = str(tmp_path / "layer")
    sfclayer.write(grid(session), path, bounds=(0, 0, 15, 15), extent=(0, 0, 16, 16))
    sfclayer.write(grid(session, 2, mult=3), path, mode="append", on_existing="replace")
    with sfclayer.open(session, path) as layer:
        assert layer.version == 2
        assert layer.get(3, 2) == {"value": 302} and layer[1, 1] == {"value": 303}
        assert (1, 1) in layer and (20, 1) not in layer
        with pytest.raises(sfclayer.KeyNotFound, match=r"no tile at key .*20.*outside its key bounds"):
            layer.get(20, 1)
        assert layer.get_many([(1, 1), (2, 3), (40, 40), (15, 15)]) == [
            {"value": 303}, {"value": 203}, None, {"value": 1515}]
        assert sorted((t["col"], t["row"], t["value"]) for t in layer.query(keys=(2, 2, 4, 5))) == [
            (c, r, c * 100 + r) for c in (2, 3, 4) for r in (2, 3, 4, 5)]
        assert [t["col"] for t in layer.query(bbox=(10.5, 10.5, 12.5, 12.5))] != []
        assert layer.count(bbox=(10.5, 10.5, 12.5, 12.5)) == 9 and layer.count(keys=(0, 0, 15, 15)) == 256
        assert len(list(layer.query(limit=7))) == 7
        assert layer.metadata["version"] == 2 and layer.metadata["recordCount"] == 256
        assert layer.stats()["files_opened"] >= 1
        with pytest.raises(sfclayer.InvalidArgument, match="limit"):
            layer.query(limit=-1)
        with pytest.raises(sfclayer.InvalidArgument, match="spatial"):
            layer.get(1, 1, time="2020-01-01")
    with pytest.raises(sfclayer.InvalidArgument, match="closed"):
        layer.get(1, 1)
    with sfclayer.open(session, path, version=1) as old:
        assert old.get(1, 1) == {"value": 101}
        sfclayer.write(grid(session, 1, mult=7), path, mode="append", on_existing="replace")
        assert old.get(0, 0) == {"value": 0} and old.refresh() == 3 and old.get(0, 0) == {"value": 0}
        assert old.get(1, 0) == {"value": 300}
    with pytest.raises(sfclayer.LayerNotFound, match="no sfclayer layer at .*missing"):
        sfclayer.open(session, str(tmp_path / "missing"))


def test_thin_client_process_without_a_jvm(connect_url, tmp_path):
    # a Python process that could not start a JVM (JAVA_HOME points nowhere) does it all through sc://
    import json
    import os
    import subprocess
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
    env.update(JAVA_HOME=str(tmp_path / "no-java"), PYTHONPATH=os.path.join(os.path.dirname(here), "python"))
    done = subprocess.run([sys.executable, os.path.join(here, "scripts", "thin_client.py"), connect_url,
                           str(tmp_path)], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out == {"read": 16, "get": 30, "get_many": [27, None], "query": [0, 3, 24, 27], "count": 9,
                   "missing": "KeyNotFound", "history": ["write", "append"], "vacuumed": [1], "verified": True,
                   "gateway": False, "connect": "pyspark.sql.connect.session"}


def test_configure_names_the_plugins_for_a_server_of_its_own():
    pytest.importorskip("grpc", reason="the Spark Connect client needs pyspark[connect] (make setup)")
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    for setting, plugin in ((sfclayer.RELATION_PLUGINS, "io.sfclayer.spark.connect.SfcLayerRelationPlugin"),
                            (sfclayer.COMMAND_PLUGINS, "io.sfclayer.spark.connect.SfcLayerCommandPlugin")):
        options = sfclayer.configure(ConnectSession.builder.remote("local[2]"))._options
        assert options[setting] == plugin and options["spark.jars"] == sfclayer.jar_path()
        theirs = ConnectSession.builder.remote("local[2]").config(setting, "com.example.Other")
        assert sfclayer.configure(theirs)._options[setting] == f"com.example.Other,{plugin}"
        twice = sfclayer.configure(sfclayer.configure(ConnectSession.builder.remote("local[2]")))
        assert twice._options[setting] == plugin


@pytest.mark.parametrize("way", ["command", "relation", "public"])
def test_connect_lookups_answer_the_same_each_way(connect, tmp_path, monkeypatch, way):
    # Look-ups go as a command the command plugin answers with its own Arrow batches, in one
    # non-reattachable ExecutePlan call made with pyspark client internals ("command"); without a command
    # plugin on the server, as a relation the same way ("relation"); without those client internals, as a
    # relation through the client's public to_table ("public"). All three: the same answers and errors.
    from sfclayer import _connect

    path = str(tmp_path / "layer")
    sfclayer.write(grid(connect), path, bounds=(0, 0, 15, 15), extent=(0, 0, 16, 16))
    sent = []
    execute = _connect._execute
    monkeypatch.setattr(_connect, "_execute", lambda c, plan: sent.append(plan.WhichOneof("op_type")) or execute(c, plan))
    if way == "relation":
        monkeypatch.setattr(_connect, "_NO_COMMAND_PLUGIN", {connect.client._session_id})
    elif way == "public":
        # a pyspark whose client lacks one of the internals the short path uses takes the public path
        monkeypatch.setattr(_connect, "_CLIENT_INTERNALS", _connect._CLIENT_INTERNALS + ("_no_such_internal",))
    with sfclayer.open(connect, path) as layer:
        assert layer.get(3, 2) == {"value": 302}
        assert layer.get_many([(1, 1), (2, 3), (40, 40), (15, 15)]) == [
            {"value": 101}, {"value": 203}, None, {"value": 1515}]
        assert sorted((t["col"], t["row"], t["value"]) for t in layer.query(keys=(2, 2, 4, 5))) == [
            (c, r, c * 100 + r) for c in (2, 3, 4) for r in (2, 3, 4, 5)]
        assert list(layer.query(keys=(20, 20, 30, 30))) == [] and layer.count(keys=(0, 0, 15, 15)) == 256
        assert layer.metadata["recordCount"] == 256 and layer.stats()["files_opened"] >= 1
        with pytest.raises(sfclayer.KeyNotFound, match=r"no tile at key .*20.*outside its key bounds"):
            layer.get(20, 1)
        handle = layer._client._id
    with pytest.raises(sfclayer.InvalidArgument, match="closed"):
        layer.get(1, 1)
    with pytest.raises(sfclayer.InvalidArgument, match=f"look-up handle {handle['handle']} is closed"):
        with _jvm.translated():
            _connect.request_records(connect, "get_many", keys="", **handle)
    assert set(sent) == {"command": {"command"}, "relation": {"root"}, "public": set()}[way]


def test_a_command_no_plugin_answers_is_told_apart(connect):
    # how the client finds a server without sfclayer's command plugin (then it sends relations)
    import pyspark.sql.connect.proto as pb2
    from sfclayer import _connect

    plan = pb2.Plan()
    plan.command.extension.type_url = "type.googleapis.com/example.Other"
    with pytest.raises(Exception) as e:
        _connect._execute(connect.client, plan)
    assert _connect._missing_handler(e.value)


def test_readers_of_a_closed_connect_session_are_closed(connect, connect_url, tmp_path):
    # a client that stops (or dies) with a layer open leaves no reader behind on the server's driver
    import time

    from pyspark.sql.connect.session import SparkSession as ConnectSession

    from sfclayer import _connect

    path = str(tmp_path / "layer")
    sfclayer.write(grid(connect, 2), path, bounds=(0, 0, 1, 1))
    readers = lambda: int(_connect.request_text(connect, "readers"))  # noqa: E731
    before = readers()
    other = sfclayer.configure(ConnectSession.builder.remote(connect_url)).create()
    layer = sfclayer.open(other, path)
    assert layer.get(1, 1) == {"value": 101} and readers() == before + 1
    other.stop()  # the layer left open
    deadline = time.monotonic() + 60
    while readers() != before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert readers() == before
    with sfclayer.open(connect, path) as mine:  # the other sessions' readers are theirs only
        assert readers() == before + 1 and mine.get(0, 1) == {"value": 1}
