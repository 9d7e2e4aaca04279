package io.sfclayer.gtfixtures

import org.apache.spark.{SparkConf, SparkContext}

/** `fixtures DIR`: the test catalog and expected values under DIR (generate.sh).
  * `bench-write CATALOG` / `bench-read CATALOG ...`: bench/geotrellis.py's GeoTrellis side. */
object Main {
  def main(args: Array[String]): Unit = {
    val conf = new SparkConf()
      .setMaster(sys.env.getOrElse("GT_MASTER", "local[1]"))
      .setAppName("sfclayer-geotrellis")
      .set("spark.ui.enabled", "false")
      .set("spark.serializer", "org.apache.spark.serializer.KryoSerializer")
      .set("spark.kryo.registrator", "geotrellis.spark.store.kryo.KryoRegistrator")
    // fixtures: a fresh local file system per call, so each layer's fs.local.block.size applies
    if (args.headOption.contains("fixtures")) conf.set("spark.hadoop.fs.file.impl.disable.cache", "true")
    val sc = new SparkContext(conf)
    sc.setLogLevel("WARN")
    try args.toList match {
      case "fixtures" :: dir :: Nil => Fixtures.run(sc, dir)
      case "bench-write" :: catalog :: Nil => Bench.write(sc, catalog)
      case "bench-write" :: catalog :: side :: partitions :: Nil => Bench.write(sc, catalog, side.toInt, partitions.toInt)
      case "bench-read" :: catalog :: rest => Bench.read(sc, catalog, rest)
      case _ =>
        System.err.println("usage: fixtures DIR | bench-write CATALOG [SIDE PARTITIONS] | bench-read CATALOG [OPTIONS]")
        sys.exit(2)
    } finally sc.stop()
  }
}
