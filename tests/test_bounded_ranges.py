"""Capped range decomposition bounded by the cap in Python too (issue 12), agreeing with the JVM's
CappedDescent range for range, also where the coarse cover kicks in."""

import json
import random

import pytest

from sfclayer.curves import key_index_from_json, merge_ranges

M = (1 << 31) - 1
S21 = (1 << 21) - 1
DAY = 86_400_000_000

WORST = [
    ({"kind": "z", "colMin": 0, "rowMin": 0, "colMax": M, "rowMax": M}, (1, 3, M - 5, M - 1, None, None)),
    ({"kind": "hilbert", "colMin": 0, "rowMin": 0, "colMax": M, "rowMax": M}, (7, 1, M - 2, M - 3, None, None)),
    ({"kind": "z", "colMin": 0, "rowMin": 0, "colMax": 1 << 24, "rowMax": 1 << 24},
     (12_345, 67_890, 9_000_001, 5_000_003, None, None)),
    ({"kind": "z3", "colMin": 0, "rowMin": 0, "colMax": S21, "rowMax": S21, "timeMin": 0, "timeMax": S21 * DAY,
      "timeResolution": DAY}, (0, 0, S21, S21, 12_345 * DAY, 1_500_000 * DAY)),
    ({"kind": "rowmajor", "colMin": 0, "rowMin": 0, "colMax": 999, "rowMax": 999_999},
     (1, 0, 998, 999_999, None, None)),
]


def _java(spark, ki_json, box, cap):
    jvm = spark.sparkContext._jvm
    m = jvm.java.util.HashMap()
    for k, v in ki_json.items():
        m.put(k, v)
    jki = jvm.io.sfclayer.curve.KeyIndex.fromJson(m)
    c0, r0, c1, r1, t0, t1 = box
    t0 = -(1 << 63) if t0 is None else t0
    t1 = (1 << 63) - 1 if t1 is None else t1
    q = jvm.io.sfclayer.curve.QueryBox.of(c0, r0, c1, r1, t0, t1)
    return [tuple(r) for r in json.loads(jki.ranges(q, cap).toString())]


@pytest.mark.parametrize("ki_json, box", WORST, ids=[w[0]["kind"] + str(i) for i, w in enumerate(WORST)])
def test_worst_cases_plan_within_the_cap_and_match_the_jvm(spark, ki_json, box):
    ki = key_index_from_json(ki_json)
    got = [tuple(r) for r in ki.ranges(*box, max_ranges=20000)]
    assert 1 <= len(got) <= 20000
    assert got == _java(spark, ki_json, box, 20000)
    # every key of the box is covered (random keys and the box's corners)
    rnd = random.Random(5)
    c0, r0, c1, r1, t0, t1 = box
    for i in range(300):
        c, r = rnd.randint(c0, c1), rnd.randint(r0, r1)
        if i < 4:
            c, r = (c0, c1)[i & 1], (r0, r1)[i >> 1]
        idx = ki.index(c, r, rnd.randint(t0, t1)) if t0 is not None else ki.index(c, r)
        assert any(lo <= idx <= hi for lo, hi in got), (c, r, idx)


def test_within_the_budget_capped_is_the_exact_answer_capped():
    rnd = random.Random(9)
    b = {"colMin": -50, "rowMin": 10, "colMax": 461, "rowMax": 300}
    kis = [key_index_from_json(dict(b, kind=k)) for k in ("z", "hilbert", "rowmajor")]
    kis.append(key_index_from_json(dict(b, kind="z3", timeMin=0, timeMax=99 * DAY, timeResolution=DAY)))
    for _ in range(60):
        c0, r0 = rnd.randint(-50, 461), rnd.randint(10, 300)
        cap = rnd.randint(1, 60)
        for ki in kis:
            if ki.kind == "z3":
                t0 = rnd.randint(0, 90) * DAY
                box = (c0, r0, c0 + rnd.randint(0, 30), r0 + rnd.randint(0, 30), t0, t0 + rnd.randint(0, 7) * DAY)
            else:
                box = (c0, r0, c0 + rnd.randint(0, 200), r0 + rnd.randint(0, 100), None, None)
            assert ki.ranges(*box, max_ranges=cap) == merge_ranges(ki.ranges(*box), max_ranges=cap)
