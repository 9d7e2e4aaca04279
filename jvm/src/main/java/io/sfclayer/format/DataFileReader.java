package io.sfclayer.format;

import io.sfclayer.SfcLayerException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ChecksumException;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.MapFile;

import java.io.Closeable;
import java.io.EOFException;
import java.io.FileNotFoundException;
import java.io.IOException;

/**
 * Reads one data file (a MapFile): seeks through its index to the first group at or after an
 * index, then walks groups in order. Not thread-safe; callers that share one synchronize on it.
 */
public final class DataFileReader implements Closeable {
    private final Path path;
    private final MapFile.Reader reader;
    private final LongWritable key = new LongWritable();
    private final BytesWritable value = new BytesWritable();
    private boolean positioned;
    private long bytesRead;
    private long groupsRead;

    public DataFileReader(Configuration conf, Path path) throws IOException {
        this.path = path;
        try {
            this.reader = new MapFile.Reader(path, conf);
        } catch (FileNotFoundException e) {
            if (exists(conf, path)) { // Java reports "Permission denied" on a local open this way
                throw new SfcLayerException.StorageError("cannot open data file " + path + ": " + e, e);
            }
            throw new SfcLayerException.CorruptLayer("data file " + path + " is missing: " + e.getMessage(), e);
        } catch (IOException | RuntimeException e) {
            throw failure("cannot open data file " + path, e);
        }
        if (reader.getKeyClass() != LongWritable.class || reader.getValueClass() != BytesWritable.class) {
            String classes = reader.getKeyClass().getName() + " -> " + reader.getValueClass().getName();
            reader.close();
            throw new SfcLayerException.CorruptLayer("not an sfclayer data file (MapFile of " + classes
                + ", expected LongWritable -> BytesWritable): " + path);
        }
    }

    public Path path() {
        return path;
    }

    /** Moves to the first group whose index is ≥ {@code index}; false if there is none. */
    public boolean seekCeiling(long index) throws IOException {
        key.set(index);
        LongWritable found;
        try {
            found = (LongWritable) reader.getClosest(key, value);
        } catch (IOException | RuntimeException e) {
            throw corrupt(e);
        }
        positioned = found != null;
        if (positioned) {
            key.set(found.get());
            count();
        }
        return positioned;
    }

    /** Moves to the next group; false at the end of the file. */
    public boolean next() throws IOException {
        try {
            positioned = reader.next(key, value);
        } catch (IOException | RuntimeException e) {
            throw corrupt(e);
        }
        if (positioned) {
            count();
        }
        return positioned;
    }

    /** The group stored exactly at {@code index}, or false. */
    public boolean get(long index) throws IOException {
        key.set(index);
        Object found;
        try {
            found = reader.get(key, value);
        } catch (IOException | RuntimeException e) {
            throw corrupt(e);
        }
        positioned = found != null;
        if (positioned) {
            key.set(index);
            count();
        }
        return positioned;
    }

    private void count() {
        bytesRead += value.getLength() + 8;
        groupsRead++;
    }

    private SfcLayerException corrupt(Exception e) {
        return failure("cannot read data file " + path, e);
    }

    private static boolean exists(Configuration conf, Path path) {
        try {
            return path.getFileSystem(conf).exists(new Path(path, MapFile.DATA_FILE_NAME));
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    /**
     * What a failure reading a data file is: {@link SfcLayerException.CorruptLayer} when the bytes are bad
     * (a checksum mismatch, a file that ends early, not a SequenceFile, bytes Hadoop cannot decode), else
     * {@link SfcLayerException.StorageError} (permission denied, timeouts, unreachable DataNodes or blocks):
     * the file system failed, the layer may be intact. {@code what} names the file; the cause is kept.
     */
    public static SfcLayerException failure(String what, Exception e) {
        if (e instanceof SfcLayerException) {
            return (SfcLayerException) e;
        }
        boolean damaged = e instanceof RuntimeException || e instanceof ChecksumException || e instanceof EOFException
            || String.valueOf(e.getMessage()).contains("not a SequenceFile");
        return damaged ? new SfcLayerException.CorruptLayer(what + ": " + e, e)
            : new SfcLayerException.StorageError(what + ": " + e, e);
    }

    public long index() {
        return key.get();
    }

    /** The current group's bytes: valid in {@code [0, length())} until the next move. */
    public byte[] bytes() {
        return value.getBytes();
    }

    public int length() {
        return value.getLength();
    }

    public long bytesRead() {
        return bytesRead;
    }

    public long groupsRead() {
        return groupsRead;
    }

    @Override
    public void close() throws IOException {
        reader.close();
    }
}
