"""sfclayer.grid.TileGrid: the golden cases of tests/vectors/tilegrid.json (shared with the JVM's
TileGridVectorsTest), and the same answers as the JVM's TileGrid on random boxes."""

import json
import os
import random
import re

import pytest

from sfclayer.curves import KeyBounds
from sfclayer.errors import InvalidArgument
from sfclayer.grid import TileGrid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
with open(os.path.join(ROOT, "tests", "vectors", "tilegrid.json")) as f:
    GRIDS = json.load(f)["grids"]


def _cases(key):
    return [pytest.param(g, c, id=f"{g['name']}: {c.get('why') or c.get('key') or c.get('box')}")
            for g in GRIDS for c in g[key]]


@pytest.mark.parametrize("g", GRIDS, ids=[g["name"] for g in GRIDS])
def test_tile_size(g):
    grid = TileGrid(g["extent"], g["bounds"])
    assert (grid.tile_width, grid.tile_height) == (g["tileWidth"], g["tileHeight"])


@pytest.mark.parametrize("g, case", _cases("envelopes"))
def test_envelopes(g, case):
    assert TileGrid(g["extent"], g["bounds"]).envelope(*case["key"]) == tuple(case["envelope"])


@pytest.mark.parametrize("g, case", _cases("boxes"))
def test_key_boxes(g, case):
    got = TileGrid(g["extent"], g["bounds"]).key_box(*case["box"])
    assert got == (None if case["keyBox"] is None else KeyBounds(*case["keyBox"]))


@pytest.mark.parametrize("g, case", _cases("errors"))
def test_bad_boxes(g, case):
    with pytest.raises(InvalidArgument, match=re.escape(case["match"])):
        TileGrid(g["extent"], g["bounds"]).key_box(*case["box"])


def test_nan_box_is_refused():
    with pytest.raises(InvalidArgument, match=r"^map box: 0\.0,nan,1\.0,1\.0 has a NaN coordinate \(numbers xmin,ymin,xmax,ymax\)$"):
        TileGrid((0, 0, 1, 1), (0, 0, 9, 9)).key_box(0, float("nan"), 1, 1)


def test_from_metadata():
    md = {"extent": {"xmin": -180, "ymin": -90, "xmax": 180, "ymax": 90},
          "keyIndex": {"kind": "z", "colMin": 0, "rowMin": 0, "colMax": 3, "rowMax": 1}}
    assert TileGrid.from_metadata(md).envelope(0, 0) == (-180.0, 0.0, -90.0, 90.0)
    assert TileGrid.from_metadata({"keyIndex": md["keyIndex"]}) is None


def test_same_answers_as_the_jvm_on_random_boxes(spark):
    jvm = spark.sparkContext._jvm
    rng = random.Random(7)
    for _ in range(30):
        extent = sorted(rng.uniform(-1000, 1000) for _ in range(2)) + [0, 0]
        extent = [extent[0], rng.uniform(-50, 0), extent[1], rng.uniform(1, 50)]
        c0, r0 = rng.randint(-100, 100), rng.randint(-100, 100)
        bounds = (c0, r0, c0 + rng.randint(0, 60), r0 + rng.randint(0, 60))
        grid = TileGrid(extent, bounds)
        jgrid = jvm.io.sfclayer.layer.TileGrid(jvm.io.sfclayer.format.LayerMetadata.Extent(*extent),
                                                jvm.io.sfclayer.curve.KeyBounds(*bounds))
        for _ in range(20):
            # boxes on computed tile edges (the hard cases) and anywhere
            c, r = rng.randint(bounds[0], bounds[2]), rng.randint(bounds[1], bounds[3])
            xs = sorted([grid.xmin(c), rng.uniform(extent[0] - 10, extent[2] + 10)])
            ys = sorted([grid.ymax(r), rng.uniform(extent[1] - 10, extent[3] + 10)])
            box = (xs[0], ys[0], xs[1], ys[1])
            want = jgrid.keyBox(*box)
            got = grid.key_box(*box)
            assert (None if want is None else KeyBounds(*list(want))) == got, (extent, bounds, box)
            assert list(jgrid.envelope(c, r)) == list(grid.envelope(c, r))
