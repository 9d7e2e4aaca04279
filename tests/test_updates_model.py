"""Model-based test of living layers: random sequences of overwrite, append (each onExisting), delete,
compact and vacuum against a Python dict model. After each step the newest version, and an earlier
retained one, read (bbox scans, key reads, look-ups) exactly as the model says; at the end, every
retained version does."""

import datetime as dt
import os
import random
import uuid

import pytest

import sfclayer
from tests import helpers

SIDE = 16
SCHEMA = "col int, row int, v int, payload binary"


def frame(spark, tiles):
    rows = [(c, r, v, v.to_bytes(4, "big") * 150) for (c, r), v in sorted(tiles.items())]
    return spark.createDataFrame(rows, SCHEMA)


def random_box(rng):
    c0, c1 = sorted(rng.randrange(SIDE) for _ in range(2))
    r0, r1 = sorted(rng.randrange(SIDE) for _ in range(2))
    return c0, r0, c1, r1


def random_tiles(rng, step):
    c0, r0, c1, r1 = random_box(rng)
    return {(c, r): step * 100_000 + c * 100 + r for c in range(c0, c1 + 1) for r in range(r0, r1 + 1)
            if rng.random() < 0.7}


def in_box(key, box):
    c0, r0, c1, r1 = box
    return c0 <= key[0] <= c1 and r0 <= key[1] <= r1


def check(spark, path, version, model, rng):
    """Full read, a bbox (key box) read and look-ups of `version` equal the model."""
    got = {(r["col"], r["row"]): r["v"] for r in
           sfclayer.read(spark, path, version=version).select("col", "row", "v").collect()}
    assert got == model, f"version {version}: full read differs from the model"
    box = random_box(rng)
    got = {(r["col"], r["row"]): r["v"] for r in
           sfclayer.read(spark, path, version=version, keys=box).select("col", "row", "v").collect()}
    assert got == {k: v for k, v in model.items() if in_box(k, box)}, f"version {version}: keys {box}"
    keys = [(rng.randrange(SIDE), rng.randrange(SIDE)) for _ in range(12)]
    with sfclayer.open(spark, path, version=version) as layer:
        tiles = layer.get_many(keys)
    for key, tile in zip(keys, tiles):
        if key in model:
            assert tile is not None and tile["v"] == model[key]
            assert tile["payload"] == model[key].to_bytes(4, "big") * 150
        else:
            assert tile is None, f"version {version}: {key} should be absent"


@pytest.fixture
def tiny_manifests(spark):
    """Format 6 with one data file a manifest and two manifests a node: every version lists manifests,
    several levels deep, so each update rewrites paths of the tree (docs/FORMAT.md, section 10)."""
    with helpers.manifest_capacities(spark):
        yield


@pytest.mark.parametrize("seed, key_index, manifests", [(1, "z", False), (2, "hilbert", False), (3, "z", True)])
def test_random_updates_match_a_dict_model(spark, tmp_path, request, seed, key_index, manifests):
    if manifests:
        request.getfixturevalue("tiny_manifests")
    rng = random.Random(seed)
    path = str(tmp_path / f"model-{uuid.uuid4().hex[:6]}")
    first = random_tiles(rng, 0)
    sfclayer.write(frame(spark, first), path, bounds=(0, 0, SIDE - 1, SIDE - 1), key_index=key_index,
                   block_size="64k", partitions=3)
    if manifests:
        doc = helpers.metadata(path)
        assert doc["formatVersion"] == 6 and len(doc["manifests"]) > 1, doc.get("manifests")
        with sfclayer.open(spark, path) as layer:  # documents given to Python list the manifests' files
            assert len(layer.metadata["files"]) == layer.metadata["fileCount"] == len(doc["files"]) > 1
    models = {1: dict(first)}  # version -> tiles, for every retained version
    # every operation at least once (appends with each onExisting), in a random order
    plan = ["append"] * 4 + ["delete", "delete", "overwrite", "compact", "vacuum"]
    rng.shuffle(plan)
    on_existing_cycle = ["replace", "keep", "error", rng.choice(["replace", "keep", "error"])]
    for step, op in enumerate(plan, start=1):
        newest = max(models)
        model = dict(models[newest])
        if op == "append":
            new = random_tiles(rng, step)
            on_existing = on_existing_cycle.pop(0)
            clash = [k for k in new if k in model]
            if on_existing == "error" and clash:
                with pytest.raises(sfclayer.InvalidInput, match="already exists"):
                    sfclayer.write(frame(spark, new), path, mode="append", on_existing=on_existing)
                assert max(helpers.versions(path)) == newest  # nothing published
                continue
            sfclayer.write(frame(spark, new), path, mode="append", on_existing=on_existing,
                           partitions=rng.choice([1, 2, 4]))
            for k, v in new.items():
                if on_existing != "keep" or k not in model:
                    model[k] = v
        elif op == "overwrite":
            model = random_tiles(rng, step)
            if not model:
                continue
            sfclayer.write(frame(spark, model), path, mode="overwrite", bounds=(0, 0, SIDE - 1, SIDE - 1),
                           key_index=key_index, block_size="64k", partitions=2)
        elif op == "delete":
            box = random_box(rng)
            v = sfclayer.delete(spark, path, keys=box)
            gone = [k for k in model if in_box(k, box)]
            assert v.metrics.get("tilesDeleted", 0) == len(gone) or (not gone and v.version == newest)
            model = {k: t for k, t in model.items() if not in_box(k, box)}
        elif op == "compact":
            sfclayer.compact(spark, path)
        else:
            sfclayer.vacuum(spark, path, retain=dt.timedelta(0), enforce_retention=False)
            models = {newest: models[newest]}
            assert helpers.versions(path) == [newest]
            continue
        latest = max(helpers.versions(path))
        if latest != newest:
            models[latest] = model
        else:
            assert model == models[newest], f"step {step} ({op}) changed nothing on disk but the model changed"
        check(spark, path, latest, models[latest], rng)
        earlier = [v for v in models if v != latest]
        if earlier:
            v = rng.choice(earlier)
            check(spark, path, v, models[v], rng)
    assert sorted(models) == helpers.versions(path)
    for v, m in models.items():
        check(spark, path, v, m, rng)


def test_small_append_reads_only_the_manifests_on_its_path(spark, tmp_path, tiny_manifests):
    """Issue 20: a one-tile append through Spark to a layer of many manifests (one file a leaf, two
    manifests a node) reads the manifests on the tile's path, not every manifest; the result is the model."""
    path = str(tmp_path / "many-manifests")
    model = {(c, r): c * 100 + r for c in range(SIDE) for r in range(SIDE)}
    sfclayer.write(frame(spark, model), path, bounds=(0, 0, SIDE - 1, SIDE - 1), block_size="64k", partitions=48)
    doc = helpers.metadata(path)
    with sfclayer.open(spark, path) as layer:
        files = layer.metadata["fileCount"]
    assert files >= 32, files  # 32+ leaves, 5+ levels: reading them all is far above the bound below
    manifest = spark._jvm.io.sfclayer.format.Manifest
    manifest.forgetCached()
    before = manifest.readsTotal()
    model[(5, 7)] = 999_999
    # a frame Spark knows is small (a range, not a Python list): the append takes the driver path
    one = spark.range(1).selectExpr("5 AS col", "7 AS row", "999999 AS v",
                                    "unhex(repeat('000F423F', 150)) AS payload")
    sfclayer.write(one, path, mode="append", partitions=4)
    depth = doc["manifests"][0]["level"] + 1
    reads = manifest.readsTotal() - before
    # the plan's path to the tile (and to the breaks around it), and the commit's rewrite of that path
    assert 0 < reads <= 3 * depth < files, (reads, depth, files)
    got = {(r["col"], r["row"]): r["v"] for r in sfclayer.read(spark, path).select("col", "row", "v").collect()}
    assert got == model
    with sfclayer.open(spark, path) as layer:
        assert layer.get(5, 7)["v"] == 999_999
    # a driver-path append spanning the layer: its breaks are snapped to files read through the manifests
    many = spark.range(0, SIDE * SIDE, 3).selectExpr(f"CAST(id % {SIDE} AS INT) AS col",
                                                     f"CAST(id DIV {SIDE} AS INT) AS row",
                                                     "CAST(500000 + id AS INT) AS v",
                                                     "unhex(repeat(lpad(hex(500000 + id), 8, '0'), 150)) AS payload")
    sfclayer.write(many, path, mode="append", partitions=4)
    for i in range(0, SIDE * SIDE, 3):
        model[(i % SIDE, i // SIDE)] = 500000 + i
    check(spark, path, None, model, random.Random(4))


def manifests_read(spark, action):
    """(manifests read from storage while `action` ran, from cold: parsed manifests forgotten first; its result)."""
    manifest = spark._jvm.io.sfclayer.format.Manifest
    manifest.forgetCached()
    before = manifest.readsTotal()
    out = action()
    return manifest.readsTotal() - before, out


def one_tile(spark, col, row, v):
    """A one-row frame of the model's schema that Spark builds itself (no Python list)."""
    return spark.range(1).selectExpr(f"{col} AS col", f"{row} AS row", f"{v} AS v",
                                     f"unhex(repeat('{v:08X}', 150)) AS payload")


@pytest.fixture
def many_manifests(spark, tmp_path, tiny_manifests):
    """A layer of 48 data files, one a leaf manifest (about 95 manifests, 6 levels), with its model."""
    path = str(tmp_path / "many-manifests")
    model = {(c, r): c * 100 + r for c in range(SIDE) for r in range(SIDE)}
    sfclayer.write(frame(spark, model), path, bounds=(0, 0, SIDE - 1, SIDE - 1), block_size="64k", partitions=48)
    depth = helpers.metadata(path)["manifests"][0]["level"] + 1
    manifests = len(os.listdir(os.path.join(path, "_sfclayer", "manifests")))
    assert manifests >= 64 and depth >= 5, (manifests, depth)
    return path, model, depth, manifests


def test_shuffled_append_reads_only_the_manifests_it_touches(spark, many_manifests):
    """Issue 20: an append through the shuffle to a layer of many manifests reads the manifests on the
    paths to its tiles (found by a pass over their keys), not the layer's; the result is the model."""
    path, model, depth, manifests = many_manifests
    reads, _ = manifests_read(spark, lambda: sfclayer.write(one_tile(spark, 5, 7, 999_999), path, mode="append",
                                                            partitions=4, small_append_bytes=0))
    model[(5, 7)] = 999_999
    assert 0 < reads <= 3 * depth < manifests, (reads, depth, manifests)
    # two tiles at the layer's two ends, asked for in one partition: split at the gap between them, two
    # paths are read, not what lies between
    two = one_tile(spark, 0, 1, 888_888).union(one_tile(spark, SIDE - 1, SIDE - 2, 777_777))
    reads, _ = manifests_read(spark, lambda: sfclayer.write(two, path, mode="append", partitions=1,
                                                            small_append_bytes=0))
    model[(0, 1)], model[(SIDE - 1, SIDE - 2)] = 888_888, 777_777
    assert 0 < reads <= 6 * depth < manifests, (reads, depth, manifests)
    assert helpers.metadata(path)["operation"]["metrics"]["tilesReplaced"] == 2
    check(spark, path, None, model, random.Random(5))
    # a spread append through the shuffle still equals the model
    spread = {(c, r): 600_000 + c * 100 + r for c in range(0, SIDE, 3) for r in range(1, SIDE, 5)}
    sfclayer.write(frame(spark, spread), path, mode="append", partitions=3, small_append_bytes=0)
    model.update(spread)
    check(spark, path, None, model, random.Random(6))


def test_delete_reads_only_the_manifests_it_touches(spark, many_manifests):
    """Issue 20: a delete of one tile, and of a box, reads the manifests meeting its index ranges."""
    path, model, depth, manifests = many_manifests
    reads, v = manifests_read(spark, lambda: sfclayer.delete(spark, path, keys=(5, 7, 5, 7)))
    del model[(5, 7)]
    assert v.metrics["tilesDeleted"] == 1
    assert 0 < reads <= 3 * depth < manifests, (reads, depth, manifests)
    box = (2, 9, 5, 12)  # not aligned to the curve: several index ranges, several runs of files
    reads, v = manifests_read(spark, lambda: sfclayer.delete(spark, path, keys=box))
    gone = [k for k in model if in_box(k, box)]
    assert v.metrics["tilesDeleted"] == len(gone) == 16
    model = {k: t for k, t in model.items() if not in_box(k, box)}
    assert 0 < reads < manifests // 2, (reads, manifests)
    check(spark, path, None, model, random.Random(7))
    check(spark, path, 1, {(c, r): c * 100 + r for c in range(SIDE) for r in range(SIDE)}, random.Random(8))


def test_overwrite_reads_no_manifest_of_the_version_it_replaces(spark, many_manifests):
    """Issue 20: an overwrite replaces every file, so the replaced version's manifests are not read; its
    history entry counts the files it removed from that version's totals."""
    path, model, depth, manifests = many_manifests
    files = helpers.metadata(path)["fileCount"]
    new = {(c, r): 7_000 + c for c in range(4) for r in range(4)}
    reads, _ = manifests_read(spark, lambda: sfclayer.write(frame(spark, new), path, mode="overwrite",
                                                            bounds=(0, 0, SIDE - 1, SIDE - 1), partitions=2))
    assert reads == 0
    op = helpers.metadata(path)["operation"]
    assert op["name"] == "overwrite" and op["removedFiles"] == [] and op["metrics"]["filesRemoved"] == files
    check(spark, path, None, new, random.Random(9))
    check(spark, path, 1, model, random.Random(10))  # the replaced version reads as it did


def test_shuffled_space_time_append_to_manifests_equals_the_model(spark, tmp_path, tiny_manifests):
    """The keys pass of a shuffled append reads the time column as the write encodes it: a space-time
    layer of many manifests takes appends at new and existing times and reads as the model."""
    path = str(tmp_path / "z3-manifests")

    def rows(items):
        return spark.createDataFrame(
            [(c, r, dt.datetime(2020, 9, d, 12, tzinfo=dt.timezone.utc), v) for (c, r, d), v in sorted(items.items())],
            "col int, row int, time timestamp, v int")

    model = {(c, r, d): c * 1000 + r * 10 + d for c in range(4) for r in range(4) for d in (1, 5, 9)}
    sfclayer.write(rows(model), path, bounds=(0, 0, 3, 3), time_bounds=("2020-09-01", "2020-09-30"), partitions=12)
    assert helpers.metadata(path)["formatVersion"] == 6
    new = {(1, 2, 5): -1, (3, 3, 20): -2, (0, 0, 2): -3}
    sfclayer.write(rows(new), path, mode="append", partitions=3, small_append_bytes=0)
    model.update(new)
    got = {(x["col"], x["row"], x["time"].day): x["v"] for x in sfclayer.read(spark, path).collect()}
    assert got == model


def test_bad_keys_in_a_shuffled_append_to_manifests_are_refused_by_name(spark, many_manifests):
    """The first pass of a shuffled append to a layer of manifests (its keys' ranges) refuses a bad key
    as the write does, naming it, publishes nothing and leaves no write in progress behind."""
    path, model, depth, manifests = many_manifests
    null_key = one_tile(spark, 5, 7, 1).selectExpr("CAST(NULL AS INT) AS col", "row", "v", "payload")
    with pytest.raises(sfclayer.InvalidInput, match="null key"):
        sfclayer.write(null_key, path, mode="append", small_append_bytes=0)
    with pytest.raises(sfclayer.KeyOutOfBounds, match=f"col={SIDE}"):
        sfclayer.write(one_tile(spark, SIDE, 0, 1), path, mode="append", small_append_bytes=0)
    assert helpers.versions(path) == [1]
    assert not [d for d in os.listdir(path) if d.startswith("data-")
                and os.path.exists(os.path.join(path, d, "_pending"))]
    check(spark, path, None, model, random.Random(11))
