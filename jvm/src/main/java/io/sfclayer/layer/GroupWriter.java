package io.sfclayer.layer;

import io.sfclayer.SfcLayerException;
import io.sfclayer.codec.TileSchema;
import io.sfclayer.codec.Varint;
import io.sfclayer.curve.KeyIndex;
import io.sfclayer.format.DataFile;
import io.sfclayer.format.DataFileReader;
import io.sfclayer.format.DataFileWriter;
import io.sfclayer.format.FileStats;
import io.sfclayer.format.RasterLayout;
import io.sfclayer.format.ValueCompression;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

import java.io.Closeable;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The writing side of one task: takes encoded tile records sorted by index, gathers those sharing an
 * index into one group (the Avro array that is the MapFile value), refuses duplicate keys (a hash set
 * of the group's keys) and groups over a size limit (one MapFile value is one Java array: the limit
 * keeps it far from 2 GiB), compresses and hands groups to the rolling {@link DataFileWriter}. No Spark
 * in here.
 *
 * <p>Small tails (updates only, {@link #mergeSmallTails}): a run of output files (what is written
 * between two {@link #endFile()} calls) ends where the data ends, so its last file can be tiny while
 * the one before it, also just written, is full. When the last is under the threshold, the two are
 * read back and written again as two files split at half their total: both stay under the block size,
 * named by their first index, with disjoint index ranges, and neither is small. Costs one re-read and
 * re-write of about a block per run that ends small; a run of one small file is left to compaction.
 */
public final class GroupWriter implements Closeable {
    /** Room reserved at the head of the buffer for the group's record count varint. */
    private static final int HEAD = 10;
    /** Default largest group (the encoded tiles sharing one SFC index), write option {@code maxGroupBytes}. */
    public static final long DEFAULT_MAX_GROUP_BYTES = 256L << 20;
    /** Largest allowed limit: a group is one byte array, and compression may need a second one. */
    public static final long MAX_GROUP_BYTES_LIMIT = 1L << 30;

    private final DataFileWriter files;
    private final ValueCompression compression;
    /** Where raster tiles keep their pixels (for zstd-raster), or null. */
    private final RasterLayout raster;
    private final boolean spaceTime;
    private final long maxGroupBytes;

    private long currentIndex = -1;
    private int count;
    private byte[] buf = new byte[1 << 16];
    private int len;
    private final long[] key = new long[3];
    private Set<Key> keys = new HashSet<>();
    /** The key of the group's first tile. */
    private final long[] first = new long[3];
    /** Collects each group's column statistics (seed 003), or null: files get none. */
    private final FileStats.Collector collector;
    private final FileStats groupStats = new FileStats();
    /** A run's last file under this many bytes is merged with the one before it (0: never). */
    private long smallTail;

    private record Key(long col, long row, long time) { }

    public GroupWriter(DataFileWriter files, ValueCompression compression, KeyIndex keyIndex) {
        this(files, compression, keyIndex, DEFAULT_MAX_GROUP_BYTES);
    }

    /** @param maxGroupBytes the largest group in bytes, 1..{@link #MAX_GROUP_BYTES_LIMIT} */
    public GroupWriter(DataFileWriter files, ValueCompression compression, KeyIndex keyIndex, long maxGroupBytes) {
        this(files, compression, keyIndex, maxGroupBytes, null);
    }

    /**
     * @param maxGroupBytes the largest group in bytes, 1..{@link #MAX_GROUP_BYTES_LIMIT}
     * @param schema        the tiles' schema, to collect per-file statistics (null: none)
     */
    public GroupWriter(DataFileWriter files, ValueCompression compression, KeyIndex keyIndex, long maxGroupBytes,
                       TileSchema schema) {
        if (maxGroupBytes < 1 || maxGroupBytes > MAX_GROUP_BYTES_LIMIT) {
            throw new SfcLayerException.InvalidArgument("maxGroupBytes: " + maxGroupBytes + " is out of range (1.."
                + MAX_GROUP_BYTES_LIMIT + ", 1 GiB)");
        }
        this.files = files;
        this.compression = compression;
        this.spaceTime = keyIndex.isSpaceTime();
        this.maxGroupBytes = maxGroupBytes;
        this.collector = schema == null ? null : new FileStats.Collector(schema);
        this.raster = schema == null ? null : RasterLayout.of(schema);
    }

    /** The statistics of an uncompressed group, or null without a collector. */
    private FileStats statsOf(byte[] plain, int off, int len) {
        if (collector == null) {
            return null;
        }
        groupStats.clear();
        collector.addGroup(plain, off, len, groupStats);
        return groupStats;
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
        long size = (long) len - HEAD + record.length + 1;
        if (size > maxGroupBytes) {
            throw new SfcLayerException.InvalidInput("the tiles sharing SFC index " + currentIndex + " (the group of key "
                + KeyIndex.describeKey(key[0], key[1], spaceTime, key[2]) + ", " + (count + 1) + " tiles so far) take "
                + size + " bytes, over the limit of " + maxGroupBytes + " bytes per group (write option maxGroupBytes;"
                + " for space-time layers a finer timeResolution splits groups)");
        }
        ensure(len + record.length + 1);
        System.arraycopy(record, 0, buf, len, record.length);
        len += record.length;
        count++;
    }

    private void checkDuplicate() {
        // most groups hold one tile (distinct keys of a 2-d index have distinct indexes): the set is
        // filled only when a second tile joins the group
        if (count == 0) {
            first[0] = key[0];
            first[1] = key[1];
            first[2] = spaceTime ? key[2] : 0;
            return;
        }
        if (count == 1) {
            if (keys.size() > 64) keys = new HashSet<>(); // clear() costs the table's capacity, every group
            else keys.clear();
            keys.add(new Key(first[0], first[1], first[2]));
        }
        if (!keys.add(new Key(key[0], key[1], spaceTime ? key[2] : 0))) {
            throw new SfcLayerException.InvalidInput("duplicate key " + KeyIndex.describeKey(key[0], key[1], spaceTime, key[2])
                + ": the input holds more than one tile for it (SFC index " + currentIndex + ")");
        }
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
        FileStats stats = statsOf(buf, start, len - start);
        if (compression == ValueCompression.NONE) {
            files.append(currentIndex, buf, start, len - start, count, stats);
        } else {
            byte[] stored = compression.compress(buf, start, len - start, raster);
            files.append(currentIndex, stored, 0, stored.length, count, stats);
        }
        count = 0;
    }

    /**
     * Adds a whole stored group (compressed as the layer's groups are) as it is: an existing file's
     * group that an update keeps unchanged is copied without being decoded.
     */
    public void addStored(long index, byte[] stored, int off, int len, int records) throws IOException {
        addStored(index, stored, off, len, records, null);
    }

    /**
     * As {@link #addStored(long, byte[], int, int, int)}; {@code plain} is the group uncompressed (for
     * its statistics), or null to have it decompressed here when statistics are collected.
     */
    public void addStored(long index, byte[] stored, int off, int len, int records, byte[] plain) throws IOException {
        if (index <= currentIndex) {
            throw new IllegalStateException("records out of index order: " + index + " after " + currentIndex);
        }
        flush();
        currentIndex = index;
        FileStats stats = null;
        if (collector != null) {
            byte[] p = plain != null ? plain : compression.decompress(stored, off, len);
            stats = statsOf(p, 0, p.length);
        }
        files.append(index, stored, off, len, records, stats);
    }

    /**
     * From now on, a run of files whose last one would hold under {@code belowBytes} of data is
     * rebalanced with the file before it (see the class comment); updates use a quarter block.
     */
    public GroupWriter mergeSmallTails(long belowBytes) {
        this.smallTail = belowBytes;
        return this;
    }

    /** Closes the current file, so the next group starts a new one (an update's untouched file lies between). */
    public void endFile() throws IOException {
        endRun();
    }

    public List<DataFile> files() {
        return files.files();
    }

    @Override
    public void close() throws IOException {
        endRun();
    }

    private void endRun() throws IOException {
        flush();
        long open = files.openBytes();
        if (smallTail > 0 && open >= 0 && open < smallTail && files.finishedInRun() > 0) {
            files.close();
            rebalanceLastTwo();
        }
        files.close();
    }

    /**
     * Writes the last two finished files again, split at half their total size, under names of their
     * own (the partition number in the name raised by {@link #REWRITE_NAMES} per rebalancing), then
     * deletes the two. Nothing is renamed: on an object store a rename copies every byte.
     */
    private void rebalanceLastTwo() throws IOException {
        DataFile tail = files.dropLastFinished();
        DataFile before = files.dropLastFinished();
        Path dir = files.dir();
        FileSystem fs = dir.getFileSystem(files.conf());
        int partition = files.namePartition();
        rebalanced++;
        files.namePartition(partition + rebalanced * REWRITE_NAMES);
        long half = (before.dataBytes + tail.dataBytes) / 2;
        long[] count = new long[1];
        try {
            for (DataFile f : List.of(before, tail)) {
                try (DataFileReader in = new DataFileReader(files.conf(), new Path(dir, f.name))) {
                    while (in.next()) {
                        if (files.openBytes() >= half) {
                            files.close();
                        }
                        byte[] plain = compression == ValueCompression.NONE
                            ? Arrays.copyOfRange(in.bytes(), in.offset(), in.offset() + in.length())
                            : compression.decompress(in.bytes(), in.offset(), in.length());
                        Varint.readLong(plain, 0, count, 0); // the Avro array's (one) block count
                        files.append(in.index(), in.bytes(), in.offset(), in.length(), (int) Math.abs(count[0]),
                            statsOf(plain, 0, plain.length));
                    }
                }
            }
            files.close();
        } finally {
            files.namePartition(partition); // later files start after the tail's range: their names are free
        }
        for (DataFile f : List.of(before, tail)) {
            fs.delete(new Path(dir, f.name), true);
        }
    }

    /**
     * Added to the partition number in the names of rebalanced files, once per rebalancing of this
     * writer: names in a task attempt's directory are its one partition's, so these never collide.
     */
    static final int REWRITE_NAMES = 100_000;
    private int rebalanced;

    public void abort() {
        files.abort();
    }
}
