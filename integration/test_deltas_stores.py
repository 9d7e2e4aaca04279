"""Delta files (format 7, docs/FORMAT.md section 11) on HDFS and on S3 (S3Proxy), each with its own commit
rule (HDFS: create-exclusive of the version document; S3: ``If-None-Match: *``).

On each store a seeded sequence of delta appends (collected on the driver, and shuffled into tasks), a
copy-on-write delete that folds them, a compaction and more deltas is checked version by version (time
travel) against a dict model: through Spark, and on S3 also through the in-process reader (obstore; HDFS
is read through the JVM only). Then two delta appends race from two threads: a delta append conflicts
only with replace-type versions, so both must land, each in a version of its own.
"""

import json
import random
import re
import threading

import pytest

import sfclayer
from sfclayer import _jvm

SIDE = 16
SCHEMA = "col int, row int, v int, payload binary"
VERSION_DOC = r"/_sfclayer/v\d{8}\.json$"


@pytest.fixture(params=[pytest.param("hdfs", marks=pytest.mark.hdfs), pytest.param("s3", marks=pytest.mark.s3)])
def store(request):
    """(kind, a fresh-path maker, the in-process reader's storage options or None, the FaultProxy or None)."""
    if request.param == "hdfs":
        cluster = request.getfixturevalue("hdfs")
        return "hdfs", cluster.path, None, None
    pytest.importorskip("obstore")
    from integration.s3 import ACCESS_KEY, REGION, SECRET_KEY

    bucket = request.getfixturevalue("s3_race")  # S3Proxy decides If-None-Match atomically; moto does not
    creds = {"endpoint": bucket.server.endpoint, "access_key_id": ACCESS_KEY, "secret_access_key": SECRET_KEY,
             "region": REGION}
    return "s3", bucket.path, creds, bucket.proxy


def rows(tiles):
    return [(c, r, v, v.to_bytes(4, "big") * 64) for (c, r), v in sorted(tiles.items())]


def on_driver(spark, tiles):
    """A pandas frame through Arrow: a local relation, whose delta is encoded and written on the driver."""
    import pandas as pd

    cols, rs, vs, payloads = zip(*rows(tiles))
    pdf = pd.DataFrame({"col": pd.Series(cols, dtype="int32"), "row": pd.Series(rs, dtype="int32"),
                        "v": pd.Series(vs, dtype="int32"), "payload": list(payloads)})
    key = "spark.sql.execution.arrow.pyspark.enabled"
    before = spark.conf.get(key, "false")
    spark.conf.set(key, "true")
    try:
        return spark.createDataFrame(pdf)
    finally:
        spark.conf.set(key, before)


def shuffled(spark, tiles):
    """The same tiles in 3 partitions (written with smallAppendBytes=0: one shuffle into the tasks)."""
    return spark.createDataFrame(rows(tiles), SCHEMA).repartition(3)


def document(spark, path, version):
    text = _jvm.read_text(spark, f"{path}/_sfclayer/v{version:08d}.json")
    assert text is not None, f"no document of version {version}"
    return json.loads(text)


def versions(spark, path):
    return [v.version for v in sfclayer.history(spark, path)]


def spark_tiles(spark, path, version, box=None):
    df = sfclayer.read(spark, path, version=version, **({"keys": box} if box else {}))
    return {(r.col, r.row): r.v for r in df.select("col", "row", "v").collect()}


def in_box(model, box):
    return {k: v for k, v in model.items() if box[0] <= k[0] <= box[2] and box[1] <= k[1] <= box[3]}


def random_box(rng, most=4):
    c0, r0 = rng.randrange(SIDE - most), rng.randrange(SIDE - most)
    return c0, r0, c0 + rng.randrange(most), r0 + rng.randrange(most)


def check_version(spark, path, version, want, creds, rng):
    """Version ``version`` reads as ``want`` whole, in a box, by look-ups and by count; in-process too (S3)."""
    q = random_box(rng, 8)
    assert spark_tiles(spark, path, version) == want, version
    assert spark_tiles(spark, path, version, q) == in_box(want, q), (version, q)
    probes = [(rng.randrange(SIDE), rng.randrange(SIDE)) for _ in range(4)]
    with sfclayer.open(spark, path, version=version) as lyr:
        assert lyr.count() == len(want), version
        for c, r in probes:
            assert _get(lyr, c, r) == want.get((c, r)), (version, c, r)
    if creds is None:
        return  # HDFS: the in-process reader leaves it to Spark
    with sfclayer.open(path.replace("s3a://", "s3://", 1), version=version, storage_options=creds) as lyr:
        assert {(t["col"], t["row"]): t["v"] for t in lyr.query()} == want, version
        assert {(t["col"], t["row"]): t["v"] for t in lyr.query(keys=q)} == in_box(want, q), (version, q)
        assert lyr.count() == len(want), version
        for c, r in probes:
            assert _get(lyr, c, r) == want.get((c, r)), (version, c, r)


def _get(lyr, c, r):
    try:
        return lyr.get(c, r)["v"]
    except sfclayer.KeyNotFound:
        return None


def test_delta_appends_delete_compact_and_time_travel_read_as_the_model(spark, store):
    kind, new_path, creds, _ = store
    seed = random.randrange(1 << 30)
    print(f"{kind}: seed {seed}")
    rng = random.Random(seed)
    path = new_path("deltas")
    model = {(c, r): c * 100 + r for c in range(SIDE) for r in range(SIDE)}
    sfclayer.write(spark.createDataFrame(rows(model), SCHEMA).repartition(2), path, bounds=(0, 0, SIDE - 1, SIDE - 1),
                   block_size="64k", compression="none")
    models = {1: dict(model)}
    # fixed kinds (each path and each folding update is met once), seeded boxes and values
    for step, op in enumerate(["driver", "shuffled", "driver", "delete", "shuffled", "driver", "compact",
                               "shuffled"]):
        box = random_box(rng)
        before = max(models)
        if op in ("driver", "shuffled"):
            new = {(c, r): (step + 1) * 10_000 + c * 100 + r
                   for c in range(box[0], box[2] + 1) for r in range(box[1], box[3] + 1)}
            if op == "driver":
                sfclayer.write(on_driver(spark, new), path, mode="append", append_mode="delta",
                               compact_after_deltas=0)
            else:
                sfclayer.write(shuffled(spark, new), path, mode="append", append_mode="delta",
                               compact_after_deltas=0, small_append_bytes=0)
            model.update(new)
        elif op == "delete":
            sfclayer.delete(spark, path, keys=box)
            for k in in_box(model, box):
                del model[k]
        else:
            sfclayer.compact(spark, path)
        v = before + 1
        doc = document(spark, path, v)
        if op in ("driver", "shuffled"):
            assert doc["operation"]["delta"] is True and doc["operation"]["removedFiles"] == [], (seed, step)
            assert doc["formatVersion"] == 7
            added = [d for d in doc["deltas"] if d["addedIn"] == v]
            assert added and sum(d["records"] for d in added) == len(new), (seed, step)
            dirs = {d["dir"].rsplit("/", 1)[-1] for d in added}
            if op == "driver":
                assert dirs == {"driver"}, (seed, step, dirs)
            else:
                assert all(re.fullmatch(r"attempt-\d+", d) for d in dirs), (seed, step, dirs)
        else:  # a delete and a compaction fold every delta of the version they read
            prior = document(spark, path, before)
            assert not doc.get("deltas"), (seed, step, op)
            removed = set(doc["operation"]["removedFiles"])
            if doc["operation"]["name"] == op:
                assert {f"{d['dir']}/{d['name']}" for d in prior["deltas"]} <= removed, (seed, step, op)
        models[v] = dict(model)
    assert versions(spark, path) == sorted(models)
    assert sfclayer.verify(spark, path).clean
    for v, want in models.items():
        check_version(spark, path, v, want, creds, rng)


def test_two_delta_appends_racing_both_land(spark, store):
    """Two threads append a delta each, at once (on S3 the FaultProxy holds the first PUT of a version
    document until the second is in flight): the loser of a version rebases on the winner's, so both land."""
    kind, new_path, creds, proxy = store
    path = new_path("race")
    model = {(c, r): c * 100 + r for c in range(SIDE) for r in range(SIDE)}
    sfclayer.write(spark.createDataFrame(rows(model), SCHEMA), path, bounds=(0, 0, SIDE - 1, SIDE - 1),
                   block_size="64k", compression="none")
    news = [{(c, r): 50_000 + c * 100 + r for c in range(0, 6) for r in range(2, 5)},
            {(c, r): 60_000 + c * 100 + r for c in range(4, 10) for r in range(3, 7)}]  # overlapping boxes
    errors = {}

    def run(i):
        try:
            sfclayer.write(on_driver(spark, news[i]), path, mode="append", append_mode="delta",
                           compact_after_deltas=0)
            errors[i] = None
        except Exception as e:  # judged below
            errors[i] = e

    if proxy is not None:
        proxy.clear()
        proxy.hold(VERSION_DOC, n=2, timeout=20)
    try:
        threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        assert not any(t.is_alive() for t in threads), "an append did not finish"
        held = [p for p, gen in proxy.held if gen == 0] if proxy is not None else []
    finally:
        if proxy is not None:
            proxy.clear()
    assert errors == {0: None, 1: None}, errors
    if proxy is not None:
        assert len(held) == 2 and held[0] == held[1], f"the two commits were not in flight together: {held}"
    assert versions(spark, path) == [1, 2, 3]
    docs = [document(spark, path, v) for v in (2, 3)]
    assert all(d["operation"]["delta"] is True for d in docs)
    assert [d["addedIn"] for d in docs[1]["deltas"]] == [2, 3], docs[1]["deltas"]
    # the append that committed second rebased on the first: its tiles win the overlap
    first = 0 if docs[0]["deltas"][0]["records"] == len(news[0]) else 1
    want = {**model, **news[first], **news[1 - first]}
    rng = random.Random(7)
    check_version(spark, path, 3, want, creds, rng)
    check_version(spark, path, 2, {**model, **news[first]}, creds, rng)
