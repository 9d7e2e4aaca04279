package io.sfclayer.format;

import io.sfclayer.SfcLayerException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.SequenceFile;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.util.Arrays;

/**
 * The index of one data file (the MapFile's {@code index} SequenceFile: every {@code indexInterval}-th
 * group's SFC index and the byte position of its record in {@code data}), read once and kept as two
 * arrays, 16 bytes an entry. With it, a look-up opens only the {@code data} file and reads from a
 * position ({@link DataFileReader#DataFileReader(Configuration, Path, DataFileIndex)}): the index file
 * is not read and inflated again each time the file is reopened.
 */
public final class DataFileIndex {
    private final long[] keys;
    private final long[] positions;

    private DataFileIndex(long[] keys, long[] positions) {
        this.keys = keys;
        this.positions = positions;
    }

    /** Reads the index of the MapFile directory {@code mapFile}. */
    public static DataFileIndex read(Configuration conf, Path mapFile) throws IOException {
        Path file = new Path(mapFile, "index");
        long[] k = new long[64];
        long[] p = new long[64];
        int n = 0;
        LongWritable key = new LongWritable();
        LongWritable position = new LongWritable();
        try (SequenceFile.Reader r = new SequenceFile.Reader(conf, SequenceFile.Reader.file(file))) {
            if (r.getKeyClass() != LongWritable.class || r.getValueClass() != LongWritable.class) {
                throw new SfcLayerException.CorruptLayer("not an sfclayer data file index (" + r.getKeyClass().getName()
                    + " -> " + r.getValueClass().getName() + ", expected LongWritable -> LongWritable): " + file);
            }
            while (r.next(key, position)) {
                if (n == k.length) {
                    k = Arrays.copyOf(k, 2 * n);
                    p = Arrays.copyOf(p, 2 * n);
                }
                if (n > 0 && key.get() <= k[n - 1]) {
                    throw new SfcLayerException.CorruptLayer("data file index " + file + " is not sorted: "
                        + key.get() + " after " + k[n - 1]);
                }
                k[n] = key.get();
                p[n] = position.get();
                n++;
            }
        } catch (FileNotFoundException e) {
            throw new SfcLayerException.CorruptLayer("data file " + mapFile + " is missing (its index is): " + e.getMessage(), e);
        } catch (SfcLayerException e) {
            throw e;
        } catch (IOException | RuntimeException e) {
            throw new SfcLayerException.CorruptLayer("cannot read the index of data file " + mapFile + ": " + e, e);
        }
        if (n == 0) {
            throw new SfcLayerException.CorruptLayer("data file index " + file + " is empty");
        }
        return new DataFileIndex(Arrays.copyOf(k, n), Arrays.copyOf(p, n));
    }

    public int size() {
        return keys.length;
    }

    /** The entry with the greatest key ≤ {@code key}, or -1 when the first key is above it. */
    public int floor(long key) {
        int i = Arrays.binarySearch(keys, key);
        return i >= 0 ? i : -i - 2;
    }

    public long key(int i) {
        return keys[i];
    }

    public long position(int i) {
        return positions[i];
    }

    /** Approximate heap bytes held. */
    public long bytes() {
        return 16L * keys.length + 64;
    }
}
