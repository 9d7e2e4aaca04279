"""Reads of format 7 versions (delta files, docs/FORMAT.md section 11) from Python: look-ups, box
queries and counts of the driver, Spark reads, time travel, verify and repair, each against a dict
model in which later tiles replace earlier ones of the same key. The versions are built by hand
(helpers.add_delta_version) from layers the ordinary writer wrote."""

import os
import random
import shutil

import pytest
from pyspark.sql import functions as F

import sfclayer
from sfclayer.layer import _tile_count
from . import helpers
from .helpers import add_delta_version, sfclayer_errors

N = 32
BOUNDS = (0, 0, N - 1, N - 1)


def tiles(spark, model):
    rows = [(c, r, v) for (c, r), v in sorted(model.items())]
    return spark.createDataFrame(rows, "col int, row int, v long")


@pytest.fixture(scope="module")
def layer(spark, tmp_path_factory):
    """A layer of 3 versions: the base, then two delta versions; and each version's model."""
    root = tmp_path_factory.mktemp("deltas")
    rng = random.Random(38)
    base = {(c, r): c * 1000 + r for c in range(N) for r in range(N) if (c >= 2 or r >= 2) and (c + 2 * r) % 3}
    path = str(root / "layer")
    sfclayer.write(tiles(spark, base), path, bounds=BOUNDS, partitions=3, compression="zstd")
    models = [base]
    for i in (1, 2):
        delta = {(rng.randrange(N), rng.randrange(N)): 0 for _ in range(150)}
        delta = {k: 100_000 * i + k[0] * 1000 + k[1] for k in delta}
        delta[(0, 0)] = 100_000 * i  # before the first base file
        src = str(root / f"delta{i}")
        sfclayer.write(tiles(spark, delta), src, bounds=BOUNDS, partitions=2, compression="zstd",
                       bloom_filter=(i == 2))
        assert add_delta_version(spark, path, src) == i + 1
        models.append({**models[-1], **delta})
    return path, models


def in_box(model, c0, r0, c1, r1):
    return {k: v for k, v in model.items() if c0 <= k[0] <= c1 and r0 <= k[1] <= r1}


def test_look_ups_box_queries_and_counts_of_every_version(spark, layer):
    path, models = layer
    rng = random.Random(1)
    for version, model in enumerate(models, start=1):
        with sfclayer.open(spark, path, version=version) as lyr:
            for c in range(N):
                for r in range(N):
                    if (c, r) in model:
                        assert lyr.get(c, r)["v"] == model[(c, r)], (version, c, r)
                    else:
                        with pytest.raises(sfclayer.KeyNotFound):
                            lyr.get(c, r)
            assert {(t["col"], t["row"]): t["v"] for t in lyr.query()} == model
            assert lyr.count() == len(model)
            for _ in range(5):
                c0, r0 = rng.randrange(N), rng.randrange(N)
                c1, r1 = min(N - 1, c0 + rng.randrange(12)), min(N - 1, r0 + rng.randrange(12))
                want = in_box(model, c0, r0, c1, r1)
                got = {(t["col"], t["row"]): t["v"] for t in lyr.query(keys=(c0, r0, c1, r1))}
                assert got == want, (version, c0, r0, c1, r1)
                assert lyr.count(keys=(c0, r0, c1, r1)) == len(want)
        df = sfclayer.read(spark, path, version=version)
        assert df.count() == len(model)
        md = helpers.metadata(path, version)
        assert _tile_count(spark, path, md) == len(model)  # what ingest and convert report
        assert {(r["col"], r["row"]): r["v"] for r in df.collect()} == model
        got = sfclayer.read(spark, path, version=version, keys=(0, 0, 9, 20)).where(F.col("v") >= 100_000)
        assert {(r["col"], r["row"]): r["v"] for r in got.collect()} == \
            {k: v for k, v in in_box(model, 0, 0, 9, 20).items() if v >= 100_000}


def test_info_says_the_counts_are_the_base_files_and_lists_the_deltas(layer):
    from sfclayer.cli import _info_text

    path, _ = layer
    md = helpers.metadata(path)
    text = _info_text(path, md)
    records = sum(int(d["records"]) for d in md["deltas"])
    assert f"deltas       {len(md['deltas'])} delta files, {records} tiles" in text
    assert "added in versions 2, 3" in text


def test_get_many_answers_the_newest_tiles(spark, layer):
    path, models = layer
    keys = [(c, r) for c in range(N) for r in range(N)]
    with sfclayer.open(spark, path) as lyr:
        answers = lyr.get_many(keys)
        for (c, r), a in zip(keys, answers):
            assert (a and a["v"]) == models[-1].get((c, r)), (c, r)


def test_verify_checks_the_deltas_and_repair_points_at_a_restore(spark, layer, tmp_path):
    path, models = layer
    report = sfclayer.verify(spark, path)
    assert report.clean, str(report)
    md = sfclayer.open(spark, path).metadata
    assert report.files_checked == md["fileCount"] + len(md["deltas"])
    # a flipped byte in the newest delta: verify names it, reads fail naming it, repair says to restore
    copy = str(tmp_path / "copy")
    shutil.copytree(path, copy)
    newest = md["deltas"][-1]
    data = os.path.join(copy, newest["dir"], newest["name"], "data")
    with open(data, "r+b") as f:
        f.seek(os.path.getsize(data) - 6)
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0x5A]))
    crc = os.path.join(os.path.dirname(data), ".data.crc")  # Hadoop's local checksum, gone as after a copy
    if os.path.exists(crc):
        os.remove(crc)
    report = sfclayer.verify(spark, copy)
    assert not report.clean
    [damaged] = report.damaged_files
    assert damaged.delta_dir == newest["dir"] and damaged.name == newest["name"]
    assert damaged.added_in == 3
    assert f"delta {newest['dir']}/{newest['name']}" in str(report)
    with pytest.raises(sfclayer.CorruptLayer, match=f"{newest['dir']}/{newest['name']}"), sfclayer_errors():
        sfclayer.read(spark, copy).collect()
    with pytest.raises(sfclayer.CorruptLayer, match="--version 2"):
        sfclayer.repair(spark, copy)
    assert sfclayer.verify(spark, copy, version=2).clean


def test_statistics_prune_base_files_under_deltas_and_never_expose_a_stale_tile(spark, tmp_path):
    """A base file whose statistics rule a filter out is skipped even where deltas meet its span (its
    tiles fail the filter whether or not a delta replaced them, and the deltas are still read); a delta
    is skipped only where no older file meets its span, else an older tile it replaced could pass a
    filter its value fails. Checked against the dict model with value filters on both sides."""
    path = str(tmp_path / "layer")
    pad = b"x" * 200  # files of a few KiB: several base files
    base = {(c, r): c * 1000 + r for c in range(N) for r in range(N)}
    frame = lambda m: spark.createDataFrame([(c, r, v, pad) for (c, r), v in sorted(m.items())],
                                            "col int, row int, v long, pad binary")
    sfclayer.write(frame(base), path, bounds=BOUNDS, partitions=2, block_size="64k", compression="none")
    base_files = helpers.metadata(path)["fileCount"]
    assert base_files >= 3
    rng = random.Random(5)
    model = dict(base)
    for i in range(3):  # keys of low values made high and keys of high values made negative
        keys = rng.sample(sorted(model), 40)
        new = {k: (600_000 + i * 1000 + k[1]) if k[0] < N // 2 else -(i * 1000 + k[1] + 1) for k in keys}
        sfclayer.write(frame(new), path, mode="append", append_mode="delta", compact_after_deltas=0)
        model.update(new)
    assert len({d["addedIn"] for d in helpers.metadata(path)["deltas"]}) == 3
    for where, keep in [("v >= 500000", lambda v: v >= 500_000), ("v < 0", lambda v: v < 0),
                        ("v < 3000", lambda v: v < 3000), ("v BETWEEN 20000 AND 25000", lambda v: 20_000 <= v <= 25_000),
                        ("v > 31031", lambda v: v > 31_031)]:
        df = sfclayer.read(spark, path).where(where).select("col", "row", "v")
        got = {(r["col"], r["row"]): r["v"] for r in df.collect()}
        assert got == {k: v for k, v in model.items() if keep(v)}, where
        m = dict(spark._jvm.io.sfclayer.spark.SfcLayerMetrics.of(df._jdf))
        if where in ("v >= 500000", "v < 0", "v > 31031"):
            # no base tile passes: every base file is skipped though deltas meet them all
            assert m["filesPrunedByStats"] >= base_files, (where, m)
