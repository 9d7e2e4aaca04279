"""Messages for bad arguments follow one pattern everywhere (issue 15): ``<name>: <value> <why>
(<allowed>)``, written down in :mod:`sfclayer._args`. A sample of each area is called with a bad value:
the message names the argument, shows the value as given, and ends with what is allowed in
parentheses. The Java curve messages are pinned exactly by tests/vectors/curves.json and their shape
by io.sfclayer.curve.CurveMessagesTest; the connector options by test_tables.py."""

import datetime as dt
import re

import pytest

import sfclayer
from sfclayer import _args, cli, curves, maintenance, pyramids, raster
from sfclayer.errors import InvalidArgument, KeyOutOfBounds
from sfclayer.grid import TileGrid
from sfclayer.ingestion import Grid, _tms
from sfclayer.server import app, catalog, tiles


def _shape(name, value):
    """``<name>: <value> <why> (<allowed>)``, the allowed part last, in parentheses."""
    return re.compile(rf"^{re.escape(name)}: {re.escape(value)} \S.* \(.+\)$")


# (area, call, error class, name, value as shown)
CASES = [
    # curves
    ("curves", lambda: curves.z2_encode(-1, 0), InvalidArgument, "z2 x", "-1"),
    ("curves", lambda: curves.z3_decode(-1), InvalidArgument, "z3 index", "-1"),
    ("curves", lambda: curves.hilbert_encode(0, 0, 32), InvalidArgument, "hilbert order", "32"),
    ("curves", lambda: curves.hilbert_encode(0, 1.5, 2), InvalidArgument, "hilbert y", "1.5"),
    ("curves", lambda: curves.z2_ranges(5, 0, 3, 0), InvalidArgument, "z2 query box", "x 5..3, y 0..0"),
    ("curves", lambda: curves.key_index("zz", (0, 0, 9, 9)), InvalidArgument, "key index kind", '"zz"'),
    ("curves", lambda: curves.key_index("z", (0, 0, 9, 9), time_bounds=(0, 9, 1)), InvalidArgument,
     "time bounds", "(0, 9, 1)"),
    ("curves", lambda: curves.KeyBounds(5, 0, 3, 9), InvalidArgument, "key bounds", "cols 5..3"),
    ("curves", lambda: curves.KeyBounds(0, 0, 1.5, 9), InvalidArgument, "col_max", "1.5"),
    ("curves", lambda: curves.TimeBounds(0, 10, 0), InvalidArgument, "time resolution", "0 us"),
    ("curves", lambda: curves.to_micros("noon"), InvalidArgument, "time", "'noon'"),
    ("curves", lambda: curves.key_index_from_json({"kind": "z", "colMin": 1.5, "rowMin": 0, "colMax": 9,
                                                   "rowMax": 9}), InvalidArgument, 'key index JSON "colMin"', "1.5"),
    ("curves", lambda: curves.ZIndex(curves.KeyBounds(0, 0, 9, 9)).index(5, 90), KeyOutOfBounds, "key",
     "(col=5, row=90)"),
    ("curves", lambda: curves.ZIndex(curves.KeyBounds(0, 0, 9, 9)).decode(-1), KeyOutOfBounds, "index", "-1"),
    ("curves", lambda: curves.ZIndex(curves.KeyBounds(0, 0, 9, 9)).ranges(3, 0, 1, 9), InvalidArgument,
     "query box", "cols 3..1"),
    ("curves", lambda: curves.merge_ranges([(5, 3)]), InvalidArgument, "index range", "[5, 3]"),
    ("curves", lambda: curves.z2_encode_array([0.5], [0]), InvalidArgument, "z2 x", "dtype float64"),
    # the Python API's arguments
    ("arguments", lambda: _args.check_box("bbox", (1, 2, 3), float, "xmin, ymin, xmax, ymax"), InvalidArgument,
     "bbox", "(1, 2, 3)"),
    ("arguments", lambda: _args.check_path(""), InvalidArgument, "path", "''"),
    ("arguments", lambda: TileGrid((0, 0, 1, 1), (0, 0, 9, 9)).key_box(3, 0, 2, 1), InvalidArgument, "map box",
     "3.0,0.0,2.0,1.0"),
    # ingest
    ("ingest", lambda: Grid.from_tms("WebMercatorQuad", 30), InvalidArgument, "zoom", "30"),
    ("ingest", lambda: _tms("NoSuchQuad"), InvalidArgument, "tms", "'NoSuchQuad'"),
    ("ingest", lambda: sfclayer.ingest(None, "x.tif", "/nowhere", resampling="smooth"), InvalidArgument,
     "resampling", "'smooth'"),
    ("ingest", lambda: sfclayer.ingest(None, [], "/nowhere"), InvalidArgument, "sources", "[]"),
    ("ingest", lambda: sfclayer.ingest(None, "x.tif", "/nowhere", extent=(0, 0, 1, 1)), InvalidArgument,
     "write option extent", "(0, 0, 1, 1)"),
    ("ingest", lambda: raster.from_numpy(__import__("numpy").zeros((1, 1, 1, 1))), ValueError, "array",
     "shape (1, 1, 1, 1)"),
    ("ingest", lambda: raster.to_numpy({"pixels": b"abc", "bands": 1, "height": 1, "width": 1,
                                        "dtype": "float32"}), ValueError, "pixels", "3 bytes"),
    # pyramids
    ("pyramids", lambda: pyramids.pyramid(None, "/nowhere", resampling="bogus"), InvalidArgument, "resampling",
     "'bogus'"),
    ("pyramids", lambda: pyramids.downsample(__import__("numpy").zeros((1, 2, 2)), None, "bogus"), InvalidArgument,
     "resampling", "'bogus'"),
    # serve (the texts of HTTP 400 answers)
    ("serve", lambda: tiles.parse_rescale("5"), InvalidArgument, "rescale", "'5'"),
    ("serve", lambda: tiles.parse_rescale("9,1"), InvalidArgument, "rescale", "'9,1'"),
    ("serve", lambda: tiles.colormap_table("nosuchmap"), InvalidArgument, "colormap_name", "'nosuchmap'"),
    ("serve", lambda: tiles.render_pixels(__import__("numpy").zeros((1, 2, 2)), __import__("numpy").ones((2, 2), bool),
                                           "gif"), InvalidArgument, "image format", "'gif'"),
    ("serve", lambda: catalog.layer_names(["a b=/x"]), InvalidArgument, "layer name", "'a b'"),
    ("serve", lambda: app._int("1.5", "y"), app.HttpError, "y", "'1.5'"),
    # maintenance
    ("maintenance", lambda: maintenance.vacuum(None, "/nowhere", retain="7x"), InvalidArgument, "retain", "'7x'"),
    ("maintenance", lambda: maintenance.delete(None, "/nowhere", keys=(1, 2, 3)), InvalidArgument, "keys",
     "(1, 2, 3)"),
    ("maintenance", lambda: maintenance.delete(None, "/nowhere", time=(1, 2, 3)), InvalidArgument, "time",
     "(1, 2, 3)"),
]


@pytest.mark.parametrize("area, call, error, name, value", CASES,
                         ids=[f"{c[0]}-{c[3]}-{i}" for i, c in enumerate(CASES)])
def test_bad_arguments_name_the_value_and_what_is_allowed(area, call, error, name, value):
    with pytest.raises(error) as e:
        call()
    message = e.value.message if isinstance(e.value, app.HttpError) else str(e.value)
    assert _shape(name, value).match(message), message


@pytest.mark.parametrize("argv, name, value", [
    (["vacuum", "/nowhere", "--retain", "7x"], "argument --retain", "'7x'"),
    (["demo", "--bbox", "1,2"], "argument --bbox", "'1,2'"),
    (["demo", "--tile-size", "0"], "argument --tile-size", "'0'"),
    (["get", "/nowhere", "1", "2", "noon"], "argument TIME", "'noon'"),
    (["layout", "/nowhere", "--time", "noon"], "argument --time", "'noon'"),
])
def test_cli_argument_types_follow_the_pattern(capsys, argv, name, value):
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    message = last.split(" error: ", 1)[1]
    assert _shape(name, value).match(message), last


def test_vacuum_retain_from_the_jvm_follows_the_pattern(spark, tmp_path):
    """A maintenance message made in the JVM (Vacuum) comes out the same way."""
    with pytest.raises(InvalidArgument) as e:
        sfclayer.vacuum(spark, str(tmp_path), retain=dt.timedelta(hours=1))
    assert _shape("vacuum retain", "3600.0 s").match(str(e.value)), str(e.value)
    assert "7-day minimum" in str(e.value)
