package io.sfclayer.layer;

import io.sfclayer.SfcLayerException;

/**
 * Reads the key at the head of an encoded tile record (col and row as Avro ints, then time as an
 * Avro long for space-time layers) without decoding the rest.
 */
public final class TileKeys {
    private TileKeys() {
    }

    /** Decodes {@code col, row[, time]} from {@code buf[off..]} into {@code out}; returns the bytes used. */
    public static int read(byte[] buf, int off, boolean spaceTime, long[] out) {
        int p = off;
        int n = spaceTime ? 3 : 2;
        for (int f = 0; f < n; f++) {
            long raw = 0;
            int shift = 0;
            while (true) {
                if (p >= buf.length || shift > 63) {
                    throw new SfcLayerException.CorruptLayer("corrupt tile record: truncated key");
                }
                int b = buf[p++] & 0xff;
                raw |= (long) (b & 0x7f) << shift;
                if ((b & 0x80) == 0) {
                    break;
                }
                shift += 7;
            }
            out[f] = (raw >>> 1) ^ -(raw & 1);
        }
        return p - off;
    }

    public static String describe(long[] key, boolean spaceTime) {
        String s = "(col=" + key[0] + ", row=" + key[1];
        if (spaceTime) {
            s += ", time=" + java.time.Instant.EPOCH.plus(key[2], java.time.temporal.ChronoUnit.MICROS);
        }
        return s + ")";
    }
}
