"""GeoTrellis catalogs read in place on a real HDFS (issue 22): the catalog GeoTrellis wrote
(tests/data/geotrellis) copied into HDFS, then listed, scanned, looked up and converted there."""

from pathlib import Path

import pytest

import sfclayer
from sfclayer import geotrellis

from tests import test_geotrellis as gt

pytestmark = [pytest.mark.hdfs, pytest.mark.skipif(not gt.LAYERS, reason="no GeoTrellis fixtures")]


@pytest.fixture(scope="module")
def catalog(spark, hdfs):
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    where = hdfs.path("geotrellis")  # a new name each call
    src = jvm.org.apache.hadoop.fs.Path(Path(gt.CATALOG).resolve().as_uri())
    dst = jvm.org.apache.hadoop.fs.Path(where)
    jvm.org.apache.hadoop.fs.FileUtil.copy(src.getFileSystem(conf), src, dst.getFileSystem(conf), dst, False, conf)
    return where


def test_scan_look_ups_and_convert_on_hdfs(spark, catalog, hdfs):
    assert geotrellis.layers(spark, catalog) == sorted((l["name"], l["zoom"]) for l in gt.LAYERS)
    layer = next(l for l in gt.LAYERS if l["name"] == "files_hilbert")
    want = gt.expected(layer)
    box = (3, 4, 9, 8)
    df = geotrellis.read(spark, catalog, "files_hilbert", 0, keys=box)
    got = {(r.col, r.row): r.asDict() for r in df.collect()}
    assert sorted(got) == sorted(k for k in want if box[0] <= k[0] <= box[2] and box[1] <= k[1] <= box[3])
    for k, tile in got.items():
        gt.check_tile(layer, tile, *want[k])
    assert gt.metrics(spark, df)["filesPrunedByName"] > 0
    with geotrellis.open(spark, catalog, "files_hilbert", 0) as gl:
        for k, tile in zip(sorted(want), gl.get_many(sorted(want))):
            gt.check_tile(layer, dict(tile, col=k[0], row=k[1]), *want[k])
    dest = hdfs.path("gt-converted")
    geotrellis.convert(spark, catalog, "files_hilbert", 0, dest)
    back = {(r.col, r.row): r.asDict() for r in sfclayer.read(spark, dest).collect()}
    assert sorted(back) == sorted(want)
    for k, tile in back.items():
        gt.check_tile(layer, tile, *want[k])
