package io.sfclayer.codec;

// Over 500 lines on purpose: one decoder for every Avro type a tile value can have, each case next
// to the checks that keep damaged bytes from being returned; split, the cases would be read apart
// from the bounds checks they rely on.

import io.sfclayer.SfcLayerException;
import io.sfclayer.codec.TileSchema.Node;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeArrayData;
import org.apache.spark.sql.catalyst.util.ArrayBasedMapData;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * Decodes a group of tile records: the Avro binary encoding of an array of
 * {@link TileSchema#avroSchemaJson() Tile} records, in any valid Avro block layout (several
 * blocks, negative block counts with byte sizes), for arrays and maps inside records too.
 *
 * <pre>
 *   cursor.reset(bytes, 0, length);
 *   while (cursor.next()) {
 *       if (wanted(cursor.col(), cursor.row())) cursor.readValues(out, targetIndex);
 *   }
 * </pre>
 *
 * <p>Values are Spark internal objects: Boolean, Byte, Short, Integer (int and date), Long
 * (bigint and both timestamps, in microseconds), Float, Double, {@link UTF8String}, byte[],
 * {@link Decimal}, {@link ArrayData} (an {@link UnsafeArrayData} for arrays of primitive
 * elements, else a {@link GenericArrayData}), {@link ArrayBasedMapData} and
 * {@link GenericInternalRow}. Strings and binaries are copied out of the input buffer, so it may
 * be reused once the values are read.
 *
 * <p>Any malformed or truncated input raises {@link SfcLayerException.CorruptLayer} (message
 * starting with "corrupt tile record: "). Not thread-safe.
 */
public final class TileCursor {
    private static final boolean LITTLE_ENDIAN = ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN;
    private static final VarHandle INT_LE = MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle LONG_LE = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final long BAO = Platform.BYTE_ARRAY_OFFSET;
    private static final long[] POW10 = new long[19];
    static {
        POW10[0] = 1;
        for (int i = 1; i < POW10.length; i++) POW10[i] = POW10[i - 1] * 10;
    }
    private static final GenericArrayData EMPTY_ARRAY = new GenericArrayData(new Object[0]);
    private static final ArrayBasedMapData EMPTY_MAP = new ArrayBasedMapData(EMPTY_ARRAY, EMPTY_ARRAY);

    private final TileSchema schema;
    private final Node[] nodes;
    private final boolean spaceTime;

    private byte[] buf = new byte[0];
    private int pos, end;
    /** Records left in the current block of the group array. */
    private long blockRemaining;
    private boolean done = true;
    private boolean onRecord;
    private int col, row;
    private long time;
    private int recStart, valStart;
    /** End of the current record, -1 until its values have been read or skipped. */
    private int recEnd;

    public TileCursor(TileSchema schema) {
        this.schema = schema;
        this.nodes = schema.nodes();
        this.spaceTime = schema.spaceTime();
    }

    public TileSchema schema() {
        return schema;
    }

    /** Points the cursor at a group: {@code buf[off .. off+len)}, before its first record. */
    public void reset(byte[] buf, int off, int len) {
        if (off < 0 || len < 0 || off > buf.length - len) {
            throw new IllegalArgumentException("slice [" + off + ", " + off + "+" + len + ") outside a "
                    + buf.length + "-byte buffer");
        }
        this.buf = buf;
        this.pos = off;
        this.end = off + len;
        this.blockRemaining = 0;
        this.done = false;
        this.onRecord = false;
    }

    /**
     * Moves to the next record, skipping the values of the current one if they were not read.
     * Reads the record's keys.
     *
     * @return false at the end of the group
     */
    public boolean next() {
        if (done) return false;
        if (onRecord) {
            if (recEnd < 0) {
                pos = valStart;
                skipAll();
            } else {
                pos = recEnd;
            }
            onRecord = false;
        }
        if (blockRemaining == 0) {
            long c = readBlockCount(2);
            if (c == 0) {
                done = true;
                if (pos != end) {
                    throw corrupt((end - pos) + " unexpected bytes after the end of the group");
                }
                return false;
            }
            blockRemaining = c;
        }
        blockRemaining--;
        recStart = pos;
        col = readInt();
        row = readInt();
        if (spaceTime) time = readLong();
        valStart = pos;
        recEnd = -1;
        onRecord = true;
        return true;
    }

    /** The current record's {@code col}. */
    public int col() {
        return col;
    }

    /** The current record's {@code row}. */
    public int row() {
        return row;
    }

    /** The current record's {@code time} in microseconds since the epoch; 0 for spatial layers. */
    public long timeMicros() {
        return spaceTime ? time : 0L;
    }

    /** Offset in the buffer of the current record's encoding (its {@code col}). */
    public int recordOffset() {
        checkOnRecord();
        return recStart;
    }

    /**
     * Length of the current record's encoding: {@code buf[recordOffset() .. +recordLength())} is
     * exactly one Tile record, decodable alone with {@link TileSchema#avroSchemaJson()}.
     */
    public int recordLength() {
        checkOnRecord();
        if (recEnd < 0) skipValues();
        return recEnd - recStart;
    }

    /**
     * Decodes value column {@code j} into {@code out[targetIndex[j]]} when that index is &gt;= 0;
     * skips it (without allocating) otherwise. May be called more than once per record.
     */
    public void readValues(Object[] out, int[] targetIndex) {
        checkOnRecord();
        Node[] ns = nodes;
        if (targetIndex.length != ns.length) {
            throw new IllegalArgumentException("expected " + ns.length + " target indexes, got " + targetIndex.length);
        }
        pos = valStart;
        int j = 0;
        try {
            for (; j < ns.length; j++) {
                int t = targetIndex[j];
                if (t >= 0) {
                    out[t] = readField(ns[j]);
                } else {
                    skipField(ns[j]);
                }
            }
        } catch (SfcLayerException.CorruptLayer e) {
            throw new SfcLayerException.CorruptLayer(SfcLayerException.reason(e) + " (in value column '" + ns[j].path
                    + "' of the record at offset " + recStart + ")", e);
        }
        recEnd = pos;
    }

    /** Skips the current record's values (finding where the record ends). */
    public void skipValues() {
        checkOnRecord();
        if (recEnd < 0) {
            pos = valStart;
            skipAll();
        }
    }

    private void skipAll() {
        Node[] ns = nodes;
        int j = 0;
        try {
            for (; j < ns.length; j++) skipField(ns[j]);
        } catch (SfcLayerException.CorruptLayer e) {
            throw new SfcLayerException.CorruptLayer(SfcLayerException.reason(e) + " (in value column '" + ns[j].path
                    + "' of the record at offset " + recStart + ")", e);
        }
        recEnd = pos;
    }

    private void checkOnRecord() {
        if (!onRecord) throw new IllegalStateException("no current record: call next() first");
    }

    // ---------------------------------------------------------------- decoding

    private Object readField(Node n) {
        if (n.nullable && readUnionIndex() == 0) return null;
        switch (n.kind) {
            case TileSchema.K_BOOLEAN:
                return readBoolean() ? Boolean.TRUE : Boolean.FALSE;
            case TileSchema.K_BYTE:
                return readByte();
            case TileSchema.K_SHORT:
                return readShort();
            case TileSchema.K_INT:
                return readInt();
            case TileSchema.K_LONG:
                return readLong();
            case TileSchema.K_FLOAT:
                return readFloat();
            case TileSchema.K_DOUBLE:
                return readDouble();
            case TileSchema.K_STRING:
                return UTF8String.fromBytes(readByteArray());
            case TileSchema.K_BINARY:
                return readByteArray();
            case TileSchema.K_DECIMAL:
                return readDecimal(n);
            case TileSchema.K_ARRAY:
                return readArray(n.element);
            case TileSchema.K_MAP:
                return readMap(n.element);
            case TileSchema.K_STRUCT: {
                Node[] fs = n.fields;
                Object[] values = new Object[fs.length];
                for (int i = 0; i < fs.length; i++) values[i] = readField(fs[i]);
                return new GenericInternalRow(values);
            }
            default:
                throw new IllegalStateException("kind " + n.kind);
        }
    }

    private Decimal readDecimal(Node n) {
        int len = readLength();
        if (len == 0) throw corrupt("empty decimal");
        int p = n.precision, s = n.scale;
        if (len <= 8) {
            long u = buf[pos]; // sign-extended
            for (int i = 1; i < len; i++) u = (u << 8) | (buf[pos + i] & 0xFF);
            pos += len;
            if (p <= 18) {
                if (u <= -POW10[p] || u >= POW10[p]) throw corrupt("decimal does not fit decimal(" + p + "," + s + ")");
                return Decimal.createUnsafe(u, p, s);
            }
            return Decimal.apply(u, p, s); // compact even for p > 18: |u| < 2^63 <= 10^p
        }
        BigInteger u = new BigInteger(buf, pos, len);
        pos += len;
        BigDecimal bd = new BigDecimal(u, s);
        if (bd.precision() > p) throw corrupt("decimal does not fit decimal(" + p + "," + s + ")");
        return Decimal.apply(bd, p, s);
    }

    private ArrayData readArray(Node e) {
        long c = readBlockCount(1);
        if (c == 0) return EMPTY_ARRAY;
        if (e.primSize > 0) {
            UnsafeArrayData a = newPrimArray(c, e.primSize);
            int n = 0;
            for (;;) {
                n = readPrimBlock(e, a, n, (int) c);
                c = readBlockCount(1);
                if (c == 0) return a;
                a = growPrimArray(a, n, n + c, e.primSize);
            }
        }
        Object[] values = new Object[(int) c];
        int n = 0;
        for (;;) {
            for (int i = 0; i < c; i++) values[n++] = readField(e);
            c = readBlockCount(1);
            if (c == 0) return new GenericArrayData(values);
            values = Arrays.copyOf(values, checkedSize(n + c));
        }
    }

    private ArrayBasedMapData readMap(Node v) {
        long c = readBlockCount(2);
        if (c == 0) return EMPTY_MAP;
        Object[] keys = new Object[(int) c];
        if (v.primSize > 0) {
            UnsafeArrayData values = newPrimArray(c, v.primSize);
            int n = 0;
            for (;;) {
                for (int i = 0; i < c; i++) {
                    keys[n] = UTF8String.fromBytes(readByteArray());
                    if (v.nullable && readUnionIndex() == 0) {
                        values.setNullAt(n);
                    } else {
                        readPrim(v, values, n);
                    }
                    n++;
                }
                c = readBlockCount(2);
                if (c == 0) return new ArrayBasedMapData(new GenericArrayData(keys), values);
                keys = Arrays.copyOf(keys, checkedSize(n + c));
                values = growPrimArray(values, n, n + c, v.primSize);
            }
        }
        Object[] values = new Object[(int) c];
        int n = 0;
        for (;;) {
            for (int i = 0; i < c; i++) {
                keys[n] = UTF8String.fromBytes(readByteArray());
                values[n++] = readField(v);
            }
            c = readBlockCount(2);
            if (c == 0) return new ArrayBasedMapData(new GenericArrayData(keys), new GenericArrayData(values));
            keys = Arrays.copyOf(keys, checkedSize(n + c));
            values = Arrays.copyOf(values, keys.length);
        }
    }

    /** Reads {@code c} primitive elements into {@code a} from index {@code n}; returns the new count. */
    private int readPrimBlock(Node e, UnsafeArrayData a, int n, int c) {
        if (!e.nullable && LITTLE_ENDIAN && (e.kind == TileSchema.K_DOUBLE || e.kind == TileSchema.K_FLOAT)) {
            // Avro floats/doubles are little-endian IEEE: the block is the array's value region.
            need((long) c * e.primSize);
            int bytes = c * e.primSize; // <= the remaining input, so no overflow
            Platform.copyMemory(buf, BAO + pos, a.getBaseObject(),
                    a.getBaseOffset() + UnsafeArrayData.calculateHeaderPortionInBytes(a.numElements())
                            + (long) n * e.primSize, bytes);
            pos += bytes;
            return n + c;
        }
        for (int i = 0; i < c; i++, n++) {
            if (e.nullable && readUnionIndex() == 0) {
                a.setNullAt(n);
            } else {
                readPrim(e, a, n);
            }
        }
        return n;
    }

    private void readPrim(Node e, UnsafeArrayData a, int i) {
        switch (e.kind) {
            case TileSchema.K_BOOLEAN: a.setBoolean(i, readBoolean()); break;
            case TileSchema.K_BYTE: a.setByte(i, readByte()); break;
            case TileSchema.K_SHORT: a.setShort(i, readShort()); break;
            case TileSchema.K_INT: a.setInt(i, readInt()); break;
            case TileSchema.K_LONG: a.setLong(i, readLong()); break;
            case TileSchema.K_FLOAT: a.setFloat(i, readFloat()); break;
            case TileSchema.K_DOUBLE: a.setDouble(i, readDouble()); break;
            default: throw new IllegalStateException("kind " + e.kind);
        }
    }

    private static UnsafeArrayData newPrimArray(long n, int elementSize) {
        long header = UnsafeArrayData.calculateHeaderPortionInBytes(n);
        long size = header + ((n * elementSize + 7) & ~7L);
        if (size > Integer.MAX_VALUE - 16) {
            throw new SfcLayerException.CorruptLayer("corrupt tile record: array of " + n + " elements is too large");
        }
        byte[] data = new byte[(int) size];
        Platform.putLong(data, BAO, n);
        UnsafeArrayData a = new UnsafeArrayData();
        a.pointTo(data, BAO, (int) size);
        return a;
    }

    /** A copy of the first {@code n} elements of {@code a} (values and null bits) in a larger array. */
    private static UnsafeArrayData growPrimArray(UnsafeArrayData a, int n, long newN, int elementSize) {
        UnsafeArrayData b = newPrimArray(checkedSize(newN), elementSize);
        Object src = a.getBaseObject();
        long srcOff = a.getBaseOffset();
        Object dst = b.getBaseObject();
        long dstOff = b.getBaseOffset();
        Platform.copyMemory(src, srcOff + 8, dst, dstOff + 8, ((n + 63L) >>> 6) * 8);
        Platform.copyMemory(src, srcOff + UnsafeArrayData.calculateHeaderPortionInBytes(n),
                dst, dstOff + UnsafeArrayData.calculateHeaderPortionInBytes((int) newN), (long) n * elementSize);
        return b;
    }

    private static int checkedSize(long n) {
        if (n > Integer.MAX_VALUE - 16) {
            throw new SfcLayerException.CorruptLayer("corrupt tile record: array of " + n + " elements is too large");
        }
        return (int) n;
    }

    // ---------------------------------------------------------------- skipping

    private void skipField(Node n) {
        if (n.nullable && readUnionIndex() == 0) return;
        switch (n.kind) {
            case TileSchema.K_BOOLEAN: readBoolean(); break;
            case TileSchema.K_BYTE: readByte(); break;
            case TileSchema.K_SHORT: readShort(); break;
            case TileSchema.K_INT: readInt(); break;
            case TileSchema.K_LONG: readLong(); break;
            case TileSchema.K_FLOAT: need(4); pos += 4; break;
            case TileSchema.K_DOUBLE: need(8); pos += 8; break;
            case TileSchema.K_STRING:
            case TileSchema.K_BINARY:
            case TileSchema.K_DECIMAL: {
                int len = readLength();
                pos += len;
                break;
            }
            case TileSchema.K_ARRAY:
            case TileSchema.K_MAP: {
                Node e = n.element;
                boolean map = n.kind == TileSchema.K_MAP;
                int fixed = e.nullable ? 0 : e.kind == TileSchema.K_DOUBLE ? 8 : e.kind == TileSchema.K_FLOAT ? 4 : 0;
                for (;;) {
                    long c = readLong();
                    if (c == 0) break;
                    if (c < 0) {
                        if (c == Long.MIN_VALUE) throw corrupt("invalid block count");
                        long size = readLong();
                        if (size < 0 || size > end - pos) throw corrupt("invalid block size " + size);
                        pos += (int) size;
                        continue;
                    }
                    if (c > end - pos) throw corrupt("block of " + c + " items is longer than the input");
                    if (fixed > 0 && !map) {
                        need(c * fixed);
                        pos += (int) (c * fixed);
                    } else {
                        for (long i = 0; i < c; i++) {
                            if (map) {
                                int len = readLength();
                                pos += len;
                            }
                            skipField(e);
                        }
                    }
                }
                break;
            }
            case TileSchema.K_STRUCT:
                for (Node f : n.fields) skipField(f);
                break;
            default:
                throw new IllegalStateException("kind " + n.kind);
        }
    }

    // ---------------------------------------------------------------- primitives

    /**
     * An array/map block count (negative counts are followed by the block's byte size, which is
     * checked and ignored). Each item takes at least {@code minItemBytes} bytes.
     */
    private long readBlockCount(int minItemBytes) {
        long c = readLong();
        if (c < 0) {
            if (c == Long.MIN_VALUE) throw corrupt("invalid block count");
            c = -c;
            long size = readLong();
            if (size < 0 || size > end - pos) throw corrupt("invalid block size " + size);
        }
        if (c > (end - pos) / minItemBytes) throw corrupt("block of " + c + " items is longer than the input");
        return c;
    }

    private int readUnionIndex() {
        if (pos >= end) throw truncated(1);
        byte b = buf[pos++];
        if (b == 0) return 0;
        if (b == 2) return 1;
        throw corrupt("invalid union branch " + b + " at offset " + (pos - 1));
    }

    private boolean readBoolean() {
        if (pos >= end) throw truncated(1);
        byte b = buf[pos++];
        if (b == 0) return false;
        if (b == 1) return true;
        throw corrupt("invalid boolean byte " + b + " at offset " + (pos - 1));
    }

    private byte readByte() {
        int v = readInt();
        if (v != (byte) v) throw corrupt("value " + v + " out of range for tinyint");
        return (byte) v;
    }

    private short readShort() {
        int v = readInt();
        if (v != (short) v) throw corrupt("value " + v + " out of range for smallint");
        return (short) v;
    }

    private int readInt() {
        byte[] b = buf;
        int p = pos;
        int v = 0;
        for (int shift = 0; shift < 35; shift += 7) {
            if (p >= end) throw truncated(1);
            int x = b[p++];
            v |= (x & 0x7F) << shift;
            if (x >= 0) {
                pos = p;
                return (v >>> 1) ^ -(v & 1);
            }
        }
        throw corrupt("invalid int varint at offset " + pos);
    }

    private long readLong() {
        byte[] b = buf;
        int p = pos;
        long v = 0;
        for (int shift = 0; shift < 70; shift += 7) {
            if (p >= end) throw truncated(1);
            int x = b[p++];
            v |= (long) (x & 0x7F) << shift;
            if (x >= 0) {
                pos = p;
                return (v >>> 1) ^ -(v & 1);
            }
        }
        throw corrupt("invalid long varint at offset " + pos);
    }

    private float readFloat() {
        need(4);
        float f = Float.intBitsToFloat((int) INT_LE.get(buf, pos));
        pos += 4;
        return f;
    }

    private double readDouble() {
        need(8);
        double d = Double.longBitsToDouble((long) LONG_LE.get(buf, pos));
        pos += 8;
        return d;
    }

    /** A bytes/string length, checked against the remaining input. */
    private int readLength() {
        long len = readLong();
        if (len < 0 || len > end - pos) {
            if (len < 0) throw corrupt("negative length " + len);
            throw truncated(len);
        }
        return (int) len;
    }

    private byte[] readByteArray() {
        int len = readLength();
        byte[] out = new byte[len];
        System.arraycopy(buf, pos, out, 0, len);
        pos += len;
        return out;
    }

    private void need(long n) {
        if (n > end - pos) throw truncated(n);
    }

    private SfcLayerException.CorruptLayer truncated(long needed) {
        return corrupt("truncated: needs " + needed + " more byte(s) at offset " + pos + " but the group ends at " + end);
    }

    private static SfcLayerException.CorruptLayer corrupt(String what) {
        return new SfcLayerException.CorruptLayer("corrupt tile record: " + what);
    }
}
