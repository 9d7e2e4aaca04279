package io.sfclayer.gtfixtures

import java.io.File
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.Files
import java.time.{ZoneOffset, ZonedDateTime}

import scala.reflect.ClassTag

import geotrellis.layer._
import geotrellis.raster._
import geotrellis.spark._
import geotrellis.spark.store.hadoop._
import geotrellis.store._
import geotrellis.store.avro.AvroRecordCodec
import geotrellis.store.hadoop._
import geotrellis.store.index._
import geotrellis.util._
import _root_.io.circe.{Decoder, Encoder, Json}
import org.apache.hadoop.fs.Path
import org.apache.spark.SparkContext

/** One fixture layer: what GeoTrellis is asked to write. */
final case class Spec(
  name: String,
  cellType: CellType,
  index: String, // z | hilbert | rowmajor
  layout: Layout,
  keys: Seq[(Int, Int)],
  bands: Int = 0, // 0: single-band Tile values; n: ArrayMultibandTile of n bands
  times: Seq[ZonedDateTime] = Nil, // empty: SpatialKey; else SpaceTimeKey at each time
  partitions: Int = 1,
  blockSize: Option[Long] = None, // small: several MapFiles per partition
  smooth: Boolean = false,
  odd: Boolean = true // a constant tile, an all-nodata constant tile (ND types), a PaddedTile (ND single band)
) {
  def zoom: Int = layout.zoom
  def id: LayerId = LayerId(name, zoom)
}

/** Writes the fixture catalog with GeoTrellis' HadoopLayerWriter, reads every layer back with
  * GeoTrellis' own reader and dumps what it read (keys, GeoTrellis' toIndex of each, raw cells and
  * GeoTrellis' nodata verdict) as `.npz`, plus `layers.json` describing each layer. */
object Fixtures {
  val Utc = ZoneOffset.UTC
  def t(s: String): ZonedDateTime = ZonedDateTime.parse(s).withZoneSameInstant(Utc)

  /** Keys of the box minus every fifth (so the layers have holes). */
  def box(c0: Int, r0: Int, c1: Int, r1: Int): Seq[(Int, Int)] =
    (for (r <- r0 to r1; c <- c0 to c1) yield (c, r)).zipWithIndex.collect { case (k, i) if i % 5 != 3 => k }

  import Layouts._
  val small = box(1, 1, 6, 4)
  // two instants on the same day: one record holds both keys under ZSpaceTimeKeyIndex.byDay
  val days = Seq(t("2020-01-01T00:00:00Z"), t("2020-01-01T12:00:00Z"), t("2020-01-03T06:00:00Z"), t("2020-02-01T00:00:00Z"))
  val months = Seq(t("2019-12-15T00:00:00Z"), t("2020-03-01T00:00:00Z"), t("2020-07-04T10:30:00Z"))

  val specs: Seq[Spec] = Seq(
    Spec("int8", ByteConstantNoDataCellType, "z", latlng, small),
    Spec("int8_raw", ByteCellType, "rowmajor", utm, small),
    Spec("int8_ud", ByteUserDefinedNoDataCellType(-5), "hilbert", sinusoidal, small),
    Spec("uint8", UByteConstantNoDataCellType, "hilbert", latlng, small),
    Spec("uint8_raw", UByteCellType, "z", webMercator16, box(5, 4, 10, 7)),
    Spec("uint8_ud", UByteUserDefinedNoDataCellType(255.toByte), "rowmajor", latlng, small),
    Spec("int16", ShortConstantNoDataCellType, "z", utm, small),
    Spec("int16_raw", ShortCellType, "hilbert", latlngZoomed, box(2, 1, 6, 3)),
    Spec("int16_ud", ShortUserDefinedNoDataCellType(-9999), "rowmajor", latlng, small),
    Spec("uint16", UShortConstantNoDataCellType, "rowmajor", sinusoidal, small),
    Spec("uint16_raw", UShortCellType, "z", latlng, small),
    Spec("uint16_ud", UShortUserDefinedNoDataCellType(65535.toShort), "hilbert", utm, small),
    Spec("int32", IntConstantNoDataCellType, "hilbert", latlng, small),
    Spec("int32_raw", IntCellType, "z", latlng, small),
    Spec("int32_ud", IntUserDefinedNoDataCellType(-1), "rowmajor", utm, small),
    Spec("float32", FloatConstantNoDataCellType, "z", latlng, small),
    Spec("float32_raw", FloatCellType, "rowmajor", latlng, small),
    Spec("float32_ud", FloatUserDefinedNoDataCellType(-9999f), "hilbert", sinusoidal, small),
    Spec("float64", DoubleConstantNoDataCellType, "hilbert", utm, small),
    Spec("float64_raw", DoubleCellType, "z", latlng, small),
    Spec("float64_ud", DoubleUserDefinedNoDataCellType(-1.5), "rowmajor", latlng, small),
    Spec("bit", BitCellType, "z", latlng, small),
    // multiband
    Spec("mb_uint16", UShortConstantNoDataCellType, "hilbert", webMercator16, box(4, 5, 9, 8), bands = 3),
    Spec("mb_float32_ud", FloatUserDefinedNoDataCellType(-9999f), "z", latlng, small, bands = 2),
    // space-time
    Spec("st_int16", ShortConstantNoDataCellType, "z", latlng, box(1, 1, 4, 3), times = days),
    Spec("st_float32", FloatConstantNoDataCellType, "hilbert", utm, box(0, 0, 5, 3), times = months, partitions = 3),
    Spec("st_mb_uint8", UByteCellType, "z", latlngZoomed, box(1, 1, 4, 2), bands = 2, times = months),
    // several files: 4 partitions and 20 KiB blocks (GeoTrellis starts a new MapFile when a block is full)
    Spec("files", ShortConstantNoDataCellType, "z", latlng.copy(layout = LayoutDefinition(latlng.layout.extent,
      TileLayout(16, 16, 8, 8))), box(0, 0, 15, 15), partitions = 4, blockSize = Some(20 * 1024)),
    Spec("files_hilbert", IntCellType, "hilbert", latlng.copy(layout = LayoutDefinition(latlng.layout.extent,
      TileLayout(16, 16, 8, 8))), box(2, 3, 13, 12), partitions = 3, blockSize = Some(18 * 1024)),
    // OGC tile matrices: WebMercatorQuad zooms 2 and 3 (RGB), WorldCRS84Quad zoom 2
    Spec("wm", UByteCellType, "z", webMercatorQuad(2), Seq((1, 1), (2, 1)), bands = 3, smooth = true, odd = false),
    Spec("wm", UByteCellType, "z", webMercatorQuad(3), Seq((3, 2), (4, 2), (5, 2), (3, 3), (4, 3)), bands = 3,
      smooth = true, odd = false),
    Spec("crs84", FloatConstantNoDataCellType, "z", worldCrs84Quad2, Seq((4, 1), (5, 1), (4, 2)), smooth = true)
  )

  def run(sc: SparkContext, root: String): Unit = {
    val catalog = new Path("file:" + new File(root, "catalog").getAbsolutePath)
    val expected = new File(root, "expected")
    new File(expected, "index").mkdirs()
    val fs = catalog.getFileSystem(sc.hadoopConfiguration)
    if (fs.exists(catalog)) throw new IllegalStateException(s"$catalog exists: generate into an empty directory")
    val writer = HadoopLayerWriter(catalog)(sc)
    val infos = specs.map { spec =>
      // MultiMapWriter takes the block size from the file system: a fresh (uncached) one per layer
      sc.hadoopConfiguration.setLong("fs.local.block.size", spec.blockSize.getOrElse(32L * 1024 * 1024))
      val info = (spec.times.nonEmpty, spec.bands > 0) match {
        case (false, false) => layer[SpatialKey, Tile](sc, writer, catalog, spec, expected)
        case (false, true) => layer[SpatialKey, MultibandTile](sc, writer, catalog, spec, expected)
        case (true, false) => layer[SpaceTimeKey, Tile](sc, writer, catalog, spec, expected)
        case (true, true) => layer[SpaceTimeKey, MultibandTile](sc, writer, catalog, spec, expected)
      }
      println(s"wrote ${spec.name}/${spec.zoom}: ${info.hcursor.get[Int]("tiles").getOrElse(0)} tiles, " +
        s"${info.hcursor.get[Seq[String]]("files").map(_.size).getOrElse(0)} files")
      info
    }
    write(new File(expected, "layers.json"), Json.arr(infos: _*).spaces2)
    IndexDumps.run(new File(expected, "index"))
  }

  def write(f: File, text: String): Unit = Files.write(f.toPath, (text + "\n").getBytes(UTF_8))

  /** Key columns as longs: col, row (and epoch millis). */
  def keyLongs(k: Any): Seq[Long] = k match {
    case SpatialKey(c, r) => Seq(c.toLong, r.toLong)
    case k: SpaceTimeKey => Seq(k.col.toLong, k.row.toLong, k.instant)
  }

  def bandsOf(v: Any): Seq[Tile] = v match {
    case t: Tile => Seq(t)
    case m: MultibandTile => m.bands
  }

  /** The tiles of one layer: deterministic values, with the odd tiles mixed in. */
  def tiles(spec: Spec): Seq[(Seq[Long], Seq[Tile])] = {
    val (tc, tr) = (spec.layout.layout.tileCols, spec.layout.layout.tileRows)
    val seed = spec.name.hashCode.toLong * 31 + spec.zoom
    val keys = if (spec.times.isEmpty) spec.keys.map { case (c, r) => Seq(c.toLong, r.toLong) }
      else for (time <- spec.times; (c, r) <- spec.keys) yield Seq(c.toLong, r.toLong, time.toInstant.toEpochMilli)
    val nd = Tiles.nodata(spec.cellType)
    keys.zipWithIndex.map { case (key, i) =>
      val bands = (0 until math.max(spec.bands, 1)).map { b =>
        val vals = Tiles.values(spec.cellType, seed, key, b, tc, tr, spec.smooth)
        if (spec.odd && i == 2 && b == 0) Tiles.constantTile(spec.cellType, vals(5), tc, tr)
        else if (spec.odd && i == 3 && nd.isDefined) Tiles.constantTile(spec.cellType, nd.get, tc, tr)
        else if (spec.odd && i == 4 && spec.bands == 0 && nd.isDefined)
          PaddedTile(Tiles.arrayTile(spec.cellType, vals.take((tc - 5) * (tr - 4)), tc - 5, tr - 4), 3, 2, tc, tr)
        else Tiles.arrayTile(spec.cellType, vals, tc, tr)
      }
      (key, bands)
    }
  }

  def layer[K: AvroRecordCodec: Boundable: SpatialComponent: Encoder: Decoder: ClassTag, V <: CellGrid[Int]: AvroRecordCodec: ClassTag](
    sc: SparkContext, writer: HadoopLayerWriter, catalog: Path, spec: Spec, expected: File
  )(implicit mk: Seq[Long] => K, mv: Seq[Tile] => V): Json = {
    val records: Seq[(K, V)] = tiles(spec).map { case (k, bs) => (mk(k), mv(bs)) }
    val keys = records.map(_._1)
    val kb = KeyBounds(keys.reduce(implicitly[Boundable[K]].minBound), keys.reduce(implicitly[Boundable[K]].maxBound))
    val layout = spec.layout.layout
    val extent = keys.map(k => layout.mapTransform.keyToExtent(k.getComponent[SpatialKey])).reduce(_ combine _)
    val md = TileLayerMetadata[K](spec.cellType, layout, extent, spec.layout.crs, kb)
    val keyIndex = KeyIndexes.create[K](spec.index, kb, spec.times)
    writer.write(spec.id, ContextRDD(sc.parallelize(records, spec.partitions), md), keyIndex)

    // What GeoTrellis reads back is the truth the tests compare with; it must be what we wrote.
    val back = HadoopCollectionLayerReader(catalog, sc.hadoopConfiguration)
      .read[K, V, TileLayerMetadata[K]](spec.id)
      .map { case (k, v) => (keyIndex.toIndex(k), keyLongs(k), bandsOf(v)) }
      .sortBy { case (i, k, _) => (i, k.mkString(",")) }
    val wrote = records.map { case (k, v) => keyLongs(k) -> bandsOf(v).map(Tiles.cells(_)._1.toSeq) }.toMap
    require(back.size == records.size, s"${spec.name}: read ${back.size} tiles back, wrote ${records.size}")
    for ((_, k, bs) <- back) {
      val got = bs.map(Tiles.cells(_)._1.toSeq)
      require(sameCells(got, wrote(k)), s"${spec.name}: tile $k read back differs from the one written")
    }

    val dtype = Tiles.dtype(spec.cellType)
    val (n, nb, tc, tr) = (back.size, math.max(spec.bands, 1), layout.tileCols, layout.tileRows)
    val cells = back.flatMap(_._3.map(Tiles.cells))
    Npz.write(new File(expected, s"${spec.name}__${spec.zoom}.npz").getPath, Seq(
      "keys" -> Npz.longs(Seq(n, back.head._2.size), back.flatMap(_._2).toArray),
      "index" -> Npz.longs(Seq(n), back.map(_._1.toLong).toArray),
      "extents" -> Npz.cells("float64", Seq(n, 4), back.flatMap { case (_, k, _) =>
        val e = layout.mapTransform.keyToExtent(k(0).toInt, k(1).toInt)
        Seq(e.xmin, e.ymin, e.xmax, e.ymax) }.toArray),
      "cells" -> Npz.cells(dtype, Seq(n, nb, tr, tc), cells.flatMap(_._1).toArray),
      "nodata_mask" -> Npz.bools(Seq(n, nb, tr, tc), cells.flatMap(_._2).toArray)))

    val layerDir = new Path(catalog, s"${spec.name}/${spec.zoom}")
    val files = layerDir.getFileSystem(sc.hadoopConfiguration).listStatus(layerDir)
      .map(_.getPath.getName).filter(_.startsWith("part-r-")).sorted
    val indexes = back.map(_._1)
    Json.obj(
      "name" -> Json.fromString(spec.name),
      "zoom" -> Json.fromInt(spec.zoom),
      "keyType" -> Json.fromString(if (spec.times.isEmpty) "SpatialKey" else "SpaceTimeKey"),
      "valueType" -> Json.fromString(if (spec.bands == 0) "Tile" else "MultibandTile"),
      "bands" -> Json.fromInt(nb),
      "cellType" -> Json.fromString(spec.cellType.name),
      "dtype" -> Json.fromString(dtype),
      "nodata" -> spec.cellType.pipe(Tiles.nodata).fold(Json.Null)(v =>
        if (v.isNaN) Json.fromString("NaN") else Json.fromDoubleOrNull(v)),
      "tileCols" -> Json.fromInt(tc),
      "tileRows" -> Json.fromInt(tr),
      "keyIndex" -> Json.fromString(keyIndex.getClass.getSimpleName),
      "layout" -> Json.fromString(spec.layout.name),
      "crs" -> Json.fromString(spec.layout.crs.toProj4String),
      "tiles" -> Json.fromInt(n),
      "records" -> Json.fromInt(indexes.distinct.size),
      "partitions" -> Json.fromInt(spec.partitions),
      "files" -> Json.arr(files.map(Json.fromString): _*),
      "constantTiles" -> Json.fromInt(back.count(_._3.exists(_.isInstanceOf[ConstantTile]))),
      "paddedTiles" -> Json.fromInt(back.count(_._3.exists(_.isInstanceOf[PaddedTile]))))
  }

  /** Equal cells, NaN equal to NaN and -0.0 told from 0.0 (bit patterns). */
  def sameCells(a: Seq[Seq[Double]], b: Seq[Seq[Double]]): Boolean =
    a.size == b.size && a.zip(b).forall { case (x, y) =>
      x.size == y.size && x.zip(y).forall { case (u, v) =>
        java.lang.Double.doubleToLongBits(u) == java.lang.Double.doubleToLongBits(v) }
    }

  implicit class Pipe[A](val a: A) extends AnyVal { def pipe[B](f: A => B): B = f(a) }

  implicit val spatialKey: Seq[Long] => SpatialKey = k => SpatialKey(k(0).toInt, k(1).toInt)
  implicit val spaceTimeKey: Seq[Long] => SpaceTimeKey = k => SpaceTimeKey(k(0).toInt, k(1).toInt, k(2))
  implicit val singleBand: Seq[Tile] => Tile = _.head
  implicit val multiBand: Seq[Tile] => MultibandTile = bs => ArrayMultibandTile(bs.toArray)
}
