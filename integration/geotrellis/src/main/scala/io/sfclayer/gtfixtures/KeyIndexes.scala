package io.sfclayer.gtfixtures

import java.io.File
import java.time.ZonedDateTime

import scala.reflect.ClassTag

import geotrellis.layer._
import geotrellis.store.index._
import geotrellis.store.index.hilbert._
import geotrellis.store.index.rowmajor._
import geotrellis.store.index.zcurve._
import geotrellis.store.json.Implicits._
import _root_.io.circe.syntax._

/** GeoTrellis key indexes by name, and dumps of their `toIndex` for every key of several key bounds. */
object KeyIndexes {
  val Day: Long = 24L * 3600 * 1000

  /** The index GeoTrellis' own KeyIndexMethods build for these bounds (the fixtures use byDay for the
    * Z space-time index and 3 time bits for Hilbert's). */
  def create[K](kind: String, kb: KeyBounds[K], times: Seq[ZonedDateTime]): KeyIndex[K] = {
    val index: KeyIndex[_] = (kind, kb.minKey) match {
      case ("z", _: SpatialKey) => new ZSpatialKeyIndex(kb.asInstanceOf[KeyBounds[SpatialKey]])
      case ("hilbert", _: SpatialKey) =>
        HilbertKeyIndexMethod.spatialKeyIndexIndex(HilbertKeyIndexMethod).createIndex(kb.asInstanceOf[KeyBounds[SpatialKey]])
      case ("rowmajor", _: SpatialKey) => new RowMajorSpatialKeyIndex(kb.asInstanceOf[KeyBounds[SpatialKey]])
      case ("z", _: SpaceTimeKey) => ZCurveKeyIndexMethod.byDay().createIndex(kb.asInstanceOf[KeyBounds[SpaceTimeKey]])
      case ("hilbert", _: SpaceTimeKey) => HilbertKeyIndexMethod(3).createIndex(kb.asInstanceOf[KeyBounds[SpaceTimeKey]])
      case _ => throw new IllegalArgumentException(s"no $kind index for ${kb.minKey.getClass.getSimpleName}")
    }
    index.asInstanceOf[KeyIndex[K]]
  }
}

/** Every key of several key bounds per index kind with GeoTrellis' `toIndex` (CSV, the index as a
  * decimal integer) and the index as GeoTrellis' attribute store writes it (JSON), so another
  * implementation can be checked bit for bit. */
object IndexDumps {
  import Fixtures.t

  def spatial(c0: Int, r0: Int, c1: Int, r1: Int): KeyBounds[SpatialKey] = KeyBounds(SpatialKey(c0, r0), SpatialKey(c1, r1))
  def spaceTime(c0: Int, r0: Int, t0: String, c1: Int, r1: Int, t1: String): KeyBounds[SpaceTimeKey] =
    KeyBounds(SpaceTimeKey(c0, r0, t(t0)), SpaceTimeKey(c1, r1, t(t1)))

  def run(dir: File): Unit = {
    val spatialDumps: Seq[(String, KeyIndex[SpatialKey])] = Seq(
      "z_spatial_origin" -> new ZSpatialKeyIndex(spatial(0, 0, 31, 31)),
      "z_spatial_offset" -> new ZSpatialKeyIndex(spatial(1000, 2000, 1040, 2030)),
      "z_spatial_maxint" -> new ZSpatialKeyIndex(spatial(Int.MaxValue - 40, 0, Int.MaxValue, 12)),
      "rowmajor_offset" -> new RowMajorSpatialKeyIndex(spatial(2, 3, 40, 29)),
      "rowmajor_one_key" -> new RowMajorSpatialKeyIndex(spatial(7, 9, 7, 9)),
      "hilbert_spatial_square" -> hilbert(spatial(0, 0, 15, 15)),
      "hilbert_spatial_uneven" -> hilbert(spatial(3, 5, 20, 9)),
      "hilbert_spatial_offset" -> hilbert(spatial(100, 200, 227, 263)),
      "hilbert_spatial_one_row" -> hilbert(spatial(100, 200, 140, 200)),
      "hilbert_spatial_wide" -> HilbertSpatialKeyIndex(spatial(0, 0, 63, 39), 10, 9)
    )
    for ((name, ki) <- spatialDumps) {
      val kb = ki.keyBounds
      val rows = for (r <- kb.minKey.row to kb.maxKey.row; c <- kb.minKey.col to kb.maxKey.col)
        yield s"$c,$r,${ki.toIndex(SpatialKey(c, r))}"
      dump(dir, name, "col,row,index", rows, ki.asJson.spaces2)
    }

    val stDumps: Seq[(String, KeyIndex[SpaceTimeKey], Long)] = Seq(
      ("z_spacetime_days", ZSpaceTimeKeyIndex.byDay(spaceTime(0, 0, "2020-01-01T00:00:00Z", 7, 7, "2020-01-10T00:00:00Z")), 6 * 3600 * 1000L),
      // second bins since 1970 pass 2^21: GeoTrellis' Z3 keeps the low 21 bits
      ("z_spacetime_seconds", ZSpaceTimeKeyIndex.byMilliseconds(spaceTime(500, 100, "2023-05-01T00:00:00Z", 515, 103, "2023-05-01T00:10:00Z"), 1000L), 37 * 1000L),
      ("z_spacetime_month30", ZSpaceTimeKeyIndex.byMilliseconds(spaceTime(0, 0, "1970-01-01T00:00:00Z", 3, 3, "2030-01-01T00:00:00Z"), 30 * KeyIndexes.Day), 397 * KeyIndexes.Day),
      ("hilbert_spacetime_year", HilbertKeyIndexMethod(5).createIndex(spaceTime(0, 0, "2020-01-01T00:00:00Z", 7, 5, "2020-12-31T00:00:00Z")), 10 * KeyIndexes.Day),
      ("hilbert_spacetime_offset", HilbertKeyIndexMethod(8).createIndex(spaceTime(10, 20, "2021-03-01T00:00:00Z", 25, 22, "2021-06-01T00:00:00Z")), 3 * KeyIndexes.Day),
      ("hilbert_spacetime_dates", HilbertKeyIndexMethod(t("2000-01-01T00:00:00Z"), t("2040-01-01T00:00:00Z"), 6)
        .createIndex(spaceTime(3, 3, "2010-01-01T00:00:00Z", 10, 6, "2011-01-01T00:00:00Z")), 91 * KeyIndexes.Day)
    )
    for ((name, ki, step) <- stDumps) {
      val kb = ki.keyBounds
      val (t0, t1) = (kb.minKey.instant, kb.maxKey.instant)
      val instants = ((t0 to t1 by step) :+ t1).distinct
      val rows = for (ms <- instants; r <- kb.minKey.row to kb.maxKey.row; c <- kb.minKey.col to kb.maxKey.col)
        yield s"$c,$r,$ms,${ki.toIndex(SpaceTimeKey(c, r, ms))}"
      dump(dir, name, "col,row,millis,index", rows, ki.asJson.spaces2)
    }
  }

  def hilbert(kb: KeyBounds[SpatialKey]): KeyIndex[SpatialKey] =
    HilbertKeyIndexMethod.spatialKeyIndexIndex(HilbertKeyIndexMethod).createIndex(kb)

  def dump(dir: File, name: String, header: String, rows: Seq[String], json: String): Unit = {
    Fixtures.write(new File(dir, s"$name.csv"), (header +: rows).mkString("\n"))
    Fixtures.write(new File(dir, s"$name.json"), json)
    println(s"index dump $name: ${rows.size} keys")
  }
}
