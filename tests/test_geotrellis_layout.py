"""GeoTrellis layouts → sfclayer raster write options, on the metadata GeoTrellis itself wrote
(tests/data/geotrellis: the catalog and what GeoTrellis read back from it)."""

import json
import math
import pathlib

import numpy as np
import pytest

from sfclayer.layer import write_options
from sfclayer._geotrellis_layout import cell_type, crs_name, layout_options, tile_matrix
from sfclayer.errors import CorruptLayer, UnsupportedFormat
from sfclayer.grid import TileGrid

DATA = pathlib.Path(__file__).parent / "data" / "geotrellis"
LAYERS = json.loads((DATA / "expected" / "layers.json").read_text())


def metadata(name, zoom):
    doc = json.loads((DATA / "catalog" / "_attributes" / f"{name}___{zoom}___metadata.json").read_text())
    return doc[1]["metadata"]


def expected(name, zoom):
    return np.load(DATA / "expected" / f"{name}__{zoom}.npz")


def _id(layer):
    return f"{layer['name']}/{layer['zoom']}"


@pytest.mark.parametrize("layer", LAYERS, ids=_id)
def test_cell_type_is_what_geotrellis_wrote(layer):
    dtype, nodata = cell_type(metadata(layer["name"], layer["zoom"])["cellType"])
    assert dtype == layer["dtype"] == expected(layer["name"], layer["zoom"])["cells"].dtype.name
    want = layer["nodata"]
    if want == "NaN":
        assert math.isnan(nodata)
    else:
        assert nodata == want


@pytest.mark.parametrize("layer", LAYERS, ids=_id)
def test_every_tile_covers_its_geotrellis_box(layer):
    """sfclayer's georeferencing of the converted keys gives GeoTrellis' own keyToExtent."""
    opts = layout_options(metadata(layer["name"], layer["zoom"]), bands=layer["bands"])
    grid = TileGrid(opts["extent"], opts["bounds"])
    e = expected(layer["name"], layer["zoom"])
    got = np.array([grid.envelope(int(c), int(r)) for c, r in e["keys"][:, :2]])
    tile = np.array([grid.tile_width, grid.tile_height] * 2)
    assert np.all(np.abs(got - e["extents"]) <= 1e-9 * np.abs(tile))
    assert opts["raster"]["tileWidth"] == layer["tileCols"] and opts["raster"]["tileHeight"] == layer["tileRows"]
    assert opts["raster"]["bands"] == layer["bands"]


@pytest.mark.parametrize("layer, crs", [
    ("int8", "EPSG:4326"),          # LatLng
    ("int16", "EPSG:32633"),        # UTM 33N
    ("uint8_raw", "EPSG:3857"),     # WebMercator, 16 px tiles
    ("crs84", "OGC:CRS84"),         # WorldCRS84Quad's own CRS
    ("wm", "EPSG:3857"),
])
def test_crs_is_an_epsg_code_where_there_is_one(layer, crs):
    zoom = next(x["zoom"] for x in LAYERS if x["name"] == layer)
    assert layout_options(metadata(layer, zoom))["crs"] == crs


def test_crs_without_an_epsg_code_is_its_wkt():
    from rasterio.crs import CRS

    proj4 = metadata("int8_ud", 0)["crs"]
    wkt = crs_name(proj4)
    assert wkt.startswith("PROJCS[") and CRS.from_wkt(wkt).to_epsg() is None
    assert CRS.from_wkt(wkt) == CRS.from_proj4(proj4)


@pytest.mark.parametrize("layer, zoom, matrix", [
    ("wm", 2, ("WebMercatorQuad", 2)),
    ("wm", 3, ("WebMercatorQuad", 3)),
    ("crs84", 2, ("WorldCRS84Quad", 2)),
    ("uint8_raw", 4, None),   # ZoomedLayoutScheme(WebMercator, 16): no OGC matrix has 16 px tiles
    ("int16_raw", 3, None),   # ZoomedLayoutScheme(LatLng): 2^z x 2^z tiles, not WorldCRS84Quad's 2^(z+1) x 2^z
    ("int8", 0, None),
])
def test_tile_matrix_only_when_the_layout_is_exactly_one(layer, zoom, matrix):
    md = metadata(layer, zoom)
    assert tile_matrix(crs_name(md["crs"]), md["layoutDefinition"]) == matrix
    raster = layout_options(md)["raster"]
    assert (raster["tms"], raster["zoom"]) == (matrix or (None, None))


@pytest.mark.parametrize("layer, zoom", [("wm", 3), ("crs84", 2)])
def test_tile_matrix_layers_are_georeferenced_as_ingest_writes_them(layer, zoom):
    from sfclayer.ingestion import Grid

    opts = layout_options(metadata(layer, zoom))
    grid = Grid.from_tms(opts["raster"]["tms"], opts["raster"]["zoom"])
    assert (opts["bounds"], opts["extent"], opts["crs"]) == (grid.bounds, grid.extent, grid.crs)


def test_a_layout_off_the_matrix_by_more_than_float_noise_is_no_tile_matrix():
    md = metadata("wm", 3)
    shifted = json.loads(json.dumps(md["layoutDefinition"]))
    shifted["extent"]["xmin"] += 0.01
    assert tile_matrix("EPSG:3857", shifted) is None
    assert tile_matrix("EPSG:32633", md["layoutDefinition"]) is None


@pytest.mark.parametrize("layer", [x for x in LAYERS if x["keyType"] == "SpaceTimeKey"], ids=_id)
def test_space_time_layers_get_their_time_bounds(layer):
    opts = layout_options(metadata(layer["name"], layer["zoom"]))
    millis = expected(layer["name"], layer["zoom"])["keys"][:, 2]
    start, end = opts["time_bounds"]
    assert (start.timestamp() * 1000, end.timestamp() * 1000) == (millis.min(), millis.max())
    assert "timeBounds" in write_options(**opts)


def test_options_are_sfclayer_write_options():
    opts = write_options(**layout_options(metadata("crs84", 2)))
    assert opts["bounds"] == "0,0,7,3" and opts["crs"] == "OGC:CRS84"
    assert json.loads(opts["raster"]) == {"tileWidth": 256, "tileHeight": 256, "bands": 1, "dtype": "float32",
                                          "nodata": "NaN", "tms": "WorldCRS84Quad", "zoom": 2}


def test_keys_outside_the_layout_grow_the_bounds_by_whole_tiles():
    md = metadata("int8", 0)
    md["bounds"] = {"minKey": {"col": -2, "row": 1}, "maxKey": {"col": 9, "row": 4}}
    opts = layout_options(md)
    assert opts["bounds"] == (-2, 0, 9, 5)
    assert opts["extent"] == (10.0 - 2 * 0.5, 40.0, 14.0 + 2 * 0.5, 43.0)


@pytest.mark.parametrize("name", ["int64", "float16", "int8ud", "int8ud300", "uint8ud-1", "int16udabc", "int8ud1.5"])
def test_unknown_cell_types_are_refused_by_name(name):
    with pytest.raises(UnsupportedFormat, match="GeoTrellis cell type"):
        cell_type(name)


def test_malformed_metadata_says_what_is_missing():
    md = metadata("int8", 0)
    del md["layoutDefinition"]
    with pytest.raises(CorruptLayer, match="layoutDefinition"):
        layout_options(md)
    md = metadata("int8", 0)
    md["layoutDefinition"]["tileLayout"]["layoutCols"] = 0
    with pytest.raises(CorruptLayer, match="tileLayout"):
        layout_options(md)
    md = metadata("int8", 0)
    md["crs"] = "+proj=nonsense"
    with pytest.raises(CorruptLayer, match="crs"):
        layout_options(md)
