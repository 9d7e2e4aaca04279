"""Configuration the Spark way (issue 12): Hadoop settings reach reads, writes and look-ups through
the session's ``newHadoopConfWithOptions``; read options are checked against one table.

The setting that changes behaviour is a ViewFs mount table: ``viewfs://<name>/layer`` only resolves
when ``fs.viewfs.mounttable.<name>.link./layer`` is in the configuration the connector uses. Each
test uses its own mount-table name, since Hadoop caches a file system per scheme and authority.
"""

import pytest

import sfclayer
from sfclayer.errors import InvalidArgument, SfcLayerError


def _mount(name):
    return f"fs.viewfs.mounttable.{name}.link./layer"


@pytest.fixture(scope="module")
def layer_dir(spark, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("config") / "layer")
    df = spark.createDataFrame([(c, r, c * 10 + r) for c in range(4) for r in range(4)], "col int, row int, v int")
    sfclayer.write(df, path, bounds=(0, 0, 3, 3))
    return path


def test_a_per_read_hadoop_option_reaches_the_read(spark, layer_dir):
    with pytest.raises(SfcLayerError, match="Mount table"):  # not in the SparkContext's configuration
        sfclayer.read(spark, "viewfs://sfcreadopt/layer")
    df = spark.read.format("sfclayer").option(_mount("sfcreadopt"), "file://" + layer_dir).load(
        "viewfs://sfcreadopt/layer")
    assert df.where("col = 1").count() == 4
    assert sorted(r.v for r in df.where("row = 2").collect()) == [2, 12, 22, 32]


def test_spark_conf_set_at_run_time_reaches_reads_and_lookups(spark, layer_dir):
    key = "spark.hadoop." + _mount("sfcruntime")
    spark.conf.set(key, "file://" + layer_dir)
    try:
        assert spark.read.format("sfclayer").load("viewfs://sfcruntime/layer").count() == 16
        with sfclayer.open(spark, "viewfs://sfcruntime/layer") as layer:
            assert layer.get(3, 1) == {"v": 31}
    finally:
        spark.conf.unset(key)


def test_a_per_write_hadoop_option_reaches_the_write(spark, tmp_path):
    target = tmp_path / "written"
    df = spark.createDataFrame([(1, 1, 5)], "col int, row int, v int")
    df.write.format("sfclayer").option(_mount("sfcwriteopt"), "file://" + str(target)).save(
        "viewfs://sfcwriteopt/layer")
    assert (target / "_sfclayer").is_dir()
    assert spark.read.format("sfclayer").load(str(target)).collect()[0].v == 5


def test_an_unknown_read_option_is_an_error_listing_the_valid_ones(spark, layer_dir):
    # fails at load(), before any job, naming the option as written
    with pytest.raises(InvalidArgument, match=r"unknown sfclayer read option 'maxRange'; valid options: path, bbox, "
                                              r"geometry, maxRanges"):
        with sfclayer._jvm.translated():
            spark.read.format("sfclayer").option("maxRange", 3).load(layer_dir)
    with pytest.raises(InvalidArgument, match="unknown sfclayer read option 'colour'"):
        sfclayer.read(spark, layer_dir, colour="red")
    # option names match case-insensitively, as Spark's do; Hadoop settings pass
    assert spark.read.format("sfclayer").option("MAXRANGES", 2).option("fs.local.block.size", "1048576").load(
        layer_dir).count() == 16


def test_the_read_option_table_is_what_the_error_lists(spark):
    known = spark.sparkContext._jvm.io.sfclayer.spark.ReadOptions.KNOWN
    assert list(known.keySet()) == [
        "path", "bbox", "geometry", "maxRanges", "versionAsOf", "timestampAsOf", "geotrellisLayer", "onCorrupt"]
