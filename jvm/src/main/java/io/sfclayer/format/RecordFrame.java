package io.sfclayer.format;

import java.util.zip.CRC32C;

/**
 * The framing of one {@code data} record from format version 3 on (docs/FORMAT.md, "Record
 * framing"): the SequenceFile record of a group, whose value ends in a CRC32C of everything from
 * the key on.
 *
 * <pre>
 *   int   recordLength   = 8 + 4 + n         (SequenceFile: key + value bytes)
 *   int   keyLength      = 8                 (SequenceFile)
 *   long  sfcIndex                           (LongWritable)            ┐
 *   int   n = groupLength + 4                (BytesWritable size)      │ covered by the CRC
 *   byte  group[groupLength]                 (section 4)               ┘
 *   int   crc32c(sfcIndex .. group end)      (big-endian; last 4 bytes of the BytesWritable)
 * </pre>
 *
 * Whatever single byte is hit, the record no longer checks: the two lengths are tied to each other
 * and to the constant key length, and every other byte is under the CRC. Version 1 and 2 records
 * are the same without the trailing CRC.
 */
public final class RecordFrame {
    /** Bytes of the trailing CRC32C. */
    public static final int CRC_BYTES = 4;
    /** SequenceFile's key length of a LongWritable. */
    public static final int KEY_BYTES = 8;
    /** The BytesWritable size prefix. */
    public static final int SIZE_BYTES = 4;
    /** Record length and key length, before the key. */
    public static final int PREFIX_BYTES = 8;
    /** SequenceFile's escape in place of a record length: a sync marker follows. */
    public static final int SYNC_ESCAPE = -1;
    public static final int SYNC_BYTES = 16;
    /** The first format version whose records carry a CRC. */
    public static final int FIRST_CHECKED_VERSION = 3;

    private RecordFrame() {
    }

    /** Whether records of {@code formatVersion} carry a CRC. */
    public static boolean checked(int formatVersion) {
        return formatVersion >= FIRST_CHECKED_VERSION;
    }

    /**
     * The BytesWritable value of a checked record: {@code group} followed by the CRC32C of
     * (sfcIndex, value size, group), written into {@code out} (at least {@code length + 4} long).
     *
     * @return the value's length
     */
    public static int frame(long sfcIndex, byte[] group, int offset, int length, byte[] out) {
        System.arraycopy(group, offset, out, 0, length);
        int n = length + CRC_BYTES;
        CRC32C crc = new CRC32C();
        byte[] head = new byte[KEY_BYTES + SIZE_BYTES];
        putLong(head, 0, sfcIndex);
        putInt(head, KEY_BYTES, n);
        crc.update(head, 0, head.length);
        crc.update(group, offset, length);
        putInt(out, length, (int) crc.getValue());
        return n;
    }

    /**
     * Checks the structure of a record whose two leading ints are {@code recordLength} and
     * {@code keyLength}, with {@code available} bytes left in the file after them; null when it is
     * sound, else what is wrong.
     */
    public static String checkLengths(int recordLength, int keyLength, long available, boolean checked) {
        if (keyLength != KEY_BYTES) {
            return "key length " + keyLength + " (must be " + KEY_BYTES + ")";
        }
        int min = KEY_BYTES + SIZE_BYTES + (checked ? CRC_BYTES : 0);
        if (recordLength < min) {
            return "record length " + recordLength + " (at least " + min + ")";
        }
        if (recordLength > available) {
            return "record length " + recordLength + " runs past the end of the file (" + available + " bytes left)";
        }
        return null;
    }

    /**
     * Checks a record's body ({@code recordLength} bytes from the key on, in {@code buf} at 0):
     * null when sound, else what is wrong. The group is then at [12, 12 + groupLength).
     */
    public static String checkBody(byte[] buf, int recordLength, boolean checked) {
        int n = getInt(buf, KEY_BYTES);
        if (n != recordLength - KEY_BYTES - SIZE_BYTES) {
            return "value size " + n + " disagrees with record length " + recordLength;
        }
        if (checked) {
            int stored = getInt(buf, recordLength - CRC_BYTES);
            CRC32C crc = new CRC32C();
            crc.update(buf, 0, recordLength - CRC_BYTES);
            if ((int) crc.getValue() != stored) {
                return "checksum mismatch (CRC32C " + hex((int) crc.getValue()) + ", stored " + hex(stored) + ")";
            }
        }
        return null;
    }

    /** Length of the group inside a sound record of {@code recordLength} bytes. */
    public static int groupLength(int recordLength, boolean checked) {
        return recordLength - KEY_BYTES - SIZE_BYTES - (checked ? CRC_BYTES : 0);
    }

    static String hex(int v) {
        return String.format("%08x", v);
    }

    public static long getLong(byte[] b, int off) {
        return ((long) getInt(b, off) << 32) | (getInt(b, off + 4) & 0xffffffffL);
    }

    public static int getInt(byte[] b, int off) {
        return ((b[off] & 0xff) << 24) | ((b[off + 1] & 0xff) << 16) | ((b[off + 2] & 0xff) << 8) | (b[off + 3] & 0xff);
    }

    static void putLong(byte[] b, int off, long v) {
        putInt(b, off, (int) (v >>> 32));
        putInt(b, off + 4, (int) v);
    }

    static void putInt(byte[] b, int off, int v) {
        b[off] = (byte) (v >>> 24);
        b[off + 1] = (byte) (v >>> 16);
        b[off + 2] = (byte) (v >>> 8);
        b[off + 3] = (byte) v;
    }
}
