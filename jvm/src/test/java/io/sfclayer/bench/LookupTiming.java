package io.sfclayer.bench;

import io.sfclayer.lookup.ValueReader;

import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * Benchmark helper (bench/lookup_bench.py), not part of the connector: times look-ups inside the
 * JVM, with no transport at all. Packaged apart from the connector, in build/libs/sfclayer-bench.jar
 * ({@code gradle benchJar}), which the benchmark's Spark session loads.
 */
public final class LookupTiming {
    private LookupTiming() { }

    /**
     * For each key packed as in {@link ValueReader#getMany} (big-endian int col, int row, long time),
     * the nanoseconds one {@link ValueReader#getOrNull} took (negated when the key was missing).
     */
    public static long[] timeGets(ValueReader reader, byte[] keys) throws IOException {
        ByteBuffer in = ByteBuffer.wrap(keys);
        long[] nanos = new long[keys.length / 16];
        for (int i = 0; i < nanos.length; i++) {
            int col = in.getInt();
            int row = in.getInt();
            long time = in.getLong();
            long t0 = System.nanoTime();
            byte[] r = reader.getOrNull(col, row, time);
            long t = System.nanoTime() - t0;
            nanos[i] = r == null ? -t : t;
        }
        return nanos;
    }
}
