package io.sfclayer.format;

import io.sfclayer.SfcLayerException;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.zip.CRC32C;

/**
 * The optional bloom filter of one data file over the SFC indexes it holds: the sidecar file
 * {@code bloom} inside the file's MapFile directory (docs/FORMAT.md, "Bloom filters"). A look-up of
 * an index the filter says is absent is answered without opening the data file; a filter never says
 * a present index is absent. The version document records the sidecar's CRC32C
 * ({@value #FILE_CRC}), so damaged or swapped filter bytes are found before they are believed.
 *
 * <p>An own implementation rather than Hadoop's {@code org.apache.hadoop.util.bloom.BloomFilter},
 * whose serialized form and hash chaining are undocumented Hadoop internals: this one is a few
 * lines another implementation can follow from the format document. Kirsch–Mitzenmacher double
 * hashing over MurmurHash3's 64-bit finalizer (fmix64) of the index:
 * {@code h1 = fmix64(index)}, {@code h2 = fmix64(h1) | 1}, bit {@code i} (0 ≤ i < k) is
 * {@code unsigned(h1 + i·h2) mod m} with 64-bit wrapping arithmetic.
 *
 * <pre>
 *   bytes 0-3   magic "SFCB"
 *   byte  4     layout version (1)
 *   byte  5     hash scheme (1: the double hashing above)
 *   short 6     k, hashes per index (1..30)
 *   long  8     m, bits (a positive multiple of 64)
 *   long  16    n, indexes added (informational)
 *   long  24..  the m/64 words of the bit array, big-endian; bit b is word b/64, bit (b mod 64) from the least significant
 * </pre>
 */
public final class BloomFilter {
    /** The sidecar's name inside a data file's MapFile directory. */
    public static final String FILE_NAME = "bloom";
    /** The {@code files} entry field holding the sidecar's CRC32C (absent: the file has no filter). */
    public static final String FILE_CRC = "bloomCrc32c";
    /** The version document's top-level field recording the layer's choice: {@code {"fpp": p}} (absent: off). */
    public static final String LAYER_FIELD = "bloomFilter";
    static final byte[] MAGIC = {'S', 'F', 'C', 'B'};
    static final byte LAYOUT_VERSION = 1;
    static final byte HASH_KM_FMIX64 = 1;
    static final int HEADER_BYTES = 24;
    static final int MAX_HASHES = 30;
    /** Largest filter read: bounds what damaged header bytes can make a reader allocate. */
    static final long MAX_BITS = 1L << 34;

    private final int k;
    private final long m;
    private final long n;
    private final long[] words;

    private BloomFilter(int k, long m, long n, long[] words) {
        this.k = k;
        this.m = m;
        this.n = n;
        this.words = words;
    }

    /** A filter holding {@code indexes[0..count)} sized for false-positive probability {@code fpp}. */
    public static BloomFilter build(long[] indexes, int count, double fpp) {
        if (!(fpp > 0 && fpp < 1)) {
            throw new IllegalArgumentException("false-positive probability must be in (0, 1), got " + fpp);
        }
        int n = Math.max(1, count);
        double ln2 = Math.log(2);
        long bits = (long) Math.ceil(-n * Math.log(fpp) / (ln2 * ln2));
        long m = Math.max(64, (bits + 63) / 64 * 64);
        int k = (int) Math.max(1, Math.min(MAX_HASHES, Math.round((double) m / n * ln2)));
        BloomFilter f = new BloomFilter(k, m, count, new long[(int) (m / 64)]);
        for (int i = 0; i < count; i++) {
            f.add(indexes[i]);
        }
        return f;
    }

    static long fmix64(long h) {
        h ^= h >>> 33;
        h *= 0xff51afd7ed558ccdL;
        h ^= h >>> 33;
        h *= 0xc4ceb9fe1a85ec53L;
        h ^= h >>> 33;
        return h;
    }

    private void add(long index) {
        long h1 = fmix64(index);
        long h2 = fmix64(h1) | 1;
        for (int i = 0; i < k; i++) {
            long b = Long.remainderUnsigned(h1 + i * h2, m);
            words[(int) (b >>> 6)] |= 1L << (b & 63);
        }
    }

    /** False only when {@code index} was certainly not added. */
    public boolean mightContain(long index) {
        long h1 = fmix64(index);
        long h2 = fmix64(h1) | 1;
        for (int i = 0; i < k; i++) {
            long b = Long.remainderUnsigned(h1 + i * h2, m);
            if ((words[(int) (b >>> 6)] & (1L << (b & 63))) == 0) {
                return false;
            }
        }
        return true;
    }

    public int hashes() {
        return k;
    }

    public long bits() {
        return m;
    }

    public long entries() {
        return n;
    }

    /** Approximate heap bytes held. */
    public long bytes() {
        return 8L * words.length + 48;
    }

    /** The sidecar's bytes (layout above). */
    public byte[] toBytes() {
        ByteBuffer b = ByteBuffer.allocate(HEADER_BYTES + 8 * words.length);
        b.put(MAGIC).put(LAYOUT_VERSION).put(HASH_KM_FMIX64).putShort((short) k).putLong(m).putLong(n);
        for (long w : words) {
            b.putLong(w);
        }
        return b.array();
    }

    /** Writes the sidecar of the MapFile directory {@code mapFile}; returns its CRC32C for the version document. */
    public long write(FileSystem fs, Path mapFile) throws IOException {
        byte[] bytes = toBytes();
        Path p = new Path(mapFile, FILE_NAME);
        try (FSDataOutputStream out = Durable.onClose(fs, p, ObjectStores.create(fs, p, false))) {
            out.write(bytes);
        }
        return crc32c(bytes);
    }

    static long crc32c(byte[] bytes) {
        CRC32C crc = new CRC32C();
        crc.update(bytes, 0, bytes.length);
        return crc.getValue();
    }

    /**
     * Parses sidecar bytes checked against the CRC32C the version document records; an
     * IOException saying what is wrong when they do not check (the filter must then not be used).
     */
    public static BloomFilter parse(byte[] bytes, long expectedCrc) throws IOException {
        long crc = crc32c(bytes);
        if (crc != expectedCrc) {
            throw new IOException("checksum mismatch: CRC32C " + Long.toHexString(crc) + ", the version records "
                + Long.toHexString(expectedCrc) + " (" + bytes.length + " bytes)");
        }
        if (bytes.length < HEADER_BYTES) {
            throw new IOException("truncated: " + bytes.length + " bytes, shorter than its header");
        }
        ByteBuffer b = ByteBuffer.wrap(bytes);
        byte[] magic = new byte[4];
        b.get(magic);
        if (!java.util.Arrays.equals(magic, MAGIC)) {
            throw new IOException("not a bloom filter (bad magic)");
        }
        byte layout = b.get();
        byte hash = b.get();
        if (layout != LAYOUT_VERSION || hash != HASH_KM_FMIX64) {
            throw new IOException("layout " + layout + " with hash scheme " + hash + " is not one this sfclayer reads"
                + " (layout " + LAYOUT_VERSION + ", hash " + HASH_KM_FMIX64 + ")");
        }
        int k = b.getShort();
        long m = b.getLong();
        long n = b.getLong();
        if (k < 1 || k > MAX_HASHES || m < 64 || m % 64 != 0 || m > MAX_BITS || n < 0) {
            throw new IOException("bad parameters: k=" + k + ", m=" + m + ", n=" + n);
        }
        if (bytes.length != HEADER_BYTES + m / 8) {
            throw new IOException(bytes.length + " bytes where its header says " + (HEADER_BYTES + m / 8));
        }
        long[] words = new long[(int) (m / 64)];
        for (int i = 0; i < words.length; i++) {
            words[i] = b.getLong();
        }
        return new BloomFilter(k, m, n, words);
    }

    /**
     * The checked filter of the MapFile directory {@code mapFile}; {@link SfcLayerException.CorruptLayer}
     * naming the file when it is missing or damaged (a damaged filter could hide present keys).
     */
    public static BloomFilter read(FileSystem fs, Path mapFile, long expectedCrc, String layer) throws IOException {
        Path p = new Path(mapFile, FILE_NAME);
        byte[] bytes;
        try (FSDataInputStream in = ObjectStores.open(fs, p, ObjectStores.Access.WHOLE_FILE, -1)) {
            bytes = in.readAllBytes();
        } catch (FileNotFoundException e) {
            throw damaged(p, layer, "it is missing", e);
        } catch (org.apache.hadoop.fs.ChecksumException e) {
            throw damaged(p, layer, "unreadable (" + e.getMessage() + ")", e);
        }
        try {
            return parse(bytes, expectedCrc);
        } catch (IOException e) {
            throw damaged(p, layer, SfcLayerException.reason(e), e);
        }
    }

    private static SfcLayerException.CorruptLayer damaged(Path p, String layer, String why, Throwable cause) {
        return new SfcLayerException.CorruptLayer("layer " + layer + ": bloom filter " + p + " is damaged: " + why
            + " (repair rebuilds it from the data file). " + DataFileReader.advice(layer), cause);
    }

    /**
     * The false-positive probability a layer's new files are written with, from its version document
     * ({@value #LAYER_FIELD}); 0 when the layer has no bloom filters.
     */
    public static double layerFpp(LayerMetadata md) {
        Object v = md.extras.get(LAYER_FIELD);
        if (v instanceof Map) {
            Object p = ((Map<?, ?>) v).get("fpp");
            if (p instanceof Number && ((Number) p).doubleValue() > 0 && ((Number) p).doubleValue() < 1) {
                return ((Number) p).doubleValue();
            }
        }
        return 0;
    }

    /** Records the layer's choice in its version document: filters at {@code fpp}, or none when 0. */
    public static void setLayerFpp(LayerMetadata md, double fpp) {
        if (fpp > 0) {
            md.extras.put(LAYER_FIELD, new java.util.LinkedHashMap<>(Map.of("fpp", fpp)));
        } else {
            md.extras.remove(LAYER_FIELD);
        }
    }
}
