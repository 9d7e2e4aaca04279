"""Ingest on a Spark Connect session (issue 21): DataFrame operations only (the tile plan as a
DataFrame, tiles drawn by ``mapInArrow``), so a thin ``sc://`` client ingests as a classic session
does, tile for tile. Sources GDAL reads are passed to the executors by path; Hadoop sources are read by
Spark's binaryFile data source (integration/test_ingest_hdfs.py, on the run's HDFS)."""

import pytest

import sfclayer
from sfclayer import raster

from tests.raster_sources import europe_tif  # noqa: F401 - fixture

pytest.importorskip("rasterio")


def _tiles(spark, path):
    rows = sfclayer.read(spark, path).select("col", "row", *raster.COLUMNS).collect()
    return {(r["col"], r["row"]): tuple(r[c] for c in raster.COLUMNS) for r in rows}


def test_ingest_on_connect_equals_the_classic_ingest(spark, connect, europe_tif, tmp_path):  # noqa: F811
    classic = sfclayer.ingest(spark, europe_tif, str(tmp_path / "classic"), zoom=5, resampling="bilinear")
    remote = sfclayer.ingest(connect, europe_tif, str(tmp_path / "connect"), zoom=5, resampling="bilinear")
    assert (remote.grid, remote.candidates, remote.tiles, remote.nodata) == \
        (classic.grid, classic.candidates, classic.tiles, classic.nodata)
    assert remote.tiles > 4
    tiles = _tiles(spark, classic.path)
    assert _tiles(spark, remote.path) == tiles
    assert _tiles(connect, remote.path) == tiles  # read back through the Connect client too
    md = sfclayer.read(connect, remote.path)
    assert md.count() == remote.tiles
    with pytest.raises(sfclayer.LayerExists):  # errorifexists, the default, as on classic
        sfclayer.ingest(connect, europe_tif, remote.path, zoom=5)
