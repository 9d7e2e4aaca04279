package io.sfclayer.layer;

import io.sfclayer.SfcLayerException;
import io.sfclayer.curve.KeyIndex;
import io.sfclayer.format.DataFileWriter;
import io.sfclayer.format.ValueCompression;
import io.sfclayer.format.Varint;

import java.io.Closeable;
import java.io.IOException;
import java.util.Arrays;
import java.util.List;

/**
 * The writing side of one task: takes encoded tile records sorted by index, gathers those sharing an
 * index into one group (the Avro array that is the MapFile value), refuses duplicate keys, compresses
 * and hands groups to the rolling {@link DataFileWriter}. No Spark in here.
 */
public final class GroupWriter implements Closeable {
    /** Room reserved at the head of the buffer for the group's record count varint. */
    private static final int HEAD = 10;

    private final DataFileWriter files;
    private final ValueCompression compression;
    private final boolean spaceTime;

    private long currentIndex = -1;
    private int count;
    private byte[] buf = new byte[1 << 16];
    private int len;
    private final long[] key = new long[3];
    private long[][] keys = new long[8][];

    public GroupWriter(DataFileWriter files, ValueCompression compression, KeyIndex keyIndex) {
        this.files = files;
        this.compression = compression;
        this.spaceTime = keyIndex.isSpaceTime();
    }

    /** Adds one encoded tile record; indexes must not decrease. */
    public void add(long index, byte[] record) throws IOException {
        if (index != currentIndex) {
            if (index < currentIndex) {
                throw new IllegalStateException("records out of index order: " + index + " after " + currentIndex);
            }
            flush();
            currentIndex = index;
            // room for the array's block count, written at flush
            len = HEAD;
        }
        TileKeys.read(record, 0, spaceTime, key);
        checkDuplicate();
        ensure(len + record.length + 1);
        System.arraycopy(record, 0, buf, len, record.length);
        len += record.length;
        count++;
    }

    private void checkDuplicate() {
        for (int i = 0; i < count; i++) {
            long[] k = keys[i];
            if (k[0] == key[0] && k[1] == key[1] && (!spaceTime || k[2] == key[2])) {
                throw new SfcLayerException.InvalidInput("duplicate key " + KeyIndex.describeKey(key[0], key[1], spaceTime, key[2])
                    + ": the input holds more than one tile for it (SFC index " + currentIndex + ")");
            }
        }
        if (count == keys.length) {
            keys = Arrays.copyOf(keys, count * 2);
        }
        if (keys[count] == null) {
            keys[count] = new long[3];
        }
        System.arraycopy(key, 0, keys[count], 0, 3);
    }

    private void ensure(int n) {
        if (n > buf.length) {
            buf = Arrays.copyOf(buf, Math.max(n, buf.length * 2));
        }
    }

    private void flush() throws IOException {
        if (count == 0) {
            return;
        }
        // Avro array: one block of `count` items, then the 0 terminator. The count goes just
        // before the records, in the space reserved at the head of the buffer.
        int start = Varint.writeLongBefore(buf, HEAD, count);
        ensure(len + 1);
        buf[len++] = 0;
        if (compression == ValueCompression.NONE) {
            files.append(currentIndex, buf, start, len - start, count);
        } else {
            byte[] stored = compression.compress(buf, start, len - start);
            files.append(currentIndex, stored, 0, stored.length, count);
        }
        count = 0;
    }

    /**
     * Adds a whole stored group (compressed as the layer's groups are) as it is: an existing file's
     * group that an update keeps unchanged is copied without being decoded.
     */
    public void addStored(long index, byte[] stored, int off, int len, int records) throws IOException {
        if (index <= currentIndex) {
            throw new IllegalStateException("records out of index order: " + index + " after " + currentIndex);
        }
        flush();
        currentIndex = index;
        files.append(index, stored, off, len, records);
    }

    /** Closes the current file, so the next group starts a new one (an update's untouched file lies between). */
    public void endFile() throws IOException {
        flush();
        files.close();
    }

    public List<DataFileWriter.FileStat> files() {
        return files.files();
    }

    @Override
    public void close() throws IOException {
        flush();
        files.close();
    }

    public void abort() {
        files.abort();
    }
}
