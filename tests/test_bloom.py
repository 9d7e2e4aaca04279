"""Bloom filters per data file (issue 16, seed 003): built during writes and updates behind the
bloomFilter option, consulted by look-ups before a file is opened, checked by verify, rebuilt by repair."""

import os
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import types as T

import sfclayer
from tests import helpers

SIDE = 64
SCHEMA = T.StructType([
    T.StructField("col", T.IntegerType(), False),
    T.StructField("row", T.IntegerType(), False),
    T.StructField("v", T.LongType(), False),
    T.StructField("blob", T.BinaryType(), False),
])


def sparse_model(seed, share=0.1, side=SIDE):
    """A dict model of a sparse layer: about ``share`` of the grid's keys, value v = col * 1000 + row + seed."""
    rnd = random.Random(seed)
    return {(c, r): c * 1000 + r + seed for c in range(side) for r in range(side) if rnd.random() < share}


def write(spark, path, model, mode="errorifexists", **options):
    rows = [(c, r, v, bytes(400)) for (c, r), v in sorted(model.items())]
    df = spark.createDataFrame(rows, SCHEMA)
    sfclayer.write(df, path, mode=mode, **options)


def check_lookups(spark, path, model):
    """Every key of the grid through get_many and some through get: present ones found, absent ones missing."""
    keys = [(c, r) for c in range(SIDE) for r in range(SIDE)]
    with sfclayer.open(spark, path) as layer:
        got = layer.get_many(keys)
        for key, value in zip(keys, got):
            if key in model:
                assert value is not None, f"present key {key} answered missing"
                assert value["v"] == model[key]
            else:
                assert value is None, f"absent key {key} answered {value}"
        for key in random.Random(1).sample(keys, 200):
            assert (key in layer) == (key in model)
        return layer.stats()


def bloom_files(path):
    return [f for f in helpers.data_files(path) if os.path.exists(os.path.join(f, "bloom"))]


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2 ** 16), fpp=st.sampled_from([0.001, 0.01, 0.3]),
       key_index=st.sampled_from(["z", "hilbert", "rowmajor"]))
def test_present_keys_are_always_found_with_filters(spark, tmp_path_factory, seed, fpp, key_index):
    path = str(tmp_path_factory.mktemp("bloom-prop") / "layer")
    model = sparse_model(seed)
    write(spark, path, model, bounds=(0, 0, SIDE - 1, SIDE - 1), block_size="64k", partitions=2,
          bloom_filter=True, bloom_fpp=fpp, key_index=key_index)
    md = helpers.metadata(path)
    assert md["bloomFilter"] == {"fpp": fpp} and md["formatVersion"] == 3
    assert len(md["files"]) > 1 and all("bloomCrc32c" in f for f in md["files"])
    assert len(bloom_files(path)) == len(md["files"])
    stats = check_lookups(spark, path, model)
    assert stats["filters_kept"] == len(md["files"])
    assert stats["bloom_skips"] > 0


def test_misses_skip_opening_files(spark, tmp_path):
    model = sparse_model(5)
    absent = [(c, r) for c in range(SIDE) for r in range(SIDE) if (c, r) not in model]
    opened = {}
    for name, on in (("without", False), ("with", True)):
        path = str(tmp_path / name)
        write(spark, path, model, bounds=(0, 0, SIDE - 1, SIDE - 1), block_size="64k", bloom_filter=on)
        files = len(helpers.metadata(path)["files"])
        with sfclayer.open(spark, path, cache_size=1) as layer:  # every file change is a cold open
            for key in absent[::7]:
                assert key not in layer
            opened[name] = layer.stats()
    n = len(absent[::7])
    assert opened["without"]["bloom_skips"] == 0 and opened["without"]["files_opened"] > files
    # fpp 0.01: nearly every miss is answered by the filter, with no data file opened
    assert opened["with"]["bloom_skips"] >= 0.95 * n
    assert opened["with"]["files_opened"] <= n - opened["with"]["bloom_skips"]


def test_updates_keep_building_filters(spark, tmp_path):
    path = str(tmp_path / "layer")
    model = sparse_model(11)
    # blocks of 1 MiB: the files, far smaller, are what compact merges
    write(spark, path, model, bounds=(0, 0, SIDE - 1, SIDE - 1), block_size="1m", partitions=4, bloom_filter=True)
    extra = sparse_model(12)  # new keys and replacements
    write(spark, path, extra, mode="append", partitions=3)
    model.update(extra)
    check_lookups(spark, path, model)
    sfclayer.delete(spark, path, keys=(0, 0, 20, 20))
    model = {k: v for k, v in model.items() if not (k[0] <= 20 and k[1] <= 20)}
    check_lookups(spark, path, model)
    before = helpers.metadata(path)
    sfclayer.compact(spark, path)
    after = helpers.metadata(path)
    # the compaction ran (small files after the append and delete) and built filters for its files
    assert after["operation"]["name"] == "compact" and after["version"] == before["version"] + 1
    assert len(after["files"]) < len(before["files"])
    for md in (before, after):
        assert md["bloomFilter"] == {"fpp": 0.01}
        assert all("bloomCrc32c" in f for f in md["files"])
    assert len(bloom_files(path)) == len(after["files"])
    check_lookups(spark, path, model)


def test_filters_are_on_by_default_and_can_be_turned_off(spark, tmp_path):
    on, off = str(tmp_path / "on"), str(tmp_path / "off")
    write(spark, on, sparse_model(3), bounds=(0, 0, SIDE - 1, SIDE - 1), block_size="64k")
    md = helpers.metadata(on)
    assert md["bloomFilter"] == {"fpp": 0.01} and all("bloomCrc32c" in f for f in md["files"])
    write(spark, off, sparse_model(3), bounds=(0, 0, SIDE - 1, SIDE - 1), block_size="64k", bloom_filter=False)
    md = helpers.metadata(off)
    assert "bloomFilter" not in md and not any("bloomCrc32c" in f for f in md["files"])
    assert bloom_files(off) == []
    # an append keeps the layer's choice
    write(spark, off, sparse_model(4), mode="append")
    assert bloom_files(off) == [] and "bloomFilter" not in helpers.metadata(off)


def test_bad_bloom_options_are_refused_by_name(spark, tmp_path):
    path = str(tmp_path / "layer")
    model = sparse_model(4)
    with pytest.raises(sfclayer.InvalidArgument, match=r"^option bloomFpp: '2' is not a false-positive probability"):
        write(spark, path, model, bounds=(0, 0, SIDE - 1, SIDE - 1), bloom_fpp=2)
    with pytest.raises(sfclayer.InvalidArgument, match=r"^option bloomFilter: 'maybe' is not true or false"):
        write(spark, path, model, bounds=(0, 0, SIDE - 1, SIDE - 1), bloom_filter="maybe")
    write(spark, path, model, bounds=(0, 0, SIDE - 1, SIDE - 1), bloom_filter=True)
    with pytest.raises(sfclayer.InvalidArgument, match=r"^option bloomFilter: 'false' differs from layer .*with bloom"):
        write(spark, path, model, mode="append", bloom_filter=False)
    with pytest.raises(sfclayer.InvalidArgument, match=r"^option bloomFpp: '0.2' differs from layer"):
        write(spark, path, model, mode="append", bloom_fpp=0.2)


def test_a_damaged_filter_is_found_by_lookups_and_verify_and_rebuilt_by_repair(spark, tmp_path):
    path = str(tmp_path / "layer")
    model = sparse_model(8)
    write(spark, path, model, bounds=(0, 0, SIDE - 1, SIDE - 1), block_size="64k", bloom_filter=True)
    victim = helpers.data_files(path)[1]
    sidecar = os.path.join(victim, "bloom")
    with open(sidecar, "r+b") as f:  # clear every bit: a filter that would call every key absent
        size = os.path.getsize(sidecar)
        f.seek(24)
        f.write(bytes(size - 24))
    if os.path.exists(os.path.join(victim, ".bloom.crc")):  # Hadoop's checksum (sfclayer writes none)
        os.remove(os.path.join(victim, ".bloom.crc"))
    name = os.path.basename(victim)
    present_in_victim = [k for k in model if helpers.metadata(path)["files"][1]["firstIndex"] <= _index(path, k)
                         <= helpers.metadata(path)["files"][1]["lastIndex"]]
    with sfclayer.open(spark, path) as layer:
        with pytest.raises(sfclayer.CorruptLayer, match=rf"bloom filter .*{name}/bloom is damaged: checksum mismatch"):
            layer.get(*present_in_victim[0])
    report = sfclayer.verify(spark, path)
    assert not report.clean and [f.name for f in report.damaged_files] == [name]
    assert any("bloom" in p for p in report.damaged_files[0].problems)
    result = sfclayer.repair(spark, path)
    assert result.repaired and sfclayer.verify(spark, path).clean
    md = helpers.metadata(path)
    assert md["bloomFilter"] == {"fpp": 0.01} and all("bloomCrc32c" in f for f in md["files"])
    check_lookups(spark, path, model)


def _index(path, key):
    from sfclayer.curves import key_index_from_json

    return key_index_from_json(helpers.metadata(path)["keyIndex"]).index(*key)
