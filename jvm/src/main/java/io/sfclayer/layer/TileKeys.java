package io.sfclayer.layer;

import io.sfclayer.SfcLayerException;
import io.sfclayer.codec.Varint;

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
            p = Varint.readLong(buf, p, out, f);
            if (p < 0) {
                throw new SfcLayerException.CorruptLayer("corrupt tile record: truncated key");
            }
        }
        return p - off;
    }
}
