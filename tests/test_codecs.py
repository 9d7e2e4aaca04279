"""Raster-aware compression (zstd-raster, docs/FORMAT.md section 4): the default of raster layers,
decoded from the data files by Python alone (numpy + zstandard + fastavro) and compared with what
the JVM answers for the same keys."""

import io
import uuid

import fastavro
import numpy as np
import pytest

import sfclayer
from sfclayer import codecs, raster
from sfclayer.errors import CorruptLayer, InvalidArgument

from . import helpers
from .test_integrity import records

pytest.importorskip("zstandard")


def _tiles(n=4):
    """Raster tiles of three kinds: a DEM-like int16 ramp, RGB uint8, float32 with NaN nodata."""
    rng = np.random.default_rng(5)
    out = []
    for c in range(n):
        for r in range(n):
            y, x = np.mgrid[0:16, 0:16]
            kind = (c + r) % 3
            if kind == 0:
                a, nodata = (1000 + 7 * x + 3 * y + rng.integers(0, 4, (16, 16))).astype("int16"), None
            elif kind == 1:
                a, nodata = rng.integers(0, 255, (3, 8, 8)).astype("uint8"), 0
            else:
                a, nodata = (np.float32(0.25) * x - y).astype("float32"), float("nan")
                a[0, 0] = np.nan
            out.append({"col": c, "row": r, **raster.from_numpy(a, nodata=nodata)})
    return out


@pytest.fixture(scope="module")
def raster_layer(spark, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("codecs") / "layer")
    tiles = _tiles()
    df = spark.createDataFrame(tiles, raster.spark_schema())
    sfclayer.write(df, path, bounds=(0, 0, 3, 3), block_size="64k", partitions=2)
    return path, tiles


def test_raster_layers_default_to_zstd_raster_in_format_4(raster_layer):
    path, _ = raster_layer
    md = helpers.metadata(path)
    # 5, not 4: the tiles have the mask column (format 5); zstd-raster alone says 4 (below)
    assert md["compression"] == "zstd-raster" and md["formatVersion"] == 5


def test_pure_python_decode_matches_the_jvm(spark, raster_layer):
    path, tiles = raster_layer
    md = helpers.metadata(path)
    schema = fastavro.parse_schema({"type": "array", "items": md["tileSchema"]})
    decoded = {}
    for f in helpers.data_files(path):
        for rec in records(f):
            group = codecs.decompress(rec["value"][:-4], md["compression"])  # the record's CRC32C dropped
            for t in fastavro.schemaless_reader(io.BytesIO(group), schema):
                decoded[(t["col"], t["row"])] = t
    assert sorted(decoded) == sorted((t["col"], t["row"]) for t in tiles)
    with sfclayer.open(spark, path) as layer:
        for t in tiles:
            key = (t["col"], t["row"])
            jvm = layer.get(*key)
            mine = decoded[key]
            assert mine["pixels"] == jvm["pixels"] == t["pixels"]
            assert {k: mine[k] for k in ("width", "height", "bands", "dtype")} == \
                   {k: jvm[k] for k in ("width", "height", "bands", "dtype")}
            np.testing.assert_array_equal(raster.to_numpy(mine), raster.to_numpy(t))


def test_scan_and_append_keep_zstd_raster(spark, raster_layer, tmp_path):
    path, tiles = raster_layer
    back = {(r["col"], r["row"]): bytes(r["pixels"]) for r in sfclayer.read(spark, path).collect()}
    assert back == {(t["col"], t["row"]): t["pixels"] for t in tiles}
    copy = str(tmp_path / f"copy-{uuid.uuid4().hex[:6]}")
    sfclayer.write(spark.createDataFrame(tiles[:8], raster.spark_schema()), copy, bounds=(0, 0, 3, 3))
    sfclayer.write(spark.createDataFrame(tiles[8:], raster.spark_schema()), copy, mode="append")
    md = helpers.metadata(copy)
    assert md["compression"] == "zstd-raster" and md["formatVersion"] == 5 and md["operation"]["name"] == "append"
    with sfclayer.open(spark, copy) as layer:
        assert layer.get(3, 3)["pixels"] == tiles[-1]["pixels"]


def test_generic_layers_default_by_their_columns_and_options_are_checked(spark, tmp_path):
    # a binary (blob) column: zstd by default (bench/RESULTS.md, "Codecs", generic value columns)
    df = spark.createDataFrame([(c, r, bytes([c, r]) * 8) for c in range(2) for r in range(2)], "col int, row int, v binary")
    path = str(tmp_path / "generic")
    sfclayer.write(df, path, bounds=(0, 0, 1, 1))
    assert helpers.metadata(path)["compression"] == "zstd" and helpers.metadata(path)["formatVersion"] == 3
    with sfclayer.open(spark, path) as layer:
        assert layer.get(1, 0)["v"] == bytes([1, 0]) * 8
    # only scalars and strings: records of tens of bytes, which zstd's frame would grow
    small = spark.createDataFrame([(c, r, c * 0.5, "a") for c in range(2) for r in range(2)],
                                  "col int, row int, x double, s string")
    sfclayer.write(small, str(tmp_path / "scalars"), bounds=(0, 0, 1, 1))
    assert helpers.metadata(str(tmp_path / "scalars"))["compression"] == "none"
    # Raster tiles without the mask column (the convention before format 5): zstd-raster is format 4.
    rdf = spark.createDataFrame(_tiles(2), raster.spark_schema()).drop("mask")
    sfclayer.write(rdf, str(tmp_path / "v4"), bounds=(0, 0, 1, 1))
    md = helpers.metadata(str(tmp_path / "v4"))
    assert md["compression"] == "zstd-raster" and md["formatVersion"] == 4
    with pytest.raises(InvalidArgument, match="zstd-raster.*format version 4.*formatVersion asks for 2"):
        sfclayer.write(rdf, str(tmp_path / "v2"), bounds=(0, 0, 1, 1), compression="zstd-raster", format_version=2)
    sfclayer.write(rdf, str(tmp_path / "v2"), bounds=(0, 0, 1, 1), format_version=2)
    assert helpers.metadata(str(tmp_path / "v2"))["compression"] == "none"
    masked = spark.createDataFrame(_tiles(2), raster.spark_schema())
    with pytest.raises(InvalidArgument, match="formatVersion: '2' cannot hold raster tiles with a mask column"):
        sfclayer.write(masked, str(tmp_path / "m2"), bounds=(0, 0, 1, 1), format_version=2)


def test_damaged_stored_forms_raise_corrupt_layer():
    with pytest.raises(InvalidArgument, match="lz4"):
        codecs.decompress(b"\x00\x00\x00\x01x", "lz4")
    # one region claiming 64 bytes in a 4-byte group
    with pytest.raises(CorruptLayer, match="does not fit"):
        codecs.decompress(b"\x00\x00\x00\x04\x01\x00\x40\x02\x03\x04", "zstd-raster")
    with pytest.raises(CorruptLayer):
        codecs.decompress(b"\x00\x00\x00\x04\x00garbage", "zstd-raster")


def test_unfilter_undoes_the_specified_filters():
    # FORMAT.md's example: int16 rows [1, 3, 2], [5, 5, 4] filtered by delta then shuffle
    filtered = bytes([1, 2, 255, 5, 0, 255, 0, 0, 255, 0, 0, 255])
    assert np.frombuffer(codecs.unfilter(filtered, 2, 3, 3), "<i2").tolist() == [1, 3, 2, 5, 5, 4]


@pytest.mark.parametrize("item_size", [1, 2, 4, 8])
@pytest.mark.parametrize("filters", [0, 1, 2, 3])
def test_unfilter_with_and_without_imagecodecs_against_a_loop(monkeypatch, item_size, filters):
    """The delta decode runs in imagecodecs' C loop where it is installed and in numpy where it is
    not: both equal a plain Python model of FORMAT.md's filters (wrapping sums), on a region starting
    at an odd byte of its group (an unaligned view)."""
    rng = np.random.default_rng(item_size * 4 + filters)
    width, rows = 7, 5
    n = width * rows
    raw = rng.integers(0, 256, n * item_size, dtype=np.uint8).tobytes()
    # the model: unshuffle (byte j of value i at j*n + i), then running sums per row modulo 2^(8*size)
    if filters & 2 and item_size > 1:
        raw_values = [sum(raw[j * n + i] << (8 * j) for j in range(item_size)) for i in range(n)]
    else:
        raw_values = [int.from_bytes(raw[i * item_size:(i + 1) * item_size], "little") for i in range(n)]
    expected = []
    for r in range(rows):
        acc = 0
        for v in raw_values[r * width:(r + 1) * width]:
            acc = (acc + v) % (1 << (8 * item_size)) if filters & 1 else v
            expected.append(acc)
    for use_imagecodecs in (True, False):
        if not use_imagecodecs:
            monkeypatch.setattr(codecs, "_DELTA_CODEC", [None])
        got = codecs.unfilter(raw, item_size, filters, width)
        assert np.frombuffer(got, f"<u{item_size}").tolist() == expected
        out = np.empty(len(raw) + 1, np.uint8)  # the region at byte 1 of its group
        codecs._unfilter_into(np.frombuffer(raw, np.uint8), out[1:], item_size, filters, width)
        assert np.frombuffer(out[1:].tobytes(), f"<u{item_size}").tolist() == expected
