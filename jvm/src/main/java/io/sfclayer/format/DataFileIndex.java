package io.sfclayer.format;

import io.sfclayer.SfcLayerException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.PositionedReadable;
import org.apache.hadoop.fs.Seekable;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.SequenceFile;

import java.io.ByteArrayInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.util.Arrays;
import java.util.zip.CRC32C;

/**
 * The {@code index} file of a data file: every {@code indexInterval}-th SFC index and the byte
 * offset of its record in {@code data} (a block-compressed SequenceFile, as Hadoop's MapFile writes
 * it; {@link DataFileWriter} writes it through {@code SequenceFile.Writer}). Read whole, checked
 * against the CRC32C the version document records (format 3) before it is parsed, so damaged bytes
 * never reach the decompressor, and checked for order: keys and offsets strictly increase, offsets
 * lie inside {@code data}.
 *
 * <p>Kept as two arrays (16 bytes an entry): a look-up reads it once and hands it to every later open
 * of the file ({@link DataFileReader#DataFileReader(Configuration, Path, DataFileEntry,
 * DataFileReader.DamageSink, DataFileIndex)}), which then opens only the {@code data} file.
 */
public final class DataFileIndex {
    public final long[] keys;
    public final long[] offsets;

    private DataFileIndex(long[] keys, long[] offsets) {
        this.keys = keys;
        this.offsets = offsets;
    }

    public int size() {
        return keys.length;
    }

    /** The entry with the greatest key ≤ {@code index}, or -1 when every key is above it. */
    public int floor(long index) {
        int pos = Arrays.binarySearch(keys, index);
        return pos >= 0 ? pos : -pos - 2;
    }

    public long key(int i) {
        return keys[i];
    }

    public long position(int i) {
        return offsets[i];
    }

    /** Approximate heap bytes held. */
    public long bytes() {
        return 16L * keys.length + 64;
    }

    /**
     * The checked index of the MapFile directory {@code mapFile}, read through a reader of its data
     * file (the header gives where records start); {@link SfcLayerException.CorruptLayer} when it is
     * damaged or missing. Unknown to the version document: no recorded checksum is compared.
     */
    public static DataFileIndex read(Configuration conf, Path mapFile) throws IOException {
        return read(conf, mapFile, DataFileEntry.unknown(mapFile.getName(), mapFile.toString()));
    }

    /** As {@link #read(Configuration, Path)}, checked against what the version document records. */
    public static DataFileIndex read(Configuration conf, Path mapFile, DataFileEntry entry) throws IOException {
        try (DataFileReader r = new DataFileReader(conf, mapFile, entry, null)) {
            return r.loadedIndex();
        }
    }

    /** The CRC32C of an index file's bytes, as the version document records it. */
    public static long crc32c(FileSystem fs, Path index) throws IOException {
        try (FSDataInputStream in = fs.open(index)) {
            return crc32c(in.readAllBytes());
        }
    }

    static long crc32c(byte[] bytes) {
        CRC32C crc = new CRC32C();
        crc.update(bytes, 0, bytes.length);
        return crc.getValue();
    }

    /**
     * Reads and checks an index file. Throws IOException saying what is wrong (missing, checksum,
     * unreadable, out of order); FileNotFoundException when it is missing.
     *
     * @param expectedCrc the recorded CRC32C, or null when the version records none (formats 1, 2)
     */
    public static DataFileIndex read(Configuration conf, FileSystem fs, Path index, Long expectedCrc,
                                     long dataStart, long dataEnd) throws IOException {
        byte[] bytes;
        try (FSDataInputStream in = fs.open(index)) {
            bytes = in.readAllBytes();
        }
        if (expectedCrc != null && crc32c(bytes) != expectedCrc) {
            throw new IOException("checksum mismatch: CRC32C " + Long.toHexString(crc32c(bytes)) + ", the version records "
                + Long.toHexString(expectedCrc) + " (" + bytes.length + " bytes)");
        }
        long[] keys = new long[64];
        long[] offsets = new long[64];
        int n = 0;
        LongWritable k = new LongWritable();
        LongWritable v = new LongWritable();
        try (SequenceFile.Reader r = new SequenceFile.Reader(conf,
                SequenceFile.Reader.stream(new FSDataInputStream(new SeekableBytes(bytes))),
                SequenceFile.Reader.length(bytes.length))) {
            while (r.next(k, v)) {
                if (n == keys.length) {
                    if (n > dataEnd / RecordFrame.PREFIX_BYTES) {
                        throw new IOException("more entries than the data file can hold");
                    }
                    keys = Arrays.copyOf(keys, 2 * n);
                    offsets = Arrays.copyOf(offsets, 2 * n);
                }
                if (n > 0 && (k.get() <= keys[n - 1] || v.get() <= offsets[n - 1])) {
                    throw new IOException("entry " + n + " (index " + k.get() + " at byte " + v.get()
                        + ") is not after entry " + (n - 1) + " (index " + keys[n - 1] + " at byte " + offsets[n - 1] + ")");
                }
                if (v.get() < dataStart || v.get() >= dataEnd) {
                    throw new IOException("entry " + n + " (index " + k.get() + ") points at byte " + v.get()
                        + ", outside the data file's records [" + dataStart + ", " + dataEnd + ")");
                }
                keys[n] = k.get();
                offsets[n] = v.get();
                n++;
            }
        } catch (EOFException e) {
            throw new IOException("truncated (" + bytes.length + " bytes)", e);
        } catch (RuntimeException e) {
            throw new IOException("unreadable: " + e, e);
        }
        return new DataFileIndex(Arrays.copyOf(keys, n), Arrays.copyOf(offsets, n));
    }

    /** An index file held in memory, for SequenceFile.Reader (which wants a seekable stream). */
    private static final class SeekableBytes extends ByteArrayInputStream implements Seekable, PositionedReadable {
        SeekableBytes(byte[] b) {
            super(b);
        }

        @Override
        public void seek(long p) throws IOException {
            if (p < 0 || p > count) {
                throw new EOFException("seek to " + p + " outside " + count + " bytes");
            }
            pos = (int) p;
        }

        @Override
        public long getPos() {
            return pos;
        }

        @Override
        public boolean seekToNewSource(long targetPos) {
            return false;
        }

        @Override
        public int read(long position, byte[] b, int off, int len) {
            if (position >= count) {
                return -1;
            }
            int n = (int) Math.min(len, count - position);
            System.arraycopy(buf, (int) position, b, off, n);
            return n;
        }

        @Override
        public void readFully(long position, byte[] b, int off, int len) throws IOException {
            if (read(position, b, off, len) < len) {
                throw new EOFException();
            }
        }

        @Override
        public void readFully(long position, byte[] b) throws IOException {
            readFully(position, b, 0, b.length);
        }
    }
}
