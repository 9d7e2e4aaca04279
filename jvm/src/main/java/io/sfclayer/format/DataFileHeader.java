package io.sfclayer.format;

import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.Text;

import java.io.DataInput;
import java.io.IOException;
import java.util.Arrays;

/**
 * The SequenceFile header of a {@code data} file, read field by field so a damaged header is told
 * apart from damaged records (docs/FORMAT.md, "Data files"). The header is written by Hadoop's
 * {@code SequenceFile.Writer} ({@link DataFileWriter}); this is its reading half.
 *
 * <pre>
 *   "SEQ" 6  keyClass valueClass (Text)  compressed=false blockCompressed=false
 *   metadata (int count, Text pairs: sfclayer.formatVersion, sfclayer.writeId)  sync[16]
 * </pre>
 */
public final class DataFileHeader {
    static final byte[] MAGIC = {'S', 'E', 'Q'};
    static final int SEQUENCE_FILE_VERSION = 6;
    /** Bounds that keep a damaged header from allocating gigabytes. */
    private static final int MAX_METADATA_ENTRIES = 1024;
    private static final int MAX_TEXT_BYTES = 1 << 20;

    /** What is wrong with a header that is not an sfclayer data file's. */
    public static final class BadHeader extends IOException {
        private static final long serialVersionUID = 1L;

        BadHeader(String message) {
            super(message);
        }
    }

    /** The format version named in the file's metadata (1 when absent). */
    public final int formatVersion;
    public final String writeId;
    /** The 16-byte sync marker records are separated by now and then. */
    public final byte[] sync;
    /** Byte offset of the first record. */
    public final long dataStart;

    private DataFileHeader(int formatVersion, String writeId, byte[] sync, long dataStart) {
        this.formatVersion = formatVersion;
        this.writeId = writeId;
        this.sync = sync;
        this.dataStart = dataStart;
    }

    /**
     * Reads the header from {@code in}, positioned at the file's start; {@code position} tells the
     * offset after it. Throws IOException with what is wrong when it is not an sfclayer header.
     */
    public static DataFileHeader read(DataInput in, java.util.function.LongSupplier position) throws IOException {
        byte[] magic = new byte[4];
        in.readFully(magic);
        if (!Arrays.equals(Arrays.copyOf(magic, 3), MAGIC) || magic[3] != SEQUENCE_FILE_VERSION) {
            throw new BadHeader("not a SequenceFile version " + SEQUENCE_FILE_VERSION + " (starts with bytes "
                + String.format("%02x %02x %02x %02x", magic[0], magic[1], magic[2], magic[3]) + ")");
        }
        String keyClass = readText(in);
        String valueClass = readText(in);
        if (!keyClass.equals(LongWritable.class.getName()) || !valueClass.equals(BytesWritable.class.getName())) {
            throw new BadHeader("a SequenceFile of " + keyClass + " -> " + valueClass
                + ", expected LongWritable -> BytesWritable");
        }
        boolean compressed = in.readBoolean();
        boolean blockCompressed = in.readBoolean();
        if (compressed || blockCompressed) {
            throw new BadHeader("a compressed SequenceFile (sfclayer data files are uncompressed)");
        }
        int entries = in.readInt();
        if (entries < 0 || entries > MAX_METADATA_ENTRIES) {
            throw new BadHeader("bad metadata entry count " + entries);
        }
        String fv = null;
        String wid = null;
        for (int i = 0; i < entries; i++) {
            String k = readText(in);
            String v = readText(in);
            if (k.equals(DataFileWriter.META_FORMAT_VERSION)) fv = v;
            if (k.equals(DataFileWriter.META_WRITE_ID)) wid = v;
        }
        int formatVersion;
        try {
            formatVersion = fv == null ? 1 : Integer.parseInt(fv);
        } catch (NumberFormatException e) {
            throw new BadHeader("bad " + DataFileWriter.META_FORMAT_VERSION + " '" + fv + "'");
        }
        byte[] sync = new byte[RecordFrame.SYNC_BYTES];
        in.readFully(sync);
        return new DataFileHeader(formatVersion, wid, sync, position.getAsLong());
    }

    /** A Text.writeString string, refusing absurd lengths. */
    private static String readText(DataInput in) throws IOException {
        int n = org.apache.hadoop.io.WritableUtils.readVInt(in);
        if (n < 0 || n > MAX_TEXT_BYTES) {
            throw new BadHeader("bad string length " + n);
        }
        byte[] b = new byte[n];
        in.readFully(b);
        return Text.decode(b);
    }
}
