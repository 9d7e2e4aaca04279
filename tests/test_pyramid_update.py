"""Incremental pyramid updates: after appends and deletes on the base, ``sfclayer.pyramid`` rewrites
only the parents of the changed tiles, and every level then equals a pyramid built from scratch of
the new base (tile by tile); data files holding none of those parents keep their path and mtime; a
vacuumed base version falls back to a full rebuild and says so."""

import datetime as dt
import json
import os
import re

import numpy as np
import pytest

import sfclayer
from sfclayer import raster
from sfclayer.curves import key_index_from_json
from sfclayer.ingestion import Grid

pytest.importorskip("morecantile")

TMS, BASE = "WorldCRS84Quad", 3
COLS, ROWS = 12, 8  # the base's tiles: cols 0..11, rows 0..7 of zoom 3 (16 × 8)


def tile_pixels(seed, size=256):
    """(1, size, size) uint8 with 0 (nodata) in a corner, so averages see invalid pixels too."""
    a = np.random.default_rng(seed).integers(1, 256, size=(1, size, size), dtype=np.uint8)
    a[:, : size // 8, : size // 8] = 0
    return a


def tiles_df(spark, items):
    rows = []
    for (c, r), a in items:
        v = raster.from_numpy(a, 0)
        rows.append((c, r, *(v[k] for k in raster.COLUMNS)))
    return spark.createDataFrame(rows, raster.spark_schema())


def write_base(spark, path, items, **options):
    g = Grid.from_tms(TMS, BASE)
    sfclayer.write(tiles_df(spark, items), path, bounds=g.bounds, extent=g.extent, crs=g.crs,
                   raster=g.raster_metadata(1, "uint8", 0), **options)


def tiles_at(spark, path, zoom):
    rows = sfclayer.read(spark, path, zoom=zoom).select("col", "row", *raster.COLUMNS).collect()
    return {(x["col"], x["row"]): raster.to_numpy(x) for x in rows}


def level_files(path, zoom):
    """{dir/name: (firstIndex, data mtime)} of the newest version of a level, and its key index."""
    level = os.path.join(path, "_pyramid", str(zoom))
    newest = sorted(f for f in os.listdir(os.path.join(level, "_sfclayer")) if f.startswith("v"))[-1]
    with open(os.path.join(level, "_sfclayer", newest)) as f:
        md = json.load(f)
    files = {f"{e['dir']}/{e['name']}": (e["firstIndex"], os.stat(os.path.join(level, e["dir"], e["name"], "data")).st_mtime_ns)
             for e in md["files"]}
    return files, key_index_from_json(md["keyIndex"])


def assert_same_as_scratch(spark, path, scratch, levels):
    for z in levels:
        got, want = tiles_at(spark, path, z), tiles_at(spark, scratch, z)
        assert sorted(got) == sorted(want), f"zoom {z}"
        for key in want:
            np.testing.assert_array_equal(got[key], want[key], err_msg=f"zoom {z} tile {key}")


def scratch_pyramid(spark, path, scratch, min_zoom=None):
    """The base's newest tiles written as a new layer, with a pyramid built from nothing."""
    df = sfclayer.read(spark, path).select("col", "row", *raster.COLUMNS)
    items = [((x["col"], x["row"]), raster.to_numpy(x)) for x in df.collect()]
    write_base(spark, scratch, items)
    sfclayer.pyramid(spark, scratch, resampling="average", min_zoom=min_zoom)


def test_a_delta_version_updates_the_pyramid_incrementally(spark, tmp_path):
    """Tiles a delta file (format 7) replaces or adds are changed tiles, as a rewritten file's are."""
    from .helpers import add_delta_version

    path = str(tmp_path / "base")
    write_base(spark, path, [((c, r), tile_pixels(100 * c + r)) for c in range(COLS) for r in range(ROWS)],
               block_size="256k")
    assert sfclayer.pyramid(spark, path, block_size="64k") == [0, 1, 2]
    changed = {(2, 2), (3, 2), (13, 5)}
    delta = str(tmp_path / "delta")
    write_base(spark, delta, [(k, tile_pixels(7 + k[0])) for k in sorted(changed)])
    assert add_delta_version(spark, path, delta) == 2
    messages = []
    assert sfclayer.pyramid(spark, path, note=messages.append) == [0, 1, 2]
    assert len(messages) == 1 and re.fullmatch(
        f"incremental update from version 1 to 2 of the base: {len(changed)} changed tiles in "
        r"\d+ added or dropped data files", messages[0]), messages
    scratch = str(tmp_path / "scratch")
    scratch_pyramid(spark, path, scratch)
    assert_same_as_scratch(spark, path, scratch, (0, 1, 2))


def test_append_and_delete_rewrite_only_the_parents_of_changed_tiles(spark, tmp_path):
    path = str(tmp_path / "base")
    write_base(spark, path, [((c, r), tile_pixels(100 * c + r)) for c in range(COLS) for r in range(ROWS)],
               block_size="256k")
    assert sfclayer.pyramid(spark, path, block_size="64k") == [0, 1, 2]
    before = {z: level_files(path, z) for z in (0, 1, 2)}

    # Replace tiles (2..3, 2), insert (13, 5) outside the old coverage, delete a whole 4 × 4 block
    # (so parents vanish at zooms 2 and 1) and one more tile.
    appended = {(2, 2), (3, 2), (13, 5)}
    sfclayer.write(tiles_df(spark, [(k, tile_pixels(7 + k[0])) for k in sorted(appended)]), path, mode="append")
    sfclayer.delete(spark, path, keys=(8, 4, 11, 7))
    sfclayer.delete(spark, path, keys=(0, 7, 0, 7))
    deleted = {(c, r) for c in range(8, 12) for r in range(4, 8)} | {(0, 7)}
    assert sfclayer.open(spark, path).metadata["version"] == 4

    messages = []
    assert sfclayer.pyramid(spark, path, note=messages.append) == [0, 1, 2]
    assert len(messages) == 1 and re.fullmatch(
        f"incremental update from version 1 to 4 of the base: {len(appended | deleted)} changed tiles in "
        r"\d+ added or dropped data files", messages[0]), messages

    scratch = str(tmp_path / "scratch")
    scratch_pyramid(spark, path, scratch)
    assert_same_as_scratch(spark, path, scratch, (0, 1, 2))
    assert sfclayer.pyramid_levels(spark, path) == [0, 1, 2, 3]

    doc = sfclayer.pyramids._document(spark, path)
    assert doc["baseVersion"] == 4 and doc["lastUpdate"]["kind"] == "incremental"
    changed = appended | deleted
    for z in (2, 1, 0):
        parents = {(c // 2, r // 2) for c, r in changed}
        now = set(tiles_at(spark, path, z))
        gone = {k for k in parents - now}
        written = parents & now
        assert doc["lastUpdate"]["parents"][str(z)] == {"written": len(written), "deleted": len(gone)}
        # The level's own history says the same: one upsert of exactly those parents, one delete.
        h = sfclayer.history(spark, os.path.join(path, "_pyramid", str(z)))
        ops = [(v.operation, v.metrics.get("tilesInserted", 0) + v.metrics.get("tilesReplaced", 0),
                v.metrics.get("tilesDeleted", 0)) for v in h[1:]]
        assert ops == [("append", len(written), 0)] + ([("delete", 0, len(gone))] if gone else [])
        if z == 2:
            assert gone == {(4, 2), (5, 2), (4, 3), (5, 3)} and (0, 3) in written
        if z == 1:
            assert gone == {(2, 1)}
        # Files whose index span holds none of the parents are the very same files.
        files, ki = level_files(path, z)
        old_files, _ = before[z]
        firsts = sorted(first for first, _ in old_files.values())
        touched = {ki.index(c, r) for c, r in parents}
        untouched = 0
        for name, (first, mtime) in old_files.items():
            nxt = next((f for f in firsts if f > first), None)
            if not any(first <= i and (nxt is None or i < nxt) for i in touched):
                assert files.get(name) == (first, mtime), f"zoom {z}: {name} was rewritten"
                untouched += 1
        if z == 2:
            assert untouched > 0 and len(files) > untouched  # the check above was not vacuous
        changed = parents

    # Up to date now: nothing to do, and the levels stay as they are.
    now = {z: level_files(path, z)[0] for z in (0, 1, 2)}
    assert sfclayer.pyramid(spark, path) == []
    assert {z: level_files(path, z)[0] for z in (0, 1, 2)} == now


def test_vacuumed_history_falls_back_to_a_full_rebuild(spark, tmp_path, capsys):
    from sfclayer import cli

    path = str(tmp_path / "base")
    write_base(spark, path, [((c, r), tile_pixels(c * r + 1)) for c in range(4) for r in range(4)], block_size="256k")
    sfclayer.pyramid(spark, path, min_zoom=1)
    sfclayer.write(tiles_df(spark, [((1, 1), tile_pixels(99))]), path, mode="append")
    # The CLI updates incrementally and says so.
    assert cli.main(["pyramid", path]) == 0  # the pyramid's own min zoom (1) and resampling
    out = capsys.readouterr().out
    assert "incremental update from version 1 to 2 of the base: 1 changed tiles" in out
    sfclayer.delete(spark, path, keys=(0, 0, 0, 0))
    sfclayer.vacuum(spark, path, retain=dt.timedelta(0), enforce_retention=False)
    messages = []
    assert sfclayer.pyramid(spark, path, min_zoom=1, note=messages.append) \
        == [1, 2]
    assert messages == ["full rebuild: version 2 of the base, which the pyramid was built from, is gone (vacuumed), "
                        "so what changed since is unknown"]
    scratch = str(tmp_path / "scratch")
    df = sfclayer.read(spark, path).select("col", "row", *raster.COLUMNS)
    write_base(spark, scratch, [((x["col"], x["row"]), raster.to_numpy(x)) for x in df.collect()])
    sfclayer.pyramid(spark, scratch, min_zoom=1)
    assert_same_as_scratch(spark, path, scratch, (1, 2))
    # Other parameters than the pyramid's: a full rebuild too.
    messages.clear()
    sfclayer.pyramid(spark, path, min_zoom=2, note=messages.append)
    assert messages == ["full rebuild (the pyramid has levels [1, 2] by average; asked for [2] by average)"]
    # An overwrite of the base, even with the same grid: a full rebuild.
    messages.clear()
    df = sfclayer.read(spark, scratch).select("col", "row", *raster.COLUMNS)
    write_base(spark, path, [((x["col"], x["row"]), raster.to_numpy(x)) for x in df.collect()], mode="overwrite")
    sfclayer.pyramid(spark, path, min_zoom=2, note=messages.append)
    version = sfclayer.history(spark, path)[-1].version
    assert messages == [f"full rebuild: version {version} of the base replaced it whole (overwrite)"]
    assert_same_as_scratch(spark, path, scratch, (2,))
