package io.sfclayer.gtfixtures

import scala.util.Random

import geotrellis.layer._
import geotrellis.raster._
import geotrellis.spark._
import geotrellis.spark.store.hadoop._
import geotrellis.store._
import geotrellis.store.hadoop._
import geotrellis.store.index._
import org.apache.hadoop.fs.Path
import org.apache.spark.SparkContext

/** GeoTrellis' side of bench/geotrellis.py: writes the bench layer with HadoopLayerWriter and times
  * HadoopLayerReader (key boxes) and HadoopValueReader (look-ups) on it. Prints one JSON object per
  * line on stdout (`{"what": ..., ...}`) for the Python side to parse. */
object Bench {
  val Name = "bench"
  val Id = LayerId(Name, 0)

  def catalogPath(catalog: String): Path =
    if (catalog.contains(":")) new Path(catalog) else new Path("file:" + new java.io.File(catalog).getAbsolutePath)

  /** The bench layer: 256 x 256 tiles of 32 x 32 int16 (a ramp plus 7 bits of noise, as bench/common.py's
    * tiles), ZSpatialKeyIndex, `partitions` partitions. */
  def write(sc: SparkContext, catalog: String, side: Int = 256, partitions: Int = 8): Unit = {
    val layout = Layouts.bench.layout
    val kb = KeyBounds(SpatialKey(0, 0), SpatialKey(side - 1, side - 1))
    val md = TileLayerMetadata[SpatialKey](ShortConstantNoDataCellType, layout,
      layout.mapTransform.boundsToExtent(GridBounds(0, 0, side - 1, side - 1)), Layouts.bench.crs, kb)
    val rdd = sc.parallelize(0 until side * side, partitions).map { i =>
      val (c, r) = (i % side, i / side)
      val rnd = new Random(i.toLong)
      val cells = Array.tabulate(32 * 32)(j => ((c + r + j % 32 + j / 32) * 8 + rnd.nextInt(128)).toShort)
      (SpatialKey(c, r), ShortArrayTile(cells, 32, 32, ShortConstantNoDataCellType): Tile)
    }
    val t0 = System.nanoTime()
    HadoopLayerWriter(catalogPath(catalog))(sc).write(Id, ContextRDD(rdd, md), ZCurveKeyIndexMethod)
    println(s"""{"what": "write", "tiles": ${side * side}, "seconds": ${(System.nanoTime() - t0) / 1e9}}""")
  }

  /** Options: `boxes=c0,r0,c1,r1;...` (key boxes, inclusive), `lookups=N`, `cold=N`, `seed=S`. */
  def read(sc: SparkContext, catalog: String, options: List[String]): Unit = {
    val opts = options.map(_.split("=", 2)).collect { case Array(k, v) => k -> v }.toMap
    val root = catalogPath(catalog)
    val reader = HadoopLayerReader(root)(sc)
    val md = reader.attributeStore.readMetadata[TileLayerMetadata[SpatialKey]](Id)
    val boxes = opts.get("boxes").toSeq.flatMap(_.split(";")).map(_.split(",").map(_.toInt))

    def box(b: Array[Int]): (Long, Long) = {
      val q = reader.query[SpatialKey, Tile, TileLayerMetadata[SpatialKey]](Id)
        .where(Intersects(KeyBounds(SpatialKey(b(0), b(1)), SpatialKey(b(2), b(3)))))
      val rdd = q.result
      // every tile decoded and its cells touched, nothing shipped but two numbers
      val (n, bytes) = rdd.map { case (_, t) => (1L, t.size.toLong * 2) }.fold((0L, 0L)) { case (a, b) => (a._1 + b._1, a._2 + b._2) }
      (n, bytes)
    }

    if (boxes.nonEmpty) box(boxes.head) // JIT and class loading, untimed
    for (b <- boxes) {
      val t0 = System.nanoTime()
      val (n, bytes) = box(b)
      val s = (System.nanoTime() - t0) / 1e9
      println(s"""{"what": "box", "box": [${b.mkString(",")}], "tiles": $n, "bytes": $bytes, "seconds": $s}""")
    }

    val conf = sc.hadoopConfiguration
    val rnd = new Random(opts.getOrElse("seed", "1").toLong)
    val bounds = md.bounds.get
    def randomKey() = SpatialKey(bounds.minKey.col + rnd.nextInt(bounds.maxKey.col - bounds.minKey.col + 1),
      bounds.minKey.row + rnd.nextInt(bounds.maxKey.row - bounds.minKey.row + 1))
    // cold: a new HadoopValueReader (attribute store, file ranges, MapFile index) per look-up
    val cold = opts.getOrElse("cold", "0").toInt
    for (i <- 0 until cold) {
      val k = randomKey()
      val t0 = System.nanoTime()
      val t = HadoopValueReader(root, conf).reader[SpatialKey, Tile](Id).read(k)
      val s = (System.nanoTime() - t0) / 1e9
      require(t.cols == 32)
      println(s"""{"what": "cold", "seconds": $s}""")
    }
    // warm: one reader (its 16 open MapFiles cover the layer's files), random keys
    val n = opts.getOrElse("lookups", "0").toInt
    if (n > 0) {
      val vr = HadoopValueReader(root, conf).reader[SpatialKey, Tile](Id)
      for (_ <- 0 until 200) vr.read(randomKey()) // warm-up, untimed
      val times = (0 until n).map { _ =>
        val k = randomKey()
        val t0 = System.nanoTime()
        vr.read(k)
        (System.nanoTime() - t0) / 1e9
      }
      println(s"""{"what": "warm", "lookups": $n, "seconds": [${times.mkString(",")}]}""")
    }
  }
}
