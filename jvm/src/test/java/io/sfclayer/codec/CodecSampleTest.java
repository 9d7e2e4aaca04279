package io.sfclayer.codec;

import io.sfclayer.format.ValueCompression;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.ArrayBasedMapData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.Test;

import java.io.File;
import java.io.IOException;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;

import static io.sfclayer.codec.CodecTestData.f;
import static io.sfclayer.codec.CodecTestData.struct;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

/**
 * Writes a sample group to {@code build/codec-sample/} for tests/test_codec_fastavro.py, which
 * decodes each record slice with fastavro from the stored Avro schema alone. The values here are
 * mirrored in that test.
 */
public class CodecSampleTest {

    static final StructType VALUES = struct(
            f("elev", DataTypes.DoubleType, false),
            f("name", DataTypes.StringType, true),
            f("mask", DataTypes.BinaryType, true),
            f("day", DataTypes.DateType, false),
            f("ntz", DataTypes.TimestampNTZType, false),
            f("amount", DataTypes.createDecimalType(10, 2), false),
            f("bands", DataTypes.createArrayType(DataTypes.FloatType, false), false),
            f("tags", DataTypes.createMapType(DataTypes.StringType, DataTypes.IntegerType, true), false),
            f("meta", struct(f("source", DataTypes.StringType, false), f("quality", DataTypes.IntegerType, true)), true),
            f("small", DataTypes.ShortType, false));

    static GenericArrayData floats(float... v) {
        Object[] o = new Object[v.length];
        for (int i = 0; i < v.length; i++) o[i] = v[i];
        return new GenericArrayData(o);
    }

    static ArrayBasedMapData tags(String[] keys, Integer[] values) {
        Object[] k = new Object[keys.length];
        for (int i = 0; i < k.length; i++) k[i] = UTF8String.fromString(keys[i]);
        return new ArrayBasedMapData(new GenericArrayData(k), new GenericArrayData(values));
    }

    static InternalRow row(int col, int row, long time, Object... values) {
        Object[] r = new Object[values.length + 3];
        r[0] = col;
        r[1] = row;
        r[2] = time;
        System.arraycopy(values, 0, r, 3, values.length);
        return new GenericInternalRow(r);
    }

    @Test
    public void writeSampleForFastavro() throws IOException {
        TileSchema schema = TileSchema.fromSpark(VALUES, true);
        int[] ords = new int[VALUES.size()];
        for (int i = 0; i < ords.length; i++) ords[i] = 3 + i;
        TileGroupWriter w = new TileGroupWriter(new TileWriter(schema, 0, 1, 2, ords));
        w.beginGroup();
        w.add(row(1, 2, 1_700_000_000_000_000L, 1.5, UTF8String.fromString("héllo ✓"), new byte[]{0, 1, 2, (byte) 255},
                19000, 1_600_000_000_123_456L, Decimal.apply(new BigDecimal("12345.67"), 10, 2), floats(1.0f, 2.5f, -3.25f),
                tags(new String[]{"a", "b"}, new Integer[]{1, null}),
                new GenericInternalRow(new Object[]{UTF8String.fromString("s2"), 7}), (short) -3));
        w.add(row(-1, Integer.MAX_VALUE, 0L, -2.0, null, null, 0, 0L, Decimal.apply(new BigDecimal("-0.01"), 10, 2),
                floats(), tags(new String[0], new Integer[0]), null, (short) 32767));
        w.add(row(3, 4, -1L, 1e300, UTF8String.fromString(""), new byte[0], -1, -1L,
                Decimal.apply(new BigDecimal("99999999.99"), 10, 2), floats(0.5f), tags(new String[]{"x"}, new Integer[]{-5}),
                new GenericInternalRow(new Object[]{UTF8String.fromString(""), null}), (short) 0));
        byte[] group = w.endGroup();

        StringBuilder slices = new StringBuilder("[");
        TileCursor c = new TileCursor(schema);
        c.reset(group, 0, group.length);
        int n = 0;
        while (c.next()) {
            if (n++ > 0) slices.append(',');
            slices.append("{\"col\":").append(c.col()).append(",\"row\":").append(c.row())
                    .append(",\"time\":").append(c.timeMicros()).append(",\"offset\":").append(c.recordOffset())
                    .append(",\"length\":").append(c.recordLength()).append('}');
        }
        assertEquals(3, n);
        slices.append(']');

        File dir = new File(System.getProperty("user.dir"), "build/codec-sample");
        assertTrue(dir.isDirectory() || dir.mkdirs());
        Files.write(new File(dir, "record.avsc").toPath(), schema.avroSchemaJson().getBytes(StandardCharsets.UTF_8));
        Files.write(new File(dir, "group.avsc").toPath(), schema.groupSchemaJson().getBytes(StandardCharsets.UTF_8));
        Files.write(new File(dir, "spark-schema.json").toPath(), VALUES.json().getBytes(StandardCharsets.UTF_8));
        Files.write(new File(dir, "group.bin").toPath(), group);
        Files.write(new File(dir, "group.deflate").toPath(), ValueCompression.DEFLATE.compress(group, 0, group.length));
        Files.write(new File(dir, "group.zstd").toPath(), ValueCompression.ZSTD.compress(group, 0, group.length));
        Files.write(new File(dir, "slices.json").toPath(), slices.toString().getBytes(StandardCharsets.UTF_8));
    }
}
