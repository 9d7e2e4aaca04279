"""Pyramids over ingested real rasters: each parent against a numpy 2 × 2 downsample of its children
(written here), level counts and extents against morecantile, zoom-level reads and look-ups, the base
ignoring ``_pyramid/``, stale pyramids refused."""

import collections

import numpy as np
import pytest

import sfclayer
from sfclayer import pyramids, raster

from tests.raster_sources import DEM_NODATA, dem_tif, world_tif  # noqa: F401 - fixtures
from tests.test_ingest import check_grid_metadata

morecantile = pytest.importorskip("morecantile")


def reference_parent(children, size, bands, dtype, resampling):
    """The parent of up to four children {(dx, dy): masked (bands, size, size)}: numpy's masked mean
    (rounded half to even) or the top-left pixel of each 2 × 2 block; absent children masked."""
    block = np.ma.masked_all((bands, 2 * size, 2 * size), dtype=dtype)
    for (dx, dy), a in children.items():
        block[:, dy * size:(dy + 1) * size, dx * size:(dx + 1) * size] = a
    if resampling == "nearest":
        return block[:, ::2, ::2]
    blocks = block.astype(np.float64).reshape(bands, size, 2, size, 2)
    return np.rint(blocks.mean(axis=(2, 4)))


def tiles_at(spark, path, zoom):
    """The level's tiles as masked arrays (their validity mask, or nodata, applied)."""
    rows = sfclayer.read(spark, path, zoom=zoom).select("col", "row", *raster.COLUMNS).collect()
    return {(r["col"], r["row"]): raster.to_numpy(r, masked=True) for r in rows}


def check_levels(spark, path, tms_name, base, levels, nodata, resampling, bands, dtype):
    t = morecantile.tms.get(tms_name)
    for z in sorted(levels, reverse=True):
        children, parents = tiles_at(spark, path, z + 1), tiles_at(spark, path, z)
        expected = {(c // 2, r // 2) for c, r in children}
        assert set(parents) <= expected
        for (c, r) in sorted(expected):
            kids = {(dx, dy): children[(2 * c + dx, 2 * r + dy)] for dx in (0, 1) for dy in (0, 1)
                    if (2 * c + dx, 2 * r + dy) in children}
            size = next(iter(kids.values())).shape[1]
            want = reference_parent(kids, size, bands, dtype, resampling)
            if want.count() == 0:
                assert (c, r) not in parents
            else:
                got = parents[(c, r)]
                np.testing.assert_array_equal(np.ma.getmaskarray(got), np.ma.getmaskarray(want),
                                              err_msg=f"zoom {z} tile {(c, r)}: valid pixels")
                np.testing.assert_array_equal(got.compressed(), want.compressed().astype(dtype),
                                              err_msg=f"zoom {z} tile {(c, r)}")
        with sfclayer.open(spark, path, zoom=z) as layer:
            check_grid_metadata(layer.metadata, tms_name, z, bands, dtype, None if nodata is None else float(nodata))
            # Every tile of the level intersects the base's footprint, as morecantile's tiles say.
            assert layer.metadata["recordCount"] == len(parents)
        m = t.matrix(z)
        assert all(0 <= c < m.matrixWidth and 0 <= r < m.matrixHeight for c, r in parents)


@pytest.fixture(scope="module")
def world_layer(spark, world_tif, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("pyr") / "world")
    sfclayer.ingest(spark, world_tif, path, tms="WorldCRS84Quad", zoom=2)
    return path


def test_world_pyramid_average(spark, world_layer):
    before = sfclayer.read(spark, world_layer).count()
    assert sfclayer.pyramid(spark, world_layer) == [0, 1]
    assert sfclayer.pyramid_levels(spark, world_layer) == [0, 1, 2]
    check_levels(spark, world_layer, "WorldCRS84Quad", 2, [0, 1], None, "average", 3, "uint8")
    # Whole-world levels are whole tile matrices: 2 × 1 tiles at zoom 0, 4 × 2 at zoom 1.
    assert sorted(tiles_at(spark, world_layer, 0)) == [(0, 0), (1, 0)]
    assert len(tiles_at(spark, world_layer, 1)) == 8
    # The base layer ignores _pyramid/: same tiles as before, and its zoom is its own.
    assert sfclayer.read(spark, world_layer).count() == before == 32
    assert sfclayer.read(spark, world_layer, zoom=2).count() == 32
    with sfclayer.open(spark, world_layer, zoom=0) as layer:
        np.testing.assert_array_equal(raster.to_numpy(layer.get(1, 0)), tiles_at(spark, world_layer, 0)[(1, 0)].data)
    with pytest.raises(sfclayer.LayerNotFound, match=r"no zoom level 3; it has \[0, 1, 2\]"):
        sfclayer.read(spark, world_layer, zoom=3)


def test_dem_pyramid_with_nodata(spark, dem_tif, tmp_path):
    path = str(tmp_path / "dem")
    sfclayer.ingest(spark, dem_tif, path, zoom=12)
    assert sfclayer.pyramid(spark, path, min_zoom=10) == [10, 11]
    check_levels(spark, path, "WebMercatorQuad", 12, [10, 11], DEM_NODATA, "average", 1, "int16")
    assert sfclayer.pyramid(spark, path, min_zoom=11, resampling="nearest") == [11]
    check_levels(spark, path, "WebMercatorQuad", 12, [11], DEM_NODATA, "nearest", 1, "int16")
    # The rebuilt pyramid lists only what it built.
    assert sfclayer.pyramid_levels(spark, path) == [11, 12]


def test_mode_downsample():
    rng = np.random.default_rng(3)
    a = rng.integers(0, 4, size=(2, 8, 10)).astype("uint8")  # values 0..3, 0 = nodata
    got = pyramids.downsample(a, 0, "mode")
    valid = (a != 0).any(axis=0)
    for i in range(4):
        for j in range(5):
            order = [(2 * i, 2 * j), (2 * i, 2 * j + 1), (2 * i + 1, 2 * j), (2 * i + 1, 2 * j + 1)]
            for b in range(2):
                vals = [int(a[b, y, x]) for y, x in order if valid[y, x]]
                if not vals:
                    assert got[b, i, j] == 0
                    continue
                counts = collections.Counter(vals)
                top = max(counts.values())
                assert got[b, i, j] == next(v for v in vals if counts[v] == top)


def test_stale_pyramid_and_bad_layers(spark, world_tif, tmp_path):
    path = str(tmp_path / "w")
    sfclayer.ingest(spark, world_tif, path, tms="WorldCRS84Quad", zoom=1)
    sfclayer.pyramid(spark, path)
    assert sfclayer.pyramid_levels(spark, path) == [0, 1]
    with sfclayer.open(spark, path) as layer:
        desc = layer.metadata["raster"]
        tile = layer.get(0, 0)
    # An append (a new base version) keeps the raster description but leaves the pyramid stale.
    tile["pixels"] = bytes(255 - np.frombuffer(tile["pixels"], "uint8"))
    df = spark.createDataFrame([(0, 0, *(tile[c] for c in raster.COLUMNS))], raster.spark_schema())
    sfclayer.write(df, path, mode="append")
    with sfclayer.open(spark, path) as layer:
        assert layer.metadata["version"] == 2 and layer.metadata["raster"] == desc
    with pytest.raises(sfclayer.LayerNotFound, match="built from version 1 and the layer is at version 2: rebuild"):
        sfclayer.open(spark, path, zoom=0)
    assert sfclayer.pyramid_levels(spark, path) == [1]
    sfclayer.pyramid(spark, path)
    assert sfclayer.pyramid_levels(spark, path) == [0, 1]
    with pytest.raises(sfclayer.InvalidArgument, match="resampling: 'bilinear' is unknown for a pyramid"):
        sfclayer.pyramid(spark, path, resampling="bilinear")
    with pytest.raises(sfclayer.InvalidArgument, match=r"min_zoom: 2 is out of range \(0\.\.1, the base zoom\)"):
        sfclayer.pyramid(spark, path, min_zoom=2)
    plain = str(tmp_path / "plain")
    sfclayer.write(spark.range(4).selectExpr("int(id) AS col", "0 AS row", "id AS v"), plain, bounds=(0, 0, 3, 0))
    with pytest.raises(sfclayer.InvalidArgument, match="has no zoom levels: it is not a raster layer"):
        sfclayer.pyramid(spark, plain)


def test_cli_ingest_pyramid_info(spark, dem_tif, tmp_path, capsys):
    from sfclayer import cli

    path = str(tmp_path / "dem")
    assert cli.main(["ingest", dem_tif, path, "--zoom", "11", "--resampling", "nearest"]) == 0
    out = capsys.readouterr().out
    assert "on WebMercatorQuad zoom 11 (2048 × 2048 tiles)" in out
    assert cli.main(["pyramid", path, "--min-zoom", "9"]) == 0
    assert "built zoom levels 9..10" in capsys.readouterr().out
    assert sfclayer.pyramid_levels(spark, path) == [9, 10, 11]
    assert cli.main(["info", path]) == 0
    assert "raster       256 × 256 px tiles, 1 × int16, nodata -32768.0; WebMercatorQuad zoom 11" in capsys.readouterr().out
    assert cli.main(["ingest", dem_tif, path, "--zoom", "11"]) == 1  # errorifexists
    assert "already exists" in capsys.readouterr().err


def test_parent_of_a_layer_without_nodata_averages_only_the_children_present():
    """A raster layer whose nodata is null: every stored pixel is data, and a missing child adds
    nothing to its parent (it is not read as zeros): its parent pixels are missing, by the mask."""
    grid = type("G", (), {"tile_width": 2, "tile_height": 2})()
    child = np.array([[[10, 20], [30, 40]]], dtype="uint16")
    item = ((0, 0), [(1, 0, raster.from_numpy(child)["pixels"], 2, 2, 1, "uint16", None, None)])  # top-right only
    [out] = list(pyramids._parent_tile(grid, 1, "uint16", None, "average", item))
    parent = dict(zip(raster.COLUMNS, out[2:]))
    assert (out[0], out[1], parent["nodata"]) == (0, 0, None)
    # The top-right parent pixel is the mean of the child (25); the other three have no child under them.
    assert raster.to_numpy(parent).tolist() == [[[0, 25], [0, 0]]]
    assert raster.valid_mask(parent).tolist() == [[False, True], [False, False]]
