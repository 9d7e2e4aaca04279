package io.sfclayer.codec;

/**
 * Avro's zig-zag varints, for the writers of tile records and groups and for {@code layer.TileKeys}.
 * ({@link TileCursor} decodes with its own loops, which track its bounds and report corruption in
 * its terms.) Writers must leave room: 5 bytes for an int, 10 for a long.
 */
public final class Varint {
    private Varint() {
    }

    /** Writes {@code x} as a zig-zag varint at {@code b[p..]}; returns the position after it. */
    public static int writeInt(byte[] b, int p, int x) {
        int v = (x << 1) ^ (x >> 31);
        while ((v & ~0x7F) != 0) {
            b[p++] = (byte) ((v & 0x7F) | 0x80);
            v >>>= 7;
        }
        b[p++] = (byte) v;
        return p;
    }

    /** Writes {@code x} as a zig-zag varint at {@code b[p..]}; returns the position after it. */
    public static int writeLong(byte[] b, int p, long x) {
        long v = (x << 1) ^ (x >> 63);
        while ((v & ~0x7FL) != 0) {
            b[p++] = (byte) ((v & 0x7F) | 0x80);
            v >>>= 7;
        }
        b[p++] = (byte) v;
        return p;
    }

    /**
     * Writes {@code x} as a zig-zag varint ending just before {@code b[end]} (into room reserved in
     * front of what follows); returns the position of its first byte.
     */
    public static int writeLongBefore(byte[] b, int end, long x) {
        long zz = (x << 1) ^ (x >> 63);
        int n = 1;
        for (long v = zz; (v & ~0x7FL) != 0; v >>>= 7) n++;
        writeLong(b, end - n, x);
        return end - n;
    }

    /**
     * Reads the zig-zag varint long at {@code b[p..]} into {@code out[i]}; returns the position
     * after it, or -1 if it runs past the end of {@code b} or is longer than a long's.
     */
    public static int readLong(byte[] b, int p, long[] out, int i) {
        long raw = 0;
        for (int shift = 0; shift <= 63; shift += 7) {
            if (p >= b.length) {
                return -1;
            }
            int x = b[p++] & 0xff;
            raw |= (long) (x & 0x7f) << shift;
            if ((x & 0x80) == 0) {
                out[i] = (raw >>> 1) ^ -(raw & 1);
                return p;
            }
        }
        return -1;
    }
}
