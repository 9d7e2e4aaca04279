"""The in-process reader (sfclayer.open(path), no JVM) against the JVM path (sfclayer.open(spark, path)):
the same answers on random layers written by Spark (every codec, masks, space-time, manifests forced
small, pyramids, deletes and appends across versions), and CorruptLayer naming the file on damage."""

import datetime as dt
import glob
import importlib.util
import json
import os
import random
import shutil

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import sfclayer
from sfclayer import raster
from sfclayer.errors import CorruptLayer, KeyNotFound, LayerNotFound, SfcLayerError
from sfclayer.reader.layer import LocalLayer

from .helpers import manifest_capacities

T0 = dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)
_HAS_SHAPELY = importlib.util.find_spec("shapely") is not None
SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)


def _rows(rnd, n, space_time=False, extra=None):
    keys = set()
    while len(keys) < n:
        k = (rnd.randrange(0, 24), rnd.randrange(0, 20))
        if space_time:
            k += (T0 + dt.timedelta(days=rnd.randrange(0, 12)),)
        keys.add(k)
    out = []
    for k in sorted(keys, key=str):
        v = rnd.randrange(-1000, 1000)
        out.append(k + (v, f"s{v}", bytes(rnd.randrange(256) for _ in range(rnd.randrange(0, 40))),
                        [rnd.random() for _ in range(rnd.randrange(0, 3))]))
    return out


def _df(spark, rows, space_time=False):
    cols = "col int, row int, " + ("time timestamp, " if space_time else "") + \
        "value int, label string, blob binary, xs array<double>"
    return spark.createDataFrame(rows, cols)


def _raster_df(spark, rnd, cols, rows):
    out = []
    for c in range(cols):
        for r in range(rows):
            if rnd.random() < 0.15:
                continue  # an absent tile
            a = np.array([rnd.randrange(0, 6) for _ in range(2 * 8 * 8)], dtype=np.uint16).reshape(2, 8, 8)
            valid = None if rnd.random() < 0.5 else (np.arange(64).reshape(8, 8) % (c + r + 2) != 0)
            t = raster.from_numpy(a, nodata=0, valid=valid)
            out.append((c, r, *[t[k] for k in raster.COLUMNS]))
    return spark.createDataFrame(out, raster.spark_schema())


@pytest.fixture(scope="module")
def layers(spark, tmp_path_factory):
    """Name → path of layers with several versions each (appends, deletes, overwrites)."""
    rnd = random.Random(33)
    root = tmp_path_factory.mktemp("reader")
    out = {}
    for name, kind, compression, parts in (("z-none", "z", "none", 5), ("hilbert-zstd", "hilbert", "zstd", 4),
                                           ("rowmajor-deflate", "rowmajor", "deflate", 1)):
        path = str(root / name)
        sfclayer.write(_df(spark, _rows(rnd, 120)), path, key_index=kind, bounds=(0, 0, 23, 19),
                       extent=(0, 0, 24, 20), compression=compression, partitions=parts,
                       index_interval=rnd.randrange(1, 6), bloom_filter=kind != "rowmajor")
        sfclayer.write(_df(spark, _rows(rnd, 30)), path, mode="append")
        sfclayer.delete(spark, path, keys=(3, 3, 9, 8))
        out[name] = path
    path = str(root / "format2")  # unchecked records (no CRC32C), a document without checksums
    sfclayer.write(_df(spark, _rows(rnd, 80)), path, bounds=(0, 0, 23, 19), format_version=2, partitions=3,
                   compression="deflate", extent=(0, 0, 24, 20))
    sfclayer.write(_df(spark, _rows(rnd, 10)), path, mode="append")
    out["format2"] = path
    path = str(root / "z3-zstd")
    opts = dict(bounds=(0, 0, 23, 19), time_bounds=(T0, T0 + dt.timedelta(days=15)),
                time_resolution="1 day", compression="zstd", partitions=3, extent=(0, 0, 24, 20))
    sfclayer.write(_df(spark, _rows(rnd, 150, True), True), path, **opts)
    sfclayer.write(_df(spark, _rows(rnd, 20, True), True), path, mode="append")
    out["z3-zstd"] = path
    path = str(root / "manifests")
    with manifest_capacities(spark, inline_files=2, leaf_files=2, fanout=2):
        sfclayer.write(_df(spark, _rows(rnd, 150)), path, bounds=(0, 0, 23, 19), partitions=6,
                       extent=(0, 0, 24, 20))
        sfclayer.write(_df(spark, _rows(rnd, 25)), path, mode="append")
        sfclayer.delete(spark, path, keys=(0, 0, 5, 19))
    out["manifests"] = path
    path = str(root / "raster")
    desc = {"tileWidth": 8, "tileHeight": 8, "bands": 2, "dtype": "uint16", "nodata": 0.0, "tms": None, "zoom": None}
    sfclayer.write(_raster_df(spark, rnd, 7, 5), path, bounds=(0, 0, 6, 4), extent=(0, 0, 70, 50),
                   crs="EPSG:3857", raster=desc, partitions=3)
    sfclayer.pyramid(spark, path)
    out["raster"] = path
    return out


def _pair(spark, path, **kw):
    return sfclayer.open(spark, path, **kw), sfclayer.open(path, **kw)


def _answer(call):
    try:
        return call()
    except SfcLayerError as e:
        return type(e)


def _same_tiles(a, b):
    assert [sorted(t.items()) for t in a] == [sorted(t.items()) for t in b]


@pytest.mark.parametrize("name", ["z-none", "hilbert-zstd", "rowmajor-deflate", "z3-zstd", "manifests", "raster",
                                  "format2"])
def test_every_version_answers_as_the_jvm(spark, layers, name):
    path = layers[name]
    newest = sfclayer.open(path)
    assert isinstance(newest, LocalLayer)
    rnd = random.Random(name)
    for version in range(1, newest.version + 1):
        jvm, local = _pair(spark, path, version=version)
        with jvm, local:
            assert local.version == jvm.version == version
            assert local.document() == {k: v for k, v in jvm.document().items() if k != "checksum"}
            assert sorted(map(json.dumps, local.metadata["files"])) == sorted(map(json.dumps, jvm.metadata["files"]))
            all_jvm = list(jvm.query())
            _same_tiles(all_jvm, list(local.query()))
            assert local.count() == jvm.count() == len(all_jvm)
            if not jvm.metadata.get("deltas"):  # recordCount counts the base files only (format 7: appends' deltas)
                assert len(all_jvm) == jvm.metadata["recordCount"]
            time = jvm.space_time
            for _ in range(25):
                key = (rnd.randrange(-2, 26), rnd.randrange(-2, 22))
                if time:
                    key += (T0 + dt.timedelta(days=rnd.randrange(0, 13)),)
                assert _answer(lambda: local.get(*key)) == _answer(lambda: jvm.get(*key)), key
            keys = [t and (t["col"], t["row"]) + ((t["time"],) if time else ()) for t in all_jvm[:20]]
            keys += [(30, 30, T0) if time else (30, 30), (1, 1, T0) if time else (1, 1)]
            assert local.get_many(keys) == jvm.get_many(keys)


@given(data=st.data())
@SETTINGS
def test_random_boxes_counts_and_windows(spark, layers, data):
    name = data.draw(st.sampled_from(sorted(layers)))
    jvm, local = _pair(spark, layers[name])
    with jvm, local:
        c0, c1 = sorted(data.draw(st.integers(-3, 26), label="c") for _ in range(2))
        r0, r1 = sorted(data.draw(st.integers(-3, 22), label="r") for _ in range(2))
        kw = {"keys": (c0, r0, c1, r1)} if data.draw(st.booleans()) else {
            "bbox": tuple(float(v) for v in (c0, r0, c1 + 0.5, r1 + 0.5))}
        if name == "raster":
            kw = {"bbox": (c0 * 10.0, r0 * 10.0, c1 * 10.0 + 5, r1 * 10.0 + 5)} if "bbox" in kw else kw
        if _HAS_SHAPELY and data.draw(st.integers(0, 3), label="geometry?") == 0:
            # a triangle (its tile cover, not its bounding box), with the keys or bbox drawn above or alone
            scale = 10.0 if name == "raster" else 1.0
            xy = [(data.draw(st.floats(-2, 26), label="x") * scale, data.draw(st.floats(-2, 22), label="y") * scale)
                  for _ in range(3)]
            kw["geometry"] = "POLYGON ((" + ", ".join(f"{x!r} {y!r}" for x, y in xy + xy[:1]) + "))"
            if data.draw(st.booleans(), label="geometry alone"):
                kw = {k: v for k, v in kw.items() if k in ("geometry", "time")}
        if jvm.space_time and data.draw(st.booleans()):
            d0, d1 = sorted(data.draw(st.integers(0, 14), label="d") for _ in range(2))
            kw["time"] = (T0 + dt.timedelta(days=d0), T0 + dt.timedelta(days=d1))
        limit = data.draw(st.one_of(st.none(), st.integers(0, 5)))
        a = _answer(lambda: list(jvm.query(limit=limit, **kw)))
        b = _answer(lambda: list(local.query(limit=limit, **kw)))
        if isinstance(a, type) or isinstance(b, type):  # the same error (a degenerate triangle...)
            assert a == b, kw
        else:
            _same_tiles(a, b)
        assert _answer(lambda: local.count(**kw)) == _answer(lambda: jvm.count(**kw))
        if name == "raster" and "bbox" in kw and "geometry" not in kw:
            for masked in (False, True):
                a = _answer(lambda: jvm.to_numpy(kw["bbox"], masked=masked))
                b = _answer(lambda: local.to_numpy(kw["bbox"], masked=masked))
                if isinstance(a, type):
                    assert a == b
                else:
                    np.testing.assert_array_equal(a, b)
                    assert a.dtype == b.dtype
                    if masked:
                        np.testing.assert_array_equal(np.ma.getmaskarray(a), np.ma.getmaskarray(b))


def test_warm_windows_from_the_tile_directory_equal_fresh_ones_through_evictions(layers):
    """A window whose tiles an earlier one read is found without a scan (the version's tile directory);
    it equals a fresh reader's window, also while a tiny cache evicts the blocks its tiles came from
    (their directory entries go with them, weakly held)."""
    import gc

    from sfclayer._windows import Window

    path = layers["raster"]
    rnd = random.Random(33)
    boxes = []
    for _ in range(12):
        x0, y0 = rnd.uniform(0, 60), rnd.uniform(0, 40)
        boxes.append((x0, y0, x0 + rnd.uniform(1, 12), y0 + rnd.uniform(1, 10)))
    want = []
    for b in boxes:
        with sfclayer.open(path) as fresh:  # nothing cached: each window scans
            want.append(fresh.to_numpy(b, masked=True))
    for cache_bytes in (None, 8000):  # 8000 B: a few blocks, evicted and read again by the boxes
        with sfclayer.open(path, cache_bytes=cache_bytes) as layer:
            p = layer._use_pinned()
            hits = 0
            for _ in range(3):
                for b, w in zip(boxes * 2, want * 2):
                    keys = Window(layer._window_metadata(), b).keys
                    hits += p.window_pixels(*keys) is not None
                    got = layer.to_numpy(b, masked=True)
                    np.testing.assert_array_equal(np.ma.getdata(got), np.ma.getdata(w))
                    np.testing.assert_array_equal(np.ma.getmaskarray(got), np.ma.getmaskarray(w))
                    gc.collect(0)  # blocks die by reference count; a full collection per read took 40 s in the suite
            assert hits > 0  # boxes without an absent tile, found in the directory (not evicted since)
            if cache_bytes:  # what the directory points at is what the cache holds: no entry outlives its block
                alive = {k for k, (ref, _) in list(p._directory.items()) if ref() is not None}
                assert alive == set(p._directory)
                assert layer.stats()["cached_bytes"] <= cache_bytes


def test_pyramid_levels_and_time_travel(spark, layers):
    path = layers["raster"]
    for zoom in sfclayer.pyramid_levels(spark, path):
        jvm, local = _pair(spark, path, zoom=zoom)
        with jvm, local:
            _same_tiles(list(jvm.query()), list(local.query()))
    path = layers["z-none"]
    with sfclayer.open(path, version=1) as v1:
        as_of = dt.datetime.fromisoformat(v1.document()["createdAt"].replace("Z", "+00:00"))
    jvm, local = _pair(spark, path, as_of=as_of)
    with jvm, local:
        assert local.version == jvm.version
    with pytest.raises(LayerNotFound):
        sfclayer.open(path, version=99)
    with pytest.raises(LayerNotFound):
        sfclayer.open(path, as_of=dt.datetime(2001, 1, 1, tzinfo=dt.timezone.utc))
    local = sfclayer.open(path, version=1)
    assert local.refresh() == sfclayer.open(path).version
    assert sfclayer.history(path) == sfclayer.history(spark, path)


# ---------------------------------------------------------------- damage


def _copy(layers, name, tmp_path):
    dest = str(tmp_path / name)
    shutil.copytree(layers[name], dest)
    return dest


def _flip(path, at):
    with open(path, "r+b") as f:
        f.seek(at)
        b = f.read(1)
        f.seek(at)
        f.write(bytes([b[0] ^ 0x40]))


def _data_files(path):
    return sorted(glob.glob(os.path.join(path, "data-*", "attempt-*", "part-*")))


def test_a_flipped_byte_in_a_record_is_corrupt_layer_naming_the_file(spark, layers, tmp_path):
    path = _copy(layers, "hilbert-zstd", tmp_path)
    doc = sfclayer.open(path).metadata
    entry = doc["files"][0]
    data = os.path.join(path, entry["dir"], entry["name"], "data")
    _flip(data, os.path.getsize(data) - 3)  # inside the last record (its group or its CRC)
    for layer in _pair(spark, path):
        with pytest.raises(CorruptLayer, match=entry["name"]):
            list(layer.query())


def test_a_flipped_byte_in_an_index_is_corrupt_layer_naming_the_file(spark, layers, tmp_path):
    path = _copy(layers, "z-none", tmp_path)
    entry = sfclayer.open(path).metadata["files"][0]
    _flip(os.path.join(path, entry["dir"], entry["name"], "index"), 60)
    for layer in _pair(spark, path):
        with pytest.raises(CorruptLayer, match=entry["name"]):
            list(layer.query())


def test_a_flipped_byte_in_a_manifest_or_document_is_corrupt_layer_naming_it(spark, layers, tmp_path):
    path = _copy(layers, "manifests", tmp_path)
    manifest = sorted(glob.glob(os.path.join(path, "_sfclayer", "manifests", "*.json")))
    doc = json.load(open(os.path.join(path, "_sfclayer", "v00000003.json")))
    victim = next(m for m in manifest if os.path.basename(m) in json.dumps(doc["manifests"]))
    _flip(victim, 40)
    for layer in _pair(spark, path):
        with pytest.raises(CorruptLayer, match=os.path.basename(victim)):
            list(layer.query())
    path = _copy(layers, "z-none", tmp_path)
    _flip(os.path.join(path, "_sfclayer", "v00000003.json"), 30)
    for open_it in (lambda: sfclayer.open(spark, path), lambda: sfclayer.open(path)):
        with pytest.raises(CorruptLayer, match="v00000003.json"):
            open_it()
    assert sfclayer.open(path, version=2).count() == sfclayer.open(spark, path, version=2).count()


def test_key_not_found_and_missing_layer(layers, tmp_path):
    with sfclayer.open(layers["z-none"]) as layer:
        with pytest.raises(KeyNotFound, match="outside its key bounds"):
            layer.get(100, 100)
    with pytest.raises(LayerNotFound, match="path does not exist"):
        sfclayer.open(str(tmp_path / "nothing"))


_BLOCKER = '''
import sys
class _NoSpark:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("pyspark", "py4j"):
            raise ImportError(f"{name} is hidden by the test")
        return None
sys.meta_path.insert(0, _NoSpark())
'''


def test_reads_without_pyspark_and_without_java(spark, layers, tmp_path):
    """A process where pyspark and py4j cannot be imported and no java is on PATH reads the layer and runs
    the CLI's read commands (the answers are the JVM path's, computed here with Spark)."""
    import subprocess
    import sys

    (tmp_path / "sitecustomize.py").write_text(_BLOCKER)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {"PATH": os.path.dirname(sys.executable) + ":/nonexistent", "HOME": str(tmp_path),
           "PYTHONPATH": f"{tmp_path}:{os.path.join(root, 'python')}"}
    path = layers["raster"]
    script = f"""
import json, shutil, sys, numpy as np
import sfclayer
assert shutil.which("java") is None
try:
    import pyspark
    raise SystemExit("pyspark imported")
except ImportError:
    pass
layer = sfclayer.open({path!r})
tiles = list(layer.query())
print(json.dumps([layer.count(), layer.version, sorted((t["col"], t["row"]) for t in tiles),
                  int(layer.to_numpy((0, 0, 70, 50)).sum())]))
assert "pyspark" not in sys.modules and "py4j" not in sys.modules
"""
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    count, version, keys, total = json.loads(out.stdout)
    with sfclayer.open(spark, path) as jvm:
        assert (count, version) == (jvm.count(), jvm.version)
        assert keys == sorted([t["col"], t["row"]] for t in jvm.query())
        assert total == int(jvm.to_numpy((0, 0, 70, 50)).sum())
    key = keys[0]
    for argv, says in ((["info", path], "raster"), (["get", path, str(key[0]), str(key[1])], "pixels"),
                       (["history", path], "write")):
        out = subprocess.run([sys.executable, "-m", "sfclayer", *argv], env=env, capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 0, (argv, out.stderr)
        assert says in out.stdout, (argv, out.stdout)


def test_bloom_filters_are_bit_identical_to_the_jvms(layers):
    """Each sidecar the JVM wrote equals the filter Python builds from the file's SFC indexes (and every
    index of the file is in Python's reading of it)."""
    from sfclayer.reader.bloom import BloomFilter
    from sfclayer.reader.version import PinnedVersion

    layer = sfclayer.open(layers["z-none"])
    p: PinnedVersion = layer._last
    fpp = p.document.doc["bloomFilter"]["fpp"]
    checked = 0
    for entry in p.all_files():
        if entry.bloom_crc is None:
            continue
        df = p.data_file(entry)
        keys = [k for block in df.blocks(0, len(df.index.keys) - 1) for k, _ in block]
        written = open(os.path.join(layers["z-none"], entry.id, "bloom"), "rb").read()
        assert BloomFilter.build(keys, fpp).to_bytes() == written
        assert all(p.bloom(entry).might_contain(k) for k in keys)
        checked += 1
    assert checked == len(p.all_files()) > 1


def test_threads_and_forked_children_read_the_same_tiles(layers):
    import concurrent.futures as cf

    path = layers["raster"]
    with sfclayer.open(path) as layer:
        want = {(t["col"], t["row"]): t["pixels"] for t in layer.query()}
    shared = sfclayer.open(path)
    keys = sorted(want) * 4
    with cf.ThreadPoolExecutor(8) as ex:
        got = list(ex.map(lambda k: shared.get(*k)["pixels"], keys))
    assert got == [want[k] for k in keys]
    pid = os.fork()
    if pid == 0:  # the child reads through the parent's layer, caches and all
        ok = all(shared.get(*k)["pixels"] == want[k] for k in sorted(want))
        os._exit(0 if ok else 3)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


def test_the_cli_starts_without_importing_the_server_or_spark(layers):
    import subprocess
    import sys

    from sfclayer import cli, demo, ingestion, pyramids, server

    assert cli._DEFAULT_COALESCE_MS == server.DEFAULT_COALESCE_MS
    assert cli.DEMO_SOURCES == tuple(sorted(demo.SOURCES))
    assert (cli.RESAMPLING, cli.DOWNSAMPLING) == (ingestion.RESAMPLING, pyramids.DOWNSAMPLING)
    # nor what only writes or the demo need (their imports were most of `sfclayer info`'s 0.75 s)
    script = ("import sys; from sfclayer import cli; cli.main(['info', %r]); "
              "print(sorted(m for m in ('pyspark', 'py4j', 'uvicorn', 'sfclayer.server', 'sfclayer.demo', "
              "'sfclayer.ingestion', 'sfclayer.pyramids', 'sfclayer.zonal', 'sfclayer.integrity') "
              "if m in sys.modules))" % layers["z-none"])
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_what_the_in_process_reader_leaves_to_spark_says_so():
    catalog = os.path.join(os.path.dirname(__file__), "data", "geotrellis", "catalog")
    with pytest.raises(LayerNotFound, match="GeoTrellis catalog.*sfclayer.geotrellis.open"):
        sfclayer.open(catalog)
    from sfclayer.errors import InvalidArgument

    with pytest.raises(InvalidArgument, match="HDFS.*through Spark"):
        sfclayer.open("hdfs://namenode:8020/layers/dem")


def test_a_format_1_version_is_read_by_listing_its_data_directory(spark, layers, tmp_path):
    """Format 1 (tests/test_updates.py makes one the same way): one data directory, listed; no ``dir``."""
    path = str(tmp_path / "format1")
    shutil.copytree(layers["format2"], path)
    md = json.load(open(os.path.join(path, "_sfclayer", "v00000001.json")))
    data_dir = os.path.join(path, md["dataDir"])
    for f in md["files"]:
        shutil.move(os.path.join(path, f["dir"], f["name"]), os.path.join(data_dir, f["name"]))
        del f["dir"]
    md["formatVersion"] = 1
    del md["operation"]
    for v in glob.glob(os.path.join(path, "_sfclayer", "v*.json")) + glob.glob(os.path.join(path, "_sfclayer", "_last*")):
        os.remove(v)
    with open(os.path.join(path, "_sfclayer", "v00000001.json"), "w") as f:
        json.dump(md, f)
    jvm, local = _pair(spark, path)
    with jvm, local:
        _same_tiles(list(jvm.query()), list(local.query()))
        assert local.count() == md["recordCount"]
    # the listing is the version (the document's files are informational): a part gone is damage to both
    first = sorted(n for n in os.listdir(data_dir) if n.startswith("part-"))[0]
    shutil.move(os.path.join(data_dir, first), str(tmp_path / first))
    for reader in (lambda: sfclayer.open(spark, path).count(), lambda: sfclayer.open(path).count()):
        with pytest.raises(CorruptLayer, match=f"holds {len(md['files']) - 1} data files but the"):
            reader()


def test_cli_read_commands_answer_alike_in_process_and_with_spark(spark, layers, capsys):
    from sfclayer import cli

    path = layers["manifests"]
    key = next(iter(sfclayer.open(path).query()))
    for argv in (["info", "--json", "--files", path], ["info", path], ["history", "--json", path],
                 ["get", path, str(key["col"]), str(key["row"])]):
        outs = []
        for extra in ([], ["--spark"]):
            assert cli.main(argv + extra, spark_factory=lambda: (spark, False)) == 0
            outs.append(capsys.readouterr().out)
        if argv[0] == "get":  # its first line says how long the look-up took
            outs = [o.split("\n", 1)[1] for o in outs]
        if "--json" in argv and argv[0] == "info":
            outs = [json.loads(o) for o in outs]
        assert outs[0] == outs[1], argv
