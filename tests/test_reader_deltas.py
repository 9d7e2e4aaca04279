"""The in-process reader on format 7 versions (docs/FORMAT.md section 11: delta files), against a dict
model: box queries, counts, windows and look-ups merge the base files with the deltas (the last file
wins at a key), time travel reads each version's own list, and a damaged delta file is CorruptLayer
naming it. The delta versions are made by hand (tests/_deltas.py): a layer's newest document plus
another layer's files listed as deltas."""

import datetime as dt
import itertools
import json
import os
import random
import shutil

import numpy as np
import pytest

import sfclayer
from sfclayer import raster
from sfclayer.errors import CorruptLayer, KeyNotFound, UnsupportedFormat

from . import _deltas
from .helpers import manifest_capacities

T0 = dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)
BOUNDS = (0, 0, 23, 19)
_SCHEMA = "col int, row int, value int, label string"
_ST_SCHEMA = "col int, row int, time timestamp, value int, label string"


def _micros(t):
    return (t - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) // dt.timedelta(microseconds=1)




def _keys(rnd, n, space_time=False, avoid=()):
    out = set()
    while len(out) < n:
        k = (rnd.randrange(0, 24), rnd.randrange(0, 20))
        if space_time:  # several keys of one time bin (a day) share an SFC index
            k += (T0 + dt.timedelta(days=rnd.randrange(0, 6), hours=6 * rnd.randrange(0, 3)),)
        if k not in avoid:
            out.add(k)
    return sorted(out, key=str)


def _write(spark, path, tiles, space_time=False, **opts):
    """Writes ``{key: value}`` tiles (label ``v<value>``); returns the model ``{key: (value, label)}``."""
    rows = [(*k, v, f"v{v}") for k, v in tiles.items()]
    sfclayer.write(spark.createDataFrame(rows, _ST_SCHEMA if space_time else _SCHEMA), path, bounds=BOUNDS,
                   extent=(0, 0, 24, 20), **opts)
    return {_model_key(k): (v, f"v{v}") for k, v in tiles.items()}


def _model_key(k):
    return k if len(k) == 2 else (k[0], k[1], _micros(k[2]))


def _tile_key(t):
    return (t["col"], t["row"]) + ((_micros(t["time"]),) if "time" in t else ())


def _layer_with_deltas(spark, root, name, space_time=False, manifests=False, **opts):
    """A base layer and three delta versions (deltas of 2, 1 and 2 files, each replacing tiles of the
    base and of earlier deltas and inserting new ones). Returns ``(path, models)``: version -> model."""
    rnd, value = random.Random(name), itertools.count(1).__next__  # distinct: a tile says which write made it
    # the first delta inserts the first and last keys: indexes before the base files' first and past their last
    ends = [(0, 0), (23, 19)] if not space_time else [(0, 0, T0), (23, 19, T0 + dt.timedelta(days=5, hours=12))]
    base = _keys(rnd, 140, space_time, avoid=set(ends))
    path = str(root / name)
    if manifests:
        with manifest_capacities(spark, inline_files=2, leaf_files=2, fanout=2):
            model = _write(spark, path, {k: value() for k in base}, space_time, partitions=4, **opts)
    else:
        model = _write(spark, path, {k: value() for k in base}, space_time, partitions=3, index_interval=2,
                       bloom_filter=True, **opts)
    models = {1: dict(model)}
    seen = list(base)
    for n, (old, new, parts, bloom) in enumerate(((20, 20, 2, True), (12, 10, 1, False), (15, 15, 2, True))):
        keys = rnd.sample(seen, old) + (ends if n == 0 else []) + _keys(rnd, new, space_time, avoid=set(seen) | set(ends))
        seen += keys[old:]
        src = str(root / f"{name}-delta{n}")
        model.update(_write(spark, src, {k: value() for k in keys}, space_time, partitions=parts,
                            bloom_filter=bloom, index_interval=rnd.randrange(1, 4), **opts))
        models[_deltas.publish_delta_version(path, src)] = dict(model)
    return path, models


def _raster_tiles(rnd, keys, shift):
    out = {}
    for c, r in keys:
        a = np.array([rnd.randrange(0, 6) + shift for _ in range(2 * 8 * 8)], dtype=np.uint16).reshape(2, 8, 8)
        out[(c, r)] = raster.from_numpy(a, nodata=0)
    return out


def _write_raster(spark, path, tiles):
    desc = {"tileWidth": 8, "tileHeight": 8, "bands": 2, "dtype": "uint16", "nodata": 0.0, "tms": None, "zoom": None}
    rows = [(c, r, *[t[k] for k in raster.COLUMNS]) for (c, r), t in sorted(tiles.items())]
    sfclayer.write(spark.createDataFrame(rows, raster.spark_schema()), path, bounds=(0, 0, 6, 4),
                   extent=(0, 0, 70, 50), crs="EPSG:3857", raster=desc, partitions=2, index_interval=2)


@pytest.fixture(scope="module")
def layers(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("deltas")
    out = {"z": _layer_with_deltas(spark, root, "z", key_index="z", compression="none"),
           "z3": _layer_with_deltas(spark, root, "z3", space_time=True, compression="zstd",
                                    time_bounds=(T0, T0 + dt.timedelta(days=15)), time_resolution="1 day"),
           "hilbert-manifests": _layer_with_deltas(spark, root, "hilbert-manifests", manifests=True,
                                                   key_index="hilbert", compression="deflate")}
    # a raster layer with one delta version, and the same tiles written whole: the windows' reference
    rnd = random.Random(7)
    cells = [(c, r) for c in range(7) for r in range(5)]
    base = _raster_tiles(rnd, [k for k in cells if rnd.random() < 0.8], 0)
    delta = _raster_tiles(rnd, rnd.sample(cells, 12), 10)
    path, src, whole = (str(root / n) for n in ("raster", "raster-delta", "raster-whole"))
    _write_raster(spark, path, base)
    _write_raster(spark, src, delta)
    _deltas.publish_delta_version(path, src)
    _write_raster(spark, whole, {**base, **delta})
    out["raster"] = (path, whole)
    return out


def _as_model(tiles):
    out = {}
    for t in tiles:
        k = _tile_key(t)
        assert k not in out, f"key {k} answered twice"
        out[k] = (t["value"], t["label"])
    return out


def _in_box(model, c0, r0, c1, r1, t0=None, t1=None):
    return {k: v for k, v in model.items() if c0 <= k[0] <= c1 and r0 <= k[1] <= r1 and (t0 is None or t0 <= k[2] <= t1)}


@pytest.mark.parametrize("name", ["z", "z3", "hilbert-manifests"])
def test_every_version_answers_as_the_dict_model(layers, name):
    path, models = layers[name]
    assert sfclayer.open(path).version == max(models) == 4
    rnd = random.Random(name)
    for version, model in models.items():
        with sfclayer.open(path, version=version) as layer:
            doc = layer.document()
            assert doc["formatVersion"] == (7 if version > 1 else doc["formatVersion"])
            assert len(doc.get("deltas", [])) == {1: 0, 2: 2, 3: 3, 4: 5}[version]
            tiles = list(layer.query())
            assert _as_model(tiles) == model
            ki = layer.key_index
            idx = [ki.index(t["col"], t["row"], _micros(t["time"])) if "time" in t else ki.index(t["col"], t["row"])
                   for t in tiles]
            assert idx == sorted(idx)  # in SFC index order, as a scan of base files alone
            assert layer.count() == len(model)
            if version > 1:  # tiles of deltas alone before the first base file (and, on Z curves, past the last)
                p = layer._use_pinned()
                assert min(idx) < p.all_files()[0].first_index
                assert name == "hilbert-manifests" or max(idx) > max(f.last_index for f in p.all_files())
            for _ in range(15):  # boxes
                c0, c1 = sorted(rnd.randrange(-2, 26) for _ in range(2))
                r0, r1 = sorted(rnd.randrange(-2, 22) for _ in range(2))
                kw, t = {"keys": (c0, r0, c1, r1)}, ()
                if layer.space_time and rnd.random() < 0.6:
                    d0, d1 = sorted(rnd.randrange(0, 7) for _ in range(2))
                    kw["time"] = (T0 + dt.timedelta(days=d0), T0 + dt.timedelta(days=d1, hours=7))
                    t = tuple(_micros(x) for x in kw["time"])
                want = _in_box(model, c0, r0, c1, r1, *t)
                assert _as_model(layer.query(**kw)) == want, kw
                assert layer.count(**kw) == len(want), kw
                limit = rnd.randrange(0, 4)
                assert len(list(layer.query(limit=limit, **kw))) == min(limit, len(want))
            # look-ups: present (base, replaced, inserted), missing in the spans, outside the bounds
            keys = rnd.sample(sorted(model), 40) + [k for k in map(_model_key, _keys(rnd, 40, layer.space_time)) if k not in model]
            for k in keys:
                args = k if len(k) == 2 else (k[0], k[1], dt.datetime.fromtimestamp(k[2] / 1e6, dt.timezone.utc))
                if k in model:
                    assert layer.get(*args) == {"value": model[k][0], "label": model[k][1]}, k
                else:
                    with pytest.raises(KeyNotFound):
                        layer.get(*args)
            got = layer.get_many([k if len(k) == 2 else (k[0], k[1], dt.datetime.fromtimestamp(k[2] / 1e6,
                                  dt.timezone.utc)) for k in keys])
            assert got == [None if k not in model else {"value": model[k][0], "label": model[k][1]} for k in keys]


def test_time_travel_and_refresh_never_serve_a_replaced_tile(layers):
    """One LocalLayer's caches (decoded blocks, indexes) serve every version it is moved to: the blocks
    of a base file that a delta replaced tiles of stay cached, and the delta version's answers win."""
    path, models = layers["z"]
    layer = sfclayer.open(path, version=1)
    assert _as_model(layer.query()) == models[1]
    replaced = [k for k in models[4] if k in models[1] and models[4][k] != models[1][k]]
    assert replaced
    for k in replaced:
        assert layer.get(*k)["value"] == models[1][k][0]
    assert layer.refresh() == 4
    for k in replaced:
        assert layer.get(*k)["value"] == models[4][k][0]
    assert _as_model(layer.query()) == models[4]
    assert layer.stats()["cache_hits"] > 0
    with sfclayer.open(path, version=4) as v4:
        created = dt.datetime.fromisoformat(sfclayer.open(path, version=3).document()["createdAt"]
                                            .replace("Z", "+00:00"))
        with sfclayer.open(path, as_of=created) as v3:
            assert v3.version == 3 and _as_model(v3.query()) == models[3]
        assert _as_model(v4.query()) == models[4]
    history = sfclayer.history(path)
    assert [v.operation for v in history] == ["write", "append", "append", "append"]


def test_look_ups_skip_deltas_by_their_bloom_filters(layers):
    path, models = layers["z"]
    model = models[4]
    with sfclayer.open(path) as layer:
        p = layer._use_pinned()
        misses = []
        for c in range(24):
            for r in range(20):
                if (c, r) not in model and p.deltas_holding(layer.key_index.index(c, r)):
                    misses.append((c, r))
        assert len(misses) > 20
        for k in misses:
            with pytest.raises(KeyNotFound):
                layer.get(*k)
        assert layer.stats()["bloom_skips"] > len(misses) // 2


def test_windows_equal_the_same_tiles_written_whole(layers):
    path, whole = layers["raster"]
    rnd = random.Random(3)
    boxes = [(0, 0, 70, 50)]
    for _ in range(12):
        x0, y0 = rnd.uniform(-5, 60), rnd.uniform(-5, 40)
        boxes.append((x0, y0, x0 + rnd.uniform(1, 30), y0 + rnd.uniform(1, 20)))
    with sfclayer.open(whole) as ref, sfclayer.open(path, version=1) as layer:
        assert layer.to_numpy(boxes[0]).sum() != ref.to_numpy(boxes[0]).sum()  # the base alone differs
        assert layer.refresh() == 2  # its tile directory and cached blocks of version 1 are not reused
        for _ in range(2):  # cold, then warm (the tile directory)
            for b in boxes:
                for masked in (False, True):
                    want, got = ref.to_numpy(b, masked=masked), layer.to_numpy(b, masked=masked)
                    np.testing.assert_array_equal(np.ma.getdata(got), np.ma.getdata(want))
                    np.testing.assert_array_equal(np.ma.getmaskarray(got), np.ma.getmaskarray(want))
        assert sorted(map(_tile_key, layer.query())) == sorted(map(_tile_key, ref.query()))
        assert layer.count() == ref.count()
        pytest.importorskip("xarray")
        pytest.importorskip("rioxarray")
        a, b = layer.to_xarray(boxes[0]), ref.to_xarray(boxes[0])
        np.testing.assert_array_equal(a.values, b.values)


# ---------------------------------------------------------------- damage


def _copy(layers, name, tmp_path):
    return shutil.copytree(layers[name][0], str(tmp_path / name))


def _flip(path, at):
    with open(path, "r+b") as f:
        f.seek(at)
        b = f.read(1)
        f.seek(at)
        f.write(bytes([b[0] ^ 0x40]))


def _a_delta(path, models, with_bloom=False):
    """A delta entry of the newest version, and a key it holds that no later delta replaces."""
    doc = _deltas.document(path)
    layer = sfclayer.open(path)
    for d in reversed(doc["deltas"]):
        if with_bloom and "bloomCrc32c" not in d:
            continue
        p = layer._use_pinned()
        for k in models[max(models)]:
            i = layer.key_index.index(*k)
            held = p.deltas_holding(i)
            if held and held[0].file.name == d["name"] and int(d["firstIndex"]) <= i <= int(d["lastIndex"]):
                return d, k
    raise AssertionError("no delta")


@pytest.mark.parametrize("where", ["data", "index", "bloom", "truncated", "missing"])
def test_a_damaged_delta_file_is_corrupt_layer_naming_it(layers, tmp_path, where):
    path = _copy(layers, "z", tmp_path)
    models = layers["z"][1]
    entry, key = _a_delta(path, models, with_bloom=where == "bloom")
    mapfile = os.path.join(path, entry["dir"], entry["name"])
    if where == "data":
        _flip(os.path.join(mapfile, "data"), os.path.getsize(os.path.join(mapfile, "data")) - 3)
    elif where in ("index", "bloom"):
        _flip(os.path.join(mapfile, where), 60 if where == "index" else 40)
    elif where == "truncated":
        with open(os.path.join(mapfile, "data"), "r+b") as f:
            f.truncate(int(entry["dataBytes"]) - 5)
    else:
        shutil.rmtree(mapfile)
    with sfclayer.open(path) as layer:
        if where != "bloom":  # a scan reads no filter
            with pytest.raises(CorruptLayer, match=entry["name"]):
                list(layer.query())
        with pytest.raises(CorruptLayer, match=entry["name"]):
            if where in ("data", "truncated"):  # the damaged last record: read every key of the delta
                for k in models[4]:
                    layer.get(*k)
            else:
                layer.get(*key)
        got = layer.get_many(list(models[4]), errors_as_values=True)  # the damage in place of those it hides
        assert any(isinstance(g, CorruptLayer) and entry["name"] in str(g) for g in got)
    with sfclayer.open(path, version=1) as before:  # versions that do not list it read
        assert _as_model(before.query()) == models[1]


def _republish(path, doc):
    v = _deltas.newest_version(path)
    os.remove(os.path.join(path, "_sfclayer", f"v{v:08d}.json"))
    os.remove(os.path.join(path, "_sfclayer", "_last_version"))
    doc = dict(doc)
    doc.pop("version")
    assert _deltas.publish(path, doc) == v
    return f"v{v:08d}.json"


@pytest.mark.parametrize("bad", ["order", "future", "overlap", "added-in", "format6", "format8", "no-dir"])
def test_a_bad_deltas_list_is_refused_naming_the_document(layers, tmp_path, bad):
    path = _copy(layers, "z", tmp_path)
    doc = _deltas.document(path)
    deltas = doc["deltas"]
    if bad == "order":  # addedIn decreases along the list
        deltas[0], deltas[-1] = deltas[-1], deltas[0]
    elif bad == "future":
        deltas[-1]["addedIn"] = doc["version"] + 1
    elif bad == "overlap":  # two files of one version not disjoint
        first = next(d for d in deltas if d["addedIn"] == 2)
        first["lastIndex"] = max(int(d["lastIndex"]) for d in deltas if d["addedIn"] == 2)
    elif bad == "added-in":
        del deltas[0]["addedIn"]
    elif bad == "format6":
        doc["formatVersion"] = 6
    elif bad == "format8":
        doc["formatVersion"] = 8
    else:
        del deltas[1]["dir"]
    name = _republish(path, doc)
    with pytest.raises(UnsupportedFormat if bad == "format8" else CorruptLayer, match=name):
        sfclayer.open(path)
    assert _as_model(sfclayer.open(path, version=3).query()) == layers["z"][1][3]


def test_a_format_7_document_checks_its_trailer(layers, tmp_path):
    path = _copy(layers, "z", tmp_path)
    v = _deltas.newest_version(path)
    _flip(os.path.join(path, "_sfclayer", f"v{v:08d}.json"), 200)
    with pytest.raises(CorruptLayer, match=f"v{v:08d}.json"):
        sfclayer.open(path)


# ---------------------------------------------------------------- the CLI and the server


def test_cli_info_layout_get_and_history_show_the_deltas(spark, layers, tmp_path, capsys):
    from sfclayer import cli

    path, models = layers["z"]
    assert cli.main(["info", "--files", path, "--spark"], spark_factory=lambda: (spark, False)) == 0
    jvm = capsys.readouterr().out
    assert cli.main(["info", path]) == 0
    out = capsys.readouterr().out
    assert "format 7" in out
    records = sum(int(d["records"]) for d in _deltas.document(path)["deltas"])
    assert f"deltas       5 delta files, {records} tiles" in out and "added in versions 2, 3, 4" in out, out
    assert cli.main(["info", "--files", path]) == 0
    out = capsys.readouterr().out
    assert out == jvm  # the JVM's document of the version says the same
    for d in _deltas.document(path)["deltas"]:
        assert d["name"] in out
    assert cli.main(["info", "--json", path]) == 0
    assert len(json.loads(capsys.readouterr().out)["deltas"]) == 5
    replaced = next(k for k in models[4] if k in models[1] and models[4][k] != models[1][k])
    assert cli.main(["get", path, str(replaced[0]), str(replaced[1])]) == 0
    assert f"v{models[4][replaced][0]}" in capsys.readouterr().out
    png = str(tmp_path / "layout.png")
    assert cli.main(["layout", path, "-o", png]) == 0
    assert "5 delta files" in capsys.readouterr().out
    assert os.path.getsize(png) > 0
    assert cli.main(["history", path]) == 0
    doc, out = _deltas.document(path), capsys.readouterr().out  # records: base + in deltas
    assert f"{doc['recordCount']}+{records}" in out.splitlines()[-1].split(), out
    assert (sfclayer.history(path)[-1].delta_files, sfclayer.history(spark, path)[-1].delta_records) == (5, records)


def test_the_tile_server_serves_the_delta_tiles(layers):
    from sfclayer import server as srv

    from .serving import Client

    path, whole = layers["raster"]
    server = srv.serve(None, [f"d={path}", f"w={whole}"], port=0, background=True, log=lambda line: None)
    try:
        c = Client(server.url)
        try:
            assert c.json("/layers/d")["deltaFileCount"] == len(_deltas.document(path)["deltas"]) == 2
            for col in range(7):
                for row in range(5):
                    a = c.get(f"/layers/d/values/{col}/{row}")
                    b = c.get(f"/layers/w/values/{col}/{row}")
                    assert a[0] == b[0]
                    if a[0] == 200:
                        assert json.loads(a[2])["values"] == json.loads(b[2])["values"]
                        assert "deltas" not in json.loads(b[2])
            p = sfclayer.open(path)._use_pinned()  # a key in a delta's span: the files asked before the base's
            col, row = next((c, r) for c in range(7) for r in range(5) if p.deltas_holding(p.key_index.index(c, r)))
            assert c.json(f"/layers/d/keys/{col}/{row}")["deltas"] == [
                d.file.name for d in p.deltas_holding(p.key_index.index(col, row))]
        finally:
            c.close()
    finally:
        server.stop()


# ---------------------------------------------------------------- the JVM path


def test_answers_equal_the_jvm_paths(spark, layers):
    """The JVM's reader of deltas (sfclayer.open(spark, path)) gives the same tiles in the same order
    (within an index too: a later file's tile replaces an earlier one's in its place), counts and look-ups."""
    rnd = random.Random(5)
    for name in ("z", "z3", "hilbert-manifests"):
        path, models = layers[name]
        for version in models:
            jvm, local = sfclayer.open(spark, path, version=version), sfclayer.open(path, version=version)
            with jvm, local:
                a, b = list(jvm.query()), list(local.query())
                assert [sorted(t.items()) for t in a] == [sorted(t.items()) for t in b], (name, version)
                assert _as_model(b) == models[version]
                assert jvm.count() == local.count() == len(models[version])
                assert jvm.document().get("deltas") == local.document().get("deltas")
                for _ in range(4):
                    c0, c1 = sorted(rnd.randrange(-2, 26) for _ in range(2))
                    r0, r1 = sorted(rnd.randrange(-2, 22) for _ in range(2))
                    kw = {"keys": (c0, r0, c1, r1)}
                    assert [sorted(t.items()) for t in jvm.query(**kw)] == [sorted(t.items()) for t in local.query(**kw)]
                    assert jvm.count(**kw) == local.count(**kw)
                keys = [(t["col"], t["row"]) + ((t["time"],) if "time" in t else ()) for t in rnd.sample(b, 20)]
                keys += _keys(rnd, 20, jvm.space_time)  # present or not
                assert jvm.get_many(keys) == local.get_many(keys)
    path, _ = layers["raster"]
    with sfclayer.open(spark, path) as jvm, sfclayer.open(path) as local:
        for b in ((0, 0, 70, 50), (12.5, 3.0, 47.5, 33.0)):
            np.testing.assert_array_equal(jvm.to_numpy(b, masked=True), local.to_numpy(b, masked=True))


def test_a_damaged_delta_is_corrupt_layer_naming_it_on_both_paths(spark, layers, tmp_path):
    path = _copy(layers, "z", tmp_path)
    entry, _ = _a_delta(path, layers["z"][1])
    data = os.path.join(path, entry["dir"], entry["name"], "data")
    _flip(data, os.path.getsize(data) - 3)
    for layer in (sfclayer.open(spark, path), sfclayer.open(path)):
        with layer, pytest.raises(CorruptLayer, match=entry["name"]):
            list(layer.query())


def test_a_layer_with_deltas_on_an_object_store(layers):
    """Through the object-store byte source (moto's S3): the same answers, and a look-up that misses a
    delta's span reads no byte of it (its filter answers; the filter is read once)."""
    pytest.importorskip("obstore")
    from integration import s3 as s3_helpers

    try:
        srv = s3_helpers.MotoS3().start()
    except s3_helpers.S3Unavailable as e:
        pytest.skip(str(e))
    try:
        srv.create_bucket("deltas")
        path, models = layers["z"]
        for d, _, names in os.walk(path):
            for n in names:
                if not n.endswith(".crc"):
                    rel = os.path.relpath(os.path.join(d, n), path)
                    with open(os.path.join(d, n), "rb") as f:
                        assert s3_helpers._http(srv.endpoint, "PUT", f"/deltas/z/{rel}", f.read())[0] == 200
        creds = {"endpoint": srv.endpoint, "access_key_id": s3_helpers.ACCESS_KEY,
                 "secret_access_key": s3_helpers.SECRET_KEY, "region": s3_helpers.REGION}
        with sfclayer.open("s3://deltas/z", storage_options=creds) as layer:
            assert layer.version == 4
            assert _as_model(layer.query()) == models[4]
            assert layer.count(keys=(3, 2, 17, 11)) == len(_in_box(models[4], 3, 2, 17, 11))
            p = layer._use_pinned()
            misses = [(c, r) for c in range(24) for r in range(20)
                      if (c, r) not in models[4] and p.deltas_holding(layer.key_index.index(c, r))]
            srv.reset()
            for k in misses:
                with pytest.raises(KeyNotFound):
                    layer.get(*k)
            assert layer.stats()["bloom_skips"] > len(misses) // 2
            filters = [p for _, p, _ in srv.requests() if p.endswith("/bloom")]
            assert filters and len(filters) == len(set(filters))  # each delta's filter read once, then kept
    finally:
        srv.stop()
