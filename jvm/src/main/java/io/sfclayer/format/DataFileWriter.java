package io.sfclayer.format;

import io.sfclayer.SfcLayerException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.SequenceFile;
import org.apache.hadoop.io.Text;

import java.io.Closeable;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * Writes one task's sorted index groups as Hadoop MapFiles, rolling to a new file before the
 * next group would take the data file past the block size.
 *
 * <p>A MapFile is a directory holding {@code data} (a SequenceFile of LongWritable index to
 * BytesWritable group) and {@code index} (a SequenceFile of every {@code indexInterval}-th
 * index to its byte offset in {@code data}). This class writes both SequenceFiles itself rather
 * than through {@code MapFile.Writer}, because it must know the exact length of {@code data}
 * before each append to roll in time; the result is what {@code MapFile.Reader} reads.
 */
public final class DataFileWriter implements Closeable {
    /**
     * Most bytes a SequenceFile append adds beyond the group: sync (4+16), lengths (4+4), key (8),
     * BytesWritable size (4), CRC (4, format 3).
     */
    static final int RECORD_OVERHEAD = 44;
    public static final String META_FORMAT_VERSION = "sfclayer.formatVersion";
    public static final String META_WRITE_ID = "sfclayer.writeId";

    private final Configuration conf;
    private final FileSystem fs;
    private final Path dir;
    /** {@link #dir} relative to the layer: the {@link DataFile#dir} of the files written. */
    private final String dirInLayer;
    /** The partition number in the names of the files opened from now on ({@link #namePartition}). */
    private int partition;
    private final long blockSize;
    private final int indexInterval;
    private final String writeId;
    private final int formatVersion;
    private final boolean checked;
    private byte[] framed = new byte[1 << 16];

    private final LongWritable key = new LongWritable();
    private final BytesWritable value = new BytesWritable();
    private final LongWritable position = new LongWritable();
    private final List<DataFile> finished = new ArrayList<>();

    private SequenceFile.Writer data;
    private SequenceFile.Writer index;
    /** The open file's streams (the SequenceFile writers do not own them) and its index's running CRC32C. */
    private FSDataOutputStream dataOut;
    private FSDataOutputStream indexOut;
    private java.util.zip.CRC32C indexCrc;
    private String currentName;
    private long first;
    private long last = -1;
    private long records;
    private long groups;
    /** Statistics of the open file; null while a group without statistics was appended to it. */
    private FileStats stats;
    private boolean statsComplete;
    /** Where in {@link #finished} the current run of files (those since the last {@link #close()}) starts. */
    private int runStart;
    /** False-positive probability of each file's bloom filter; 0: no filters. */
    private double bloomFpp;
    /** The open file's indexes, for its bloom filter (only while filters are built). */
    private long[] fileIndexes = new long[0];

    public DataFileWriter(Configuration conf, Path dir, int partition, long blockSize, int indexInterval,
                          String writeId) throws IOException {
        this(conf, dir, partition, blockSize, indexInterval, writeId, LayerMetadata.FORMAT_VERSION);
    }

    /**
     * Writes into {@code dir}, taken as a directory directly beneath the layer (its name is the
     * {@link DataFile#dir} of the files written).
     *
     * @param formatVersion the format to write: records carry a CRC from version 3 on
     */
    public DataFileWriter(Configuration conf, Path dir, int partition, long blockSize, int indexInterval,
                          String writeId, int formatVersion) throws IOException {
        this(dir, new Path(dir.toUri().getPath()).getName(), conf, partition, blockSize, indexInterval, writeId,
            formatVersion);
    }

    /**
     * Writes into {@code layer/dirInLayer}.
     *
     * @param dirInLayer the directory relative to the layer, as version documents name it
     * @param formatVersion the format to write: records carry a CRC from version 3 on
     */
    public DataFileWriter(Configuration conf, Path layer, String dirInLayer, int partition, long blockSize,
                          int indexInterval, String writeId, int formatVersion) throws IOException {
        this(new Path(layer, dirInLayer), dirInLayer, conf, partition, blockSize, indexInterval, writeId,
            formatVersion);
    }

    private DataFileWriter(Path dir, String dirInLayer, Configuration conf, int partition, long blockSize,
                           int indexInterval, String writeId, int formatVersion) throws IOException {
        if (blockSize < 4096) {
            throw new SfcLayerException.InvalidArgument("blockSize: " + blockSize + " is too small (at least 4096 bytes)");
        }
        if (indexInterval < 1) {
            throw new SfcLayerException.InvalidArgument("indexInterval: " + indexInterval + " is too small (at least 1)");
        }
        this.conf = conf;
        this.dir = dir;
        this.fs = dir.getFileSystem(conf);
        this.dirInLayer = dirInLayer;
        this.partition = partition;
        this.blockSize = blockSize;
        this.indexInterval = indexInterval;
        this.writeId = writeId;
        this.formatVersion = formatVersion;
        this.checked = RecordFrame.checked(formatVersion);
    }

    /**
     * Builds a bloom filter over each file's indexes ({@link BloomFilter}) at false-positive probability
     * {@code fpp}, written beside the file as it is closed; 0 builds none.
     */
    public DataFileWriter withBloomFilter(double fpp) {
        if (fpp != 0 && !(fpp > 0 && fpp < 1)) {
            throw new SfcLayerException.InvalidArgument("bloom filter false-positive probability must be in (0, 1), got " + fpp);
        }
        this.bloomFpp = fpp;
        return this;
    }

    /**
     * Appends the group of all records sharing {@code sfcIndex}. Indexes must strictly increase.
     *
     * @param recordCount how many tile records the group holds (for the statistics)
     */
    public void append(long sfcIndex, byte[] group, int offset, int length, int recordCount) throws IOException {
        append(sfcIndex, group, offset, length, recordCount, null);
    }

    /**
     * As {@link #append(long, byte[], int, int, int)}, with the group's column statistics (merged into
     * its file's); a file any of whose groups came without statistics gets none.
     */
    public void append(long sfcIndex, byte[] group, int offset, int length, int recordCount, FileStats groupStats)
            throws IOException {
        if (data != null && sfcIndex <= last) {
            throw new IllegalStateException("indexes must strictly increase: " + sfcIndex + " after " + last);
        }
        if (data != null && data.getLength() + RECORD_OVERHEAD + length > blockSize) {
            roll();
        }
        if (data == null) {
            open(sfcIndex);
        }
        if (groups % indexInterval == 0) {
            key.set(sfcIndex);
            position.set(data.getLength());
            index.append(key, position);
        }
        key.set(sfcIndex);
        if (checked) {
            if (framed.length < length + RecordFrame.CRC_BYTES) {
                framed = new byte[Math.max(length + RecordFrame.CRC_BYTES, 2 * framed.length)];
            }
            value.set(framed, 0, RecordFrame.frame(sfcIndex, group, offset, length, framed));
        } else {
            value.set(group, offset, length);
        }
        data.append(key, value);
        if (bloomFpp > 0) {
            if (groups == fileIndexes.length) {
                fileIndexes = java.util.Arrays.copyOf(fileIndexes, Math.max(1024, 2 * fileIndexes.length));
            }
            fileIndexes[(int) groups] = sfcIndex;
        }
        last = sfcIndex;
        groups++;
        records += recordCount;
        if (groupStats == null) {
            statsComplete = false;
        } else if (statsComplete) {
            stats.merge(groupStats);
        }
    }

    private void open(long firstIndex) throws IOException {
        currentName = new DataFileName(partition, firstIndex).name();
        Path mapFile = new Path(dir, currentName);
        SequenceFile.Metadata meta = new SequenceFile.Metadata();
        meta.set(new Text(META_FORMAT_VERSION), new Text(Integer.toString(formatVersion)));
        meta.set(new Text(META_WRITE_ID), new Text(writeId));
        // No mkdirs: creating a file makes its parents (on S3A a mkdirs is probes and a marker PUT).
        // The streams are made here (ObjectStores.create: no probes on object stores) and the index's
        // CRC32C is computed as it is written, so the index is not read back for it.
        // Both reach stable storage when closed (Durable): a version will reference them.
        Path dataPath = new Path(mapFile, "data");
        dataOut = Durable.onClose(fs, dataPath, ObjectStores.create(fs, dataPath, true, blockSize));
        indexCrc = new java.util.zip.CRC32C();
        Path indexPath = new Path(mapFile, "index");
        indexOut = new FSDataOutputStream(new java.util.zip.CheckedOutputStream(
            Durable.onClose(fs, indexPath, ObjectStores.create(fs, indexPath, true, blockSize)), indexCrc), null);
        data = SequenceFile.createWriter(conf,
            SequenceFile.Writer.stream(dataOut),
            SequenceFile.Writer.keyClass(LongWritable.class),
            SequenceFile.Writer.valueClass(BytesWritable.class),
            SequenceFile.Writer.compression(SequenceFile.CompressionType.NONE),
            SequenceFile.Writer.metadata(meta));
        index = SequenceFile.createWriter(conf,
            SequenceFile.Writer.stream(indexOut),
            SequenceFile.Writer.keyClass(LongWritable.class),
            SequenceFile.Writer.valueClass(LongWritable.class),
            SequenceFile.Writer.compression(SequenceFile.CompressionType.BLOCK));
        first = firstIndex;
        records = 0;
        groups = 0;
        stats = new FileStats();
        statsComplete = true;
    }

    private void roll() throws IOException {
        long length = data.getLength();
        data.close();   // flushes; the stream is ours to close
        dataOut.close();
        index.close();
        indexOut.close();
        long indexCrc = this.indexCrc.getValue();
        Long bloomCrc = null;
        if (bloomFpp > 0) {
            // built from the indexes this writer appended: no second pass over the file
            bloomCrc = BloomFilter.build(fileIndexes, (int) groups, bloomFpp).write(fs, new Path(dir, currentName));
        }
        // the names: the file's parts in its directory, the directory in the attempt's (local files)
        Durable.directory(fs, new Path(dir, currentName));
        Durable.directory(fs, dir);
        finished.add(new DataFile(dirInLayer, currentName, first, last, records, groups, length,
            checked ? Long.valueOf(indexCrc) : null, statsComplete ? stats : null, bloomCrc));
        data = null;
        index = null;
        dataOut = null;
        indexOut = null;
    }

    /**
     * The files finished so far (all of them after {@link #close()}), as the version document lists
     * them: the task's result, returned to the driver for the layer's metadata.
     */
    public List<DataFile> files() {
        return finished;
    }

    /** The length of the open file's {@code data} so far, or -1 when no file is open. */
    public long openBytes() throws IOException {
        return data == null ? -1 : data.getLength();
    }

    /** How many files this run finished (rolled at the block size) since the last {@link #close()}. */
    public int finishedInRun() {
        return finished.size() - runStart;
    }

    /** Forgets the last finished file (the caller rewrites it) and returns it; its MapFile stays on disk. */
    public DataFile dropLastFinished() {
        DataFile f = finished.remove(finished.size() - 1);
        runStart = Math.min(runStart, finished.size());
        return f;
    }

    /**
     * Names the files opened from now on {@code part-r-<partition>-<first index>}: a rewrite of files
     * this writer finished (small-tail rebalancing) takes other names than theirs, so nothing is moved
     * out of the way first (a rename on an object store copies every byte).
     */
    public void namePartition(int partition) {
        if (partition < 0) {
            throw new IllegalArgumentException("negative partition " + partition);
        }
        this.partition = partition;
    }

    public int namePartition() {
        return partition;
    }

    /** Where the files go. */
    public Path dir() {
        return dir;
    }

    public Configuration conf() {
        return conf;
    }

    public long blockSize() {
        return blockSize;
    }

    /** Finishes the open file, if any, and ends the run: the next group starts a new file and a new run. */
    @Override
    public void close() throws IOException {
        if (data != null) {
            roll();
        }
        runStart = finished.size();
    }

    /** Closes without recording the open file, after a failure; errors are suppressed. */
    public void abort() {
        for (Closeable c : new Closeable[] {data, dataOut, index, indexOut}) {
            try {
                if (c != null) c.close();
            } catch (IOException | RuntimeException ignored) {
                // the write is failing already; the caller removes the whole data directory
            }
        }
        data = null;
        index = null;
        dataOut = null;
        indexOut = null;
    }
}
