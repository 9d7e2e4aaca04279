"""Windows read in-process (``sfclayer.open(path).to_numpy``) with their plans (issue 33): a box read again
is copied from the plan its first read made (``sfclayer._windows.WindowPlan``). Every answer is checked
against the source array the layer was cut from (an independent reference: its pixels sliced by the
window's whole pixels), and against the JVM path where one exists; the plan is made only where it answers
the same as ``window_array`` does (every tile there, no masks, an integer layer, all bands, not masked)."""

import gc
import math
import random

import numpy as np
import pytest

import sfclayer
from sfclayer import raster
from sfclayer._windows import WindowPlan
from sfclayer.errors import InvalidArgument


def _write(spark, path, a, tw, th, missing=(), masked=(), mode="overwrite"):
    """Layer ``path`` cut from ``a`` (bands, H, W) into tw x th tiles, one map unit a pixel, extent (0, 0, W, H):
    tile (c, r) holds ``a[:, r*th:(r+1)*th, c*tw:(c+1)*tw]`` (row 0 at the top). ``missing``: keys left out;
    ``masked``: keys stored with a validity mask (their top-left pixel invalid)."""
    bands, h, w = a.shape
    cols, rows = w // tw, h // th
    out = []
    for c in range(cols):
        for r in range(rows):
            if (c, r) in missing:
                continue
            px = a[:, r * th:(r + 1) * th, c * tw:(c + 1) * tw]
            valid = None
            if (c, r) in masked:
                valid = np.ones((th, tw), bool)
                valid[0, 0] = False
            t = raster.from_numpy(px, nodata=None, valid=valid)
            out.append((c, r, *[t[k] for k in raster.COLUMNS]))
    desc = {"tileWidth": tw, "tileHeight": th, "bands": bands, "dtype": a.dtype.name, "nodata": None, "tms": None,
            "zoom": None}
    sfclayer.write(spark.createDataFrame(out, raster.spark_schema()), path, bounds=(0, 0, cols - 1, rows - 1),
                   extent=(0, 0, w, h), raster=desc, partitions=3, index_interval=2, mode=mode)
    return path


def _expected(a, bbox):
    """The whole pixels meeting ``bbox`` (edges off the pixel grid), sliced from the source array."""
    _, h, w = a.shape
    xmin, ymin, xmax, ymax = bbox
    i0, i1 = max(0, math.floor(xmin)), min(w, math.ceil(xmax))
    j0, j1 = max(0, math.floor(h - ymax)), min(h, math.ceil(h - ymin))
    return a[:, j0:j1, i0:i1]


def _boxes(rnd, a, n):
    """Boxes whose edges are off the pixel grid, some reaching past the layer's edges."""
    _, h, w = a.shape
    out = []
    for _ in range(n):
        x0, y0 = rnd.randrange(-2, w - 1) + rnd.uniform(0.1, 0.9), rnd.randrange(-2, h - 1) + rnd.uniform(0.1, 0.9)
        out.append((x0, y0, x0 + rnd.randrange(0, 30) + rnd.uniform(0.1, 0.9),
                    y0 + rnd.randrange(0, 20) + rnd.uniform(0.1, 0.9)))
    return out


@pytest.fixture(scope="module")
def sources(spark, tmp_path_factory):
    """Name -> (path, source array): every tile there without masks (windows get plans), in two shapes."""
    root = tmp_path_factory.mktemp("windows")
    rng = np.random.default_rng(33)
    rgb = rng.integers(0, 256, (3, 40, 56), dtype=np.uint8)  # 7 x 5 tiles of 8 x 8
    u16 = rng.integers(0, 65536, (2, 20, 42), dtype=np.uint16)  # 7 x 5 tiles of 6 x 4: not square, 2 bytes
    return {"rgb": (_write(spark, str(root / "rgb"), rgb, 8, 8), rgb),
            "u16": (_write(spark, str(root / "u16"), u16, 6, 4), u16)}


@pytest.mark.parametrize("name", ["rgb", "u16"])
def test_windows_read_again_equal_the_source_and_the_jvm(spark, sources, name):
    path, a = sources[name]
    boxes = _boxes(random.Random(name), a, 40)
    jvm = sfclayer.open(spark, path)
    with sfclayer.open(path) as layer, jvm:
        p = layer._use_pinned()
        for _ in range(3):  # first read (plan made), then twice from the plan
            for b in boxes:
                want = _expected(a, b)
                if want.size == 0:
                    with pytest.raises(InvalidArgument):
                        layer.to_numpy(b)
                    continue
                got = layer.to_numpy(b)
                assert got.dtype == a.dtype and got.flags.c_contiguous and got.flags.writeable
                np.testing.assert_array_equal(got, want)
        planned = [b for b in boxes if _expected(a, b).size]
        assert set(planned) <= set(p.window_plans)
        for b in planned[:8]:
            np.testing.assert_array_equal(jvm.to_numpy(b), layer.to_numpy(b))


def test_a_plan_copies_anew_each_call(sources):
    """The plan keeps where the pixels are, not a window: each call's array is new, and writing to it
    changes neither the next answer nor the cached tiles."""
    path, a = sources["rgb"]
    b = (3.5, 7.25, 30.5, 33.75)
    with sfclayer.open(path) as layer:
        first = layer.to_numpy(b)
        assert b in layer._use_pinned().window_plans
        first[:] = 7
        second = layer.to_numpy(b)
        assert second is not first and not np.shares_memory(first, second)
        np.testing.assert_array_equal(second, _expected(a, b))
        np.testing.assert_array_equal(layer.to_numpy(b, bands=[1, 2, 3]), _expected(a, b))  # no plan: window_array


def test_plans_go_when_their_tiles_leave_the_cache(sources):
    """A tiny cache: reading other boxes evicts the blocks a plan's tiles came from, and the version's
    plans go with them (no plan keeps evicted bytes); windows stay right throughout."""
    path, a = sources["rgb"]
    rnd = random.Random(7)
    boxes = [b for b in _boxes(rnd, a, 30) if _expected(a, b).size]
    with sfclayer.open(path, cache_bytes=3000) as layer:  # a few 192-byte tiles' blocks
        p = layer._use_pinned()
        dropped = 0
        for _ in range(2):
            for b in boxes:
                kept = set(p.window_plans)
                np.testing.assert_array_equal(layer.to_numpy(b), _expected(a, b))
                gc.collect(0)  # blocks die by reference count; a young collection is cheap (a full one per box took 19 s in the suite)
                dropped += bool(kept - set(p.window_plans))  # a plan kept before went with its tiles
                assert layer.stats()["cached_bytes"] <= 3000
        assert dropped > 0 and len(p.window_plans) < len(set(boxes))


def test_bad_boxes_are_refused_after_an_equal_box_got_a_plan(sources):
    """The plan is looked up before the checks only for a tuple of four floats: other boxes equal to a
    planned one (booleans, strings) are checked as always."""
    path, _ = sources["rgb"]
    with sfclayer.open(path) as layer:
        layer.to_numpy((0.0, 0.0, 1.0, 1.0))
        assert (0.0, 0.0, 1.0, 1.0) in layer._use_pinned().window_plans
        with pytest.raises(InvalidArgument, match="bbox"):
            layer.to_numpy((False, False, True, True))
        np.testing.assert_array_equal(layer.to_numpy([0, 0, 1, 1]), layer.to_numpy((0.0, 0.0, 1.0, 1.0)))
        with pytest.raises(InvalidArgument, match="bbox"):
            layer.to_numpy((0.0, 0.0, float("nan"), 1.0))
        layer.close()
        with pytest.raises(InvalidArgument, match="closed"):
            layer.to_numpy((0.0, 0.0, 1.0, 1.0))


def test_windows_without_a_plan_answer_as_before(spark, tmp_path):
    """Missing tiles, masked tiles and float layers take window_array's path (fill values, validity):
    no plan is made, and the answers are the JVM path's."""
    rng = np.random.default_rng(5)
    a = rng.integers(1, 256, (3, 24, 32), dtype=np.uint8)  # 4 x 3 tiles of 8 x 8
    f = rng.random((1, 24, 32)).astype(np.float32)
    paths = {"missing": _write(spark, str(tmp_path / "missing"), a, 8, 8, missing={(1, 1)}),
             "masked": _write(spark, str(tmp_path / "masked"), a, 8, 8, masked={(2, 1)}),
             "float": _write(spark, str(tmp_path / "float"), f, 8, 8)}
    boxes = [(0.5, 0.5, 31.5, 23.5), (8.25, 8.25, 16.75, 15.75), (9.5, 2.5, 23.5, 14.5)]  # each meets tiles (1, 1) and (2, 1)
    for name, path in paths.items():
        jvm = sfclayer.open(spark, path)
        with sfclayer.open(path) as layer, jvm:
            for b in boxes:
                for masked in (False, True):
                    want, got = jvm.to_numpy(b, masked=masked), layer.to_numpy(b, masked=masked)
                    np.testing.assert_array_equal(got, want)
                    np.testing.assert_array_equal(np.ma.getmaskarray(got), np.ma.getmaskarray(want))
            assert not layer._use_pinned().window_plans, name
    with sfclayer.open(paths["missing"]) as layer:  # the hole is the fill value (0: no nodata)
        got = layer.to_numpy((0.5, 0.5, 31.5, 23.5))
        assert (got[:, 8:16, 8:16] == 0).all() and (got[:, :8] == a[:, :8]).all()


def test_a_new_version_reads_its_own_pixels(spark, tmp_path):
    """Plans belong to a pinned version: after an append rewrites a tile and refresh(), a box read before
    answers the new pixels, as a fresh reader does."""
    a = np.random.default_rng(9).integers(0, 256, (3, 16, 24), dtype=np.uint8)
    path = _write(spark, str(tmp_path / "v"), a, 8, 8)
    b = (4.5, 2.5, 20.5, 13.5)
    with sfclayer.open(path) as layer:
        np.testing.assert_array_equal(layer.to_numpy(b), _expected(a, b))
        np.testing.assert_array_equal(layer.to_numpy(b), _expected(a, b))  # from its plan
        a2 = a.copy()
        a2[:, 8:16, 8:16] = 255 - a[:, 8:16, 8:16]  # tile (1, 1)
        t = raster.from_numpy(a2[:, 8:16, 8:16].copy(), nodata=None)
        sfclayer.write(spark.createDataFrame([(1, 1, *[t[k] for k in raster.COLUMNS])], raster.spark_schema()),
                       path, mode="append")
        np.testing.assert_array_equal(layer.to_numpy(b), _expected(a, b))  # still the pinned version
        layer.refresh()
        np.testing.assert_array_equal(layer.to_numpy(b), _expected(a2, b))
        np.testing.assert_array_equal(layer.to_numpy(b), _expected(a2, b))


def test_a_plan_answers_as_window_array(sources):
    """WindowPlan.of over the reader's (tile, pixels) pairs copies what window_array mosaics from the same
    tiles as dicts; for dicts alone it answers None (window_array's path)."""
    from sfclayer._windows import Window, window_array

    path, a = sources["u16"]
    with sfclayer.open(path) as layer:
        for b in _boxes(random.Random(3), a, 20):
            if not _expected(a, b).size:
                continue
            md = layer._window_metadata()
            w = Window(md, b)
            pairs = list(layer._window_tiles(w.keys))
            tiles = [t for t, _ in pairs]
            assert WindowPlan.of(w, tiles) is None
            want = window_array(md, tiles, b)
            got = WindowPlan.of(w, pairs).run()
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
