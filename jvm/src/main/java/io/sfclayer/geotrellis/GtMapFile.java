package io.sfclayer.geotrellis;

import io.sfclayer.SfcLayerException;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.io.WritableUtils;

import java.io.ByteArrayInputStream;
import java.io.Closeable;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.util.Arrays;
import java.util.zip.DataFormatException;
import java.util.zip.Inflater;

/**
 * One GeoTrellis MapFile ({@code part-r-<partition>-<first index>/{index,data}}), read as raw
 * SequenceFiles: keys are GeoTrellis' {@code org.apache.hadoop.io.BigIntWritable} (a BytesWritable of
 * {@code BigInt.toByteArray}), a class sfclayer does not ship, so the files are parsed here (uncompressed
 * SequenceFile version 6, what GeoTrellis' HadoopRDDWriter writes) instead of through Hadoop's
 * MapFile.Reader. The index (every 4th key) is read whole on open; {@link #seekFloor} then positions the
 * data stream at the last indexed key at or before an index, and {@link #next} reads records from there.
 */
public final class GtMapFile implements Closeable {
    private static final byte[] MAGIC = {'S', 'E', 'Q'};
    private static final int SYNC_SIZE = 16;

    private final Path dir;
    private final FSDataInputStream data;
    private final long dataStart;
    private final long dataLength;
    private final byte[] sync;
    private long[] indexKeys;
    private long[] indexPositions;
    /** The data stream's position (kept here: FSDataInputStream.getPos costs a call into the stream). */
    private long pos;

    private long key;
    private byte[] value = new byte[1 << 16];
    private int valueLength;
    private long bytesRead;
    private long seeks;

    private GtMapFile(Path dir, FSDataInputStream data, long dataLength) throws IOException {
        this.dir = dir;
        this.data = data;
        this.dataLength = dataLength;
        this.sync = readHeader(data, new Path(dir, "data"));
        this.dataStart = data.getPos();
        this.pos = dataStart;
    }

    /**
     * Opens a MapFile directory: its data file, and its whole index.
     *
     * @throws SfcLayerException.CorruptLayer       if either file is not an uncompressed SequenceFile
     * @throws SfcLayerException.StorageError       if the file system fails
     */
    public static GtMapFile open(FileSystem fs, Path dir) {
        Path dataPath = new Path(dir, "data");
        FSDataInputStream in = null;
        try {
            long len = fs.getFileStatus(dataPath).getLen();
            in = fs.open(dataPath);
            GtMapFile f = new GtMapFile(dir, in, len);
            f.readIndex(fs);
            return f;
        } catch (FileNotFoundException e) {
            close(in);
            throw new SfcLayerException.CorruptLayer("GeoTrellis MapFile " + dir + " is missing a file: " + e.getMessage(), e);
        } catch (EOFException e) {
            close(in);
            throw new SfcLayerException.CorruptLayer("GeoTrellis MapFile " + dir + " is truncated", e);
        } catch (IOException e) {
            close(in);
            throw new SfcLayerException.StorageError("reading GeoTrellis MapFile " + dir + ": " + e, e);
        } catch (RuntimeException e) {
            close(in);
            throw e;
        }
    }

    private static void close(Closeable c) {
        if (c == null) return;
        try {
            c.close();
        } catch (IOException ignored) {
            // already failing
        }
    }

    /** The SequenceFile header of a data file (uncompressed); returns the sync marker. */
    private static byte[] readHeader(DataInputStream in, Path file) throws IOException {
        Header h = header(in, file);
        if (h.compressed()) {
            throw new SfcLayerException.UnsupportedFormat(file + " is a compressed SequenceFile (GeoTrellis writes"
                + " its data uncompressed, the values deflated); sfclayer does not read it");
        }
        return h.sync();
    }

    /** What a SequenceFile header tells a reader: its sync marker and whether its blocks are compressed. */
    private record Header(byte[] sync, boolean compressed) {
    }

    /**
     * A SequenceFile's header. Compressed files must be block-compressed with Hadoop's DefaultCodec (zlib):
     * what MapFile.Writer gives its index.
     */
    private static Header header(DataInputStream in, Path file) throws IOException {
        byte[] magic = new byte[3];
        in.readFully(magic);
        int version = in.readByte();
        if (!Arrays.equals(magic, MAGIC) || version != 6) {
            throw new SfcLayerException.CorruptLayer(file + " is not a SequenceFile of version 6 (GeoTrellis' MapFile"
                + " data); magic " + Arrays.toString(magic) + ", version " + version);
        }
        Text.readString(in); // key class (BigIntWritable)
        String valueClass = Text.readString(in);
        boolean compressed = in.readBoolean();
        boolean blockCompressed = in.readBoolean();
        if (compressed) {
            String codec = Text.readString(in);
            if (!blockCompressed || !codec.equals("org.apache.hadoop.io.compress.DefaultCodec")) {
                throw new SfcLayerException.UnsupportedFormat(file + " is a " + (blockCompressed ? "block" : "record")
                    + "-compressed SequenceFile with " + codec + " (sfclayer reads GeoTrellis' MapFiles: uncompressed"
                    + " data, a block-compressed DefaultCodec index)");
            }
        }
        int meta = in.readInt();
        if (meta < 0 || meta > 1 << 16) throw new SfcLayerException.CorruptLayer(file + ": bad metadata count " + meta);
        Text t = new Text();
        for (int i = 0; i < 2 * meta; i++) t.readFields(in);
        byte[] s = new byte[SYNC_SIZE];
        in.readFully(s);
        if (valueClass.isEmpty()) throw new SfcLayerException.CorruptLayer(file + ": no value class");
        return new Header(s, compressed);
    }

    /**
     * Reads the whole index file in one read and parses it from memory (a cold look-up opens one MapFile:
     * byte-at-a-time reads through the checksummed stream and an InflaterInputStream were most of its cost).
     */
    private void readIndex(FileSystem fs) throws IOException {
        Path file = new Path(dir, "index");
        long len = fs.getFileStatus(file).getLen();
        if (len > Integer.MAX_VALUE - 16) throw new SfcLayerException.UnsupportedFormat(file + " is over 2 GiB");
        byte[] all = new byte[(int) len];
        try (FSDataInputStream in = fs.open(file)) {
            in.readFully(0, all);
        }
        DataInputStream in = new DataInputStream(new ByteArrayInputStream(all));
        Header h = header(in, file);
        byte[] s = h.sync();
        boolean blocks = h.compressed();
        IndexSink sink = new IndexSink(file);
        Bytes b = new Bytes(all, (int) len - in.available(), (int) len, file);
        Inflater inflater = blocks ? new Inflater() : null;
        try {
            while (b.pos < b.end) {
                int at = b.pos;
                int recordLength = b.readInt();
                if (recordLength == -1) {
                    if (!Arrays.equals(b.slice(SYNC_SIZE), s)) {
                        throw new SfcLayerException.CorruptLayer(file + ": bad sync marker at " + (at + 4));
                    }
                    if (blocks) readBlock(b, inflater, sink, file);
                    continue;
                }
                if (blocks) throw new SfcLayerException.CorruptLayer(file + ": a block without its sync marker at " + at);
                int keyLength = b.readInt();
                if (recordLength != keyLength + 8 || keyLength < 5 || keyLength > 12) {
                    throw new SfcLayerException.CorruptLayer(file + ": bad record at " + at);
                }
                int p = b.take(recordLength);
                sink.add(all, p, keyLength, all, p + keyLength);
            }
        } finally {
            if (inflater != null) inflater.end();
        }
        indexKeys = Arrays.copyOf(sink.keys, sink.n);
        indexPositions = Arrays.copyOf(sink.positions, sink.n);
    }

    /** One block of a block-compressed SequenceFile: record count, then key lengths, keys, value lengths, values (each zlib). */
    private static void readBlock(Bytes in, Inflater inflater, IndexSink sink, Path file) throws IOException {
        int count = in.readVInt();
        if (count < 0) throw new SfcLayerException.CorruptLayer(file + ": bad block record count " + count);
        Bytes keyLengths = inflated(in, inflater, file), keys = inflated(in, inflater, file);
        Bytes valueLengths = inflated(in, inflater, file), values = inflated(in, inflater, file);
        for (int i = 0; i < count; i++) {
            int kl = keyLengths.readVInt();
            int vl = valueLengths.readVInt();
            if (kl < 5 || kl > 12 || vl != 8) throw new SfcLayerException.CorruptLayer(file + ": bad index entry (key " + kl + ", value " + vl + " bytes)");
            int k = keys.take(kl), v = values.take(vl);
            sink.add(keys.buf, k, kl, values.buf, v);
        }
    }

    private static Bytes inflated(Bytes in, Inflater inflater, Path file) throws IOException {
        int n = in.readVInt();
        if (n < 0 || n > 1 << 26) throw new SfcLayerException.CorruptLayer(file + ": bad compressed buffer length " + n);
        int at = in.take(n);
        inflater.reset();
        inflater.setInput(in.buf, at, n);
        byte[] out = new byte[Math.max(64, 4 * n)];
        int len = 0;
        try {
            while (!inflater.finished()) {
                if (len == out.length) out = Arrays.copyOf(out, 2 * out.length);
                int got = inflater.inflate(out, len, out.length - len);
                if (got == 0 && (inflater.needsInput() || inflater.needsDictionary())) {
                    throw new SfcLayerException.CorruptLayer(file + ": a truncated compressed buffer");
                }
                len += got;
            }
        } catch (DataFormatException e) {
            throw new SfcLayerException.CorruptLayer(file + ": a compressed buffer does not inflate: " + e.getMessage(), e);
        }
        return new Bytes(out, 0, len, file);
    }

    /** A byte range read front to back, every read checked against its end (a truncated file is CorruptLayer). */
    private static final class Bytes {
        final byte[] buf;
        final int end;
        final Path file;
        int pos;

        Bytes(byte[] buf, int pos, int end, Path file) {
            this.buf = buf;
            this.pos = pos;
            this.end = end;
            this.file = file;
        }

        /** Skips {@code n} bytes; returns where they start. */
        int take(int n) {
            if (n < 0 || n > end - pos) throw new SfcLayerException.CorruptLayer(file + " is truncated at " + pos);
            int at = pos;
            pos += n;
            return at;
        }

        byte[] slice(int n) {
            int at = take(n);
            return Arrays.copyOfRange(buf, at, at + n);
        }

        int readInt() {
            int p = take(4);
            return (buf[p] & 0xff) << 24 | (buf[p + 1] & 0xff) << 16 | (buf[p + 2] & 0xff) << 8 | (buf[p + 3] & 0xff);
        }

        /** Hadoop's WritableUtils vint (one byte for -112..127, else a length byte then big-endian bytes). */
        int readVInt() {
            byte first = buf[take(1)];
            if (first >= -112) return first;
            boolean negative = first < -120;
            int n = negative ? -(first + 120) : -(first + 112);
            long v = 0;
            for (int i = 0; i < n; i++) v = v << 8 | (buf[take(1)] & 0xff);
            v = negative ? ~v : v;
            if (v != (int) v) throw new SfcLayerException.CorruptLayer(file + ": a length over 32 bits at " + pos);
            return (int) v;
        }
    }

    /** Index entries as they are read: BigIntWritable key → LongWritable position. */
    private static final class IndexSink {
        final Path file;
        long[] keys = new long[64], positions = new long[64];
        int n;

        IndexSink(Path file) {
            this.file = file;
        }

        void add(byte[] key, int keyOff, int keyLength, byte[] value, int valueOff) {
            if (n == keys.length) {
                keys = Arrays.copyOf(keys, 2 * n);
                positions = Arrays.copyOf(positions, 2 * n);
            }
            keys[n] = bigInt(key, keyOff, keyLength, file);
            long v = 0;
            for (int i = 0; i < 8; i++) v = v << 8 | (value[valueOff + i] & 0xff);
            positions[n] = v;
            n++;
        }
    }

    /** A serialized BigIntWritable (int length, then BigInt.toByteArray) as a long. */
    private static long bigInt(byte[] b, int off, int len, Path file) {
        int n = (b[off] & 0xff) << 24 | (b[off + 1] & 0xff) << 16 | (b[off + 2] & 0xff) << 8 | (b[off + 3] & 0xff);
        if (n != len - 4 || n < 1 || n > 8) {
            throw new SfcLayerException.UnsupportedFormat(file + ": a key of " + n + " bytes (sfclayer reads"
                + " GeoTrellis indexes up to 63 bits)");
        }
        long v = b[off + 4]; // sign-extended: BigInt.toByteArray is two's complement
        for (int i = 1; i < n; i++) v = v << 8 | (b[off + 4 + i] & 0xff);
        if (v < 0) throw new SfcLayerException.CorruptLayer(file + ": negative key " + v);
        return v;
    }

    /**
     * Positions the stream so that {@link #next} returns every record with key {@code >= index}: at the last
     * indexed key at or before {@code index}, unless the stream is already at or past that position (then it
     * stays, so ranges read in order never go back). Counts a seek when it moves the stream.
     */
    public void seekFloor(long index) throws IOException {
        int i = Arrays.binarySearch(indexKeys, index);
        if (i < 0) i = -i - 2; // the last key below
        long target = i < 0 ? dataStart : indexPositions[i];
        if (target > pos) {
            data.seek(target);
            pos = target;
            seeks++;
        }
    }

    /** As {@link #seekFloor}, but also backwards: for look-ups in any order. */
    public void seekAnywhere(long index) throws IOException {
        int i = Arrays.binarySearch(indexKeys, index);
        if (i < 0) i = -i - 2;
        long target = i < 0 ? dataStart : indexPositions[i];
        if (target != pos) {
            data.seek(target);
            pos = target;
            seeks++;
        }
    }

    /** Reads the next record; false at the end of the file. */
    public boolean next() throws IOException {
        while (true) {
            if (pos >= dataLength) return false;
            int recordLength = data.readInt();
            pos += 4;
            bytesRead += 4;
            if (recordLength == -1) {
                byte[] got = new byte[SYNC_SIZE];
                data.readFully(got);
                pos += SYNC_SIZE;
                bytesRead += SYNC_SIZE;
                if (!Arrays.equals(got, sync)) throw new SfcLayerException.CorruptLayer(dir + "/data: bad sync marker at " + (pos - SYNC_SIZE));
                continue;
            }
            int keyLength = data.readInt();
            if (keyLength < 5 || keyLength > 12 || recordLength < keyLength + 4 || pos + 4 + recordLength > dataLength) {
                throw new SfcLayerException.CorruptLayer(dir + "/data: bad record at " + (pos - 4) + " (length "
                    + recordLength + ", key " + keyLength + ")");
            }
            byte[] k = new byte[keyLength];
            data.readFully(k);
            key = bigInt(k, 0, keyLength, new Path(dir, "data"));
            int vl = data.readInt();
            if (vl != recordLength - keyLength - 4) {
                throw new SfcLayerException.CorruptLayer(dir + "/data: value of key " + key + " is " + vl
                    + " bytes in a record of " + recordLength);
            }
            if (value.length < vl) value = new byte[Math.max(vl, 2 * value.length)];
            data.readFully(value, 0, vl);
            valueLength = vl;
            pos += 4 + recordLength;
            bytesRead += 4 + recordLength;
            return true;
        }
    }

    public long key() {
        return key;
    }

    /** The current value's bytes: {@code value()[0 .. valueLength())}, valid until the next call to next. */
    public byte[] value() {
        return value;
    }

    public int valueLength() {
        return valueLength;
    }

    public long bytesRead() {
        return bytesRead;
    }

    public long seeks() {
        return seeks;
    }

    public Path dir() {
        return dir;
    }

    @Override
    public void close() throws IOException {
        data.close();
    }
}
