package io.sfclayer.gtfixtures

import geotrellis.raster._

/** Deterministic tiles of every GeoTrellis cell type, and their cells back as doubles.
  *
  * Values come from a hash of (layer seed, key, band, pixel) over the cell type's whole range, so the
  * values GeoTrellis treats specially (its NODATA constants, a user-defined nodata value, NaN, ±Inf)
  * also occur as data in the types where they are data; ND types get extra nodata pixels on a diagonal
  * pattern. `smooth` tiles (the 256 px ones) are ramps, which deflate to little.
  */
object Tiles {
  /** numpy's name for the cells of a GeoTrellis cell type (bit cells as uint8 0/1). */
  def dtype(ct: CellType): String = ct match {
    case _: ByteCells => "int8"
    case _: UByteCells => "uint8"
    case _: ShortCells => "int16"
    case _: UShortCells => "uint16"
    case _: IntCells => "int32"
    case _: FloatCells => "float32"
    case _: DoubleCells => "float64"
    case BitCellType => "uint8"
  }

  /** The value missing cells hold, as sfclayer's raster convention writes it: None for raw types. */
  def nodata(ct: CellType): Option[Double] = ct match {
    case ByteConstantNoDataCellType => Some(Byte.MinValue.toDouble)
    case UByteConstantNoDataCellType | UShortConstantNoDataCellType => Some(0.0)
    case ShortConstantNoDataCellType => Some(Short.MinValue.toDouble)
    case IntConstantNoDataCellType => Some(Int.MinValue.toDouble)
    case FloatConstantNoDataCellType | DoubleConstantNoDataCellType => Some(Double.NaN)
    case ByteUserDefinedNoDataCellType(v) => Some(v.toDouble)
    case UByteUserDefinedNoDataCellType(v) => Some((v & 0xff).toDouble)
    case ShortUserDefinedNoDataCellType(v) => Some(v.toDouble)
    case UShortUserDefinedNoDataCellType(v) => Some((v & 0xffff).toDouble)
    case IntUserDefinedNoDataCellType(v) => Some(v.toDouble)
    case FloatUserDefinedNoDataCellType(v) => Some(v.toDouble)
    case DoubleUserDefinedNoDataCellType(v) => Some(v)
    case _ => None
  }

  private def hash(parts: Long*): Long = {
    var h = 0x9e3779b97f4a7c15L
    for (p <- parts) {
      h ^= p + 0x632be59bd9b4e019L + (h << 6) + (h >>> 2)
      h *= 0xbf58476d1ce4e5b9L
      h ^= h >>> 31
    }
    h
  }

  /** Raw cell values (row-major) of one band of one tile: what the tile's array holds. */
  def values(ct: CellType, seed: Long, key: Seq[Long], band: Int, cols: Int, rows: Int, smooth: Boolean): Array[Double] = {
    val nd = nodata(ct)
    Array.tabulate(cols * rows) { i =>
      val (x, y) = (i % cols, i / cols)
      val h = hash(seed +: key :+ band.toLong :+ i.toLong: _*)
      val u = h >>> 1 // non-negative
      val v: Double =
        if (smooth) ((x + y * 3 + key.sum * 17 + band * 40) % 250).toDouble
        else ct match {
          case _: ByteCells => (u % 256 - 128).toDouble
          case _: UByteCells => (u % 256).toDouble
          case _: ShortCells => (u % 65536 - 32768).toDouble
          case _: UShortCells => (u % 65536).toDouble
          case IntCellType => { val w = h.toInt; (if (w == Int.MinValue) 0 else w).toDouble }
          case _: IntCells => h.toInt.toDouble
          case _: FloatCells => special(u, (u % 20000 - 10000) / 8.0)
          case _: DoubleCells => special(u, (u % 2000000 - 1000000) / 16.0 + 1e-3 * (u % 7))
          case BitCellType => (u & 1).toDouble
        }
      // ND types: a diagonal of nodata pixels on top of the hash (which hits nodata now and then too)
      nd match {
        case Some(n) if (x + y + key.head) % 13 == 0 => n
        case _ => v
      }
    }
  }

  private def special(u: Long, v: Double): Double = (u >>> 20) % 97 match {
    case 0 => Double.NaN
    case 1 => Double.PositiveInfinity
    case 2 => Double.NegativeInfinity
    case 3 => -9999.0
    case 4 => -1.5
    case _ => if (v == 0.0) -0.0 else v
  }

  /** An array tile of `ct` holding `vals` exactly (no nodata conversion on the way in). */
  def arrayTile(ct: CellType, vals: Array[Double], cols: Int, rows: Int): Tile = ct match {
    case c: ByteCells with NoDataHandling => ByteArrayTile(vals.map(_.toInt.toByte), cols, rows, c)
    case c: UByteCells with NoDataHandling => UByteArrayTile(vals.map(_.toInt.toByte), cols, rows, c)
    case c: ShortCells with NoDataHandling => ShortArrayTile(vals.map(_.toInt.toShort), cols, rows, c)
    case c: UShortCells with NoDataHandling => UShortArrayTile(vals.map(_.toInt.toShort), cols, rows, c)
    case c: IntCells with NoDataHandling => IntArrayTile(vals.map(_.toInt), cols, rows, c)
    case c: FloatCells with NoDataHandling => FloatArrayTile(vals.map(_.toFloat), cols, rows, c)
    case c: DoubleCells with NoDataHandling => DoubleArrayTile(vals, cols, rows, c)
    case BitCellType =>
      val bytes = new Array[Byte]((cols * rows + 7) / 8)
      for (i <- vals.indices if vals(i) != 0) bytes(i >> 3) = (bytes(i >> 3) | (1 << (i & 7))).toByte
      BitArrayTile(bytes, cols, rows)
  }

  /** A constant tile of `ct` (GeoTrellis writes these as their own Avro records). */
  def constantTile(ct: CellType, v: Double, cols: Int, rows: Int): Tile = ct match {
    case c: ByteCells with NoDataHandling => ByteConstantTile(v.toByte, cols, rows, c)
    case c: UByteCells with NoDataHandling => UByteConstantTile(v.toInt.toByte, cols, rows, c)
    case c: ShortCells with NoDataHandling => ShortConstantTile(v.toShort, cols, rows, c)
    case c: UShortCells with NoDataHandling => UShortConstantTile(v.toInt.toShort, cols, rows, c)
    case c: IntCells with NoDataHandling => IntConstantTile(v.toInt, cols, rows, c)
    case c: FloatCells with NoDataHandling => FloatConstantTile(v.toFloat, cols, rows, c)
    case c: DoubleCells with NoDataHandling => DoubleConstantTile(v, cols, rows, c)
    case BitCellType => BitConstantTile(v != 0, cols, rows)
  }

  /** The raw cells of a tile as GeoTrellis reads it back, and GeoTrellis' own nodata verdict per cell.
    * Raw: what the array holds (a user-defined nodata value stays that value, unsigned types unsigned). */
  def cells(t: Tile): (Array[Double], Array[Boolean]) = {
    val raw = t.toArrayTile().withNoData(None)
    val n = t.cols * t.rows
    val vals = Array.tabulate(n) { i =>
      val (c, r) = (i % t.cols, i / t.cols)
      if (t.cellType.isFloatingPoint) raw.getDouble(c, r) else raw.get(c, r).toDouble
    }
    val nd = Array.tabulate(n) { i =>
      val (c, r) = (i % t.cols, i / t.cols)
      if (t.cellType.isFloatingPoint) isNoData(t.getDouble(c, r)) else isNoData(t.get(c, r))
    }
    (vals, nd)
  }
}
