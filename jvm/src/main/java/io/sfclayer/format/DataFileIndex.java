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

    /**
     * The index file's bytes are not a valid index (checksum, truncation, order, not a SequenceFile):
     * damage, told apart by its class from the file system's own IOExceptions, which are not.
     */
    public static final class BadIndex extends IOException {
        private static final long serialVersionUID = 1L;

        BadIndex(String message, Throwable cause) {
            super(message, cause);
        }
    }

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

    /**
     * The index of a data file whose length and index CRC32C the version document records, read
     * without opening its data file (where records start is checked when a reader opens the data file
     * with it); null when the document records neither (read it with {@link #read(Configuration, Path,
     * DataFileEntry)}). IOException when it is missing or damaged.
     */
    public static DataFileIndex readAlone(Configuration conf, Path mapFile, DataFileEntry entry) throws IOException {
        if (entry.indexCrc32c == null || entry.dataBytes < 0) {
            return null;
        }
        return read(conf, mapFile.getFileSystem(conf), new Path(mapFile, "index"), entry.indexCrc32c, 0, entry.dataBytes);
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
     * Reads and checks an index file: {@link BadIndex} saying what is wrong with its bytes (checksum,
     * unreadable, out of order), FileNotFoundException when it is missing; any other IOException is the
     * file system's.
     *
     * @param expectedCrc the recorded CRC32C, or null when the version records none (formats 1, 2)
     */
    public static DataFileIndex read(Configuration conf, FileSystem fs, Path index, Long expectedCrc,
                                     long dataStart, long dataEnd) throws IOException {
        byte[] bytes;
        try (FSDataInputStream in = ObjectStores.open(fs, index, ObjectStores.Access.WHOLE_FILE, -1)) {
            bytes = in.readAllBytes();
        }
        try {
            return parse(conf, bytes, expectedCrc, dataStart, dataEnd);
        } catch (BadIndex e) {
            throw e;
        } catch (IOException e) { // the bytes are in memory: whatever fails now is their fault
            throw new BadIndex(e.getMessage() == null ? e.toString() : e.getMessage(), e);
        }
    }

    private static DataFileIndex parse(Configuration conf, byte[] bytes, Long expectedCrc, long dataStart,
                                       long dataEnd) throws IOException {
        if (expectedCrc != null && crc32c(bytes) != expectedCrc) {
            throw new IOException("checksum mismatch: CRC32C " + Long.toHexString(crc32c(bytes)) + ", the version records "
                + Long.toHexString(expectedCrc) + " (" + bytes.length + " bytes)");
        }
        if (expectedCrc != null) {
            // checked bytes, as DataFileWriter writes them: parsed here, without SequenceFile.Reader's set-up
            DataFileIndex fast = parseBlockCompressed(bytes, dataStart, dataEnd);
            if (fast != null) {
                return fast;
            }
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

    private static final byte[] SEQ6 = {'S', 'E', 'Q', 6};
    private static final String LONG_WRITABLE = LongWritable.class.getName();
    private static final String DEFAULT_CODEC = "org.apache.hadoop.io.compress.DefaultCodec";

    /**
     * The index, parsed straight from a SequenceFile of the one shape {@link DataFileWriter} writes
     * (version 6, LongWritable to LongWritable, block-compressed with zlib): an index is a few hundred
     * bytes, and SequenceFile.Reader's set-up (codec, four pooled decompressors, configuration look-ups)
     * cost more than the read. Null for any other shape (the caller reads it with SequenceFile.Reader);
     * IOException saying what is wrong when the entries are out of order or outside {@code data}.
     */
    static DataFileIndex parseBlockCompressed(byte[] bytes, long dataStart, long dataEnd) throws IOException {
        long[] keys = new long[64];
        long[] offsets = new long[64];
        int n = 0;
        java.util.zip.Inflater inflater = new java.util.zip.Inflater();
        try {
            org.apache.hadoop.io.DataInputBuffer in = new org.apache.hadoop.io.DataInputBuffer();
            in.reset(bytes, bytes.length);
            byte[] magic = new byte[4];
            in.readFully(magic);
            if (!Arrays.equals(magic, SEQ6) || !LONG_WRITABLE.equals(org.apache.hadoop.io.Text.readString(in))
                    || !LONG_WRITABLE.equals(org.apache.hadoop.io.Text.readString(in))
                    || !in.readBoolean() || !in.readBoolean()
                    || !DEFAULT_CODEC.equals(org.apache.hadoop.io.Text.readString(in)) || in.readInt() != 0) {
                return null; // another shape (or metadata): SequenceFile.Reader knows it
            }
            byte[] sync = new byte[16];
            in.readFully(sync);
            byte[] check = new byte[16];
            org.apache.hadoop.io.DataInputBuffer keyLens = new org.apache.hadoop.io.DataInputBuffer();
            org.apache.hadoop.io.DataInputBuffer keyBytes = new org.apache.hadoop.io.DataInputBuffer();
            org.apache.hadoop.io.DataInputBuffer valLens = new org.apache.hadoop.io.DataInputBuffer();
            org.apache.hadoop.io.DataInputBuffer valBytes = new org.apache.hadoop.io.DataInputBuffer();
            while (in.getPosition() < bytes.length) {
                if (in.readInt() != -1) {
                    return null;
                }
                in.readFully(check);
                if (!Arrays.equals(sync, check)) {
                    return null;
                }
                int records = org.apache.hadoop.io.WritableUtils.readVInt(in);
                inflate(in, bytes, inflater, keyLens);
                inflate(in, bytes, inflater, keyBytes);
                inflate(in, bytes, inflater, valLens);
                inflate(in, bytes, inflater, valBytes);
                for (int i = 0; i < records; i++) {
                    if (org.apache.hadoop.io.WritableUtils.readVInt(keyLens) != 8
                            || org.apache.hadoop.io.WritableUtils.readVInt(valLens) != 8) {
                        return null;
                    }
                    long k = keyBytes.readLong();
                    long v = valBytes.readLong();
                    if (n == keys.length) {
                        if (n > dataEnd / RecordFrame.PREFIX_BYTES) {
                            throw new IOException("more entries than the data file can hold");
                        }
                        keys = Arrays.copyOf(keys, 2 * n);
                        offsets = Arrays.copyOf(offsets, 2 * n);
                    }
                    if (n > 0 && (k <= keys[n - 1] || v <= offsets[n - 1])) {
                        throw new IOException("entry " + n + " (index " + k + " at byte " + v
                            + ") is not after entry " + (n - 1) + " (index " + keys[n - 1] + " at byte " + offsets[n - 1] + ")");
                    }
                    if (v < dataStart || v >= dataEnd) {
                        throw new IOException("entry " + n + " (index " + k + ") points at byte " + v
                            + ", outside the data file's records [" + dataStart + ", " + dataEnd + ")");
                    }
                    keys[n] = k;
                    offsets[n] = v;
                    n++;
                }
            }
        } catch (EOFException | java.util.zip.DataFormatException | RuntimeException e) {
            return null; // not what it seemed: SequenceFile.Reader reads it, or says what is wrong
        } finally {
            inflater.end();
        }
        return new DataFileIndex(Arrays.copyOf(keys, n), Arrays.copyOf(offsets, n));
    }

    /** One compressed buffer of a block (vint length, zlib bytes), inflated into {@code out}. */
    private static void inflate(org.apache.hadoop.io.DataInputBuffer in, byte[] bytes, java.util.zip.Inflater inflater,
                                org.apache.hadoop.io.DataInputBuffer out) throws IOException, java.util.zip.DataFormatException {
        int length = org.apache.hadoop.io.WritableUtils.readVInt(in);
        int at = in.getPosition();
        if (length < 0 || at + length > bytes.length) {
            throw new EOFException();
        }
        in.skipBytes(length);
        inflater.reset();
        inflater.setInput(bytes, at, length);
        byte[] buf = new byte[Math.max(64, 4 * length)];
        int got = 0;
        while (!inflater.finished()) {
            if (got == buf.length) {
                buf = Arrays.copyOf(buf, 2 * buf.length);
            }
            int k = inflater.inflate(buf, got, buf.length - got);
            if (k == 0 && (inflater.needsInput() || inflater.needsDictionary())) {
                throw new EOFException();
            }
            got += k;
        }
        out.reset(buf, got);
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
