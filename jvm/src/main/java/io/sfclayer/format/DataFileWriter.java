package io.sfclayer.format;

import io.sfclayer.SfcLayerException;
import org.apache.hadoop.conf.Configuration;
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
    private final int partition;
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
    private String currentName;
    private long first;
    private long last = -1;
    private long records;
    private long groups;
    /** Statistics of the open file; null while a group without statistics was appended to it. */
    private FileStats stats;
    private boolean statsComplete;
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
        fs.mkdirs(mapFile);
        data = SequenceFile.createWriter(conf,
            SequenceFile.Writer.file(new Path(mapFile, "data")),
            SequenceFile.Writer.keyClass(LongWritable.class),
            SequenceFile.Writer.valueClass(BytesWritable.class),
            SequenceFile.Writer.compression(SequenceFile.CompressionType.NONE),
            SequenceFile.Writer.blockSize(blockSize),
            SequenceFile.Writer.metadata(meta));
        index = SequenceFile.createWriter(conf,
            SequenceFile.Writer.file(new Path(mapFile, "index")),
            SequenceFile.Writer.keyClass(LongWritable.class),
            SequenceFile.Writer.valueClass(LongWritable.class),
            SequenceFile.Writer.compression(SequenceFile.CompressionType.BLOCK),
            SequenceFile.Writer.blockSize(blockSize));
        first = firstIndex;
        records = 0;
        groups = 0;
        stats = new FileStats();
        statsComplete = true;
    }

    private void roll() throws IOException {
        long length = data.getLength();
        data.close();
        index.close();
        long indexCrc = DataFileIndex.crc32c(fs, new Path(new Path(dir, currentName), "index"));
        Long bloomCrc = null;
        if (bloomFpp > 0) {
            // built from the indexes this writer appended: no second pass over the file
            bloomCrc = BloomFilter.build(fileIndexes, (int) groups, bloomFpp).write(fs, new Path(dir, currentName));
        }
        finished.add(new DataFile(dirInLayer, currentName, first, last, records, groups, length,
            checked ? Long.valueOf(indexCrc) : null, statsComplete ? stats : null, bloomCrc));
        data = null;
        index = null;
    }

    /**
     * The files finished so far (all of them after {@link #close()}), as the version document lists
     * them: the task's result, returned to the driver for the layer's metadata.
     */
    public List<DataFile> files() {
        return finished;
    }

    @Override
    public void close() throws IOException {
        if (data != null) {
            roll();
        }
    }

    /** Closes without recording the open file, after a failure; errors are suppressed. */
    public void abort() {
        try {
            if (data != null) data.close();
        } catch (IOException | RuntimeException ignored) {
            // the write is failing already; the caller removes the whole data directory
        }
        try {
            if (index != null) index.close();
        } catch (IOException | RuntimeException ignored) {
            // as above
        }
        data = null;
        index = null;
    }
}
