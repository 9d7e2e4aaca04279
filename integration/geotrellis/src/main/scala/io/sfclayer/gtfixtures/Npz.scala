package io.sfclayer.gtfixtures

import java.io.{BufferedOutputStream, FileOutputStream}
import java.nio.{ByteBuffer, ByteOrder}
import java.nio.charset.StandardCharsets.US_ASCII
import java.util.zip.{ZipEntry, ZipOutputStream}

/** A numpy array to be saved: little-endian bytes, numpy's type code and the shape. */
final case class NpyArray(descr: String, shape: Seq[Int], data: Array[Byte])

/** Writes `.npz` files (a zip of `.npy` files, format 1.0) so the Python tests read the expected values
  * with `numpy.load` and nothing else. */
object Npz {
  def write(path: String, arrays: Seq[(String, NpyArray)]): Unit = {
    val zip = new ZipOutputStream(new BufferedOutputStream(new FileOutputStream(path)))
    try {
      zip.setLevel(9)
      for ((name, a) <- arrays) {
        zip.putNextEntry(new ZipEntry(name + ".npy"))
        zip.write(npy(a))
        zip.closeEntry()
      }
    } finally zip.close()
  }

  private def npy(a: NpyArray): Array[Byte] = {
    val shape = a.shape match {
      case Seq(n) => s"($n,)"
      case s => s.mkString("(", ", ", ")")
    }
    val dict = s"{'descr': '${a.descr}', 'fortran_order': False, 'shape': $shape, }"
    // magic (6) + version (2) + header length (2) + header, padded with spaces to 64 bytes, ending in \n
    val unpadded = 10 + dict.length + 1
    val header = dict + " " * ((64 - unpadded % 64) % 64) + "\n"
    val buf = ByteBuffer.allocate(10 + header.length + a.data.length).order(ByteOrder.LITTLE_ENDIAN)
    buf.put(0x93.toByte).put("NUMPY".getBytes(US_ASCII)).put(1.toByte).put(0.toByte)
    buf.putShort(header.length.toShort).put(header.getBytes(US_ASCII)).put(a.data)
    buf.array()
  }

  def longs(shape: Seq[Int], values: Array[Long]): NpyArray = {
    val b = ByteBuffer.allocate(values.length * 8).order(ByteOrder.LITTLE_ENDIAN)
    values.foreach(b.putLong)
    NpyArray("<i8", shape, b.array())
  }

  def bools(shape: Seq[Int], values: Array[Boolean]): NpyArray =
    NpyArray("|b1", shape, values.map(v => (if (v) 1 else 0).toByte))

  /** Cells of numpy type `dtype` (int8 ... float64) from doubles that hold them exactly. */
  def cells(dtype: String, shape: Seq[Int], values: Array[Double]): NpyArray = {
    val (descr, size) = dtype match {
      case "int8" => ("|i1", 1); case "uint8" => ("|u1", 1)
      case "int16" => ("<i2", 2); case "uint16" => ("<u2", 2)
      case "int32" => ("<i4", 4); case "float32" => ("<f4", 4); case "float64" => ("<f8", 8)
    }
    val b = ByteBuffer.allocate(values.length * size).order(ByteOrder.LITTLE_ENDIAN)
    values.foreach { v =>
      dtype match {
        case "int8" | "uint8" => b.put(v.toInt.toByte)
        case "int16" | "uint16" => b.putShort(v.toInt.toShort)
        case "int32" => b.putInt(v.toInt)
        case "float32" => b.putFloat(v.toFloat)
        case "float64" => b.putDouble(v)
      }
    }
    NpyArray(descr, shape, b.array())
  }
}
