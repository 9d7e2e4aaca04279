package io.sfclayer.bench;

import io.sfclayer.format.DataFileIndex;
import io.sfclayer.format.DataFileListing;
import io.sfclayer.format.DataFileReader;
import io.sfclayer.layer.Layer;
import io.sfclayer.lookup.LookupSessions;
import io.sfclayer.lookup.ValueReader;
import io.sfclayer.spark.HadoopConfs;
import io.sfclayer.spark.SparkLookups;
import org.apache.spark.sql.SparkSession;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.HashMap;

/**
 * Benchmark helper (bench/lookup_bench.py), not part of the connector: times look-ups inside the
 * JVM, with no transport at all. Packaged apart from the connector, in build/libs/sfclayer-bench.jar
 * ({@code gradle benchJar}), which the benchmark's Spark session loads.
 */
public final class LookupTiming {
    private LookupTiming() { }

    /**
     * For each key packed as {@link io.sfclayer.lookup.PackedKeys} (big-endian int col, int row, long time),
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

    /**
     * Cold look-ups (bench/bloom.py): each key on a new {@link ValueReader} of the layer at {@code path}
     * (opening it is not timed), so nothing of any file is in memory. {@code indexInDriver} false keeps
     * the reader from reading indexes in the background while the look-up is timed. Returns, per key,
     * the nanoseconds of its {@code getOrNull} (negated when missing), then per key the data files it opened.
     */
    public static long[] timeColdGets(Configuration conf, String path, byte[] keys, boolean indexInDriver)
            throws IOException {
        ByteBuffer in = ByteBuffer.wrap(keys);
        int n = keys.length / 16;
        long[] out = new long[2 * n];
        for (int i = 0; i < n; i++) {
            int col = in.getInt();
            int row = in.getInt();
            long time = in.getLong();
            try (ValueReader reader = ValueReader.open(conf, path, ValueReader.DEFAULT_CACHE_SIZE,
                    ValueReader.DEFAULT_CACHE_BYTES, indexInDriver)) {
                long t0 = System.nanoTime();
                byte[] r = reader.getOrNull(col, row, time);
                long t = System.nanoTime() - t0;
                out[i] = r == null ? -t : t;
                out[n + i] = reader.filesOpened();
            }
        }
        return out;
    }

    /**
     * Where a cold open goes (bench/lookups.py): for each of the first {@code files} data files of the
     * layer at {@code path}, the nanoseconds of {@code {MapFile.Reader open, its first get (index read
     * and inflated), index read alone, data file open alone, first get from the kept index}}.
     */
    public static long[] timeColdOpens(Configuration conf, String path, int files) throws IOException {
        DataFileListing listing = Layer.open(conf, path).listing();
        int n = Math.min(files, listing.size());
        long[] out = new long[5 * n];
        for (int i = 0; i < n; i++) {
            Path file = listing.path(i);
            long key = listing.start(i);
            long t0 = System.nanoTime();
            try (DataFileReader r = new DataFileReader(conf, file)) {
                long t1 = System.nanoTime();
                r.get(key);
                out[5 * i] = t1 - t0;
                out[5 * i + 1] = System.nanoTime() - t1;
            }
            long t3 = System.nanoTime();
            DataFileIndex index = DataFileIndex.read(conf, file);
            long t4 = System.nanoTime();
            try (DataFileReader r = new DataFileReader(conf, file, index)) {
                long t5 = System.nanoTime();
                r.get(key);
                out[5 * i + 2] = t4 - t3;
                out[5 * i + 3] = t5 - t4;
                out[5 * i + 4] = System.nanoTime() - t5;
            }
        }
        return out;
    }

    /**
     * Where {@code sfclayer.open} goes inside the JVM (bench/lookups.py): {@code n} times, the nanoseconds
     * of {@code {the session's Hadoop configuration, Layer.open (version log and document), ValueReader.open
     * (the same and the reader), SparkLookups.open (the same, registered on the shared server, the
     * answer for Python), LookupSessions.close}}.
     */
    public static long[] timeOpens(SparkSession spark, String path, int n) throws IOException {
        long[] out = new long[5 * n];
        for (int i = 0; i < n; i++) {
            long t0 = System.nanoTime();
            Configuration conf = HadoopConfs.forOptions(spark, new HashMap<>());
            long t1 = System.nanoTime();
            Layer.open(conf, path);
            long t2 = System.nanoTime();
            ValueReader.open(conf, path, ValueReader.DEFAULT_CACHE_SIZE).close();
            long t3 = System.nanoTime();
            String answer = SparkLookups.open(spark, path, ValueReader.DEFAULT_CACHE_SIZE,
                ValueReader.DEFAULT_CACHE_BYTES, true, -1, -1);
            long t4 = System.nanoTime();
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("\"handle\":(\\d+)").matcher(answer);
            if (!m.find()) {
                throw new IllegalStateException("no handle in " + answer);
            }
            long t5 = System.nanoTime();
            LookupSessions.close(Long.parseLong(m.group(1)));
            long t6 = System.nanoTime();
            out[5 * i] = t1 - t0;
            out[5 * i + 1] = t2 - t1;
            out[5 * i + 2] = t3 - t2;
            out[5 * i + 3] = t4 - t3;
            out[5 * i + 4] = t6 - t5;
        }
        return out;
    }
}
