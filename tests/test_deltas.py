"""Delta appends from Python (format 7, docs/FORMAT.md section 11): the write options, and every version of a
layer with deltas read exactly by Spark and by the in-process reader (look-ups, box queries, counts)
against a dict model over a seeded random sequence of delta and copy-on-write appends, deletes and
compactions."""

import json
import os
import random

import pytest

import sfclayer
from tests import helpers

SIDE = 24
SCHEMA = "col int, row int, v int, payload binary"


def frame(spark, tiles):
    rows = [(c, r, v, v.to_bytes(4, "big") * 100) for (c, r), v in sorted(tiles.items())]
    return spark.createDataFrame(rows, SCHEMA)


@pytest.fixture
def layer_path(tmp_path):
    return str(tmp_path / "layer")


def document(path, version):
    with open(os.path.join(path, "_sfclayer", f"v{version:08d}.json")) as f:
        return json.load(f)


def spark_tiles(spark, path, version, box=None):
    df = sfclayer.read(spark, path, version=version, **({"keys": box} if box else {}))
    return {(r["col"], r["row"]): r["v"] for r in df.select("col", "row", "v").collect()}


def local_tiles(path, version, box=None):
    with sfclayer.open(path, version=version) as layer:
        return {(t["col"], t["row"]): t["v"] for t in layer.query(keys=box)}, layer


def test_versions_with_deltas_read_as_the_model_in_spark_and_in_process(spark, layer_path):
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    rng = random.Random(seed)
    model = {(c, r): c * 100 + r for c in range(SIDE) for r in range(SIDE)}
    sfclayer.write(frame(spark, model), layer_path, bounds=(0, 0, SIDE - 1, SIDE - 1), block_size="64k",
                   compression="none")
    models = {1: dict(model)}
    for step in range(8):
        kind = rng.choice(["delta", "delta", "delta", "rewrite", "delete", "compact"])
        c0, r0 = rng.randrange(SIDE - 3), rng.randrange(SIDE - 3)
        box = (c0, r0, c0 + rng.randrange(3), r0 + rng.randrange(3))
        if kind in ("delta", "rewrite"):
            new = {(c, r): step * 10_000 + c * 100 + r for c in range(box[0], box[2] + 1)
                   for r in range(box[1], box[3] + 1)}
            sfclayer.write(frame(spark, new), layer_path, mode="append", append_mode=kind, compact_after_deltas=0)
            model.update(new)
        elif kind == "delete":
            sfclayer.delete(spark, layer_path, keys=box)
            for k in [k for k in model if box[0] <= k[0] <= box[2] and box[1] <= k[1] <= box[3]]:
                del model[k]
        else:
            sfclayer.compact(spark, layer_path)
        v = helpers.versions(layer_path)[-1]
        models[v] = dict(model)
        doc = document(layer_path, v)
        assert bool(doc.get("deltas")) == (doc["formatVersion"] == 7), (seed, step, kind)
        if kind == "delta":
            assert doc["operation"]["delta"] is True and doc["operation"]["removedFiles"] == []
        if kind in ("rewrite", "compact") or (kind == "delete" and doc["operation"]["name"] == "delete"):
            assert not doc.get("deltas"), (seed, step, kind)
    q = (3, 2, 17, 19)
    for v, want in models.items():
        assert spark_tiles(spark, layer_path, v) == want, (seed, v)
        assert spark_tiles(spark, layer_path, v, q) == {k: x for k, x in want.items()
                                                         if q[0] <= k[0] <= q[2] and q[1] <= k[1] <= q[3]}
        got, _ = local_tiles(layer_path, v)
        assert got == want, (seed, v)
        with sfclayer.open(layer_path, version=v) as layer:
            assert layer.count() == len(want)
            for c, r in [(rng.randrange(SIDE), rng.randrange(SIDE)) for _ in range(40)]:
                try:
                    got_v = layer.get(c, r)["v"]
                except sfclayer.KeyNotFound:
                    got_v = None
                assert got_v == want.get((c, r)), (seed, v, c, r)
        with sfclayer.open(spark, layer_path, version=v) as layer:
            assert layer.count() == len(want)
            c, r = next(iter(sorted(want)))
            assert layer.get(c, r)["v"] == want[(c, r)]


def test_append_options_are_checked(spark, layer_path):
    sfclayer.write(frame(spark, {(0, 0): 1}), layer_path, bounds=(0, 0, 9, 9))
    with pytest.raises(sfclayer.InvalidArgument, match="appendMode: 'sometimes'"):
        sfclayer.write(frame(spark, {(1, 1): 2}), layer_path, mode="append", append_mode="sometimes")
    with pytest.raises(sfclayer.InvalidArgument, match="deltaRewriteRatio"):
        sfclayer.write(frame(spark, {(1, 1): 2}), layer_path, mode="append", delta_rewrite_ratio="-1")
    with pytest.raises(sfclayer.InvalidArgument, match="compactAfterDeltas"):
        sfclayer.write(frame(spark, {(1, 1): 2}), layer_path, mode="append", compact_after_deltas="x")
    assert helpers.versions(layer_path) == [1]


def test_a_local_pandas_frame_is_appended_on_the_driver(spark, layer_path):
    """A pandas DataFrame through Arrow is a local relation: its tiles are encoded and written on the driver,
    with no Spark job, into ``data-<writeId>/driver/`` (a one-tile append's cost: bench/RESULTS.md)."""
    import pandas as pd

    sfclayer.write(frame(spark, {(c, r): c * 100 + r for c in range(SIDE) for r in range(SIDE)}), layer_path,
                   bounds=(0, 0, SIDE - 1, SIDE - 1), block_size="64k", compression="none")
    pdf = pd.DataFrame({"col": pd.Series([3, 4], dtype="int32"), "row": pd.Series([5, 5], dtype="int32"),
                        "v": pd.Series([7, 8], dtype="int32"), "payload": [b"x" * 400, b"y" * 400]})
    key = "spark.sql.execution.arrow.pyspark.enabled"
    before = spark.conf.get(key, "false")
    spark.conf.set(key, "true")
    try:
        df = spark.createDataFrame(pdf)
    finally:
        spark.conf.set(key, before)
    sfclayer.write(df, layer_path, mode="append")
    doc = document(layer_path, 2)
    assert doc["operation"]["delta"] is True
    assert [d["dir"].split("/")[-1] for d in doc["deltas"]] == ["driver"] and doc["deltas"][0]["records"] == 2
    got = spark_tiles(spark, layer_path, 2)
    assert got[(3, 5)] == 7 and got[(4, 5)] == 8 and len(got) == SIDE * SIDE
