package io.sfclayer.geotrellis;

import io.sfclayer.SfcLayerException;
import org.apache.avro.generic.GenericRecord;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;

/**
 * The pixels of one GeoTrellis tile record (store/avro/codecs: TileCodecs, ConstantTileCodecs): the 8
 * array tiles, the 8 constant tiles, PaddedTile, and ArrayMultibandTile over them, with each cell type's
 * nodata rule as GeoTrellis decodes it (absent/null = raw, the type's constant, or user-defined; floats
 * {@code true} = NaN, {@code false} = raw). Records are told apart by their name, not namespace (it
 * changed across GeoTrellis versions).
 */
final class GtPixels {
    final byte[] pixels;
    final int width, height, bands;
    final String dtype;
    final Double nodata;

    private GtPixels(byte[] pixels, int width, int height, int bands, String dtype, Double nodata) {
        this.pixels = pixels;
        this.width = width;
        this.height = height;
        this.bands = bands;
        this.dtype = dtype;
        this.nodata = nodata;
    }

    /** A tile record (any of the 17) or an ArrayMultibandTile. */
    static GtPixels decode(GenericRecord rec, String where) {
        if (!"ArrayMultibandTile".equals(rec.getSchema().getName())) {
            return single(rec, where);
        }
        List<?> list = (List<?>) rec.get("bands");
        if (list == null || list.isEmpty()) throw bad(where, "ArrayMultibandTile without bands");
        GtPixels first = null;
        byte[] all = null;
        int at = 0;
        for (Object o : list) {
            GtPixels b = single((GenericRecord) o, where);
            if (first == null) {
                first = b;
                all = new byte[b.pixels.length * list.size()];
            } else if (!b.dtype.equals(first.dtype) || b.width != first.width || b.height != first.height) {
                throw new SfcLayerException.UnsupportedFormat(where + ": bands of different cell types or sizes ("
                    + first.dtype + " " + first.width + "×" + first.height + ", " + b.dtype + " " + b.width + "×"
                    + b.height + ") do not make one sfclayer raster tile");
            }
            System.arraycopy(b.pixels, 0, all, at, b.pixels.length);
            at += b.pixels.length;
        }
        return new GtPixels(all, first.width, first.height, list.size(), first.dtype, first.nodata);
    }

    private static GtPixels single(GenericRecord rec, String where) {
        String kind = rec.getSchema().getName();
        if (kind.equals("PaddedTile")) return padded(rec, where);
        int w = integer(rec, "cols", where), h = integer(rec, "rows", where);
        if (w < 0 || h < 0 || (long) w * h > Integer.MAX_VALUE / 8) throw bad(where, kind + " of " + w + " × " + h);
        int n = w * h;
        boolean constant = kind.endsWith("ConstantTile");
        String cell = constant ? kind.substring(0, kind.length() - "ConstantTile".length())
            : kind.endsWith("ArrayTile") ? kind.substring(0, kind.length() - "ArrayTile".length()) : null;
        if (cell == null) throw new SfcLayerException.UnsupportedFormat(where + ": tile record " + kind + " is not one sfclayer reads");
        Object nd = rec.getSchema().getField("noDataValue") == null ? null : rec.get("noDataValue");
        ByteBuffer out;
        switch (cell) {
            case "Bit": {
                out = buffer(n);
                if (constant) {
                    byte v = Boolean.TRUE.equals(rec.get("cell")) ? (byte) 1 : 0;
                    for (int i = 0; i < n; i++) out.put(v);
                } else {
                    byte[] c = bytes(rec, where, (n + 7) / 8);
                    for (int i = 0; i < n; i++) out.put((byte) ((c[i >> 3] >> (i & 7)) & 1)); // LSB first
                }
                return new GtPixels(out.array(), w, h, 1, "uint8", null);
            }
            case "Byte":
            case "UByte": {
                boolean u = cell.equals("UByte");
                out = buffer(n);
                if (constant) {
                    byte v = (byte) integer(rec, "cell", where);
                    for (int i = 0; i < n; i++) out.put(v);
                } else {
                    out.put(bytes(rec, where, n), 0, n);
                }
                Double nodata = nd == null ? null : (double) (u ? ((Integer) nd).byteValue() & 0xff : ((Integer) nd).byteValue());
                return new GtPixels(out.array(), w, h, 1, u ? "uint8" : "int8", nodata);
            }
            case "Short":
            case "UShort": {
                boolean u = cell.equals("UShort");
                out = buffer(2 * n);
                if (constant) {
                    short v = (short) integer(rec, "cell", where);
                    for (int i = 0; i < n; i++) out.putShort(v);
                } else {
                    List<?> c = cells(rec, where, n);
                    for (int i = 0; i < n; i++) out.putShort(((Integer) c.get(i)).shortValue());
                }
                Double nodata = nd == null ? null : (double) (u ? ((Integer) nd).shortValue() & 0xffff : ((Integer) nd).shortValue());
                return new GtPixels(out.array(), w, h, 1, u ? "uint16" : "int16", nodata);
            }
            case "Int": {
                out = buffer(4 * n);
                if (constant) {
                    int v = integer(rec, "cell", where);
                    for (int i = 0; i < n; i++) out.putInt(v);
                } else {
                    List<?> c = cells(rec, where, n);
                    for (int i = 0; i < n; i++) out.putInt((Integer) c.get(i));
                }
                return new GtPixels(out.array(), w, h, 1, "int32", nd == null ? null : (double) (Integer) nd);
            }
            case "Float": {
                out = buffer(4 * n);
                if (constant) {
                    float v = (Float) rec.get("cell");
                    for (int i = 0; i < n; i++) out.putFloat(v);
                } else {
                    List<?> c = cells(rec, where, n);
                    for (int i = 0; i < n; i++) out.putFloat((Float) c.get(i));
                }
                return new GtPixels(out.array(), w, h, 1, "float32", floatNodata(nd));
            }
            case "Double": {
                out = buffer(8 * n);
                if (constant) {
                    double v = (Double) rec.get("cell");
                    Double udNodata = floatNodata(nd);
                    // GeoTrellis' DoubleConstantTile (alone of the constant tiles) fills from dVal: NaN
                    // when the cell is the user-defined nodata value
                    if (udNodata != null && !udNodata.isNaN() && udNodata == v) v = Double.NaN;
                    for (int i = 0; i < n; i++) out.putDouble(v);
                } else {
                    List<?> c = cells(rec, where, n);
                    for (int i = 0; i < n; i++) out.putDouble((Double) c.get(i));
                }
                return new GtPixels(out.array(), w, h, 1, "float64", floatNodata(nd));
            }
            default:
                throw new SfcLayerException.UnsupportedFormat(where + ": tile record " + kind + " is not one sfclayer reads");
        }
    }

    /** Floats: true = NaN (ConstantNoData), false = none (raw), a number = user-defined. */
    private static Double floatNodata(Object nd) {
        if (nd == null || Boolean.FALSE.equals(nd)) return null;
        if (Boolean.TRUE.equals(nd)) return Double.NaN;
        return ((Number) nd).doubleValue();
    }

    /**
     * PaddedTile: its chunk at (colOffset, rowOffset) in a cols × rows tile; the rest holds what GeoTrellis'
     * {@code PaddedTile.mutable} writes there: the cell type's nodata, or for raw types NODATA's conversion
     * (0 for bits, bytes and shorts, Int.MinValue for ints, NaN for floats).
     */
    private static GtPixels padded(GenericRecord rec, String where) {
        GtPixels chunk = single((GenericRecord) rec.get("chunk"), where);
        int w = integer(rec, "cols", where), h = integer(rec, "rows", where);
        int co = integer(rec, "colOffset", where), ro = integer(rec, "rowOffset", where);
        if (w < 0 || h < 0 || (long) w * h > Integer.MAX_VALUE / 8 || co < 0 || ro < 0
                || co + chunk.width > w || ro + chunk.height > h) {
            throw bad(where, "PaddedTile of " + w + " × " + h + " with a " + chunk.width + " × " + chunk.height
                + " chunk at " + co + ", " + ro);
        }
        int size = chunk.width == 0 || chunk.height == 0 ? itemSize(chunk.dtype)
            : chunk.pixels.length / (chunk.width * chunk.height);
        ByteBuffer fill = buffer(size);
        Double nd = chunk.nodata;
        switch (chunk.dtype) {
            case "uint8": case "int8": fill.put(nd == null ? 0 : (byte) nd.intValue()); break;
            case "uint16": case "int16": fill.putShort(nd == null ? 0 : (short) nd.intValue()); break;
            case "int32": fill.putInt(nd == null ? Integer.MIN_VALUE : nd.intValue()); break;
            case "float32": fill.putFloat(nd == null ? Float.NaN : nd.floatValue()); break;
            default: fill.putDouble(nd == null ? Double.NaN : nd); break;
        }
        byte[] f = fill.array();
        byte[] chunkPixels = chunk.pixels;
        if (nd != null && !nd.isNaN() && chunk.dtype.startsWith("float")) {
            chunkPixels = nanToNodata(chunkPixels, chunk.dtype, nd);
        }
        byte[] out = new byte[w * h * size];
        for (int i = 0; i < w * h; i++) System.arraycopy(f, 0, out, i * size, size);
        for (int r = 0; r < chunk.height; r++) {
            System.arraycopy(chunkPixels, r * chunk.width * size, out, ((ro + r) * w + co) * size, chunk.width * size);
        }
        return new GtPixels(out, w, h, 1, chunk.dtype, nd);
    }

    /**
     * GeoTrellis' PaddedTile.mutable copies a float chunk through getDouble/setDouble: a NaN cell of a
     * user-defined nodata type reads as nodata and is written back as the type's nodata value.
     */
    private static byte[] nanToNodata(byte[] pixels, String dtype, double nd) {
        ByteBuffer b = ByteBuffer.wrap(pixels.clone()).order(ByteOrder.LITTLE_ENDIAN);
        if (dtype.equals("float32")) {
            for (int i = 0; i + 4 <= pixels.length; i += 4) if (Float.isNaN(b.getFloat(i))) b.putFloat(i, (float) nd);
        } else {
            for (int i = 0; i + 8 <= pixels.length; i += 8) if (Double.isNaN(b.getDouble(i))) b.putDouble(i, nd);
        }
        return b.array();
    }

    private static int itemSize(String dtype) {
        switch (dtype) {
            case "uint8": case "int8": return 1;
            case "uint16": case "int16": return 2;
            case "int32": case "float32": return 4;
            default: return 8;
        }
    }

    private static ByteBuffer buffer(int n) {
        return ByteBuffer.allocate(n).order(ByteOrder.LITTLE_ENDIAN);
    }

    private static int integer(GenericRecord rec, String field, String where) {
        Object v = rec.getSchema().getField(field) == null ? null : rec.get(field);
        if (!(v instanceof Integer)) throw bad(where, rec.getSchema().getName() + " without int " + field);
        return (Integer) v;
    }

    private static byte[] bytes(GenericRecord rec, String where, int expected) {
        Object v = rec.get("cells");
        if (!(v instanceof ByteBuffer)) throw bad(where, rec.getSchema().getName() + " without bytes cells");
        ByteBuffer b = ((ByteBuffer) v).duplicate();
        if (b.remaining() < expected) {
            throw bad(where, rec.getSchema().getName() + " with " + b.remaining() + " bytes of cells, " + expected + " expected");
        }
        byte[] out = new byte[expected];
        b.get(out);
        return out;
    }

    private static List<?> cells(GenericRecord rec, String where, int expected) {
        Object v = rec.get("cells");
        if (!(v instanceof List) || ((List<?>) v).size() != expected) {
            throw bad(where, rec.getSchema().getName() + " with " + (v instanceof List ? ((List<?>) v).size() : 0)
                + " cells, " + expected + " expected");
        }
        return (List<?>) v;
    }

    private static SfcLayerException.CorruptLayer bad(String where, String what) {
        return new SfcLayerException.CorruptLayer(where + ": " + what);
    }
}
