package io.sfclayer.format;

import com.github.luben.zstd.Zstd;
import com.github.luben.zstd.ZstdCompressCtx;
import com.github.luben.zstd.ZstdDecompressCtx;
import com.github.luben.zstd.ZstdException;
import io.sfclayer.SfcLayerException;

import io.sfclayer.codec.TileSchema;
import java.util.Arrays;
import java.util.Locale;
import java.util.zip.DataFormatException;
import java.util.zip.Deflater;
import java.util.zip.Inflater;

/**
 * Compression of stored values (encoded tile groups).
 *
 * <p>For {@link #DEFLATE} and {@link #ZSTD} the stored form is a 4-byte big-endian uncompressed
 * length followed by the compressed bytes: a zlib stream (Python: {@code zlib.decompress(v[4:])})
 * or one zstd frame with its content size (Python: {@code zstandard.decompress(v[4:])}).
 * {@link #NONE} stores the bytes as they are. {@link #ZSTD_RASTER} filters raster pixels first
 * ({@link RasterZstd}); it is format version 4's ({@link #formatVersion()}). Thread-safe (codec
 * state is per thread).
 */
public enum ValueCompression {
    NONE("none"),
    DEFLATE("deflate"),
    ZSTD("zstd"),
    ZSTD_RASTER("zstd-raster");

    private static final int ZSTD_LEVEL = 3;
    /** Scratch buffers above this size are not kept between calls. */
    private static final int MAX_KEPT_SCRATCH = 16 << 20;
    private static final int MAX_ARRAY = Integer.MAX_VALUE - 16;

    private static final ThreadLocal<Deflater> DEFLATERS = ThreadLocal.withInitial(Deflater::new);
    private static final ThreadLocal<Inflater> INFLATERS = ThreadLocal.withInitial(Inflater::new);
    private static final ThreadLocal<ZstdCompressCtx> ZSTD_CCTX = ThreadLocal.withInitial(() -> {
        ZstdCompressCtx c = new ZstdCompressCtx();
        c.setLevel(ZSTD_LEVEL);
        c.setContentSize(true);
        c.setChecksum(true); // xxhash of the content: corruption is detected, as with zlib's adler32
        return c;
    });
    private static final ThreadLocal<ZstdDecompressCtx> ZSTD_DCTX = ThreadLocal.withInitial(ZstdDecompressCtx::new);
    private static final ThreadLocal<byte[]> SCRATCH = ThreadLocal.withInitial(() -> new byte[64 << 10]);

    private final String optionName;

    ValueCompression(String optionName) {
        this.optionName = optionName;
    }

    /** The option value naming this compression (as stored in layer metadata): none, deflate or zstd. */
    public String optionName() {
        return optionName;
    }

    /** The lowest format version whose readers know this compression (docs/FORMAT.md section 7). */
    public int formatVersion() {
        return this == ZSTD_RASTER ? 4 : 1;
    }

    /**
     * The compression a new layer of {@code schema} gets when the writer names none, chosen by
     * measurement (bench/compression.py, bench/RESULTS.md "Codecs"): raster tiles (docs/FORMAT.md
     * section 8) {@code zstd-raster}; other layers with a binary, array or map value column (values
     * of kilobytes: 0.2–0.7× the bytes) {@code zstd}; layers of only scalars and strings none, since
     * zstd's frame costs more than it saves on records of tens of bytes (1.3× the bytes).
     */
    public static ValueCompression defaultFor(TileSchema schema) {
        if (RasterLayout.of(schema) != null) return ZSTD_RASTER;
        return holdsBlobs(schema.valueSchema()) ? ZSTD : NONE;
    }

    private static boolean holdsBlobs(org.apache.spark.sql.types.DataType t) {
        if (t instanceof org.apache.spark.sql.types.StructType) {
            for (org.apache.spark.sql.types.StructField f : ((org.apache.spark.sql.types.StructType) t).fields()) {
                if (holdsBlobs(f.dataType())) return true;
            }
            return false;
        }
        return t instanceof org.apache.spark.sql.types.BinaryType || t instanceof org.apache.spark.sql.types.ArrayType
                || t instanceof org.apache.spark.sql.types.MapType;
    }

    /**
     * The compression named {@code value} (case-insensitive).
     *
     * @throws SfcLayerException.InvalidArgument for any other value
     */
    public static ValueCompression parse(String value) {
        if (value != null) {
            String v = value.trim().toLowerCase(Locale.ROOT);
            for (ValueCompression c : values()) {
                if (c.optionName.equals(v)) return c;
            }
        }
        throw new SfcLayerException.InvalidArgument("invalid compression "
                + (value == null ? "null" : "'" + value + "'") + "; choose one of: none, deflate, zstd, zstd-raster");
    }

    /** The stored form of {@code b[off .. off+len)}, with no raster filter for {@link #ZSTD_RASTER}. */
    public byte[] compress(byte[] b, int off, int len) {
        return compress(b, off, len, null);
    }

    /**
     * The stored form of the group {@code b[off .. off+len)}; {@code raster}: where its pixels are,
     * for {@link #ZSTD_RASTER} (null: a layer that is not a raster layer; the others ignore it).
     */
    public byte[] compress(byte[] b, int off, int len, RasterLayout raster) {
        checkSlice(b, off, len);
        switch (this) {
            case NONE:
                return off == 0 && len == b.length ? b : Arrays.copyOfRange(b, off, off + len);
            case DEFLATE:
                return deflate(b, off, len);
            case ZSTD:
                return zstd(b, off, len);
            case ZSTD_RASTER:
                return RasterZstd.compress(b, off, len, raster);
            default:
                throw new IllegalStateException(name());
        }
    }

    /**
     * The original bytes of the stored form {@code b[off .. off+len)}.
     *
     * @throws SfcLayerException.CorruptLayer if it is not a valid stored form
     */
    public byte[] decompress(byte[] b, int off, int len) {
        checkSlice(b, off, len);
        switch (this) {
            case NONE:
                return off == 0 && len == b.length ? b : Arrays.copyOfRange(b, off, off + len);
            case DEFLATE:
                return inflate(b, off, len);
            case ZSTD:
                return unzstd(b, off, len);
            case ZSTD_RASTER:
                return RasterZstd.decompress(b, off, len);
            default:
                throw new IllegalStateException(name());
        }
    }

    private static void checkSlice(byte[] b, int off, int len) {
        if (off < 0 || len < 0 || off > b.length - len) {
            throw new IllegalArgumentException("slice [" + off + ", " + off + "+" + len + ") outside a "
                    + b.length + "-byte array");
        }
    }

    // ---------------------------------------------------------------- deflate

    private static byte[] deflate(byte[] b, int off, int len) {
        Deflater d = DEFLATERS.get();
        d.reset();
        d.setInput(b, off, len);
        d.finish();
        // zlib's compressBound plus the zlib header and trailer
        long bound = 4L + len + (len >> 12) + (len >> 14) + (len >> 25) + 13 + 6;
        byte[] out = scratch(bound);
        int n = 4;
        while (!d.finished()) {
            if (n == out.length) {
                if (out.length >= MAX_ARRAY) throw new SfcLayerException.InvalidInput("compressed tile group too large");
                out = Arrays.copyOf(out, (int) Math.min(MAX_ARRAY, 2L * out.length));
            }
            n += d.deflate(out, n, out.length - n);
        }
        d.reset();
        putLength(out, len);
        return Arrays.copyOf(out, n);
    }

    private static byte[] inflate(byte[] b, int off, int len) {
        int n = readLength(b, off, len, "deflate");
        // deflate cannot compress by more than about 1032:1
        if (n > (len - 4L) * 1032 + 64) {
            throw corrupt("deflate", "declared length " + n + " is impossible for " + (len - 4) + " compressed bytes");
        }
        Inflater inf = INFLATERS.get();
        inf.reset();
        inf.setInput(b, off + 4, len - 4);
        byte[] out = new byte[n];
        try {
            int got = 0;
            while (got < n) {
                int k = inf.inflate(out, got, n - got);
                if (k == 0 && (inf.finished() || inf.needsInput() || inf.needsDictionary())) break;
                got += k;
            }
            if (got != n) {
                throw corrupt("deflate", "stream holds " + got + " bytes but the declared length is " + n);
            }
            if (!inf.finished()) {
                byte[] one = new byte[1];
                if (inf.inflate(one) != 0 || !inf.finished()) {
                    throw corrupt("deflate", "stream is longer than the declared length " + n);
                }
            }
            if (inf.getRemaining() != 0) {
                throw corrupt("deflate", inf.getRemaining() + " bytes after the end of the stream");
            }
        } catch (DataFormatException e) {
            throw new SfcLayerException.CorruptLayer("corrupt compressed tile group (deflate): " + e.getMessage(), e);
        } finally {
            inf.reset();
        }
        return out;
    }

    // ---------------------------------------------------------------- zstd

    private static byte[] zstd(byte[] b, int off, int len) {
        byte[] out = scratch(4L + Zstd.compressBound(len));
        int n;
        try {
            n = ZSTD_CCTX.get().compressByteArray(out, 4, out.length - 4, b, off, len);
        } catch (ZstdException e) {
            throw new SfcLayerException("zstd compression failed: " + e.getMessage(), e);
        }
        putLength(out, len);
        return Arrays.copyOf(out, 4 + n);
    }

    private static byte[] unzstd(byte[] b, int off, int len) {
        int n = readLength(b, off, len, "zstd");
        if (len == 4) throw corrupt("zstd", "no frame after the length prefix");
        long contentSize;
        try {
            contentSize = Zstd.getFrameContentSize(b, off + 4, len - 4);
        } catch (RuntimeException e) {
            throw new SfcLayerException.CorruptLayer("corrupt compressed tile group (zstd): " + e, e);
        }
        if (contentSize < -1) { // -1: size unknown (allowed), -2: not a frame header
            throw corrupt("zstd", "not a zstd frame");
        }
        if (contentSize >= 0 && contentSize != n) {
            throw corrupt("zstd", "frame holds " + contentSize + " bytes but the declared length is " + n);
        }
        byte[] out = new byte[n];
        int got;
        try {
            got = ZSTD_DCTX.get().decompressByteArray(out, 0, n, b, off + 4, len - 4);
        } catch (RuntimeException e) { // ZstdException, or bounds errors for malformed frames
            throw new SfcLayerException.CorruptLayer("corrupt compressed tile group (zstd): " + SfcLayerException.reason(e), e);
        }
        if (got != n) {
            throw corrupt("zstd", "frame holds " + got + " bytes but the declared length is " + n);
        }
        return out;
    }

    // ---------------------------------------------------------------- helpers

    private static byte[] scratch(long size) {
        if (size > MAX_ARRAY) throw new SfcLayerException.InvalidInput("tile group too large to compress");
        byte[] s = SCRATCH.get();
        if (s.length >= size) return s;
        byte[] fresh = new byte[(int) Math.min(MAX_ARRAY, Math.max(size, 2L * s.length))];
        if (fresh.length <= MAX_KEPT_SCRATCH) SCRATCH.set(fresh);
        return fresh;
    }

    private static void putLength(byte[] out, int len) {
        out[0] = (byte) (len >>> 24);
        out[1] = (byte) (len >>> 16);
        out[2] = (byte) (len >>> 8);
        out[3] = (byte) len;
    }

    private static int readLength(byte[] b, int off, int len, String codec) {
        if (len < 4) throw corrupt(codec, "only " + len + " bytes, shorter than the 4-byte length prefix");
        int n = ((b[off] & 0xFF) << 24) | ((b[off + 1] & 0xFF) << 16) | ((b[off + 2] & 0xFF) << 8) | (b[off + 3] & 0xFF);
        if (n < 0 || n > MAX_ARRAY) throw corrupt(codec, "invalid declared length " + (n & 0xFFFFFFFFL));
        return n;
    }

    private static SfcLayerException.CorruptLayer corrupt(String codec, String what) {
        return new SfcLayerException.CorruptLayer("corrupt compressed tile group (" + codec + "): " + what);
    }
}
