package io.sfclayer.codec;

import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.util.Utf8;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.ArrayBasedMapData;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.catalyst.util.MapData;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.unsafe.types.UTF8String;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.fail;

/** Test data: schemas with every supported type, random Spark values, Avro conversions, deep comparison. */
final class CodecTestData {
    private CodecTestData() {}

    static StructField f(String name, DataType t, boolean nullable) {
        return new StructField(name, t, nullable, Metadata.empty());
    }

    static StructType struct(StructField... fs) {
        return new StructType(fs);
    }

    /** Every supported type, nullable and not, nested at several levels. */
    static StructType allTypes() {
        StructType point = struct(f("x", DataTypes.DoubleType, false), f("label", DataTypes.StringType, true));
        StructType inner = struct(
                f("a", DataTypes.IntegerType, false),
                f("pts", DataTypes.createArrayType(point, true), true),
                f("dec", DataTypes.createMapType(DataTypes.StringType, DataTypes.createDecimalType(5, 1), true), true),
                f("deep", struct(f("z", DataTypes.BinaryType, true), f("when", DataTypes.TimestampType, true)), true));
        return struct(
                f("b", DataTypes.BooleanType, true),
                f("i8", DataTypes.ByteType, true),
                f("i16", DataTypes.ShortType, true),
                f("i32", DataTypes.IntegerType, true),
                f("i64", DataTypes.LongType, true),
                f("f32", DataTypes.FloatType, true),
                f("f64", DataTypes.DoubleType, true),
                f("s", DataTypes.StringType, true),
                f("bin", DataTypes.BinaryType, true),
                f("d", DataTypes.DateType, true),
                f("ts", DataTypes.TimestampType, true),
                f("ntz", DataTypes.TimestampNTZType, true),
                f("dec", DataTypes.createDecimalType(10, 2), true),
                f("dec18", DataTypes.createDecimalType(18, 0), true),
                f("big", DataTypes.createDecimalType(38, 10), true),
                f("nn_i", DataTypes.IntegerType, false),
                f("nn_s", DataTypes.StringType, false),
                f("nn_b", DataTypes.BooleanType, false),
                f("nn_f64", DataTypes.DoubleType, false),
                f("arr_d", DataTypes.createArrayType(DataTypes.DoubleType, false), true),
                f("arr_dn", DataTypes.createArrayType(DataTypes.DoubleType, true), true),
                f("arr_f", DataTypes.createArrayType(DataTypes.FloatType, false), false),
                f("arr_i", DataTypes.createArrayType(DataTypes.IntegerType, true), true),
                f("arr_in", DataTypes.createArrayType(DataTypes.IntegerType, false), true),
                f("arr_l", DataTypes.createArrayType(DataTypes.LongType, false), true),
                f("arr_bool", DataTypes.createArrayType(DataTypes.BooleanType, false), true),
                f("arr_byte", DataTypes.createArrayType(DataTypes.ByteType, true), true),
                f("arr_short", DataTypes.createArrayType(DataTypes.ShortType, false), true),
                f("arr_date", DataTypes.createArrayType(DataTypes.DateType, true), true),
                f("arr_ts", DataTypes.createArrayType(DataTypes.TimestampType, false), true),
                f("arr_s", DataTypes.createArrayType(DataTypes.StringType, true), true),
                f("arr_bin", DataTypes.createArrayType(DataTypes.BinaryType, false), true),
                f("arr_dec", DataTypes.createArrayType(DataTypes.createDecimalType(20, 4), true), true),
                f("nested", DataTypes.createArrayType(DataTypes.createArrayType(DataTypes.LongType, true), true), true),
                f("m", DataTypes.createMapType(DataTypes.StringType, DataTypes.IntegerType, true), true),
                f("m_d", DataTypes.createMapType(DataTypes.StringType, DataTypes.DoubleType, false), true),
                f("m_s", DataTypes.createMapType(DataTypes.StringType, point, false), true),
                f("m_arr", DataTypes.createMapType(DataTypes.StringType,
                        DataTypes.createArrayType(DataTypes.StringType, true), true), true),
                f("st", inner, true),
                f("nn_st", point, false));
    }

    // ---------------------------------------------------------------- random values

    private static final String[] STRINGS = {"", "a", "héllo wörld", "✓ 𝄞 日本語", "tab\tnew\nline\u0000nul",
            "\"quotes\" and \\backslashes\\", "x".repeat(300)};

    static Object randomValue(DataType t, boolean nullable, Random r, int depth) {
        if (nullable && r.nextInt(6) == 0) return null;
        if (t instanceof BooleanType) return r.nextBoolean();
        if (t instanceof ByteType) return pick(r, new Byte[]{Byte.MIN_VALUE, Byte.MAX_VALUE, 0, -1}, (byte) r.nextInt());
        if (t instanceof ShortType) return pick(r, new Short[]{Short.MIN_VALUE, Short.MAX_VALUE, 0}, (short) r.nextInt());
        if (t instanceof IntegerType || t instanceof DateType) {
            return pick(r, new Integer[]{Integer.MIN_VALUE, Integer.MAX_VALUE, 0, -1, 63, 64}, r.nextInt() >> r.nextInt(32));
        }
        if (t instanceof LongType || t instanceof TimestampType || t instanceof TimestampNTZType) {
            return pick(r, new Long[]{Long.MIN_VALUE, Long.MAX_VALUE, 0L, -1L, 1_700_000_000_000_000L},
                    r.nextLong() >> r.nextInt(64));
        }
        if (t instanceof FloatType) {
            return pick(r, new Float[]{Float.NaN, -0.0f, Float.POSITIVE_INFINITY, Float.MIN_VALUE, Float.MAX_VALUE},
                    (float) r.nextGaussian() * 1000);
        }
        if (t instanceof DoubleType) {
            return pick(r, new Double[]{Double.NaN, -0.0, Double.NEGATIVE_INFINITY, Double.MIN_VALUE, Double.MAX_VALUE},
                    r.nextGaussian() * 1e6);
        }
        if (t instanceof StringType) {
            if (r.nextInt(3) == 0) return UTF8String.fromString(STRINGS[r.nextInt(STRINGS.length)]);
            return UTF8String.fromString(randomString(r));
        }
        if (t instanceof BinaryType) {
            byte[] b = new byte[r.nextInt(4) == 0 ? 0 : r.nextInt(200)];
            r.nextBytes(b);
            return b;
        }
        if (t instanceof DecimalType) {
            DecimalType d = (DecimalType) t;
            BigInteger unscaled;
            switch (r.nextInt(5)) {
                case 0: unscaled = BigInteger.TEN.pow(d.precision()).subtract(BigInteger.ONE); break;
                case 1: unscaled = BigInteger.TEN.pow(d.precision()).subtract(BigInteger.ONE).negate(); break;
                case 2: unscaled = BigInteger.valueOf(r.nextInt(3) - 1); break;
                default: {
                    StringBuilder sb = new StringBuilder(r.nextBoolean() ? "-" : "");
                    int digits = 1 + r.nextInt(d.precision());
                    for (int i = 0; i < digits; i++) sb.append((char) ('0' + r.nextInt(10)));
                    unscaled = new BigInteger(sb.toString());
                }
            }
            return Decimal.apply(new BigDecimal(unscaled, d.scale()), d.precision(), d.scale());
        }
        if (t instanceof ArrayType) {
            ArrayType a = (ArrayType) t;
            int n = depth > 3 || r.nextInt(5) == 0 ? 0 : r.nextInt(r.nextInt(8) == 0 ? 300 : 6);
            Object[] values = new Object[n];
            for (int i = 0; i < n; i++) values[i] = randomValue(a.elementType(), a.containsNull(), r, depth + 1);
            return new GenericArrayData(values);
        }
        if (t instanceof MapType) {
            MapType m = (MapType) t;
            int n = depth > 3 || r.nextInt(5) == 0 ? 0 : r.nextInt(6);
            Set<String> keys = new LinkedHashSet<>();
            while (keys.size() < n) keys.add(r.nextInt(3) == 0 ? STRINGS[r.nextInt(STRINGS.length)] : randomString(r));
            Object[] k = new Object[n];
            Object[] v = new Object[n];
            int i = 0;
            for (String key : keys) {
                k[i] = UTF8String.fromString(key);
                v[i++] = randomValue(m.valueType(), m.valueContainsNull(), r, depth + 1);
            }
            return new ArrayBasedMapData(new GenericArrayData(k), new GenericArrayData(v));
        }
        if (t instanceof StructType) {
            StructField[] fs = ((StructType) t).fields();
            Object[] values = new Object[fs.length];
            for (int i = 0; i < fs.length; i++) values[i] = randomValue(fs[i].dataType(), fs[i].nullable(), r, depth + 1);
            return new GenericInternalRow(values);
        }
        throw new IllegalArgumentException(t.simpleString());
    }

    private static <T> T pick(Random r, T[] specials, T random) {
        return r.nextInt(4) == 0 ? specials[r.nextInt(specials.length)] : random;
    }

    private static String randomString(Random r) {
        int n = r.nextInt(20);
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < n; i++) {
            switch (r.nextInt(4)) {
                case 0: sb.append((char) ('a' + r.nextInt(26))); break;
                case 1: sb.append((char) (0xA0 + r.nextInt(0x700))); break;
                case 2: sb.appendCodePoint(0x1F300 + r.nextInt(200)); break;
                default: sb.append((char) (0x20 + r.nextInt(95)));
            }
        }
        return sb.toString();
    }

    /** Random value-column values for one record. */
    static Object[] randomValues(StructType schema, Random r) {
        StructField[] fs = schema.fields();
        Object[] out = new Object[fs.length];
        for (int i = 0; i < fs.length; i++) out[i] = randomValue(fs[i].dataType(), fs[i].nullable(), r, 0);
        return out;
    }

    // ---------------------------------------------------------------- deep comparison of Spark values

    static void assertSparkEquals(String path, DataType t, Object expected, Object actual) {
        if (expected == null) {
            assertNull(path + ": expected null, got " + actual, actual);
            return;
        }
        assertNotNull(path + ": expected " + expected + ", got null", actual);
        if (t instanceof BinaryType) {
            assertArrayEquals(path, (byte[]) expected, (byte[]) actual);
        } else if (t instanceof ArrayType) {
            ArrayType at = (ArrayType) t;
            ArrayData e = (ArrayData) expected, a = (ArrayData) actual;
            assertEquals(path + ": array length", e.numElements(), a.numElements());
            DataType et = at.elementType();
            boolean flat = !(et instanceof ArrayType || et instanceof MapType || et instanceof StructType
                    || et instanceof BinaryType || et instanceof DecimalType);
            for (int i = 0; flat && i < e.numElements(); i++) {
                // fast path for long arrays of atomic values: no per-element message building
                Object ev = e.isNullAt(i) ? null : e.get(i, et), av = a.isNullAt(i) ? null : a.get(i, et);
                if (ev == null ? av != null : av == null || ev.getClass() != av.getClass() || !ev.equals(av)) {
                    fail(path + "[" + i + "]: expected " + ev + ", got " + av);
                }
            }
            for (int i = 0; !flat && i < e.numElements(); i++) {
                assertSparkEquals(path + "[" + i + "]", at.elementType(),
                        e.isNullAt(i) ? null : e.get(i, at.elementType()), a.isNullAt(i) ? null : a.get(i, at.elementType()));
            }
        } else if (t instanceof MapType) {
            MapType mt = (MapType) t;
            MapData e = (MapData) expected, a = (MapData) actual;
            assertEquals(path + ": map size", e.numElements(), a.numElements());
            Map<Object, Integer> actualIndex = new HashMap<>();
            for (int i = 0; i < a.numElements(); i++) actualIndex.put(a.keyArray().getUTF8String(i), i);
            for (int i = 0; i < e.numElements(); i++) {
                UTF8String k = e.keyArray().getUTF8String(i);
                Integer j = actualIndex.get(k);
                assertNotNull(path + ": missing key " + k, j);
                ArrayData ev = e.valueArray(), av = a.valueArray();
                assertSparkEquals(path + "{" + k + "}", mt.valueType(),
                        ev.isNullAt(i) ? null : ev.get(i, mt.valueType()), av.isNullAt(j) ? null : av.get(j, mt.valueType()));
            }
        } else if (t instanceof StructType) {
            StructField[] fs = ((StructType) t).fields();
            InternalRow e = (InternalRow) expected, a = (InternalRow) actual;
            assertEquals(path + ": struct arity", fs.length, a.numFields());
            for (int i = 0; i < fs.length; i++) {
                DataType ft = fs[i].dataType();
                assertSparkEquals(path + "." + fs[i].name(), ft, e.isNullAt(i) ? null : e.get(i, ft),
                        a.isNullAt(i) ? null : a.get(i, ft));
            }
        } else if (t instanceof DecimalType) {
            DecimalType d = (DecimalType) t;
            assertEquals(path, ((Decimal) expected).toJavaBigDecimal(), ((Decimal) actual).toJavaBigDecimal());
            assertEquals(path + ": scale", d.scale(), ((Decimal) actual).scale());
        } else {
            // Boxed equality: NaN equals NaN, -0.0 differs from 0.0 (the bits must survive).
            assertEquals(path + ": type", expected.getClass(), actual.getClass());
            assertEquals(path, expected, actual);
        }
    }

    // ---------------------------------------------------------------- Avro generic conversions

    /** A Spark value as Avro's generic representation (for GenericDatumWriter). */
    static Object toAvro(DataType t, Schema s, Object v) {
        if (v == null) return null;
        if (s.getType() == Schema.Type.UNION) s = s.getTypes().get(1);
        if (v instanceof Byte) return (int) (Byte) v;
        if (v instanceof Short) return (int) (Short) v;
        if (v instanceof UTF8String) return new Utf8(((UTF8String) v).getBytes());
        if (v instanceof byte[]) return ByteBuffer.wrap((byte[]) v);
        if (v instanceof Decimal) {
            return ByteBuffer.wrap(((Decimal) v).toJavaBigDecimal().unscaledValue().toByteArray());
        }
        if (t instanceof ArrayType) {
            ArrayType at = (ArrayType) t;
            ArrayData a = (ArrayData) v;
            List<Object> out = new ArrayList<>();
            for (int i = 0; i < a.numElements(); i++) {
                out.add(toAvro(at.elementType(), s.getElementType(), a.isNullAt(i) ? null : a.get(i, at.elementType())));
            }
            return out;
        }
        if (t instanceof MapType) {
            MapType mt = (MapType) t;
            MapData m = (MapData) v;
            Map<Object, Object> out = new LinkedHashMap<>();
            for (int i = 0; i < m.numElements(); i++) {
                ArrayData va = m.valueArray();
                out.put(new Utf8(m.keyArray().getUTF8String(i).getBytes()),
                        toAvro(mt.valueType(), s.getValueType(), va.isNullAt(i) ? null : va.get(i, mt.valueType())));
            }
            return out;
        }
        if (t instanceof StructType) {
            StructField[] fs = ((StructType) t).fields();
            InternalRow r = (InternalRow) v;
            GenericData.Record rec = new GenericData.Record(s);
            for (int i = 0; i < fs.length; i++) {
                DataType ft = fs[i].dataType();
                rec.put(fs[i].name(), toAvro(ft, s.getField(fs[i].name()).schema(), r.isNullAt(i) ? null : r.get(i, ft)));
            }
            return rec;
        }
        return v; // Boolean, Integer, Long, Float, Double
    }

    /** An Avro generic value (from GenericDatumReader) as a Spark internal value. */
    static Object fromAvro(DataType t, Object v) {
        if (v == null) return null;
        if (t instanceof ByteType) return (byte) (int) (Integer) v;
        if (t instanceof ShortType) return (short) (int) (Integer) v;
        if (t instanceof StringType) return UTF8String.fromString(v.toString());
        if (t instanceof BinaryType) return bytes((ByteBuffer) v);
        if (t instanceof DecimalType) {
            DecimalType d = (DecimalType) t;
            return Decimal.apply(new BigDecimal(new BigInteger(bytes((ByteBuffer) v)), d.scale()), d.precision(), d.scale());
        }
        if (t instanceof ArrayType) {
            List<?> l = (List<?>) v;
            Object[] out = new Object[l.size()];
            for (int i = 0; i < out.length; i++) out[i] = fromAvro(((ArrayType) t).elementType(), l.get(i));
            return new GenericArrayData(out);
        }
        if (t instanceof MapType) {
            Map<?, ?> m = (Map<?, ?>) v;
            Object[] k = new Object[m.size()];
            Object[] vs = new Object[m.size()];
            int i = 0;
            for (Map.Entry<?, ?> e : m.entrySet()) {
                k[i] = UTF8String.fromString(e.getKey().toString());
                vs[i++] = fromAvro(((MapType) t).valueType(), e.getValue());
            }
            return new ArrayBasedMapData(new GenericArrayData(k), new GenericArrayData(vs));
        }
        if (t instanceof StructType) {
            StructField[] fs = ((StructType) t).fields();
            GenericRecord rec = (GenericRecord) v;
            Object[] out = new Object[fs.length];
            for (int i = 0; i < fs.length; i++) out[i] = fromAvro(fs[i].dataType(), rec.get(fs[i].name()));
            return new GenericInternalRow(out);
        }
        return v;
    }

    private static byte[] bytes(ByteBuffer b) {
        ByteBuffer d = b.duplicate();
        byte[] out = new byte[d.remaining()];
        d.get(out);
        return out;
    }

    static String hex(byte[] b) {
        StringBuilder sb = new StringBuilder();
        for (byte x : b) sb.append(String.format("%02x", x & 0xFF));
        return sb.toString();
    }
}
