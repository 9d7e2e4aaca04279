"""The ``sfclayer`` command, run in-process on the test session: info, get, layout, errors."""

import datetime as dt
import json
import os
import struct

import numpy as np
import pytest
from pyspark.sql import functions as F

import sfclayer
from sfclayer import cli
from sfclayer.viz import pictures
from sfclayer.curves import key_index_from_json
from tests import helpers

COLS, ROWS = 12, 9


def _missing(c, r):
    """Keys the sparse layer leaves out (inside its bounds)."""
    return (c + 2 * r) % 7 == 3


@pytest.fixture(scope="module")
def layer(spark, tmp_path_factory):
    """A small sparse spatial layer with an extent: int, double and binary values, several files."""
    path = str(tmp_path_factory.mktemp("cli") / "small")
    df = (spark.range(COLS * ROWS)
          .select((F.col("id") % COLS).cast("int").alias("col"), (F.col("id") / COLS).cast("int").alias("row"))
          .where(~(((F.col("col") + 2 * F.col("row")) % 7) == 3))
          .withColumn("v", F.col("col") * 100 + F.col("row"))
          .withColumn("mean", F.col("v") / 4.0)
          .withColumn("pixels", F.expr("unhex(repeat(lpad(hex(v), 8, '0'), 1200))")))
    sfclayer.write(df, path, bounds=(0, 0, COLS - 1, ROWS - 1), extent=(10.0, 40.0, 22.0, 49.0), crs="EPSG:4326",
                   compression="none",  # several files of these compressible pixels
                   block_size="64k", partitions=2)
    return path


def _run(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_info_summarises_the_layer_and_lists_every_file(capsys, layer):
    code, out, err = _run(capsys, "info", layer, "--files")
    assert code == 0, err
    md = helpers.metadata(layer)
    n_present = sum(not _missing(c, r) for c in range(COLS) for r in range(ROWS))
    assert md["recordCount"] == n_present
    assert f"layer        {layer}" in out
    assert "key index    z (Z-order)" in out
    assert f"cols 0..{COLS - 1}, rows 0..{ROWS - 1} ({COLS} × {ROWS} tiles)" in out
    assert "extent       10, 40, 22, 49 (EPSG:4326); a tile is 1 × 1" in out
    assert "values       v int, mean double, pixels binary" in out
    assert f"records      {n_present} tiles" in out
    assert f"files        {md['fileCount']} data files" in out
    assert md["fileCount"] > 2
    table = out.split("\n\n", 1)[1].splitlines()
    assert table[0].split()[:3] == ["#", "file", "first"]
    assert len(table) == 1 + md["fileCount"]
    for line, f in zip(table[1:], sorted(md["files"], key=lambda f: f["firstIndex"])):
        cells = line.split()
        assert cells[1] == f["name"]
        assert int(cells[2]) == f["firstIndex"] and int(cells[3]) == f["lastIndex"]
        assert int(cells[4]) == f["records"]


def test_info_json_is_the_metadata_document(capsys, layer):
    code, out, _ = _run(capsys, "info", "--json", "--files", layer)
    assert code == 0
    assert json.loads(out) == helpers.metadata(layer)
    code, out, _ = _run(capsys, "info", "--json", layer)
    assert code == 0
    assert json.loads(out) == {k: v for k, v in helpers.metadata(layer).items() if k != "files"}


def test_info_lists_files_only_when_asked_and_at_most_max_files(capsys, layer):
    code, out, err = _run(capsys, "info", layer)
    assert code == 0, err
    assert "\n\n" not in out.strip() and "part-r-" not in out
    md = helpers.metadata(layer)
    assert f"files        {md['fileCount']} data files" in out
    code, out, err = _run(capsys, "info", layer, "--files", "--max-files", "2")
    assert code == 0, err
    table = out.split("\n\n", 1)[1].splitlines()
    assert table[0] == f"the first 2 of {md['fileCount']} data files (--max-files N lists more):"
    names = [f["name"] for f in sorted(md["files"], key=lambda f: f["firstIndex"])][:2]
    assert [line.split()[1] for line in table[2:]] == names


@pytest.fixture(scope="module")
def manifest_layer(spark, tmp_path_factory):
    """A format 6 layer of one data file a leaf manifest and two manifests a node (several levels)."""
    keys = {"inlineFiles": "0", "leafFiles": "1", "fanout": "2"}
    for k, v in keys.items():
        spark.conf.set(f"spark.hadoop.sfclayer.manifest.{k}", v)
    try:
        path = str(tmp_path_factory.mktemp("cli") / "manifests")
        df = (spark.range(COLS * ROWS)
              .select((F.col("id") % COLS).cast("int").alias("col"), (F.col("id") / COLS).cast("int").alias("row"))
              .withColumn("pixels", F.expr("unhex(repeat(lpad(hex(col * 100 + row), 8, '0'), 1200))")))
        sfclayer.write(df, path, bounds=(0, 0, COLS - 1, ROWS - 1), compression="none", block_size="64k",
                       partitions=2)
    finally:
        for k in keys:
            spark.conf.unset(f"spark.hadoop.sfclayer.manifest.{k}")
    return path


def test_info_of_a_layer_of_manifests_reads_its_version_document_alone(capsys, manifest_layer):
    md = helpers.metadata(manifest_layer)
    assert md["formatVersion"] == 6 and len(md["manifests"]) == 2 and md["fileCount"] > 4
    code, out, err = _run(capsys, "info", manifest_layer)
    assert code == 0, err
    assert f"files        {md['fileCount']} data files" in out
    levels = 1 + md["manifests"][0]["level"]
    assert f"metadata     2 manifests listed by the version document, {levels} levels" in out
    rows = out.split("\n\n", 1)[1].splitlines()[1:]
    assert [r.split()[1] for r in rows] == [m["path"] for m in md["manifests"]]
    assert sum(int(r.split()[5]) for r in rows) == md["fileCount"]
    # the summary needs no manifest: with every one gone it is the same, while listing files finds them gone
    gone = os.path.join(manifest_layer, "_sfclayer", "manifests")
    os.rename(gone, gone + "-moved")
    try:
        code, again, err = _run(capsys, "info", manifest_layer)
        assert code == 0, err
        assert again == out
        code, _, err = _run(capsys, "info", manifest_layer, "--files")
        assert code == 1 and "missing" in err and "manifest" in err
    finally:
        os.rename(gone + "-moved", gone)
    code, out, err = _run(capsys, "info", manifest_layer, "--files", "--max-files", "3")
    assert code == 0, err
    table = out.split("\n\n")[2].splitlines()
    assert table[0] == f"the first 3 of {md['fileCount']} data files (--max-files N lists more):"
    assert [line.split()[1] for line in table[2:]] == [f["name"] for f in md["files"][:3]]


def test_get_prints_value_columns_with_binary_as_length_and_hex(capsys, layer):
    code, out, err = _run(capsys, "get", layer, "5", "3")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith(f"tile (5, 3) of {layer}")
    values = {ln.split()[0]: ln.split(None, 1)[1] for ln in lines[1:]}
    assert values["v"] == "503"
    assert values["mean"] == "125.75"
    # 503 = 0x1f7: the payload is "000001f7" repeated 300 times
    assert values["pixels"] == "4800 bytes  00 00 01 f7 00 00 01 f7 00 00 01 f7 00 00 01 f7…"


def test_get_of_a_missing_key_exits_1_with_a_clear_message(capsys, layer):
    assert _missing(3, 0)
    code, out, err = _run(capsys, "get", layer, "3", "0")
    assert code == 1
    assert out == ""
    assert err.startswith("sfclayer: error: ")
    assert "Traceback" not in err
    assert "3" in err and "0" in err and err.count("\n") == 1


def test_get_outside_the_bounds_is_an_error_too(capsys, layer):
    code, _, err = _run(capsys, "get", layer, str(COLS + 5), "0")
    assert code == 1
    assert err.startswith("sfclayer: error: ") and "bounds" in err


def test_get_rejects_a_non_integer_key(capsys, layer):
    with pytest.raises(SystemExit) as e:
        cli.main(["get", layer, "x", "1"])
    assert e.value.code == 2
    assert "invalid int value" in capsys.readouterr().err


def test_bad_path_gives_the_clear_error(capsys, tmp_path):
    missing = str(tmp_path / "no-such-layer")
    for argv in (["info", missing], ["get", missing, "0", "0"], ["layout", missing, "-o", str(tmp_path / "x.png")]):
        code, out, err = _run(capsys, *argv)
        assert code == 1, argv
        assert err.startswith("sfclayer: error: ") and "Traceback" not in err, err
        assert "no-such-layer" in err
    assert not (tmp_path / "x.png").exists()


def _png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def test_layout_writes_a_png_of_the_grid(capsys, layer, tmp_path):
    out_png = str(tmp_path / "layout.png")
    code, out, err = _run(capsys, "layout", layer, "-o", out_png)
    assert code == 0, err
    md = helpers.metadata(layer)
    assert out.strip() == f"{out_png}: {md['fileCount']} data files over {COLS} × {ROWS} tiles"
    width, height = _png_size(out_png)
    assert width == 11 * 110  # an 11-inch figure at 110 dpi
    assert 4 * 110 <= height <= 14 * 110
    # The picture shows the files: its pixels hold each file's colour.
    import matplotlib.image as mpimg

    img = mpimg.imread(out_png)[..., :3]
    colors = pictures.file_colors(md["fileCount"])
    for c in colors:
        assert np.any(np.all(np.abs(img - c) < 0.02, axis=-1)), c


def test_layout_scan_draws_only_existing_tiles(capsys, layer, tmp_path):
    out_png = str(tmp_path / "scan.png")
    code, _, err = _run(capsys, "layout", layer, "--scan", "--no-curve", "-o", out_png)
    assert code == 0, err
    assert os.path.getsize(out_png) > 0


def test_tile_files_maps_keys_to_files_by_their_names(spark, layer):
    md = helpers.metadata(layer)
    cols, rows = np.meshgrid(np.arange(COLS), np.arange(ROWS))
    where = pictures.tile_files(md, cols, rows)
    files = sorted(md["files"], key=lambda f: f["firstIndex"])
    # the readers' rule: a file's name carries its first index; it holds up to the next file's first
    firsts = [int(f["name"].rsplit("-", 1)[1]) for f in files]
    assert firsts == [f["firstIndex"] for f in files]
    idx = key_index_from_json(md["keyIndex"]).index_array(cols, rows)
    for w, i in zip(where.ravel(), idx.ravel()):
        if w >= 0:
            assert firsts[w] <= i and (w + 1 == len(firsts) or i < firsts[w + 1])
        else:
            assert i < firsts[0]
    # ... and agrees with the file each tile was read from
    got = sfclayer.read(spark, layer).select("col", "row", "_file").collect()
    names = [f["name"] for f in files]
    for r in got:
        assert names[where[r["row"], r["col"]]] == os.path.basename(r["_file"])


def test_space_time_get_needs_a_time_and_accepts_iso(capsys, spark, tmp_path):
    path = str(tmp_path / "st")
    t0 = dt.datetime(2024, 5, 1)
    df = (spark.range(8)
          .select((F.col("id") % 4).cast("int").alias("col"), F.lit(0).alias("row"),
                  F.timestamp_micros(F.lit(int(t0.replace(tzinfo=dt.timezone.utc).timestamp() * 1e6))
                                     + (F.col("id") / 4).cast("long") * 86_400_000_000).alias("time"),
                  F.col("id").alias("v")))
    sfclayer.write(df, path)
    code, _, err = _run(capsys, "get", path, "1", "0")
    assert code == 1 and err.startswith("sfclayer: error: ") and "TIME" in err
    code, out, err = _run(capsys, "get", path, "1", "0", "2024-05-02T00:00:00")
    assert code == 0, err
    assert "v  5" in out
    code, out, err = _run(capsys, "get", path, "1", "0", "2024-05-03")
    assert code == 1 and "sfclayer: error: " in err
    code, out, err = _run(capsys, "layout", path, "-o", str(tmp_path / "st.png"), "--time", "2024-05-02")
    assert code == 0, err


# the demo command: tests/test_progress.py (its report lines and its progress bars, in one run)


def test_value_text():
    assert cli._value_text(b"\x01\x02") == "2 bytes  01 02"
    assert cli._value_text(bytes(range(20))).endswith("0e 0f…")
    assert cli._value_text(list(range(20))) == "[0, 1, 2, 3, 4, 5, 6, 7, … (20 items)]"
    assert cli._value_text(None) == "null"
    assert cli._value_text({"a": 1}) == "{a: 1}"


def test_parse_time():
    assert cli._parse_time("86400000000") == 86_400_000_000
    assert cli._parse_time("1970-01-02") == 86_400_000_000
    assert cli._parse_time("1970-01-02T00:00:00Z") == 86_400_000_000
    assert cli._parse_time("1970-01-02T01:00:00+01:00") == 86_400_000_000


def test_tile_files_refuses_a_name_that_is_not_a_data_file():
    md = {"keyIndex": {"kind": "z", "colMin": 0, "rowMin": 0, "colMax": 3, "rowMax": 3},
          "files": [{"name": "part-r-00000-0"}, {"name": "part-r-x"}]}
    with pytest.raises(sfclayer.CorruptLayer, match="not an sfclayer data file name: 'part-r-x'"):
        pictures.tile_files(md, [0], [0])


def test_layer_document_lists_only_the_files_asked_for(spark, manifest_layer):
    md = helpers.metadata(manifest_layer)
    with sfclayer.open(spark, manifest_layer) as layer:
        doc = layer.document()
        assert "files" not in doc and doc["manifests"] == md["manifests"]
        assert doc == {k: v for k, v in md.items() if k != "files"}
        assert layer.document(files=3)["files"] == md["files"][:3]
        assert layer.metadata["files"] == md["files"]  # metadata: every file, as before
        assert layer.document() == doc
