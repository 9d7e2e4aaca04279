package io.sfclayer.codec;

import io.sfclayer.SfcLayerException;
import io.sfclayer.codec.TileSchema.Node;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.SpecializedGetters;
import org.apache.spark.sql.catalyst.expressions.UnsafeArrayData;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.MapData;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.RoundingMode;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * Encodes tile records as the Avro binary encoding of a {@link TileSchema#avroSchemaJson() Tile}
 * record; {@link io.sfclayer.layer.GroupWriter} frames the records sharing one SFC index as a group
 * (an Avro array: one block of record count, records, 0).
 *
 * <p>Reads Spark {@link InternalRow}s directly; strings, binaries, compact decimals and primitive
 * arrays of {@link UnsafeRow}/{@link UnsafeArrayData} inputs are copied straight from their
 * memory. Not thread-safe; reuse one instance per task.
 */
public final class TileWriter {
    private static final int MAX_GROUP = Integer.MAX_VALUE - 64;
    private static final boolean LITTLE_ENDIAN = ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN;
    private static final VarHandle INT_LE = MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle LONG_LE = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final long BAO = Platform.BYTE_ARRAY_OFFSET;
    private static final long[] POW10 = new long[19];
    static {
        POW10[0] = 1;
        for (int i = 1; i < POW10.length; i++) POW10[i] = POW10[i - 1] * 10;
    }

    private final TileSchema schema;
    private final Node[] nodes;
    private final int colOrdinal, rowOrdinal, timeOrdinal;
    private final int[] valueOrdinals;

    private byte[] buf = new byte[4096];
    private int pos;

    /**
     * @param colOrdinal     ordinal of the int {@code col} key in the input rows
     * @param rowOrdinal     ordinal of the int {@code row} key
     * @param timeOrdinal    ordinal of the timestamp {@code time} key (microseconds), -1 if none
     * @param valueOrdinals  ordinal in the input row of each value column, in schema order
     */
    public TileWriter(TileSchema schema, int colOrdinal, int rowOrdinal, int timeOrdinal, int[] valueOrdinals) {
        this.schema = schema;
        this.nodes = schema.nodes();
        if (valueOrdinals.length != nodes.length) {
            throw new IllegalArgumentException("expected " + nodes.length + " value ordinals, got " + valueOrdinals.length);
        }
        if (schema.spaceTime() != (timeOrdinal >= 0)) {
            throw new IllegalArgumentException(schema.spaceTime()
                    ? "a space-time layer needs a time ordinal" : "a spatial layer has no time ordinal");
        }
        this.colOrdinal = colOrdinal;
        this.rowOrdinal = rowOrdinal;
        this.timeOrdinal = timeOrdinal;
        this.valueOrdinals = valueOrdinals.clone();
    }

    public TileSchema schema() {
        return schema;
    }

    /**
     * The Avro binary encoding of the single Tile record read from {@code row} (no array
     * framing): what {@link TileCursor} exposes as a record slice. Records encoded this way can
     * be concatenated into a group as {@code count varint, records..., 0}.
     *
     * @throws SfcLayerException.InvalidInput for a null key, or a null in a non-nullable column
     */
    public byte[] encodeRecord(InternalRow row) {
        int start = pos;
        appendRecord(row);
        byte[] out = Arrays.copyOfRange(buf, start, pos);
        pos = start;
        return out;
    }

    private void appendRecord(InternalRow row) {
        int start = pos;
        try {
            if (row.isNullAt(colOrdinal) || row.isNullAt(rowOrdinal) || (timeOrdinal >= 0 && row.isNullAt(timeOrdinal))) {
                throw new SfcLayerException.InvalidInput("tile key (col, row" + (timeOrdinal >= 0 ? ", time" : "")
                        + ") has a null");
            }
            ensure(20);
            writeIntNoCheck(row.getInt(colOrdinal));
            writeIntNoCheck(row.getInt(rowOrdinal));
            if (timeOrdinal >= 0) {
                ensure(10);
                writeLongNoCheck(row.getLong(timeOrdinal));
            }
            Node[] ns = nodes;
            int[] ords = valueOrdinals;
            for (int j = 0; j < ns.length; j++) {
                writeField(ns[j], row, ords[j]);
            }
        } catch (RuntimeException e) {
            pos = start;
            throw e;
        }
    }

    // ---------------------------------------------------------------- encoding

    private void writeField(Node n, SpecializedGetters src, int ord) {
        if (src.isNullAt(ord)) {
            if (!n.nullable) {
                throw new SfcLayerException.InvalidInput("value column '" + n.path
                        + "' holds a null but the layer's column is NOT NULL");
            }
            ensure(1);
            buf[pos++] = 0; // union branch 0: null
            return;
        }
        if (n.nullable) {
            ensure(1);
            buf[pos++] = 2; // union branch 1 (zig-zag)
        }
        switch (n.kind) {
            case TileSchema.K_BOOLEAN:
                ensure(1);
                buf[pos++] = (byte) (src.getBoolean(ord) ? 1 : 0);
                break;
            case TileSchema.K_BYTE:
                ensure(5);
                writeIntNoCheck(src.getByte(ord));
                break;
            case TileSchema.K_SHORT:
                ensure(5);
                writeIntNoCheck(src.getShort(ord));
                break;
            case TileSchema.K_INT:
                ensure(5);
                writeIntNoCheck(src.getInt(ord));
                break;
            case TileSchema.K_LONG:
                ensure(10);
                writeLongNoCheck(src.getLong(ord));
                break;
            case TileSchema.K_FLOAT:
                ensure(4);
                INT_LE.set(buf, pos, Float.floatToRawIntBits(src.getFloat(ord)));
                pos += 4;
                break;
            case TileSchema.K_DOUBLE:
                ensure(8);
                LONG_LE.set(buf, pos, Double.doubleToRawLongBits(src.getDouble(ord)));
                pos += 8;
                break;
            case TileSchema.K_STRING:
                if (src instanceof UnsafeRow || src instanceof UnsafeArrayData) {
                    writeUnsafeVarLen(src, ord);
                } else {
                    UTF8String s = src.getUTF8String(ord);
                    int len = s.numBytes();
                    ensure(5L + len);
                    writeLongNoCheck(len);
                    s.writeToMemory(buf, BAO + pos);
                    pos += len;
                }
                break;
            case TileSchema.K_BINARY:
                if (src instanceof UnsafeRow || src instanceof UnsafeArrayData) {
                    writeUnsafeVarLen(src, ord);
                } else {
                    writeBytes(src.getBinary(ord));
                }
                break;
            case TileSchema.K_DECIMAL:
                writeDecimal(n, src, ord);
                break;
            case TileSchema.K_ARRAY:
                writeArray(n.element, src.getArray(ord));
                break;
            case TileSchema.K_MAP:
                writeMap(n.element, src.getMap(ord));
                break;
            case TileSchema.K_STRUCT: {
                Node[] fs = n.fields;
                InternalRow r = src.getStruct(ord, fs.length);
                for (int i = 0; i < fs.length; i++) writeField(fs[i], r, i);
                break;
            }
            default:
                throw new IllegalStateException("kind " + n.kind);
        }
    }

    /** A string or binary of an UnsafeRow/UnsafeArrayData, copied from its memory (no allocation). */
    private void writeUnsafeVarLen(SpecializedGetters src, int ord) {
        long offsetAndSize = src.getLong(ord);
        int offset = (int) (offsetAndSize >> 32);
        int size = (int) offsetAndSize;
        Object base;
        long baseOffset;
        if (src instanceof UnsafeRow) {
            UnsafeRow r = (UnsafeRow) src;
            base = r.getBaseObject();
            baseOffset = r.getBaseOffset();
        } else {
            UnsafeArrayData a = (UnsafeArrayData) src;
            base = a.getBaseObject();
            baseOffset = a.getBaseOffset();
        }
        ensure(5L + size);
        writeLongNoCheck(size);
        Platform.copyMemory(base, baseOffset + offset, buf, BAO + pos, size);
        pos += size;
    }

    private void writeBytes(byte[] b) {
        ensure(5L + b.length);
        writeLongNoCheck(b.length);
        System.arraycopy(b, 0, buf, pos, b.length);
        pos += b.length;
    }

    private void writeDecimal(Node n, SpecializedGetters src, int ord) {
        int p = n.precision, s = n.scale;
        long unscaled;
        if (src instanceof UnsafeRow || src instanceof UnsafeArrayData) {
            if (p > 18) {
                // stored as BigInteger.toByteArray() of the unscaled value: Avro's encoding
                writeUnsafeVarLen(src, ord);
                return;
            }
            unscaled = src.getLong(ord); // compact decimals are stored as their unscaled long
        } else {
            Decimal d = src.getDecimal(ord, p, s);
            if (d.scale() == s && p <= 18) {
                unscaled = d.toUnscaledLong();
                if (unscaled <= -POW10[p] || unscaled >= POW10[p]) {
                    throw new SfcLayerException.InvalidInput("value column '" + n.path + "' holds " + d
                            + " which does not fit decimal(" + p + "," + s + ")");
                }
            } else {
                BigDecimal bd = d.toJavaBigDecimal();
                if (bd.scale() != s) bd = bd.setScale(s, RoundingMode.HALF_UP);
                if (bd.precision() > p) {
                    throw new SfcLayerException.InvalidInput("value column '" + n.path + "' holds " + d
                            + " which does not fit decimal(" + p + "," + s + ")");
                }
                BigInteger u = bd.unscaledValue();
                if (u.bitLength() < 64) {
                    unscaled = u.longValue();
                } else {
                    writeBytes(u.toByteArray());
                    return;
                }
            }
        }
        // Minimal big-endian two's complement, as BigInteger.toByteArray().
        int nbytes = (64 - Long.numberOfLeadingZeros(unscaled ^ (unscaled >> 63))) / 8 + 1;
        ensure(1 + nbytes);
        buf[pos++] = (byte) (nbytes << 1);
        for (int shift = (nbytes - 1) * 8; shift >= 0; shift -= 8) {
            buf[pos++] = (byte) (unscaled >> shift);
        }
    }

    private void writeArray(Node e, ArrayData a) {
        int n = a.numElements();
        if (n == 0) {
            ensure(1);
            buf[pos++] = 0;
            return;
        }
        ensure(10);
        writeLongNoCheck(n);
        if (!e.nullable && (e.kind == TileSchema.K_FLOAT || e.kind == TileSchema.K_DOUBLE || e.kind == TileSchema.K_BOOLEAN)
                && LITTLE_ENDIAN && a instanceof UnsafeArrayData && noNulls((UnsafeArrayData) a, n)) {
            // The value region of an UnsafeArrayData of floats/doubles/booleans is their Avro encoding.
            UnsafeArrayData u = (UnsafeArrayData) a;
            long bytes = (long) n * e.primSize;
            ensure(bytes + 1);
            Platform.copyMemory(u.getBaseObject(), u.getBaseOffset() + UnsafeArrayData.calculateHeaderPortionInBytes(n),
                    buf, BAO + pos, bytes);
            pos += (int) bytes;
        } else if (!e.nullable && e.kind == TileSchema.K_INT) {
            ensure(5L * n + 1);
            for (int i = 0; i < n; i++) {
                if (a.isNullAt(i)) throw nullElement(e);
                writeIntNoCheck(a.getInt(i));
            }
        } else if (!e.nullable && e.kind == TileSchema.K_LONG) {
            ensure(10L * n + 1);
            for (int i = 0; i < n; i++) {
                if (a.isNullAt(i)) throw nullElement(e);
                writeLongNoCheck(a.getLong(i));
            }
        } else if (!e.nullable && e.kind == TileSchema.K_DOUBLE) {
            ensure(8L * n + 1);
            for (int i = 0; i < n; i++) {
                if (a.isNullAt(i)) throw nullElement(e);
                LONG_LE.set(buf, pos, Double.doubleToRawLongBits(a.getDouble(i)));
                pos += 8;
            }
        } else if (!e.nullable && e.kind == TileSchema.K_FLOAT) {
            ensure(4L * n + 1);
            for (int i = 0; i < n; i++) {
                if (a.isNullAt(i)) throw nullElement(e);
                INT_LE.set(buf, pos, Float.floatToRawIntBits(a.getFloat(i)));
                pos += 4;
            }
        } else {
            for (int i = 0; i < n; i++) writeField(e, a, i);
        }
        ensure(1);
        buf[pos++] = 0;
    }

    private static SfcLayerException.InvalidInput nullElement(Node e) {
        return new SfcLayerException.InvalidInput("value column '" + e.path
                + "' holds a null but the layer's column is NOT NULL");
    }

    private static boolean noNulls(UnsafeArrayData a, int n) {
        Object base = a.getBaseObject();
        long words = a.getBaseOffset() + 8;
        for (int i = 0, w = (n + 63) >>> 6; i < w; i++) {
            if (Platform.getLong(base, words + 8L * i) != 0) return false;
        }
        return true;
    }

    private void writeMap(Node v, MapData m) {
        int n = m.numElements();
        if (n == 0) {
            ensure(1);
            buf[pos++] = 0;
            return;
        }
        ensure(10);
        writeLongNoCheck(n);
        ArrayData keys = m.keyArray();
        ArrayData values = m.valueArray();
        boolean unsafeKeys = keys instanceof UnsafeArrayData;
        for (int i = 0; i < n; i++) {
            if (keys.isNullAt(i)) {
                throw new SfcLayerException.InvalidInput("value column '" + v.path + "' has a null map key");
            }
            if (unsafeKeys) {
                writeUnsafeVarLen(keys, i);
            } else {
                UTF8String k = keys.getUTF8String(i);
                int len = k.numBytes();
                ensure(5L + len);
                writeLongNoCheck(len);
                k.writeToMemory(buf, BAO + pos);
                pos += len;
            }
            writeField(v, values, i);
        }
        ensure(1);
        buf[pos++] = 0;
    }

    // ---------------------------------------------------------------- buffer

    private void writeIntNoCheck(int x) {
        pos = Varint.writeInt(buf, pos, x);
    }

    private void writeLongNoCheck(long x) {
        pos = Varint.writeLong(buf, pos, x);
    }

    private void ensure(long n) {
        if (pos + n > buf.length) grow(pos + n);
    }

    private void grow(long needed) {
        if (needed > MAX_GROUP) {
            throw new SfcLayerException.InvalidInput("the tiles of one SFC index encode to more than 2 GiB");
        }
        long cap = Math.max(needed, Math.min((long) buf.length * 2, MAX_GROUP));
        buf = Arrays.copyOf(buf, (int) cap);
    }
}
