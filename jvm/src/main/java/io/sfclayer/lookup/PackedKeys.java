package io.sfclayer.lookup;

import io.sfclayer.SfcLayerException;

import java.nio.ByteBuffer;

/**
 * Keys of a batched look-up as the Python side packs them: 16 big-endian bytes each, {@code int col},
 * {@code int row}, {@code long time} (the py4j call and the Spark Connect plugin read the same packing).
 */
public final class PackedKeys {
    public final int[] cols;
    public final int[] rows;
    public final long[] times;

    private PackedKeys(int n) {
        cols = new int[n];
        rows = new int[n];
        times = new long[n];
    }

    /** The keys packed in {@code keys}; InvalidArgument when its length is not a multiple of 16. */
    public static PackedKeys decode(byte[] keys) {
        if (keys.length % 16 != 0) {
            throw new SfcLayerException.InvalidArgument("packed keys must be 16 bytes each, got " + keys.length + " bytes");
        }
        PackedKeys k = new PackedKeys(keys.length / 16);
        ByteBuffer in = ByteBuffer.wrap(keys);
        for (int i = 0; i < k.cols.length; i++) {
            k.cols[i] = in.getInt();
            k.rows[i] = in.getInt();
            k.times[i] = in.getLong();
        }
        return k;
    }

    public int size() {
        return cols.length;
    }
}
