package io.sfclayer.format;

import io.sfclayer.SfcLayerException;
import io.sfclayer.codec.TileSchema;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

import java.util.Locale;
import java.util.Map;

/**
 * Where the pixels are in a group of raster tiles (docs/FORMAT.md section 8: value columns
 * {@code pixels, width, height, bands, dtype, nodata}, and from format 5 a nullable binary {@code mask}), so that {@link RasterZstd} can filter each
 * tile's pixels by its own dtype and width before the entropy coder. Only the writer needs it: the
 * stored form lists the regions it filtered, so readers never parse the group to undo the filter.
 */
public final class RasterLayout {
    /** Value columns of the raster convention, in order, with their Spark types; the last, mask, is optional. */
    private static final String[] NAMES = {"pixels", "width", "height", "bands", "dtype", "nodata", "mask"};
    private static final DataType[] TYPES = {DataTypes.BinaryType, DataTypes.IntegerType, DataTypes.IntegerType,
        DataTypes.IntegerType, DataTypes.StringType, DataTypes.DoubleType, DataTypes.BinaryType};
    /** The index of the optional mask column (format 5: which pixels are valid, one bit each). */
    private static final int MASK = 6;
    /** The format version whose readers know the mask column (a format 4 reader would ignore it). */
    public static final int MASK_FORMAT_VERSION = 5;

    /** Bytes per value of the numpy dtype names a raster tile may carry. */
    private static final Map<String, Integer> ITEM_SIZES = Map.ofEntries(
        Map.entry("uint8", 1), Map.entry("int8", 1),
        Map.entry("uint16", 2), Map.entry("int16", 2), Map.entry("float16", 2),
        Map.entry("uint32", 4), Map.entry("int32", 4), Map.entry("float32", 4),
        Map.entry("uint64", 8), Map.entry("int64", 8), Map.entry("float64", 8));

    /** Receives each filterable pixel region of a group. */
    public interface Sink {
        /**
         * @param start    offset of the tile's pixels in the scanned array
         * @param length   their bytes: {@code bands × height × width × itemSize}
         * @param itemSize bytes per value
         * @param width    values per row
         */
        void region(int start, int length, int itemSize, int width);
    }

    private final boolean spaceTime;
    /** Whether the tiles have the mask column. */
    private final boolean masked;
    /** Whether each of {@link #NAMES} is a ["null", T] union. */
    private final boolean[] nullable = new boolean[NAMES.length];

    private RasterLayout(boolean spaceTime, boolean masked) {
        this.spaceTime = spaceTime;
        this.masked = masked;
    }

    /** The layout of {@code schema}'s tiles, or null when its value columns are not the raster convention. */
    public static RasterLayout of(TileSchema schema) {
        StructType vs = schema.valueSchema();
        StructField[] f = vs.fields();
        if (f.length != NAMES.length && f.length != MASK) return null;
        RasterLayout l = new RasterLayout(schema.spaceTime(), f.length > MASK);
        for (int i = 0; i < f.length; i++) {
            if (!f[i].name().equals(NAMES[i]) || !f[i].dataType().equals(TYPES[i])) return null;
            l.nullable[i] = f[i].nullable();
        }
        return l;
    }

    /**
     * Reports every tile of the Avro group {@code b[off .. off+len)} whose pixels are exactly
     * {@code bands × height × width} values of a known dtype (other tiles are left as they are).
     *
     * @throws SfcLayerException.InvalidInput if the group does not follow this layout
     */
    public void scan(byte[] b, int off, int len, Sink sink) {
        Cursor c = new Cursor(b, off, off + len);
        while (true) {
            long count = c.varlong();
            if (count == 0) break;
            if (count < 0) {
                count = -count;
                c.varlong(); // the block's byte size
            }
            for (long i = 0; i < count; i++) {
                tile(c, sink);
            }
        }
        if (c.p != off + len) throw bad("bytes after the end of the array");
    }

    private void tile(Cursor c, RasterLayout.Sink sink) {
        c.varlong(); // col
        c.varlong(); // row
        if (spaceTime) c.varlong();
        int pixStart = -1, pixLen = 0;
        if (present(c, 0)) {
            pixLen = c.length();
            pixStart = c.p;
            c.skip(pixLen);
        }
        long width = present(c, 1) ? c.varlong() : -1;
        long height = present(c, 2) ? c.varlong() : -1;
        long bands = present(c, 3) ? c.varlong() : -1;
        String dtype = null;
        if (present(c, 4)) {
            int n = c.length();
            dtype = new String(c.b, c.p, n, java.nio.charset.StandardCharsets.UTF_8).toLowerCase(Locale.ROOT);
            c.skip(n);
        }
        if (present(c, 5)) c.skip(8);
        if (masked && present(c, MASK)) c.skip(c.length());
        Integer s = dtype == null ? null : ITEM_SIZES.get(dtype);
        if (pixStart < 0 || s == null || width < 1 || height < 1 || bands < 1) return;
        if (width > Integer.MAX_VALUE || height > Integer.MAX_VALUE || bands > Integer.MAX_VALUE) return;
        long n = width * height; // each below 2^31: no overflow, nor after the checks below
        if (n > pixLen || (n *= bands) > pixLen || n * s != pixLen) return; // not well-formed: stored as it is
        sink.region(pixStart, pixLen, s, (int) width);
    }

    /**
     * Whether a layer of {@code valueSchemaJson} holds raster tiles with the mask column: its
     * documents then say at least {@link #MASK_FORMAT_VERSION}.
     */
    public static boolean hasMask(String valueSchemaJson, boolean spaceTime) {
        if (valueSchemaJson == null) return false;
        RasterLayout l = of(TileSchema.fromJson(valueSchemaJson, spaceTime));
        return l != null && l.masked;
    }

    /** Reads a nullable field's union branch; true when the value follows. */
    private boolean present(Cursor c, int field) {
        if (!nullable[field]) return true;
        long branch = c.varlong();
        if (branch != 0 && branch != 1) throw bad("union branch " + branch);
        return branch == 1;
    }

    private static SfcLayerException.InvalidInput bad(String what) {
        return new SfcLayerException.InvalidInput("a group of raster tiles does not follow its schema: " + what);
    }

    /** A bounded reader of Avro's zig-zag varints. */
    private static final class Cursor {
        final byte[] b;
        int p;
        final int end;

        Cursor(byte[] b, int p, int end) {
            this.b = b;
            this.p = p;
            this.end = end;
        }

        long varlong() {
            long raw = 0;
            for (int shift = 0; shift <= 63; shift += 7) {
                if (p >= end) throw bad("truncated varint");
                int x = b[p++] & 0xff;
                raw |= (long) (x & 0x7f) << shift;
                if ((x & 0x80) == 0) return (raw >>> 1) ^ -(raw & 1);
            }
            throw bad("varint too long");
        }

        int length() {
            long n = varlong();
            if (n < 0 || n > end - p) throw bad("length " + n + " past the end");
            return (int) n;
        }

        void skip(int n) {
            if (n > end - p) throw bad("field past the end");
            p += n;
        }
    }
}
