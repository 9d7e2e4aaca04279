package io.sfclayer.codec;

// Over 500 lines on purpose: every Spark type through TileWriter and TileCursor, each round trip
// checked against Avro's own reader, plus the malformed-input cases; they share the fixtures above
// the first test (rows, projections, the Avro reference decoder).

import io.sfclayer.SfcLayerException;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.io.EncoderFactory;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeArrayData;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.util.ArrayBasedMapData;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.Test;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

import static io.sfclayer.codec.CodecTestData.assertSparkEquals;
import static io.sfclayer.codec.CodecTestData.f;
import static io.sfclayer.codec.CodecTestData.fromAvro;
import static io.sfclayer.codec.CodecTestData.struct;
import static io.sfclayer.codec.CodecTestData.toAvro;
import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

public class TileCodecTest {

    /** One tile: key and value-column values (Spark internal objects). */
    static final class Tile {
        final int col, row;
        final long time;
        final Object[] values;

        Tile(int col, int row, long time, Object[] values) {
            this.col = col;
            this.row = row;
            this.time = time;
            this.values = values;
        }
    }

    /** Input rows are laid out as [values..., junk, col, row, (time)] to exercise the ordinals. */
    static InternalRow inputRow(Tile t, boolean spaceTime) {
        int n = t.values.length;
        Object[] r = new Object[n + (spaceTime ? 4 : 3)];
        System.arraycopy(t.values, 0, r, 0, n);
        r[n] = UTF8String.fromString("junk");
        r[n + 1] = t.col;
        r[n + 2] = t.row;
        if (spaceTime) r[n + 3] = t.time;
        return new GenericInternalRow(r);
    }

    static StructType inputSchema(StructType values, boolean spaceTime) {
        StructType s = values.add("junk", DataTypes.StringType).add("col", DataTypes.IntegerType, false)
                .add("row", DataTypes.IntegerType, false);
        return spaceTime ? s.add("time", DataTypes.TimestampType, false) : s;
    }

    static TileGroupWriter writer(TileSchema schema) {
        int n = schema.numValues();
        int[] ords = new int[n];
        for (int i = 0; i < n; i++) ords[i] = i;
        return new TileGroupWriter(new TileWriter(schema, n + 1, n + 2, schema.spaceTime() ? n + 3 : -1, ords));
    }

    static List<Tile> randomTiles(StructType values, int count, Random r) {
        List<Tile> tiles = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            tiles.add(new Tile(r.nextInt() >> r.nextInt(32), r.nextInt(1000) - 500, r.nextLong() >> r.nextInt(64),
                    CodecTestData.randomValues(values, r)));
        }
        return tiles;
    }

    static byte[] encode(TileSchema schema, List<Tile> tiles, boolean unsafe) {
        TileGroupWriter w = writer(schema);
        UnsafeProjection proj = unsafe ? projection(inputSchema(schema.valueSchema(), schema.spaceTime())) : null;
        w.beginGroup();
        for (Tile t : tiles) {
            InternalRow row = inputRow(t, schema.spaceTime());
            w.add(unsafe ? proj.apply(row) : row);
        }
        assertEquals(tiles.size(), w.recordCount());
        return w.endGroup();
    }

    private static final java.util.Map<StructType, UnsafeProjection> PROJECTIONS = new java.util.HashMap<>();

    /** GenericInternalRow to UnsafeRow (code generation is slow: one projection per schema). */
    static synchronized UnsafeProjection projection(StructType schema) {
        return PROJECTIONS.computeIfAbsent(schema, UnsafeProjection::create);
    }

    static int[] identity(int n) {
        int[] t = new int[n];
        for (int i = 0; i < n; i++) t[i] = i;
        return t;
    }

    static void assertDecodes(TileSchema schema, List<Tile> tiles, byte[] buf, int off, int len) {
        TileCursor c = new TileCursor(schema);
        c.reset(buf, off, len);
        StructField[] fs = schema.valueSchema().fields();
        int[] all = identity(fs.length);
        for (int i = 0; i < tiles.size(); i++) {
            Tile t = tiles.get(i);
            assertTrue("record " + i, c.next());
            assertEquals(t.col, c.col());
            assertEquals(t.row, c.row());
            assertEquals(schema.spaceTime() ? t.time : 0L, c.timeMicros());
            Object[] out = new Object[fs.length];
            c.readValues(out, all);
            for (int j = 0; j < fs.length; j++) {
                assertSparkEquals("record " + i + " " + fs[j].name(), fs[j].dataType(), t.values[j], out[j]);
            }
        }
        assertFalse(c.next());
        assertFalse(c.next());
    }

    // ---------------------------------------------------------------- round trips

    @Test
    public void roundTripsEveryTypeFromGenericRows() {
        Random r = new Random(1);
        for (boolean spaceTime : new boolean[]{false, true}) {
            TileSchema schema = TileSchema.fromSpark(CodecTestData.allTypes(), spaceTime);
            for (int round = 0; round < 40; round++) {
                List<Tile> tiles = randomTiles(schema.valueSchema(), round % 5, r);
                byte[] group = encode(schema, tiles, false);
                assertDecodes(schema, tiles, group, 0, group.length);
            }
        }
    }

    @Test
    public void roundTripsEveryTypeFromUnsafeRows() {
        Random r = new Random(2);
        for (boolean spaceTime : new boolean[]{false, true}) {
            TileSchema schema = TileSchema.fromSpark(CodecTestData.allTypes(), spaceTime);
            for (int round = 0; round < 40; round++) {
                List<Tile> tiles = randomTiles(schema.valueSchema(), 1 + round % 4, r);
                byte[] fromUnsafe = encode(schema, tiles, true);
                assertArrayEquals("UnsafeRow and GenericInternalRow inputs encode alike",
                        encode(schema, tiles, false), fromUnsafe);
                assertDecodes(schema, tiles, fromUnsafe, 0, fromUnsafe.length);
            }
        }
    }

    @Test
    public void nullsEmptiesAndExtremes() {
        StructType values = CodecTestData.allTypes();
        TileSchema schema = TileSchema.fromSpark(values, true);
        StructField[] fs = values.fields();
        // Every nullable column null; the non-nullable ones at their emptiest.
        Object[] v = new Object[fs.length];
        for (int i = 0; i < fs.length; i++) {
            if (fs[i].nullable()) continue;
            DataType t = fs[i].dataType();
            if (t.equals(DataTypes.IntegerType)) v[i] = Integer.MIN_VALUE;
            else if (t.equals(DataTypes.StringType)) v[i] = UTF8String.EMPTY_UTF8;
            else if (t.equals(DataTypes.BooleanType)) v[i] = false;
            else if (t.equals(DataTypes.DoubleType)) v[i] = -0.0;
            else if (t instanceof org.apache.spark.sql.types.ArrayType) v[i] = new GenericArrayData(new Object[0]);
            else v[i] = new GenericInternalRow(new Object[]{Double.NaN, null});
        }
        // Empty string, empty binary, empty array/map, arrays of nulls.
        Object[] w = v.clone();
        w[values.fieldIndex("s")] = UTF8String.fromString("");
        w[values.fieldIndex("bin")] = new byte[0];
        w[values.fieldIndex("arr_dn")] = new GenericArrayData(new Object[]{null, null, 1.5, null});
        w[values.fieldIndex("arr_s")] = new GenericArrayData(new Object[]{null, UTF8String.fromString(""), null});
        w[values.fieldIndex("nested")] = new GenericArrayData(new Object[]{null, new GenericArrayData(new Object[0]),
                new GenericArrayData(new Object[]{null, Long.MIN_VALUE})});
        w[values.fieldIndex("m")] = new ArrayBasedMapData(new GenericArrayData(new Object[0]), new GenericArrayData(new Object[0]));
        w[values.fieldIndex("m_arr")] = new ArrayBasedMapData(
                new GenericArrayData(new Object[]{UTF8String.fromString(""), UTF8String.fromString("k")}),
                new GenericArrayData(new Object[]{null, new GenericArrayData(new Object[]{null})}));
        w[values.fieldIndex("st")] = new GenericInternalRow(new Object[]{0, null, null, new GenericInternalRow(new Object[]{null, null})});
        w[values.fieldIndex("dec")] = Decimal.apply(new BigDecimal("-0.01"), 10, 2);
        w[values.fieldIndex("big")] = Decimal.apply(new BigDecimal("-9999999999999999999999999999.9999999999"), 38, 10);
        w[values.fieldIndex("dec18")] = Decimal.apply(new BigDecimal("-999999999999999999"), 18, 0);
        List<Tile> tiles = Arrays.asList(new Tile(Integer.MIN_VALUE, Integer.MAX_VALUE, Long.MIN_VALUE, v),
                new Tile(0, -1, Long.MAX_VALUE, w), new Tile(7, 7, 0, v));
        for (boolean unsafe : new boolean[]{false, true}) {
            byte[] group = encode(schema, tiles, unsafe);
            assertDecodes(schema, tiles, group, 0, group.length);
        }
    }

    @Test
    public void emptyGroupIsASingleZero() {
        TileSchema schema = TileSchema.fromSpark(CodecTestData.allTypes(), false);
        TileGroupWriter w = writer(schema);
        w.beginGroup();
        assertArrayEquals(new byte[]{0}, w.endGroup());
        TileCursor c = new TileCursor(schema);
        c.reset(new byte[]{0}, 0, 1);
        assertFalse(c.next());
    }

    @Test
    public void valuelessSchema() {
        TileSchema schema = TileSchema.fromSpark(new StructType(), true);
        List<Tile> tiles = Arrays.asList(new Tile(1, 2, 3, new Object[0]), new Tile(-4, 5, -6, new Object[0]));
        byte[] group = encode(schema, tiles, false);
        assertArrayEquals(new byte[]{4, 2, 4, 6, 7, 10, 11, 0}, group);
        assertDecodes(schema, tiles, group, 0, group.length);
    }

    @Test
    public void knownEncoding() {
        // col=1 row=-1, d double, s nullable string, a array<int>
        TileSchema schema = TileSchema.fromSpark(struct(f("d", DataTypes.DoubleType, false),
                f("s", DataTypes.StringType, true), f("a", DataTypes.createArrayType(DataTypes.IntegerType, false), false)), false);
        Tile t = new Tile(1, -1, 0, new Object[]{1.0, UTF8String.fromString("hé"),
                new GenericArrayData(new Object[]{1, -2})});
        byte[] group = encode(schema, Arrays.asList(t), false);
        byte[] expected = {2, // one record
                2, 1, // col 1, row -1
                0, 0, 0, 0, 0, 0, (byte) 0xF0, 0x3F, // 1.0 little-endian
                2, 6, 'h', (byte) 0xC3, (byte) 0xA9, // union branch 1, length 3, "hé"
                4, 2, 3, 0, // array: 2 items, 1, -2, end
                0}; // end of the group
        assertArrayEquals(expected, group);
    }

    @Test
    public void bufferIsReusedAcrossGroupsAndGrows() {
        TileSchema schema = TileSchema.fromSpark(struct(f("px", DataTypes.createArrayType(DataTypes.DoubleType, false), false)), false);
        TileGroupWriter w = writer(schema);
        Random r = new Random(3);
        for (int g = 0; g < 3; g++) {
            List<Tile> tiles = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                Object[] px = new Object[r.nextInt(70_000)];
                for (int k = 0; k < px.length; k++) px[k] = r.nextDouble();
                tiles.add(new Tile(g, i, 0, new Object[]{new GenericArrayData(px)}));
            }
            w.beginGroup();
            for (Tile t : tiles) w.add(inputRow(t, false));
            byte[] group = w.endGroup();
            assertArrayEquals(encode(schema, tiles, true), group);
            assertDecodes(schema, tiles, group, 0, group.length);
        }
    }

    @Test
    public void primitiveArraysDecodeToUnsafeArrays() {
        TileSchema schema = TileSchema.fromSpark(struct(
                f("d", DataTypes.createArrayType(DataTypes.DoubleType, false), false),
                f("i", DataTypes.createArrayType(DataTypes.IntegerType, true), false),
                f("s", DataTypes.createArrayType(DataTypes.StringType, false), false)), false);
        Tile t = new Tile(0, 0, 0, new Object[]{new GenericArrayData(new Object[]{1.0, 2.0}),
                new GenericArrayData(new Object[]{1, null, 3}), new GenericArrayData(new Object[]{UTF8String.fromString("x")})});
        byte[] group = encode(schema, Arrays.asList(t), false);
        TileCursor c = new TileCursor(schema);
        c.reset(group, 0, group.length);
        assertTrue(c.next());
        Object[] out = new Object[3];
        c.readValues(out, new int[]{0, 1, 2});
        assertTrue(out[0] instanceof UnsafeArrayData);
        assertArrayEquals(new double[]{1.0, 2.0}, ((ArrayData) out[0]).toDoubleArray(), 0.0);
        assertTrue(out[1] instanceof UnsafeArrayData);
        assertTrue(((ArrayData) out[1]).isNullAt(1));
        assertEquals(3, ((ArrayData) out[1]).getInt(2));
        assertTrue(out[2] instanceof GenericArrayData);
    }

    @Test
    public void byteAndShortColumnsDecodeAsByteAndShort() {
        TileSchema schema = TileSchema.fromSpark(struct(f("a", DataTypes.ByteType, false), f("b", DataTypes.ShortType, true)), false);
        byte[] group = encode(schema, Arrays.asList(new Tile(0, 0, 0, new Object[]{(byte) -128, (short) 32767})), false);
        TileCursor c = new TileCursor(schema);
        c.reset(group, 0, group.length);
        assertTrue(c.next());
        Object[] out = new Object[2];
        c.readValues(out, new int[]{0, 1});
        assertEquals(Byte.valueOf((byte) -128), out[0]);
        assertEquals(Short.valueOf((short) 32767), out[1]);
    }

    @Test
    public void stringsAndBinariesDoNotAliasTheInputBuffer() {
        TileSchema schema = TileSchema.fromSpark(struct(f("s", DataTypes.StringType, false), f("b", DataTypes.BinaryType, false)), false);
        byte[] group = encode(schema, Arrays.asList(new Tile(0, 0, 0, new Object[]{UTF8String.fromString("abc"), new byte[]{1, 2}})), false);
        TileCursor c = new TileCursor(schema);
        c.reset(group, 0, group.length);
        assertTrue(c.next());
        Object[] out = new Object[2];
        c.readValues(out, new int[]{0, 1});
        Arrays.fill(group, (byte) 0);
        assertEquals(UTF8String.fromString("abc"), out[0]);
        assertArrayEquals(new byte[]{1, 2}, (byte[]) out[1]);
    }

    // ---------------------------------------------------------------- projection and skipping

    @Test
    public void projectionDecodesOnlyTheWantedValues() {
        Random r = new Random(4);
        TileSchema schema = TileSchema.fromSpark(CodecTestData.allTypes(), true);
        StructField[] fs = schema.valueSchema().fields();
        List<Tile> tiles = randomTiles(schema.valueSchema(), 6, r);
        byte[] group = encode(schema, tiles, false);
        for (int round = 0; round < 30; round++) {
            // A random subset of columns, in a random output order, after two leading key slots.
            int[] target = new int[fs.length];
            List<Integer> slots = new ArrayList<>();
            for (int j = 0; j < fs.length; j++) slots.add(2 + j);
            java.util.Collections.shuffle(slots, r);
            for (int j = 0; j < fs.length; j++) target[j] = r.nextInt(3) == 0 ? slots.get(j) : -1;
            TileCursor c = new TileCursor(schema);
            c.reset(group, 0, group.length);
            for (int i = 0; i < tiles.size(); i++) {
                assertTrue(c.next());
                if (r.nextInt(4) == 0) continue; // not reading at all: next() must skip
                Object[] out = new Object[fs.length + 2];
                Object marker = new Object();
                Arrays.fill(out, marker);
                c.readValues(out, target);
                assertSame(marker, out[0]);
                assertSame(marker, out[1]);
                for (int j = 0; j < fs.length; j++) {
                    if (target[j] >= 0) {
                        assertSparkEquals(fs[j].name(), fs[j].dataType(), tiles.get(i).values[j], out[target[j]]);
                    }
                }
            }
            assertFalse(c.next());
        }
    }

    @Test
    public void keysOnlyScanAndRecordSlices() throws IOException {
        Random r = new Random(5);
        TileSchema schema = TileSchema.fromSpark(CodecTestData.allTypes(), true);
        List<Tile> tiles = randomTiles(schema.valueSchema(), 8, r);
        byte[] group = encode(schema, tiles, false);
        TileGroupWriter w = writer(schema);
        Schema record = new Schema.Parser().parse(schema.avroSchemaJson());
        GenericDatumReader<GenericRecord> reader = new GenericDatumReader<>(record);
        TileCursor c = new TileCursor(schema);
        for (int pass = 0; pass < 3; pass++) {
            c.reset(group, 0, group.length);
            for (int i = 0; i < tiles.size(); i++) {
                Tile t = tiles.get(i);
                assertTrue(c.next());
                assertEquals(t.col, c.col());
                assertEquals(t.row, c.row());
                assertEquals(t.time, c.timeMicros());
                if (pass == 0) continue; // keys only
                if (pass == 2) c.skipValues();
                int off = c.recordOffset(), len = c.recordLength();
                byte[] slice = Arrays.copyOfRange(group, off, off + len);
                assertArrayEquals(w.encodeRecord(inputRow(t, true)), slice);
                GenericRecord rec = reader.read(null, DecoderFactory.get().binaryDecoder(slice, null));
                assertEquals(t.col, rec.get("col"));
                assertEquals(t.time, rec.get("time"));
                // recordLength() before readValues() still allows reading them
                Object[] out = new Object[schema.numValues()];
                c.readValues(out, identity(out.length));
                assertSparkEquals("values", schema.valueSchema(), new GenericInternalRow(t.values), new GenericInternalRow(out));
            }
            assertFalse(c.next());
        }
    }

    @Test
    public void encodeRecordDoesNotDisturbAGroup() {
        Random r = new Random(6);
        TileSchema schema = TileSchema.fromSpark(CodecTestData.allTypes(), false);
        List<Tile> tiles = randomTiles(schema.valueSchema(), 3, r);
        TileGroupWriter w = writer(schema);
        w.beginGroup();
        List<byte[]> records = new ArrayList<>();
        for (Tile t : tiles) {
            records.add(w.encodeRecord(inputRow(t, false)));
            w.add(inputRow(t, false));
            w.encodeRecord(inputRow(tiles.get(0), false));
        }
        byte[] group = w.endGroup();
        assertArrayEquals(encode(schema, tiles, false), group);
        // A group concatenated from encodeRecord's records is the same.
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(tiles.size() * 2);
        for (byte[] rec : records) out.write(rec, 0, rec.length);
        out.write(0);
        assertArrayEquals(group, out.toByteArray());
    }

    // ---------------------------------------------------------------- conformance with Avro's reference implementation

    @Test
    public void avroReadsWhatTileWriterWrites() throws IOException {
        Random r = new Random(7);
        for (boolean spaceTime : new boolean[]{false, true}) {
            TileSchema schema = TileSchema.fromSpark(CodecTestData.allTypes(), spaceTime);
            Schema group = new Schema.Parser().parse(schema.groupSchemaJson());
            GenericDatumReader<List<GenericRecord>> reader = new GenericDatumReader<>(group);
            StructField[] fs = schema.valueSchema().fields();
            for (int round = 0; round < 30; round++) {
                List<Tile> tiles = randomTiles(schema.valueSchema(), round % 4, r);
                byte[] bytes = encode(schema, tiles, round % 2 == 0);
                org.apache.avro.io.BinaryDecoder dec = DecoderFactory.get().binaryDecoder(bytes, null);
                List<GenericRecord> records = reader.read(null, dec);
                assertTrue("Avro consumed the whole group", dec.isEnd());
                assertEquals(tiles.size(), records.size());
                for (int i = 0; i < tiles.size(); i++) {
                    GenericRecord rec = records.get(i);
                    Tile t = tiles.get(i);
                    assertEquals(t.col, rec.get("col"));
                    assertEquals(t.row, rec.get("row"));
                    if (spaceTime) assertEquals(t.time, rec.get("time"));
                    else assertNull(rec.getSchema().getField("time"));
                    for (int j = 0; j < fs.length; j++) {
                        assertSparkEquals("avro record " + i + " " + fs[j].name(), fs[j].dataType(), t.values[j],
                                fromAvro(fs[j].dataType(), rec.get(fs[j].name())));
                    }
                }
            }
        }
    }

    static byte[] avroWrite(TileSchema schema, List<Tile> tiles, BinaryEncoder enc, ByteArrayOutputStream out)
            throws IOException {
        Schema group = new Schema.Parser().parse(schema.groupSchemaJson());
        Schema record = group.getElementType();
        StructField[] fs = schema.valueSchema().fields();
        List<GenericRecord> records = new ArrayList<>();
        for (Tile t : tiles) {
            org.apache.avro.generic.GenericData.Record rec = new org.apache.avro.generic.GenericData.Record(record);
            rec.put("col", t.col);
            rec.put("row", t.row);
            if (schema.spaceTime()) rec.put("time", t.time);
            for (int j = 0; j < fs.length; j++) {
                rec.put(fs[j].name(), toAvro(fs[j].dataType(), record.getField(fs[j].name()).schema(), t.values[j]));
            }
            records.add(rec);
        }
        new GenericDatumWriter<List<GenericRecord>>(group).write(records, enc);
        enc.flush();
        return out.toByteArray();
    }

    @Test
    public void tileCursorReadsWhatAvroWrites() throws IOException {
        Random r = new Random(8);
        for (boolean spaceTime : new boolean[]{false, true}) {
            TileSchema schema = TileSchema.fromSpark(CodecTestData.allTypes(), spaceTime);
            for (int round = 0; round < 30; round++) {
                List<Tile> tiles = randomTiles(schema.valueSchema(), round % 5, r);
                ByteArrayOutputStream out = new ByteArrayOutputStream();
                byte[] plain = avroWrite(schema, tiles, EncoderFactory.get().binaryEncoder(out, null), out);
                assertArrayEquals("TileWriter's bytes are Avro's bytes", plain, encode(schema, tiles, false));
                assertDecodes(schema, tiles, plain, 0, plain.length);
            }
        }
    }

    @Test
    public void tileCursorReadsAvroMultiBlockArrays() throws IOException {
        Random r = new Random(9);
        int multiBlock = 0;
        for (boolean spaceTime : new boolean[]{false, true}) {
            TileSchema schema = TileSchema.fromSpark(CodecTestData.allTypes(), spaceTime);
            Schema record = new Schema.Parser().parse(schema.avroSchemaJson());
            GenericDatumReader<GenericRecord> recordReader = new GenericDatumReader<>(record);
            for (int round = 0; round < 30; round++) {
                List<Tile> tiles = randomTiles(schema.valueSchema(), 1 + round % 6, r);
                ByteArrayOutputStream out = new ByteArrayOutputStream();
                // Blocks of at most 64 bytes: arrays, maps and the group itself split into many
                // blocks with negative counts and byte sizes.
                BinaryEncoder enc = new EncoderFactory().configureBlockSize(64).blockingBinaryEncoder(out, null);
                byte[] blocked = avroWrite(schema, tiles, enc, out);
                if (!Arrays.equals(blocked, encode(schema, tiles, false))) multiBlock++;
                assertDecodes(schema, tiles, blocked, 0, blocked.length);
                // Record slices of a multi-block group are still single records.
                TileCursor c = new TileCursor(schema);
                c.reset(blocked, 0, blocked.length);
                for (Tile t : tiles) {
                    assertTrue(c.next());
                    GenericRecord rec = recordReader.read(null,
                            DecoderFactory.get().binaryDecoder(blocked, c.recordOffset(), c.recordLength(), null));
                    assertEquals(t.col, rec.get("col"));
                    assertEquals(t.row, rec.get("row"));
                }
                assertFalse(c.next());
            }
        }
        assertTrue("the blocking encoder produced multi-block encodings", multiBlock > 40);
    }

    /** Hand-made multi-block encodings with positive and negative block counts. */
    @Test
    public void handMadeMultiBlockGroup() throws IOException {
        TileSchema schema = TileSchema.fromSpark(struct(
                f("a", DataTypes.createArrayType(DataTypes.IntegerType, false), false),
                f("d", DataTypes.createArrayType(DataTypes.DoubleType, false), false),
                f("m", DataTypes.createMapType(DataTypes.StringType, DataTypes.StringType, false), false),
                f("mi", DataTypes.createMapType(DataTypes.StringType, DataTypes.LongType, true), false),
                f("s", DataTypes.createArrayType(DataTypes.StringType, true), false)), false);
        Bytes rec = new Bytes();
        // a: [1,2] [3] (positive counts)
        rec.varint(2).varint(1).varint(2).varint(1).varint(3).varint(0);
        // d: [-1 block with size 16: 0.5, 1.5] [1 block: 2.5]
        rec.varint(-2).varint(16).dbl(0.5).dbl(1.5).varint(1).dbl(2.5).varint(0);
        // m: {k1: v1} then {k2: v2} as a negative-count block
        rec.varint(1).str("k1").str("v1");
        Bytes blk = new Bytes().str("k2").str("v2");
        rec.varint(-1).varint(blk.size()).raw(blk).varint(0);
        // mi: {x: 5}, {y: null}
        rec.varint(1).str("x").varint(1).varint(5).varint(1).str("y").varint(0).varint(0);
        // s: ["p", null] then ["q"]
        Bytes sblk = new Bytes().varint(1).str("p").varint(0);
        rec.varint(-2).varint(sblk.size()).raw(sblk).varint(1).varint(1).str("q").varint(0);
        Object[] values = {new GenericArrayData(new Object[]{1, 2, 3}), new GenericArrayData(new Object[]{0.5, 1.5, 2.5}),
                map(new Object[]{"k1", "k2"}, new Object[]{UTF8String.fromString("v1"), UTF8String.fromString("v2")}),
                map(new Object[]{"x", "y"}, new Object[]{5L, null}),
                new GenericArrayData(new Object[]{UTF8String.fromString("p"), null, UTF8String.fromString("q")})};
        // The group: 2 records in a positive block, then 1 in a negative block, then 1 more.
        Bytes r1 = new Bytes().varint(10).varint(20).raw(rec);
        Bytes r2 = new Bytes().varint(11).varint(21).raw(rec);
        Bytes r3 = new Bytes().varint(12).varint(22).raw(rec);
        Bytes r4 = new Bytes().varint(13).varint(23).raw(rec);
        Bytes group = new Bytes().varint(2).raw(r1).raw(r2).varint(-1).varint(r3.size()).raw(r3).varint(1).raw(r4).varint(0);
        byte[] bytes = group.toByteArray();
        List<Tile> tiles = Arrays.asList(new Tile(10, 20, 0, values), new Tile(11, 21, 0, values),
                new Tile(12, 22, 0, values), new Tile(13, 23, 0, values));
        assertDecodes(schema, tiles, bytes, 0, bytes.length);
        // Avro agrees that this is a valid encoding of the same data.
        List<GenericRecord> avro = new GenericDatumReader<List<GenericRecord>>(
                new Schema.Parser().parse(schema.groupSchemaJson())).read(null, DecoderFactory.get().binaryDecoder(bytes, null));
        assertEquals(4, avro.size());
        StructField[] fs = schema.valueSchema().fields();
        for (int j = 0; j < fs.length; j++) {
            assertSparkEquals(fs[j].name(), fs[j].dataType(), values[j], fromAvro(fs[j].dataType(), avro.get(3).get(fs[j].name())));
        }
        // Slices and skipping across the blocks; the same bytes inside a larger buffer.
        byte[] padded = new byte[bytes.length + 7];
        System.arraycopy(bytes, 0, padded, 3, bytes.length);
        TileCursor c = new TileCursor(schema);
        c.reset(padded, 3, bytes.length);
        int head3 = new Bytes().varint(-1).varint(r3.size()).size();
        int[] expectedOffsets = {1, 1 + r1.size(), 1 + r1.size() + r2.size() + head3,
                1 + r1.size() + r2.size() + head3 + r3.size() + 1};
        for (int i = 0; i < 4; i++) {
            assertTrue(c.next());
            assertEquals(3 + expectedOffsets[i], c.recordOffset());
            assertEquals(rec.size() + 2, c.recordLength());
        }
        assertFalse(c.next());
    }

    static ArrayBasedMapData map(Object[] keys, Object[] values) {
        Object[] k = new Object[keys.length];
        for (int i = 0; i < k.length; i++) k[i] = UTF8String.fromString((String) keys[i]);
        return new ArrayBasedMapData(new GenericArrayData(k), new GenericArrayData(values));
    }

    /** A little Avro byte builder for hand-made encodings. */
    static final class Bytes {
        private final ByteArrayOutputStream out = new ByteArrayOutputStream();

        Bytes varint(long x) {
            long v = (x << 1) ^ (x >> 63);
            while ((v & ~0x7FL) != 0) {
                out.write((int) ((v & 0x7F) | 0x80));
                v >>>= 7;
            }
            out.write((int) v);
            return this;
        }

        Bytes dbl(double d) {
            long b = Double.doubleToRawLongBits(d);
            for (int i = 0; i < 8; i++) out.write((int) (b >>> (8 * i)));
            return this;
        }

        Bytes str(String s) {
            byte[] b = s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
            varint(b.length);
            out.write(b, 0, b.length);
            return this;
        }

        Bytes raw(Bytes b) {
            byte[] x = b.toByteArray();
            out.write(x, 0, x.length);
            return this;
        }

        Bytes rawBytes(byte... b) {
            out.write(b, 0, b.length);
            return this;
        }

        int size() {
            return out.size();
        }

        byte[] toByteArray() {
            return out.toByteArray();
        }
    }

    // ---------------------------------------------------------------- invalid input on write

    @Test
    public void nullsInNonNullableColumnsAreRejected() {
        TileSchema schema = TileSchema.fromSpark(struct(f("a", DataTypes.IntegerType, false),
                f("arr", DataTypes.createArrayType(DataTypes.DoubleType, false), true),
                f("st", struct(f("x", DataTypes.StringType, false)), true)), false);
        TileGroupWriter w = writer(schema);
        w.beginGroup();
        Tile good = new Tile(1, 1, 0, new Object[]{1, null, null});
        w.add(inputRow(good, false));
        Object[][] bad = {
                {null, null, null},
                {1, new GenericArrayData(new Object[]{1.0, null}), null},
                {1, null, new GenericInternalRow(new Object[]{null})}};
        String[] paths = {"'a'", "'arr.element'", "'st.x'"};
        for (int i = 0; i < bad.length; i++) {
            try {
                w.add(inputRow(new Tile(2, 2, 0, bad[i]), false));
                fail("expected InvalidInput");
            } catch (SfcLayerException.InvalidInput e) {
                assertTrue(SfcLayerException.reason(e), SfcLayerException.reason(e).contains(paths[i]));
                assertTrue(SfcLayerException.reason(e), SfcLayerException.reason(e).contains("NOT NULL"));
            }
        }
        // the failed adds left no trace
        assertEquals(1, w.recordCount());
        assertArrayEquals(encode(schema, Arrays.asList(good), false), w.endGroup());
        // null keys
        w.beginGroup();
        try {
            w.add(new GenericInternalRow(new Object[]{1, null, null, "junk", null, 2}));
            fail("expected InvalidInput");
        } catch (SfcLayerException.InvalidInput e) {
            assertTrue(SfcLayerException.reason(e), SfcLayerException.reason(e).contains("null"));
        }
    }

    @Test
    public void decimalsThatDoNotFitAreRejected() {
        TileSchema schema = TileSchema.fromSpark(struct(f("small", DataTypes.createDecimalType(3, 1), true),
                f("big", DataTypes.createDecimalType(20, 0), true)), false);
        TileGroupWriter w = writer(schema);
        w.beginGroup();
        Object[][] bad = {{Decimal.apply(new BigDecimal("100.0"), 4, 1), null},
                {null, Decimal.apply(new BigDecimal("123456789012345678901"), 21, 0)}};
        for (Object[] values : bad) {
            try {
                w.add(inputRow(new Tile(0, 0, 0, values), false));
                fail("expected InvalidInput");
            } catch (SfcLayerException.InvalidInput e) {
                assertTrue(SfcLayerException.reason(e), SfcLayerException.reason(e).contains("does not fit decimal("));
            }
        }
        // a value at another scale is rescaled
        w.add(inputRow(new Tile(0, 0, 0, new Object[]{Decimal.apply(new BigDecimal("12.34"), 4, 2), null}), false));
        byte[] group = w.endGroup();
        TileCursor c = new TileCursor(schema);
        c.reset(group, 0, group.length);
        assertTrue(c.next());
        Object[] out = new Object[2];
        c.readValues(out, new int[]{0, 1});
        assertEquals(new BigDecimal("12.3"), ((Decimal) out[0]).toJavaBigDecimal());
    }

    // ---------------------------------------------------------------- corrupt input

    /** Decodes everything, projected or not; returns normally or throws. */
    static void readAll(TileSchema schema, byte[] buf, int mode) {
        TileCursor c = new TileCursor(schema);
        c.reset(buf, 0, buf.length);
        int n = schema.numValues();
        Object[] out = new Object[n];
        int[] all = identity(n);
        int[] some = new int[n];
        for (int j = 0; j < n; j++) some[j] = j % 2 == 0 ? j : -1;
        while (c.next()) {
            c.col();
            if (mode == 1) c.readValues(out, all);
            else if (mode == 2) c.readValues(out, some);
            else if (mode == 3) c.recordLength();
        }
    }

    static void assertCorrupt(TileSchema schema, byte[] buf, int mode, String what) {
        try {
            readAll(schema, buf, mode);
            fail(what + ": expected CorruptLayer");
        } catch (SfcLayerException.CorruptLayer e) {
            assertTrue(SfcLayerException.reason(e), SfcLayerException.reason(e).startsWith("corrupt tile record: "));
        }
    }

    @Test
    public void everyTruncationIsCorrupt() {
        Random r = new Random(10);
        TileSchema schema = TileSchema.fromSpark(CodecTestData.allTypes(), true);
        byte[] group = encode(schema, randomTiles(schema.valueSchema(), 2, r), false);
        for (int len = 0; len < group.length; len++) {
            byte[] prefix = Arrays.copyOf(group, len);
            for (int mode = 0; mode < 4; mode++) assertCorrupt(schema, prefix, mode, "prefix of " + len + " bytes");
        }
        for (int mode = 0; mode < 4; mode++) readAll(schema, group, mode);
        // trailing bytes after the end of the group
        assertCorrupt(schema, Arrays.copyOf(group, group.length + 1), 0, "trailing byte");
    }

    @Test
    public void garbageNeverEscapesAsAnotherException() {
        Random r = new Random(11);
        TileSchema schema = TileSchema.fromSpark(CodecTestData.allTypes(), true);
        byte[] group = encode(schema, randomTiles(schema.valueSchema(), 4, r), false);
        int corrupt = 0, ok = 0;
        for (int round = 0; round < 6000; round++) {
            byte[] b;
            if (round % 3 == 0) {
                b = new byte[r.nextInt(300)];
                r.nextBytes(b);
            } else {
                b = group.clone();
                for (int k = 1 + r.nextInt(3); k > 0; k--) {
                    int i = r.nextInt(b.length);
                    if (r.nextBoolean()) b[i] ^= (byte) (1 << r.nextInt(8));
                    else b[i] = (byte) r.nextInt();
                }
            }
            try {
                readAll(schema, b, round % 4);
                ok++;
            } catch (SfcLayerException.CorruptLayer e) {
                assertTrue(SfcLayerException.reason(e), SfcLayerException.reason(e).startsWith("corrupt tile record: "));
                corrupt++;
            } catch (Throwable t) {
                throw new AssertionError("round " + round + ": " + t + " for " + CodecTestData.hex(b), t);
            }
        }
        assertTrue("corrupt " + corrupt, corrupt > 1000);
        // and it does not call everything corrupt: most flipped bits land in values, which still decode
        assertTrue("decoded " + ok, ok > 500);
    }

    @Test
    public void specificCorruptions() {
        TileSchema schema = TileSchema.fromSpark(struct(f("b", DataTypes.BooleanType, false), f("s", DataTypes.StringType, true),
                f("t", DataTypes.ByteType, false)), false);
        // record: col 0 row 0, b, s union, t
        assertCorrupt(schema, new Bytes().varint(1).varint(0).varint(0).rawBytes((byte) 2).varint(0).varint(0).varint(0).toByteArray(),
                1, "boolean byte 2");
        assertCorrupt(schema, new Bytes().varint(1).varint(0).varint(0).rawBytes((byte) 1).varint(2).varint(0).varint(0).toByteArray(),
                1, "union branch 2");
        assertCorrupt(schema, new Bytes().varint(1).varint(0).varint(0).rawBytes((byte) 1).varint(0).varint(300).varint(0).toByteArray(),
                1, "tinyint 300");
        assertCorrupt(schema, new Bytes().varint(1).varint(0).varint(0).rawBytes((byte) 1).varint(1).varint(-3).varint(0).toByteArray(),
                1, "negative string length");
        assertCorrupt(schema, new Bytes().varint(1).varint(0).varint(0).rawBytes((byte) 1).varint(1).varint(1000).toByteArray(),
                0, "string longer than the input");
        assertCorrupt(schema, new Bytes().varint(Long.MAX_VALUE).toByteArray(), 0, "huge record count");
        assertCorrupt(schema, new Bytes().varint(-1).varint(-5).toByteArray(), 0, "negative block size");
        assertCorrupt(schema, new Bytes().rawBytes((byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF,
                (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0x01).toByteArray(), 0, "overlong varint");
        assertCorrupt(schema, new byte[0], 0, "empty input");
        // the good version of the same record decodes
        readAll(schema, new Bytes().varint(1).varint(0).varint(0).rawBytes((byte) 1).varint(1).varint(0).varint(-7).varint(0).toByteArray(), 1);
        TileSchema dec = TileSchema.fromSpark(struct(f("d", DataTypes.createDecimalType(3, 1), false)), false);
        assertCorrupt(dec, new Bytes().varint(1).varint(0).varint(0).varint(2).rawBytes((byte) 0x03, (byte) 0xE8).varint(0).toByteArray(),
                1, "1000 does not fit decimal(3,1)");
        assertCorrupt(dec, new Bytes().varint(1).varint(0).varint(0).varint(0).varint(0).toByteArray(), 1, "empty decimal");
    }

    @Test
    public void cursorMisuse() {
        TileSchema schema = TileSchema.fromSpark(struct(f("a", DataTypes.IntegerType, false)), false);
        TileCursor c = new TileCursor(schema);
        assertFalse("a fresh cursor is empty", c.next());
        c.reset(new byte[]{2, 0, 0, 0, 0}, 0, 5);
        try {
            c.readValues(new Object[1], new int[]{0});
            fail();
        } catch (IllegalStateException expected) {
            // before next()
        }
        assertTrue(c.next());
        try {
            c.readValues(new Object[1], new int[]{0, 1});
            fail();
        } catch (IllegalArgumentException expected) {
            // wrong target length
        }
        try {
            c.reset(new byte[3], 2, 2);
            fail();
        } catch (IllegalArgumentException expected) {
            // slice outside the buffer
        }
        assertNotEquals(0, c.recordLength());
    }
}
