"""Tests of sfclayer.curves: golden vectors (shared with the JVM suite), properties, and a live
cross-check against the JVM implementation through py4j when the connector jar has been built."""

import datetime as dt
import doctest
import json
import os
import random

import numpy as np
import pytest
from py4j.protocol import Py4JJavaError
from pyspark.errors.exceptions.captured import CapturedException
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sfclayer import curves as c
from sfclayer.errors import InvalidArgument, KeyOutOfBounds

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VECTORS = os.path.join(ROOT, "tests", "vectors", "curves.json")

with open(VECTORS) as _f:
    V = json.load(_f)

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def rl(rs):
    return [list(r) for r in rs]


# ----------------------------------------------------------------------------------------------
# golden vectors


def test_vectors_z2():
    for v in V["z2"]:
        assert c.z2_encode(v["x"], v["y"]) == v["z"]
        assert c.z2_decode(v["z"]) == (v["x"], v["y"])
    xs, ys, zs = (np.array([v[k] for v in V["z2"]]) for k in "xyz")
    assert c.z2_encode_array(xs, ys).tolist() == zs.tolist()
    assert [a.tolist() for a in c.z2_decode_array(zs)] == [xs.tolist(), ys.tolist()]


def test_vectors_z3():
    for v in V["z3"]:
        assert c.z3_encode(v["x"], v["y"], v["t"]) == v["z"]
        assert c.z3_decode(v["z"]) == (v["x"], v["y"], v["t"])
    xs, ys, ts, zs = (np.array([v[k] for v in V["z3"]]) for k in "xytz")
    assert c.z3_encode_array(xs, ys, ts).tolist() == zs.tolist()
    assert [a.tolist() for a in c.z3_decode_array(zs)] == [xs.tolist(), ys.tolist(), ts.tolist()]


def test_vectors_hilbert():
    by_order = {}
    for v in V["hilbert"]:
        assert c.hilbert_encode(v["x"], v["y"], v["order"]) == v["d"]
        assert c.hilbert_decode(v["d"], v["order"]) == (v["x"], v["y"])
        by_order.setdefault(v["order"], []).append(v)
    for order, vs in by_order.items():
        xs, ys, ds = (np.array([v[k] for v in vs]) for k in "xyd")
        assert c.hilbert_encode_array(xs, ys, order).tolist() == ds.tolist()
        assert [a.tolist() for a in c.hilbert_decode_array(ds, order)] == [xs.tolist(), ys.tolist()]


def test_vectors_ranges():
    for v in V["z2_ranges"]:
        assert rl(c.z2_ranges(v["xmin"], v["ymin"], v["xmax"], v["ymax"], v["max_ranges"])) == v["ranges"], v
    for v in V["z3_ranges"]:
        got = c.z3_ranges(v["xmin"], v["ymin"], v["tmin"], v["xmax"], v["ymax"], v["tmax"], v["max_ranges"])
        assert rl(got) == v["ranges"], v
    for v in V["hilbert_ranges"]:
        got = c.hilbert_ranges(v["xmin"], v["ymin"], v["xmax"], v["ymax"], v["order"], v["max_ranges"])
        assert rl(got) == v["ranges"], v
    for v in V["hilbert_max_index"]:
        assert c.hilbert_max_index(v["xmin"], v["ymin"], v["xmax"], v["ymax"], v["order"]) == v["max_index"]
    for v in V["merge_ranges"]:
        assert rl(c.merge_ranges(v["input"], v["max_ranges"])) == v["ranges"], v


def test_vectors_errors_and_times():
    for v in V["primitive_errors"]:
        with pytest.raises(InvalidArgument) as e:
            getattr(c, v["fn"])(*v["args"])
        assert str(e.value) == v["message"]
    for v in V["format_micros"]:
        assert c.format_micros(v["micros"]) == v["iso"]


def test_vectors_key_indexes():
    for case in V["key_indexes"]:
        ki = c.key_index_from_json(case["json"])
        assert ki.to_json() == case["json"]
        assert ki.max_index == case["max_index"]
        assert str(ki) == case["str"]
        for k in case["keys"]:
            idx = ki.index(k["col"], k["row"], k.get("time"))
            assert idx == k["index"], (case["json"], k)
            assert list(ki.decode(idx)) == k["decoded"]
        if case["keys"]:
            cols, rows = [k["col"] for k in case["keys"]], [k["row"] for k in case["keys"]]
            times = [k["time"] for k in case["keys"]] if ki.is_space_time else None
            assert ki.index_array(cols, rows, times).tolist() == [k["index"] for k in case["keys"]]
        for k in case["out_of_bounds"]:
            with pytest.raises(KeyOutOfBounds) as e:
                ki.index(k["col"], k["row"], k.get("time"))
            assert str(e.value) == k["message"]
        for k in case["decode_invalid"]:
            with pytest.raises(KeyOutOfBounds) as e:
                ki.decode(k["index"])
            assert str(e.value) == k["message"]
        for q in case["ranges"]:
            got = ki.ranges(q["colMin"], q["rowMin"], q["colMax"], q["rowMax"], q["timeMin"], q["timeMax"], q["max_ranges"])
            assert rl(got) == q["ranges"], (case["json"], q)


def test_vectors_invalid_key_indexes():
    for case in V["invalid_key_indexes"]:
        with pytest.raises(InvalidArgument) as e:
            c.key_index_from_json(case["json"])
        assert str(e.value) == case["message"]
    for case in V["valid_key_index_json"]:
        assert c.key_index_from_json(case["json"]).to_json() == case["normalized"]


def test_vectors_are_up_to_date(tmp_path):
    """The checked-in vectors are what generate.py makes from the current Python code."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("gen_vectors", os.path.join(ROOT, "tests", "vectors", "generate.py"))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    gen.OUT = str(tmp_path / "curves.json")
    gen.main()
    with open(gen.OUT) as f:
        assert json.load(f) == V


def test_docstring_examples():
    import importlib
    import pkgutil

    failed = attempted = 0
    for mod in [c] + [importlib.import_module(f"{c.__name__}.{m.name}") for m in pkgutil.iter_modules(c.__path__)]:
        result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
        failed += result.failed
        attempted += result.attempted
    assert failed == 0 and attempted > 40


# ----------------------------------------------------------------------------------------------
# properties

coord31 = st.integers(0, c.Z2_LIMIT - 1)
coord21 = st.integers(0, c.Z3_LIMIT - 1)


@FAST
@given(coord31, coord31)
def test_z2_roundtrip_and_bits(x, y):
    z = c.z2_encode(x, y)
    assert c.z2_decode(z) == (x, y)
    assert z == sum(((x >> i) & 1) << (2 * i) | ((y >> i) & 1) << (2 * i + 1) for i in range(31))


@FAST
@given(coord21, coord21, coord21)
def test_z3_roundtrip_and_bits(x, y, t):
    z = c.z3_encode(x, y, t)
    assert c.z3_decode(z) == (x, y, t)
    assert z == sum(((x >> i) & 1) << (3 * i) | ((y >> i) & 1) << (3 * i + 1) | ((t >> i) & 1) << (3 * i + 2) for i in range(21))


@st.composite
def hilbert_points(draw):
    order = draw(st.integers(0, 31))
    n = 1 << order
    return draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1)), order


@FAST
@given(hilbert_points())
def test_hilbert_roundtrip(p):
    x, y, order = p
    assert c.hilbert_decode(c.hilbert_encode(x, y, order), order) == (x, y)


@FAST
@given(st.integers(1, 31), st.data())
def test_consecutive_hilbert_indexes_are_grid_neighbours(order, data):
    d = data.draw(st.integers(0, (1 << (2 * order)) - 2))
    (x0, y0), (x1, y1) = c.hilbert_decode(d, order), c.hilbert_decode(d + 1, order)
    assert abs(x0 - x1) + abs(y0 - y1) == 1


def test_hilbert_small_orders_exhaustive():
    for order in range(0, 6):
        n = 1 << order
        ds = np.arange(n * n)
        xs, ys = c.hilbert_decode_array(ds, order)
        assert len(set(zip(xs.tolist(), ys.tolist()))) == n * n
        assert (np.abs(np.diff(xs)) + np.abs(np.diff(ys)) == 1).all()
        assert c.hilbert_encode_array(xs, ys, order).tolist() == ds.tolist()


def cells_of(ranges):
    out = []
    for i, (lo, hi) in enumerate(ranges):
        assert lo <= hi
        if i:
            assert lo > ranges[i - 1][1] + 1, "ranges must be sorted, disjoint and merged"
        out.extend(range(lo, hi + 1))
    return out


def check_capped(exact, capped, cap):
    assert len(capped) == min(cap, len(exact))
    cells_of(capped)
    for lo, hi in exact:
        assert any(a <= lo and hi <= b for a, b in capped)
    if exact:
        assert capped[0][0] == exact[0][0] and capped[-1][1] == exact[-1][1]


@st.composite
def box(draw, limit, dims=2):
    mins = [draw(st.integers(0, limit - 1)) for _ in range(dims)]
    maxs = [draw(st.integers(m, min(limit - 1, m + 12))) for m in mins]
    return mins, maxs


@FAST
@given(box(64), st.integers(1, 6))
def test_z2_ranges_cover_exactly_the_box(b, cap):
    (x0, y0), (x1, y1) = b
    exact = c.z2_ranges(x0, y0, x1, y1)
    want = sorted(c.z2_encode(x, y) for x in range(x0, x1 + 1) for y in range(y0, y1 + 1))
    assert cells_of(exact) == want
    check_capped(exact, c.z2_ranges(x0, y0, x1, y1, cap), cap)


@FAST
@given(box(16, 3), st.integers(1, 6))
def test_z3_ranges_cover_exactly_the_box(b, cap):
    (x0, y0, t0), (x1, y1, t1) = b
    exact = c.z3_ranges(x0, y0, t0, x1, y1, t1)
    want = sorted(c.z3_encode(x, y, t) for x in range(x0, x1 + 1) for y in range(y0, y1 + 1) for t in range(t0, t1 + 1))
    assert cells_of(exact) == want
    check_capped(exact, c.z3_ranges(x0, y0, t0, x1, y1, t1, cap), cap)


@FAST
@given(st.integers(1, 7), st.data(), st.integers(1, 6))
def test_hilbert_ranges_cover_exactly_the_box(order, data, cap):
    (x0, y0), (x1, y1) = data.draw(box(1 << order))
    exact = c.hilbert_ranges(x0, y0, x1, y1, order)
    want = sorted(c.hilbert_encode(x, y, order) for x in range(x0, x1 + 1) for y in range(y0, y1 + 1))
    assert cells_of(exact) == want
    assert c.hilbert_max_index(x0, y0, x1, y1, order) == want[-1]
    check_capped(exact, c.hilbert_ranges(x0, y0, x1, y1, order, cap), cap)


@FAST
@given(st.lists(st.tuples(st.integers(0, 200), st.integers(0, 20)), max_size=30), st.integers(1, 8))
def test_merge_ranges_is_a_capped_superset(pairs, cap):
    rs = [(lo, lo + w) for lo, w in pairs]
    exact = c.merge_ranges(rs)
    assert cells_of(exact) == sorted({i for lo, hi in rs for i in range(lo, hi + 1)})
    check_capped(exact, c.merge_ranges(rs, cap), cap)


@st.composite
def small_index(draw):
    c0, r0 = draw(st.integers(-20, 20)), draw(st.integers(-20, 20))
    b = c.KeyBounds(c0, r0, c0 + draw(st.integers(0, 10)), r0 + draw(st.integers(0, 10)))
    kind = draw(st.sampled_from(["z", "hilbert", "rowmajor", "z3"]))
    if kind != "z3":
        return c.key_index(kind, b)
    t0 = draw(st.integers(-1000, 1000))
    tb = c.TimeBounds(t0, t0 + draw(st.integers(0, 300)), draw(st.integers(20, 120)))  # at most 16 bins
    return c.Z3Index(b, tb)


def all_keys(ki):
    b = ki.bounds
    for col in range(b.col_min, b.col_max + 1):
        for row in range(b.row_min, b.row_max + 1):
            if not ki.is_space_time:
                yield col, row, None
                continue
            tb = ki.time_bounds
            for t_bin in range(tb.bins):
                yield col, row, tb.bin_start(t_bin)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_index(), st.data(), st.integers(1, 5))
def test_key_index_ranges_decode_and_max_index(ki, data, cap):
    keys = list(all_keys(ki))
    idx = {k: ki.index(*k) for k in keys}
    assert len(set(idx.values())) == len(keys)
    assert max(idx.values()) == ki.max_index
    assert min(idx.values()) == 0
    for (col, row, t), i in idx.items():
        d = ki.decode(i)
        assert (d.col, d.row) == (col, row)
        if t is not None:
            assert ki.time_bounds.bin_start(d.time_bin) == t
    b = ki.bounds
    q0 = data.draw(st.integers(b.col_min - 5, b.col_max + 5))
    q1 = data.draw(st.integers(b.row_min - 5, b.row_max + 5))
    q2, q3 = q0 + data.draw(st.integers(0, 10)), q1 + data.draw(st.integers(0, 10))
    t0 = data.draw(st.integers(-1500, 1500))
    t1 = t0 + data.draw(st.integers(0, 300))
    want = []
    for (col, row, t), i in idx.items():
        if q0 <= col <= q2 and q1 <= row <= q3:
            if t is not None:
                tb = ki.time_bounds
                end = min(tb.max_micros, t + tb.resolution_micros - 1)
                if end < t0 or t > t1:
                    continue
            want.append(i)
    exact = ki.ranges(q0, q1, q2, q3, t0, t1)
    assert cells_of(exact) == sorted(want)
    check_capped(exact, ki.ranges(q0, q1, q2, q3, t0, t1, max_ranges=cap), cap)
    assert c.key_index_from_json(json.loads(json.dumps(ki.to_json()))) == ki
    cols = np.array([k[0] for k in keys])
    rows = np.array([k[1] for k in keys])
    times = np.array([k[2] for k in keys]) if ki.is_space_time else None
    assert ki.index_array(cols, rows, times).tolist() == [idx[k] for k in keys]


def test_arrays_match_scalars_and_reject_bad_input():
    rng = np.random.default_rng(3)
    xs = rng.integers(0, c.Z2_LIMIT, 500)
    ys = rng.integers(0, c.Z2_LIMIT, 500)
    assert c.z2_encode_array(xs, ys).tolist() == [c.z2_encode(int(x), int(y)) for x, y in zip(xs, ys)]
    hs = c.hilbert_encode_array(xs, ys, 31)
    assert hs.tolist() == [c.hilbert_encode(int(x), int(y), 31) for x, y in zip(xs, ys)]
    assert [a.tolist() for a in c.hilbert_decode_array(hs, 31)] == [xs.tolist(), ys.tolist()]
    assert c.z2_encode_array(np.array([], dtype=np.int64), []).tolist() == []
    with pytest.raises(InvalidArgument, match=r"z2 x: -1 is out of range \(0\.\.2\^31-1\)"):
        c.z2_encode_array([0, -1], [0, 0])
    with pytest.raises(InvalidArgument, match="integer array"):
        c.z2_encode_array([0.5], [0])
    with pytest.raises(InvalidArgument):
        c.hilbert_encode_array([4], [0], 2)


def test_errors_and_value_types():
    b = c.KeyBounds(0, 0, 99, 499)
    assert str(b) == "cols 0..99, rows 0..499"
    with pytest.raises(KeyOutOfBounds) as e:
        c.ZIndex(b).index(5, 900)
    assert str(e.value) == "key: (col=5, row=900) is outside the layer's key bounds (cols 0..99, rows 0..499)"
    assert c.ZIndex(b).ranges(100, 0, 200, 10) == []
    with pytest.raises(InvalidArgument):
        c.ZIndex(b).ranges(5, 0, 4, 0)
    with pytest.raises(InvalidArgument):
        c.KeyBounds(0, 0, 1 << 31, 0)
    with pytest.raises(InvalidArgument):
        c.KeyBounds(True, 0, 1, 1)
    with pytest.raises(InvalidArgument, match="needs a time"):
        c.Z3Index(b, c.TimeBounds(0, 10, 1)).index(0, 0)
    with pytest.raises(InvalidArgument, match=r"^time bounds: .* are given to a z key index \(only z3 takes them\)$"):
        c.key_index("z", b, c.TimeBounds(0, 10, 1))
    assert c.key_index("Row-Major", b).kind == "rowmajor"
    assert c.key_index_from_json(json.dumps(c.HilbertIndex(b).to_json())).order == 9
    assert hash(c.ZIndex(b)) == hash(c.key_index("z", (0, 0, 99, 499)))


def test_times_naive_is_utc_and_aware_is_converted():
    tb = c.TimeBounds.of(dt.datetime(2020, 1, 1), dt.datetime(2020, 1, 2), dt.timedelta(hours=1))
    ki = c.Z3Index(c.KeyBounds(0, 0, 9, 9), tb)
    naive = dt.datetime(2020, 1, 1, 5, 30)
    aware = dt.datetime(2020, 1, 1, 7, 30, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    micros = c.to_micros(naive)
    assert micros == c.to_micros(aware) == 1577856600000000
    assert ki.index(3, 4, naive) == ki.index(3, 4, aware) == ki.index(3, 4, micros) == c.z3_encode(3, 4, 5)
    assert c.to_micros(np.datetime64("2020-01-01T05:30")) == micros
    assert c.to_micros(dt.date(2020, 1, 1)) == tb.min_micros
    assert ki.ranges(0, 0, 0, 0, naive, aware) == [c.IndexRange(c.z3_encode(0, 0, 5), c.z3_encode(0, 0, 5))]
    assert ki.index_array([3], [4], np.array(["2020-01-01T05:30"], dtype="datetime64[us]")).tolist() == [c.z3_encode(3, 4, 5)]


# ----------------------------------------------------------------------------------------------
# live cross-check with the JVM implementation, in the test run's shared Spark JVM


@pytest.fixture(scope="module")
def curve_jvm(spark):
    return spark.sparkContext._jvm


def _java_index(jvm, ki):
    m = jvm.java.util.HashMap()
    for k, v in ki.to_json().items():
        m.put(k, v)
    return jvm.io.sfclayer.curve.KeyIndex.fromJson(m)


def test_random_keys_and_ranges_agree_with_the_jvm(curve_jvm):
    jvm = curve_jvm
    rng = random.Random(99)
    cases = [
        c.ZIndex(c.KeyBounds(-(1 << 30), 17, (1 << 30) - 1, (1 << 31) - 1 - 5)),
        c.HilbertIndex(c.KeyBounds(-3, -7, 1_000_000, 123_456)),
        c.RowMajorIndex(c.KeyBounds(-(1 << 31), 0, (1 << 31) - 1, 1 << 20)),
        c.Z3Index(c.KeyBounds(5, 5, 100_000, 2_000_000), c.TimeBounds(1_577_836_800_000_000, 1_577_836_800_000_000 + 3600 * 10**6 * 24 * 365, 3600 * 10**6)),
    ]
    for ki in cases:
        jki = _java_index(jvm, ki)
        assert jki.kind() == ki.kind and jki.maxIndex() == ki.max_index
        b = ki.bounds
        for _ in range(150):
            col, row = rng.randint(b.col_min, b.col_max), rng.randint(b.row_min, b.row_max)
            if ki.is_space_time:
                t = rng.randint(ki.time_bounds.min_micros, ki.time_bounds.max_micros)
                assert jki.index(col, row, t) == ki.index(col, row, t)
            else:
                assert jki.index(col, row) == ki.index(col, row)
        for _ in range(5):
            c0, r0 = rng.randint(b.col_min - 10, b.col_max), rng.randint(b.row_min - 10, b.row_max)
            c1, r1 = min(c0 + rng.randint(0, 60), (1 << 31) - 1), min(r0 + rng.randint(0, 60), (1 << 31) - 1)
            t0, t1 = -(1 << 63), (1 << 63) - 1
            if ki.is_space_time:
                t0 = rng.randint(ki.time_bounds.min_micros, ki.time_bounds.max_micros)
                t1 = t0 + rng.randint(0, 3600 * 10**6 * 5)
            for cap in (0, 4):
                java = json.loads(jki.ranges(jvm.io.sfclayer.curve.QueryBox.of(c0, r0, c1, r1, t0, t1), cap).toString())
                assert java == rl(ki.ranges(c0, r0, c1, r1, t0, t1, cap))
        # pyspark captures sfclayer's Java exceptions (SparkThrowables with their condition) on any py4j call
        with pytest.raises((Py4JJavaError, CapturedException)) as e:
            jki.index(b.col_min, b.row_max + 1, ki.time_bounds.min_micros if ki.is_space_time else 0)
        assert "KeyOutOfBounds" in str(e.value) or "SFCLAYER_KEY_OUT_OF_BOUNDS" in str(e.value)
        with pytest.raises(KeyOutOfBounds) as e2:
            ki.index(b.col_min, b.row_max + 1, ki.time_bounds.min_micros if ki.is_space_time else 0)
        assert str(e2.value) in str(e.value)
