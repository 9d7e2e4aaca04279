package io.sfclayer.format;

import io.sfclayer.SfcLayerException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ChecksumException;
import org.apache.hadoop.fs.FSDataInputStream;
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
 *
 * <p>Two ways to open one: Hadoop's {@code MapFile.Reader} (reads and inflates the index file, opens the
 * data file as a SequenceFile), or, given the file's {@link DataFileIndex} read earlier, the data file
 * alone, read through a window and its records parsed here (FORMAT.md: records
 * {@code int recordLength, int keyLength = 8, long index, int groupLength, group}, a sync escape
 * {@code -1} followed by 16 sync bytes between some of them; no SequenceFile compression).
 */
public final class DataFileReader implements Closeable {
    /** Bytes read at a time in the second way: groups near each other come from one read. */
    public static final int WINDOW_BYTES = 64 * 1024;
    private static final int SYNC_ESCAPE = -1;
    private static final int SYNC_BYTES = 16;

    private final Path path;
    private final MapFile.Reader reader;
    private final FSDataInputStream data;
    private final DataFileIndex index;
    private long pos;
    private byte[] window;
    private long windowStart;
    private int windowLength;
    private final LongWritable key = new LongWritable();
    private final BytesWritable value = new BytesWritable();
    private boolean positioned;
    private long bytesRead;
    private long groupsRead;

    public DataFileReader(Configuration conf, Path path) throws IOException {
        this.path = path;
        this.data = null;
        this.index = null;
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

    /** Opens only the {@code data} file of the MapFile {@code path}, with its index read before. */
    public DataFileReader(Configuration conf, Path path, DataFileIndex index) throws IOException {
        this.path = path;
        this.reader = null;
        this.index = index;
        this.window = new byte[0];
        Path file = new Path(path, "data");
        try {
            this.data = file.getFileSystem(conf).open(file);
        } catch (FileNotFoundException e) {
            throw new SfcLayerException.CorruptLayer("data file " + path + " is missing: " + e.getMessage(), e);
        }
    }

    public Path path() {
        return path;
    }

    // ------------------------------------------------------------ the data file alone

    /** Positions at the first group ≥ {@code target} from the closest index entry below it. */
    private boolean rawSeekCeiling(long target) throws IOException {
        int i = index.floor(target);
        pos = index.position(Math.max(i, 0));
        while (rawNext()) {
            if (key.get() >= target) {
                return true;
            }
        }
        return false;
    }

    /** Reads the record at {@code pos}; false at the end of the file. */
    private boolean rawNext() throws IOException {
        while (true) {
            if (!fill(pos, 4)) {
                return false;
            }
            int recordLength = intAt(pos);
            if (recordLength == SYNC_ESCAPE) {
                pos += 4 + SYNC_BYTES;
                continue;
            }
            if (recordLength < 12 || !fill(pos, 8 + (long) recordLength)) {
                throw new SfcLayerException.CorruptLayer("cannot read data file " + path + ": record at byte " + pos
                    + (recordLength < 12 ? " has a bad length " + recordLength : " is truncated"));
            }
            int keyLength = intAt(pos + 4);
            int groupLength = intAt(pos + 16);
            if (keyLength != 8 || groupLength != recordLength - 12) {
                throw new SfcLayerException.CorruptLayer("cannot read data file " + path + ": record at byte " + pos
                    + " is not an index and a group (key length " + keyLength + ", group length " + groupLength
                    + ", record length " + recordLength + ")");
            }
            key.set(longAt(pos + 8));
            value.set(window, (int) (pos + 20 - windowStart), groupLength);
            pos += 8 + (long) recordLength;
            return true;
        }
    }

    /** Makes the window hold bytes {@code [at, at + n)}; false if the file ends before. */
    private boolean fill(long at, long n) throws IOException {
        if (at >= windowStart && at + n <= windowStart + windowLength) {
            return true;
        }
        int want = (int) Math.max(n, WINDOW_BYTES);
        if (window.length < want) {
            window = new byte[want];
        }
        // A seek and plain reads, not positioned reads: the local file system's checksummed pread
        // opens the file and its .crc anew on every call.
        int got = 0;
        try {
            data.seek(at);
            while (got < want) {
                int r = data.read(window, got, want - got);
                if (r < 0) {
                    break;
                }
                got += r;
            }
        } catch (ChecksumException e) {
            throw new SfcLayerException.CorruptLayer("data file " + path + " fails its checksum near byte "
                + (at + got) + ": " + e.getMessage(), e);
        } catch (EOFException e) {
            // seek past the end: nothing there
        }
        windowStart = at;
        windowLength = got;
        return got >= n;
    }

    private int intAt(long at) {
        int o = (int) (at - windowStart);
        return ((window[o] & 0xff) << 24) | ((window[o + 1] & 0xff) << 16) | ((window[o + 2] & 0xff) << 8)
            | (window[o + 3] & 0xff);
    }

    private long longAt(long at) {
        return ((long) intAt(at) << 32) | (intAt(at + 4) & 0xffffffffL);
    }

    /** Approximate heap bytes this reader holds (its window and stream buffers; not the index). */
    public long bytesHeld() {
        return (window == null ? 0 : window.length) + 8192 + (long) value.getCapacity();
    }

    /** Moves to the first group whose index is ≥ {@code index}; false if there is none. */
    public boolean seekCeiling(long index) throws IOException {
        if (reader == null) {
            positioned = rawSeekCeiling(index);
            if (positioned) {
                count();
            }
            return positioned;
        }
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
        if (reader == null) {
            positioned = rawNext();
            if (positioned) {
                count();
            }
            return positioned;
        }
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
        if (reader == null) {
            positioned = rawSeekCeiling(index) && key.get() == index;
            if (positioned) {
                count();
            }
            return positioned;
        }
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
        if (reader != null) {
            reader.close();
        } else {
            data.close();
        }
    }
}
