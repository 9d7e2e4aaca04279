package io.sfclayer.codec;

import io.sfclayer.SfcLayerException;
import org.apache.avro.LogicalTypes;
import org.apache.avro.Schema;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DayTimeIntervalType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.VariantType$;
import org.apache.spark.sql.types.YearMonthIntervalType;
import org.junit.Test;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.util.Arrays;

import static io.sfclayer.codec.CodecTestData.f;
import static io.sfclayer.codec.CodecTestData.struct;
import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

public class TileSchemaTest {

    @Test
    public void exactAvroJson() {
        StructType values = struct(
                f("b", DataTypes.BooleanType, false),
                f("i8", DataTypes.ByteType, true),
                f("d", DataTypes.DateType, false),
                f("ts", DataTypes.TimestampType, true),
                f("ntz", DataTypes.TimestampNTZType, false),
                f("dec", DataTypes.createDecimalType(12, 3), false),
                f("px", DataTypes.createArrayType(DataTypes.FloatType, true), false),
                f("m", DataTypes.createMapType(DataTypes.StringType, DataTypes.BinaryType, false), true),
                f("meta", struct(f("s", DataTypes.StringType, true), f("l", DataTypes.LongType, false)), true));
        TileSchema s = TileSchema.fromSpark(values, true);
        String expected = "{\"type\":\"record\",\"name\":\"Tile\",\"namespace\":\"io.sfclayer\",\"fields\":["
                + "{\"name\":\"col\",\"type\":\"int\"},"
                + "{\"name\":\"row\",\"type\":\"int\"},"
                + "{\"name\":\"time\",\"type\":{\"type\":\"long\",\"logicalType\":\"timestamp-micros\"}},"
                + "{\"name\":\"b\",\"type\":\"boolean\"},"
                + "{\"name\":\"i8\",\"type\":[\"null\",\"int\"],\"default\":null},"
                + "{\"name\":\"d\",\"type\":{\"type\":\"int\",\"logicalType\":\"date\"}},"
                + "{\"name\":\"ts\",\"type\":[\"null\",{\"type\":\"long\",\"logicalType\":\"timestamp-micros\"}],\"default\":null},"
                + "{\"name\":\"ntz\",\"type\":{\"type\":\"long\",\"logicalType\":\"local-timestamp-micros\"}},"
                + "{\"name\":\"dec\",\"type\":{\"type\":\"bytes\",\"logicalType\":\"decimal\",\"precision\":12,\"scale\":3}},"
                + "{\"name\":\"px\",\"type\":{\"type\":\"array\",\"items\":[\"null\",\"float\"]}},"
                + "{\"name\":\"m\",\"type\":[\"null\",{\"type\":\"map\",\"values\":\"bytes\"}],\"default\":null},"
                + "{\"name\":\"meta\",\"type\":[\"null\",{\"type\":\"record\",\"name\":\"Tile_meta\",\"fields\":["
                + "{\"name\":\"s\",\"type\":[\"null\",\"string\"],\"default\":null},"
                + "{\"name\":\"l\",\"type\":\"long\"}]}],\"default\":null}"
                + "]}";
        assertEquals(expected, s.avroSchemaJson());
        assertEquals("{\"type\":\"array\",\"items\":" + expected + "}", s.groupSchemaJson());
        assertTrue(s.spaceTime());
        assertEquals(values, s.valueSchema());

        Schema avro = new Schema.Parser().parse(s.avroSchemaJson());
        assertEquals("io.sfclayer.Tile", avro.getFullName());
        assertEquals(LogicalTypes.timestampMicros(), avro.getField("time").schema().getLogicalType());
        assertEquals(LogicalTypes.decimal(12, 3), avro.getField("dec").schema().getLogicalType());
        assertEquals(LogicalTypes.localTimestampMicros(), avro.getField("ntz").schema().getLogicalType());
        assertEquals(LogicalTypes.date(), avro.getField("d").schema().getLogicalType());
        assertTrue(avro.getField("i8").hasDefaultValue());
        assertFalse(avro.getField("b").hasDefaultValue());
        assertEquals("io.sfclayer.Tile_meta", avro.getField("meta").schema().getTypes().get(1).getFullName());
    }

    @Test
    public void spatialSchemaHasNoTime() {
        TileSchema s = TileSchema.fromSpark(struct(f("v", DataTypes.DoubleType, false)), false);
        assertEquals("{\"type\":\"record\",\"name\":\"Tile\",\"namespace\":\"io.sfclayer\",\"fields\":["
                + "{\"name\":\"col\",\"type\":\"int\"},{\"name\":\"row\",\"type\":\"int\"},"
                + "{\"name\":\"v\",\"type\":\"double\"}]}", s.avroSchemaJson());
        assertFalse(s.spaceTime());
    }

    @Test
    public void everyTypeParsesWithAvroAndRecordNamesAreUnique() {
        for (boolean spaceTime : new boolean[]{false, true}) {
            TileSchema s = TileSchema.fromSpark(CodecTestData.allTypes(), spaceTime);
            Schema group = new Schema.Parser().parse(s.groupSchemaJson());
            assertEquals(Schema.Type.ARRAY, group.getType());
            assertEquals(new Schema.Parser().parse(s.avroSchemaJson()), group.getElementType());
        }
        // struct "a_b" and struct "a" with struct field "b" would both be Tile_a_b
        StructType x = struct(f("x", DataTypes.IntegerType, false));
        TileSchema s = TileSchema.fromSpark(struct(f("a_b", x, true),
                f("a", struct(f("b", x, true)), true),
                f("arr", DataTypes.createArrayType(x, true), true),
                f("m", DataTypes.createMapType(DataTypes.StringType, x, true), true)), false);
        String json = s.avroSchemaJson();
        assertTrue(json, json.contains("\"Tile_a_b\"") && json.contains("\"Tile_a_b_2\"")
                && json.contains("\"Tile_arr_element\"") && json.contains("\"Tile_m_value\""));
        new Schema.Parser().parse(json); // Avro rejects redefined names
    }

    static void assertInvalid(StructType values, String... fragments) {
        try {
            TileSchema.fromSpark(values, true);
            fail("expected InvalidInput for " + values.simpleString());
        } catch (SfcLayerException.InvalidInput e) {
            for (String fragment : fragments) {
                assertTrue("'" + e.getMessage() + "' should contain '" + fragment + "'", e.getMessage().contains(fragment));
            }
        }
    }

    @Test
    public void unsupportedTypesNameTheColumnAndType() {
        DataType dayInterval = DayTimeIntervalType.apply((byte) 0, (byte) 0);
        assertInvalid(struct(f("ok", DataTypes.IntegerType, true), f("x", dayInterval, true)),
                "value column 'x' has unsupported type interval day; supported: ", "decimal(p,s)", "map<string,T>");
        assertInvalid(struct(f("ym", YearMonthIntervalType.apply((byte) 0, (byte) 1), true)),
                "value column 'ym' has unsupported type interval year to month");
        assertInvalid(struct(f("ci", DataTypes.CalendarIntervalType, true)), "value column 'ci' has unsupported type interval");
        assertInvalid(struct(f("n", DataTypes.NullType, true)), "value column 'n' has unsupported type void");
        assertInvalid(struct(f("v", VariantType$.MODULE$, true)), "value column 'v' has unsupported type variant");
        assertInvalid(struct(f("m", DataTypes.createMapType(DataTypes.IntegerType, DataTypes.StringType), true)),
                "value column 'm' has unsupported type map<int,string>", "map keys must be strings");
        assertInvalid(struct(f("a", DataTypes.createArrayType(dayInterval), true)),
                "value column 'a' has unsupported type array<interval day> (interval day at a.element)");
        assertInvalid(struct(f("s", struct(f("in", struct(f("deep", DataTypes.CalendarIntervalType, true)), true)), true)),
                "value column 's' has unsupported type", "(interval at s.in.deep)");
        assertInvalid(struct(f("e", new StructType(), true)), "value column 'e'", "at least one field");
        assertInvalid(struct(f("d5", DecimalType.apply(5, 0), true), f("d", new DecimalType(10, 2), true),
                f("bad", DataTypes.createArrayType(DataTypes.createMapType(DataTypes.StringType, dayInterval)), true)),
                "value column 'bad'", "interval day at bad.element.value");
    }

    @Test
    public void reservedAndInvalidNames() {
        for (String name : new String[]{"col", "row", "time", "_sfc_index", "_file", "COL", "Time"}) {
            assertInvalid(struct(f(name, DataTypes.IntegerType, true)), "value column '" + name + "'", "reserved");
        }
        for (String name : new String[]{"band 1", "a-b", "1st", "", "é"}) {
            assertInvalid(struct(f(name, DataTypes.IntegerType, true)), "value column '" + name + "'", "not a valid Avro name");
        }
        assertInvalid(struct(f("s", struct(f("x.y", DataTypes.IntegerType, true)), true)), "value column 's'", "'x.y'");
        assertInvalid(struct(f("a", DataTypes.IntegerType, true), f("A", DataTypes.IntegerType, true)), "'A'", "more than once");
        assertInvalid(struct(f("s", struct(f("x", DataTypes.IntegerType, true), f("x", DataTypes.LongType, true)), true)),
                "'s'", "two fields named 'x'");
        // Inside structs the key names are fine.
        TileSchema.fromSpark(struct(f("s", struct(f("col", DataTypes.IntegerType, true), f("time", DataTypes.LongType, true)), true),
                f("_private", DataTypes.IntegerType, true), f("x9", DataTypes.IntegerType, true)), false);
    }

    @Test
    public void fromJsonRoundTrips() {
        StructType values = CodecTestData.allTypes();
        TileSchema a = TileSchema.fromSpark(values, true);
        TileSchema b = TileSchema.fromJson(values.json(), true);
        assertEquals(a, b);
        assertEquals(a.hashCode(), b.hashCode());
        assertEquals(a.avroSchemaJson(), b.avroSchemaJson());
        assertEquals(values, b.valueSchema());
        assertFalse(a.equals(TileSchema.fromJson(values.json(), false)));
        for (String bad : new String[]{"{", "\"integer\"", "{\"type\":\"struct\",\"fields\":[{\"name\":1}]}"}) {
            try {
                TileSchema.fromJson(bad, false);
                fail(bad);
            } catch (SfcLayerException.CorruptLayer e) {
                assertTrue(e.getMessage(), e.getMessage().contains("value schema"));
            }
        }
        try {
            TileSchema.fromJson(struct(f("col", DataTypes.IntegerType, true)).json(), false);
            fail();
        } catch (SfcLayerException.InvalidInput e) {
            assertTrue(e.getMessage().contains("reserved"));
        }
    }

    @Test
    public void javaSerializable() throws Exception {
        TileSchema s = TileSchema.fromSpark(CodecTestData.allTypes(), true);
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
            out.writeObject(s);
        }
        TileSchema t;
        try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
            t = (TileSchema) in.readObject();
        }
        assertEquals(s, t);
        assertEquals(s.avroSchemaJson(), t.avroSchemaJson());
        // The codec tree is rebuilt after deserialization.
        TileSchema small = TileSchema.fromSpark(struct(f("v", DataTypes.IntegerType, true)), false);
        bytes.reset();
        try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
            out.writeObject(small);
        }
        try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
            small = (TileSchema) in.readObject();
        }
        TileGroupWriter w = new TileGroupWriter(new TileWriter(small, 1, 2, -1, new int[]{0}));
        w.beginGroup();
        w.add(new GenericInternalRow(new Object[]{null, 5, 6}));
        byte[] group = w.endGroup();
        assertArrayEquals(new byte[]{2, 10, 12, 0, 0}, group);
        TileCursor c = new TileCursor(small);
        c.reset(group, 0, group.length);
        assertTrue(c.next());
        Object[] out = {"x"};
        c.readValues(out, new int[]{0});
        assertNull(out[0]);
        assertEquals(Arrays.asList(5, 6), Arrays.asList(c.col(), c.row()));
    }
}
