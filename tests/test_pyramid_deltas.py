"""A pyramid over a base with delta files (docs/FORMAT.md sections 8 and 11): its incremental update
finds the tiles a delta version changed (the deltas it added are data files the old version does not
list), and every level then equals a pyramid built from the same tiles written whole."""

import random
import re

import numpy as np

import sfclayer
from sfclayer import raster

from . import _deltas
from .test_reader_deltas import _raster_tiles, _write_raster


def _levels(spark, path):
    out = {}
    for z in sfclayer.pyramid_levels(spark, path)[:-1]:
        rows = sfclayer.read(spark, path, zoom=z).select("col", "row", *raster.COLUMNS).collect()
        out[z] = {(x["col"], x["row"]): raster.to_numpy(x) for x in rows}
    return out


def test_an_incremental_update_sees_the_tiles_of_delta_files(spark, tmp_path):
    rnd = random.Random(11)
    cells = [(c, r) for c in range(7) for r in range(5)]
    base = _raster_tiles(rnd, [k for k in cells if rnd.random() < 0.7], 0)
    delta = _raster_tiles(rnd, rnd.sample(cells, 6), 10)
    path, src, whole = (str(tmp_path / n) for n in ("base", "delta", "whole"))
    _write_raster(spark, path, base)
    assert sfclayer.pyramid(spark, path) == [0, 1, 2]
    _write_raster(spark, src, delta)
    assert _deltas.publish_delta_version(path, src) == 2
    notes = []
    assert sfclayer.pyramid(spark, path, note=notes.append) == [0, 1, 2]
    assert re.fullmatch(r"incremental update from version 1 to 2 of the base: (\d+) changed tiles in 2 added or "
                        r"dropped data files", notes[0]), notes
    assert int(re.search(r"(\d+) changed", notes[0]).group(1)) == len(delta)  # each differs from the base's
    _write_raster(spark, whole, {**base, **delta})
    sfclayer.pyramid(spark, whole)
    got, want = _levels(spark, path), _levels(spark, whole)
    assert sorted(got) == sorted(want) == [0, 1, 2]
    for z in want:
        assert sorted(got[z]) == sorted(want[z]), z
        for k in want[z]:
            np.testing.assert_array_equal(got[z][k], want[z][k], err_msg=f"zoom {z} tile {k}")
