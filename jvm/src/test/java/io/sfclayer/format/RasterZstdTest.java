package io.sfclayer.format;

import io.sfclayer.SfcLayerException;
import io.sfclayer.codec.TileSchema;
import io.sfclayer.codec.TileWriter;
import io.sfclayer.codec.Varint;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.Test;

import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

/** The zstd-raster stored form: filters, region table, round trips, damage (docs/FORMAT.md section 4). */
public class RasterZstdTest {

    static StructType rasterColumns(boolean nullable) {
        return new StructType(new StructField[]{
            new StructField("pixels", DataTypes.BinaryType, nullable, Metadata.empty()),
            new StructField("width", DataTypes.IntegerType, nullable, Metadata.empty()),
            new StructField("height", DataTypes.IntegerType, nullable, Metadata.empty()),
            new StructField("bands", DataTypes.IntegerType, nullable, Metadata.empty()),
            new StructField("dtype", DataTypes.StringType, nullable, Metadata.empty()),
            new StructField("nodata", DataTypes.DoubleType, true, Metadata.empty())});
    }

    /** One tile's raster columns (a class, not a record: Gradle 4's test scanner reads no records). */
    static final class Px {
        final byte[] pixels;
        final int width, height, bands;
        final String dtype;

        Px(byte[] pixels, int width, int height, int bands, String dtype) {
            this.pixels = pixels;
            this.width = width;
            this.height = height;
            this.bands = bands;
            this.dtype = dtype;
        }
    }

    /** An Avro group (one block) of raster tiles, as GroupWriter writes it. */
    static byte[] group(TileSchema schema, List<Px> tiles) {
        int n = 6;
        int[] ords = {0, 1, 2, 3, 4, 5};
        TileWriter w = new TileWriter(schema, n, n + 1, schema.spaceTime() ? n + 2 : -1, ords);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] head = new byte[10];
        out.write(head, 0, Varint.writeLong(head, 0, tiles.size()));
        int i = 0;
        for (Px t : tiles) {
            Object[] v = {t.pixels, t.width, t.height, t.bands, UTF8String.fromString(t.dtype), i % 2 == 0 ? null : -9999.0,
                i, 2 * i, 1_700_000_000_000_000L};
            out.writeBytes(w.encodeRecord(new GenericInternalRow(schema.spaceTime() ? v : Arrays.copyOf(v, 8))));
            i++;
        }
        out.write(0);
        return out.toByteArray();
    }

    static byte[] demLike(Random r, int w, int h) {
        byte[] b = new byte[w * h * 2];
        for (int i = 0; i < w * h; i++) {
            int v = 1000 + (i % w) * 3 + (i / w) * 2 + r.nextInt(5);
            b[2 * i] = (byte) v;
            b[2 * i + 1] = (byte) (v >> 8);
        }
        return b;
    }

    @Test
    public void predictorBytesAreTheSpecified() {
        // int16 rows of width 3: [1, 3, 2], [5, 5, 4] → deltas [1, 2, -1], [5, 0, -1], little-endian,
        // then the low bytes of the six values and then the high bytes
        byte[] src = {1, 0, 3, 0, 2, 0, 5, 0, 5, 0, 4, 0};
        byte[] dst = new byte[12];
        RasterPredictor.encode(src, 0, 12, 2, RasterPredictor.DELTA | RasterPredictor.SHUFFLE, 3, dst, 0);
        assertArrayEquals(new byte[]{1, 2, -1, 5, 0, -1, 0, 0, -1, 0, 0, -1}, dst);
        RasterPredictor.decode(dst, 0, 12, 2, RasterPredictor.DELTA | RasterPredictor.SHUFFLE, 3, new byte[12]);
        assertArrayEquals(src, dst);
    }

    @Test
    public void predictorRoundTripsEveryItemSizeAndFilter() {
        Random r = new Random(7);
        for (int size : new int[]{1, 2, 4, 8}) {
            for (int f = 0; f <= 3; f++) {
                byte[] src = new byte[size * 6 * 5];
                r.nextBytes(src);
                byte[] enc = new byte[src.length + 3];
                RasterPredictor.encode(src, 0, src.length, size, f, 6, enc, 3);
                byte[] back = Arrays.copyOfRange(enc, 3, enc.length);
                RasterPredictor.decode(back, 0, back.length, size, f, 6, new byte[back.length]);
                assertArrayEquals("size " + size + " filters " + f, src, back);
            }
        }
    }

    @Test
    public void rasterGroupsRoundTripAndShrink() {
        Random r = new Random(3);
        for (boolean spaceTime : new boolean[]{false, true}) {
            for (boolean nullable : new boolean[]{false, true}) {
                TileSchema schema = TileSchema.fromSpark(rasterColumns(nullable), spaceTime);
                RasterLayout layout = RasterLayout.of(schema);
                assertNotNull(layout);
                byte[] rgb = new byte[3 * 16 * 8];
                r.nextBytes(rgb);
                byte[] f32 = new byte[4 * 10 * 10];
                r.nextBytes(f32);
                List<Px> tiles = List.of(new Px(demLike(r, 32, 32), 32, 32, 1, "int16"),
                    new Px(rgb, 16, 8, 3, "uint8"), new Px(f32, 10, 10, 1, "float32"),
                    new Px(new byte[7], 2, 2, 1, "int16"), // not bands × height × width values: left as it is
                    new Px(new byte[8], 2, 2, 1, "complex64")); // a dtype it does not know: left as it is
                byte[] g = group(schema, tiles);
                byte[] padded = new byte[g.length + 5];
                System.arraycopy(g, 0, padded, 2, g.length);
                byte[] stored = ValueCompression.ZSTD_RASTER.compress(padded, 2, g.length, layout);
                assertEquals(g.length, ((stored[0] & 0xFF) << 24) | ((stored[1] & 0xFF) << 16) | ((stored[2] & 0xFF) << 8)
                    | (stored[3] & 0xFF));
                assertEquals("three filtered regions", 3, stored[4]);
                assertArrayEquals(g, ValueCompression.ZSTD_RASTER.decompress(stored, 0, stored.length));
                byte[] plain = ValueCompression.ZSTD_RASTER.compress(g, 0, g.length, null);
                assertEquals("no layout: no regions", 0, plain[4]);
                assertArrayEquals(g, ValueCompression.ZSTD_RASTER.decompress(plain, 0, plain.length));
            }
        }
        TileSchema schema = TileSchema.fromSpark(rasterColumns(false), false);
        List<Px> dems = new ArrayList<>();
        for (int i = 0; i < 4; i++) dems.add(new Px(demLike(r, 64, 64), 64, 64, 1, "int16"));
        byte[] g = group(schema, dems);
        int filtered = ValueCompression.ZSTD_RASTER.compress(g, 0, g.length, RasterLayout.of(schema)).length;
        int zstd = ValueCompression.ZSTD.compress(g, 0, g.length).length;
        assertTrue("filtered " + filtered + " vs zstd " + zstd, filtered < 0.8 * zstd);
    }

    @Test
    public void maskedRasterTilesKeepTheirLayout() {
        // format 5: a nullable binary mask column after nodata (one bit per pixel, or null)
        StructType masked = rasterColumns(true).add("mask", DataTypes.BinaryType, true);
        TileSchema schema = TileSchema.fromSpark(masked, false);
        RasterLayout layout = RasterLayout.of(schema);
        assertNotNull(layout);
        assertTrue(RasterLayout.hasMask(masked.json(), false));
        assertTrue(!RasterLayout.hasMask(rasterColumns(true).json(), false));
        Random r = new Random(11);
        int[] ords = {0, 1, 2, 3, 4, 5, 6};
        TileWriter w = new TileWriter(schema, 7, 8, -1, ords);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] head = new byte[10];
        out.write(head, 0, Varint.writeLong(head, 0, 3));
        for (int i = 0; i < 3; i++) {
            byte[] mask = i == 1 ? null : new byte[]{(byte) 0xF0, 0, (byte) 0x80}; // 24 bits: a 4 × 4 tile + 8
            Object[] v = {demLike(r, 4, 4), 4, 4, 1, UTF8String.fromString("int16"), null, mask, i, i};
            out.writeBytes(w.encodeRecord(new GenericInternalRow(v)));
        }
        out.write(0);
        byte[] g = out.toByteArray();
        byte[] stored = ValueCompression.ZSTD_RASTER.compress(g, 0, g.length, layout);
        assertEquals("every tile's pixels filtered, masks skipped", 3, stored[4]);
        assertArrayEquals(g, ValueCompression.ZSTD_RASTER.decompress(stored, 0, stored.length));
    }

    @Test
    public void onlyTheRasterConventionHasALayout() {
        assertNull(RasterLayout.of(TileSchema.fromSpark(new StructType().add("pixels", DataTypes.BinaryType), false)));
        StructType renamed = new StructType(rasterColumns(false).fields().clone());
        renamed.fields()[4] = new StructField("kind", DataTypes.StringType, false, Metadata.empty());
        assertNull(RasterLayout.of(TileSchema.fromSpark(renamed, false)));
        assertSame(ValueCompression.ZSTD_RASTER, ValueCompression.defaultFor(TileSchema.fromSpark(rasterColumns(true), true)));
        // generic layers: zstd where a column is binary (bytes to gain), none for numbers and strings
        assertSame(ValueCompression.ZSTD, ValueCompression.defaultFor(
            TileSchema.fromSpark(new StructType().add("v", DataTypes.BinaryType), false)));
        assertSame(ValueCompression.NONE, ValueCompression.defaultFor(
            TileSchema.fromSpark(new StructType().add("v", DataTypes.LongType).add("s", DataTypes.StringType), false)));
        assertSame(ValueCompression.ZSTD_RASTER, ValueCompression.parse("ZSTD-raster"));
        assertEquals(4, ValueCompression.ZSTD_RASTER.formatVersion());
        assertEquals(1, ValueCompression.ZSTD.formatVersion());
    }

    @Test
    public void damagedStoredFormsAreCorruptNotData() {
        Random r = new Random(11);
        TileSchema schema = TileSchema.fromSpark(rasterColumns(false), false);
        byte[] g = group(schema, List.of(new Px(demLike(r, 16, 16), 16, 16, 1, "int16")));
        byte[] stored = ValueCompression.ZSTD_RASTER.compress(g, 0, g.length, RasterLayout.of(schema));
        List<byte[]> bad = new ArrayList<>();
        bad.add(Arrays.copyOf(stored, 3));                  // shorter than the length prefix
        bad.add(Arrays.copyOf(stored, 7));                  // cut in the region table
        bad.add(Arrays.copyOf(stored, stored.length - 2));  // cut in the frame
        // length 4, count 1, gap 1 byte, region length 512 (2 bytes), then the item size at 8
        assertEquals(1, stored[4]);
        assertEquals(2, stored[8]);
        assertTrue("filters tried for int16", Arrays.asList((byte) 3, (byte) 2, (byte) 1).contains(stored[9]));
        assertEquals(16, stored[10]);
        byte[] size = stored.clone();
        size[8] = 3;                                         // item size 3
        byte[] count = stored.clone();
        count[4] = 0x7F;                                     // 127 regions in a few bytes
        byte[] len = stored.clone();
        len[3]++;                                            // declared length one more than the frame holds
        byte[] frame = stored.clone();
        frame[frame.length - 6] ^= 0x55;                     // a flipped byte inside the frame (the checksum catches it)
        bad.addAll(List.of(size, count, len, frame));
        for (byte[] b : bad) {
            try {
                ValueCompression.ZSTD_RASTER.decompress(b, 0, b.length);
                fail("decoded a damaged stored form: " + Arrays.toString(b));
            } catch (SfcLayerException.CorruptLayer e) {
                assertTrue(e.getMessage(), e.getMessage().contains("zstd-raster"));
            }
        }
    }
}
