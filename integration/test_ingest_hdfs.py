"""Ingest from GeoTIFFs on HDFS: the driver reads headers through Spark's Hadoop client, executors a
local copy shipped with SparkContext.addFile; the layer equals the ingest of the local copy, tile by
tile. Missing sources and clashing file names are refused by name. On Spark Connect (no JVM, no
addFile on the client), Spark's binaryFile data source reads them: the same tiles as classic."""

import numpy as np
import pytest

import sfclayer
from sfclayer import raster

from integration import hdfs as hdfs_helpers
from tests.raster_sources import dem_tif, write_geotiff  # noqa: F401 - fixture

pytestmark = pytest.mark.hdfs
rasterio = pytest.importorskip("rasterio")


def tiles(spark, path):
    rows = sfclayer.read(spark, path).select("col", "row", *raster.COLUMNS).collect()
    return {(x["col"], x["row"]): (raster.to_numpy(x), x["nodata"]) for x in rows}


def put(spark, hdfs, local, name):
    uri = f"{hdfs.path('sources')}/{name}"
    with open(local, "rb") as f:
        hdfs_helpers.Hdfs.write_bytes(spark, uri, f.read(), block_size=hdfs_helpers.BLOCK_SIZE)
    return uri


@pytest.mark.parametrize("tms", ["WebMercatorQuad", None])
def test_ingest_from_hdfs_equals_ingest_of_the_local_copy(spark, hdfs, dem_tif, tmp_path, tms):
    uri = put(spark, hdfs, dem_tif, f"jacksboro-{tms or 'native'}.tif")
    options = dict(tms=tms, zoom=11, resampling="bilinear") if tms else dict(tms=None, tile_size=64)
    from_hdfs = hdfs.path("dem")  # the layer on HDFS too
    local = str(tmp_path / "dem")
    r = sfclayer.ingest(spark, uri, from_hdfs, **options)
    sfclayer.ingest(spark, dem_tif, local, **options)
    got, want = tiles(spark, from_hdfs), tiles(spark, local)
    assert r.tiles == len(want) > 4 and sorted(got) == sorted(want)
    for key, (a, nodata) in want.items():
        np.testing.assert_array_equal(got[key][0], a, err_msg=f"tile {key}")
        assert got[key][1] == nodata
    assert r.sources[0].uri == uri and r.sources[0].length == len(open(dem_tif, "rb").read())


def test_missing_and_clashing_hdfs_sources(spark, hdfs, dem_tif, tmp_path):
    missing = f"{hdfs.path('sources')}/nothing.tif"
    with pytest.raises(sfclayer.InvalidInput, match=f"cannot open {missing}: no such file"):
        sfclayer.ingest(spark, missing, str(tmp_path / "a"))
    first = put(spark, hdfs, dem_tif, "same-name.tif")
    sfclayer.ingest(spark, first, str(tmp_path / "b"), zoom=9)
    second = put(spark, hdfs, dem_tif, "same-name.tif")  # another directory, the same file name
    with pytest.raises(sfclayer.InvalidArgument, match=f"source {second}: executors get Hadoop sources by file "
                                                       f"name, and this Spark session already ships {first}"):
        sfclayer.ingest(spark, second, str(tmp_path / "c"), zoom=9)


@pytest.mark.parametrize("tms", ["WebMercatorQuad", None])
def test_ingest_from_hdfs_on_connect_equals_the_classic_ingest(spark, connect, hdfs, dem_tif, tmp_path, tms):
    # with a tile matrix set, the Hadoop source over a larger local one (the last wins where they overlap),
    # so some task slices need the Hadoop source's bytes, some the local file alone
    uri = put(spark, hdfs, dem_tif, f"connect-jacksboro-{tms or 'native'}.tif")
    options = dict(tms=tms, zoom=11, resampling="bilinear") if tms else dict(tms=None, tile_size=64)
    sources = [uri]
    if tms:
        with rasterio.open(dem_tif) as ds:
            w, s, e, n = ds.bounds
        ramp = (np.arange(300 * 300, dtype="int16") % 2000).reshape(1, 300, 300)
        sources = [write_geotiff(tmp_path / "under.tif", ramp, (w - 0.2, s - 0.2, e + 0.2, n + 0.2)), uri]
    remote = sfclayer.ingest(connect, sources, hdfs.path("dem-connect"), **options)
    classic = sfclayer.ingest(spark, sources, str(tmp_path / "classic"), **options)
    assert (remote.grid, remote.candidates, remote.tiles, remote.nodata) == \
        (classic.grid, classic.candidates, classic.tiles, classic.nodata)
    got, want = tiles(spark, remote.path), tiles(spark, classic.path)
    assert remote.tiles == len(want) > 4 and sorted(got) == sorted(want)
    for key, (a, nodata) in want.items():
        np.testing.assert_array_equal(got[key][0], a, err_msg=f"tile {key}")
        assert got[key][1] == nodata
    r = remote.sources[-1]
    assert (r.uri, r.length, r.carried) == (uri, len(open(dem_tif, "rb").read()), True)
    assert (r.crs, r.transform, r.width, r.height, r.bands, r.dtype, r.nodata) == tuple(
        getattr(classic.sources[-1], k) for k in ("crs", "transform", "width", "height", "bands", "dtype", "nodata"))


def test_missing_and_non_raster_hdfs_sources_on_connect(spark, connect, hdfs, tmp_path):
    missing = f"{hdfs.path('sources')}/nothing-connect.tif"
    with pytest.raises(sfclayer.InvalidInput, match=f"cannot open {missing}: no such file"):
        sfclayer.ingest(connect, missing, str(tmp_path / "a"))
    text = f"{hdfs.path('sources')}/not-a-raster.tif"
    hdfs_helpers.Hdfs.write_bytes(spark, text, b"not a GeoTIFF" * 100)
    with pytest.raises(sfclayer.InvalidInput, match=f"cannot open raster {text}"):
        sfclayer.ingest(connect, text, str(tmp_path / "b"))
