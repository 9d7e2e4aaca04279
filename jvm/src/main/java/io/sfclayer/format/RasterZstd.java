package io.sfclayer.format;

import com.github.luben.zstd.Zstd;
import com.github.luben.zstd.ZstdCompressCtx;
import com.github.luben.zstd.ZstdDecompressCtx;
import com.github.luben.zstd.ZstdException;
import io.sfclayer.SfcLayerException;

import java.util.Arrays;

/**
 * The {@code zstd-raster} stored form of a group (docs/FORMAT.md section 4): the pixels of every
 * raster tile filtered by {@link RasterPredictor} for its dtype and width, then one zstd frame.
 * The regions it filtered are listed before the frame, so a reader (this one, or numpy) undoes the
 * filters without parsing the group:
 *
 * <pre>
 * int32 BE  n               the group's length
 * uvarint   r               regions (unsigned LEB128, as every uvarint below)
 * r ×  uvarint gap          start of the region minus the end of the previous one (the first: minus 0)
 *      uvarint length       bytes, a multiple of itemSize × width
 *      byte    itemSize     1, 2, 4 or 8
 *      byte    filters      bit 0: horizontal delta, bit 1: byte shuffle
 *      uvarint width        values per row
 * zstd frame (content size n, checksum) of the group with each region filtered in its place
 * </pre>
 *
 * Thread-safe (codec state is per thread).
 */
final class RasterZstd {
    /** zstd's level 1: the fastest, and after the filters within a few percent of level 3 on rasters (bench/codecs.py). */
    static final int LEVEL = 1;
    private static final int MAX_ARRAY = Integer.MAX_VALUE - 16;
    /** A region entry's largest encoded size: three 5-byte uvarints and two bytes. */
    private static final int MAX_ENTRY = 17;

    private static final ThreadLocal<ZstdCompressCtx> CCTX = ThreadLocal.withInitial(() -> {
        ZstdCompressCtx c = new ZstdCompressCtx();
        c.setLevel(LEVEL);
        c.setContentSize(true);
        c.setChecksum(true);
        return c;
    });
    /** The filters tried on each region, best first on ties (see {@link #bestFilters}). */
    private static final int[] MULTI_BYTE = {RasterPredictor.DELTA | RasterPredictor.SHUFFLE, RasterPredictor.SHUFFLE,
        RasterPredictor.DELTA};
    private static final int[] ONE_BYTE = {RasterPredictor.DELTA, 0};
    /** Trial buffers above this size are not kept between calls. */
    private static final int MAX_KEPT_TRIAL = 4 << 20;
    private static final ThreadLocal<byte[]> TRIAL = ThreadLocal.withInitial(() -> new byte[64 << 10]);
    private static final ThreadLocal<byte[]> SINK = ThreadLocal.withInitial(() -> new byte[64 << 10]);
    private static final ThreadLocal<ZstdDecompressCtx> DCTX = ThreadLocal.withInitial(ZstdDecompressCtx::new);

    private RasterZstd() {
    }

    /** The stored form of the group {@code b[off .. off+len)}; {@code layout} null: nothing filtered. */
    static byte[] compress(byte[] b, int off, int len, RasterLayout layout) {
        byte[] filtered = Arrays.copyOfRange(b, off, off + len);
        byte[][] table = {new byte[64]};
        int[] t = {0, 0, 0}; // table length, region count, end of the previous region
        if (layout != null) {
            layout.scan(b, off, len, (start, length, itemSize, width) -> {
                int s = start - off;
                int filters = bestFilters(b, start, length, itemSize, width, filtered, s);
                if (table[0].length - t[0] < MAX_ENTRY) table[0] = Arrays.copyOf(table[0], 2 * table[0].length);
                byte[] tb = table[0];
                int p = uvarint(tb, t[0], s - t[2]);
                p = uvarint(tb, p, length);
                tb[p++] = (byte) itemSize;
                tb[p++] = (byte) filters;
                t[0] = uvarint(tb, p, width);
                t[1]++;
                t[2] = s + length;
            });
        }
        byte[] head = new byte[4 + 5 + t[0]];
        putInt(head, len);
        int h = uvarint(head, 4, t[1]);
        System.arraycopy(table[0], 0, head, h, t[0]);
        h += t[0];
        long bound = h + Zstd.compressBound(len);
        if (bound > MAX_ARRAY) throw new SfcLayerException.InvalidInput("tile group too large to compress");
        byte[] out = new byte[(int) bound];
        System.arraycopy(head, 0, out, 0, h);
        int n;
        try {
            n = CCTX.get().compressByteArray(out, h, out.length - h, filtered, 0, len);
        } catch (ZstdException e) {
            throw new SfcLayerException("zstd compression failed: " + e.getMessage(), e);
        }
        return Arrays.copyOf(out, h + n);
    }

    /**
     * The group of the stored form {@code b[off .. off+len)}.
     *
     * @throws SfcLayerException.CorruptLayer if it is not a valid stored form
     */
    static byte[] decompress(byte[] b, int off, int len) {
        int end = off + len;
        if (len < 4) throw corrupt("only " + len + " bytes, shorter than the 4-byte length prefix");
        int n = ((b[off] & 0xFF) << 24) | ((b[off + 1] & 0xFF) << 16) | ((b[off + 2] & 0xFF) << 8) | (b[off + 3] & 0xFF);
        if (n < 0 || n > MAX_ARRAY) throw corrupt("invalid declared length " + (n & 0xFFFFFFFFL));
        int[] p = {off + 4};
        long regions = readUvarint(b, p, end);
        if (regions > (len - 4) / 5) throw corrupt(regions + " regions in a " + len + "-byte stored group");
        int[] starts = new int[(int) regions], lengths = new int[(int) regions], widths = new int[(int) regions];
        byte[] sizes = new byte[(int) regions], filters = new byte[(int) regions];
        long at = 0;
        for (int i = 0; i < regions; i++) {
            long start = at + readUvarint(b, p, end);
            long length = readUvarint(b, p, end);
            if (p[0] + 2 > end) throw corrupt("truncated region table");
            int size = b[p[0]++];
            int f = b[p[0]++];
            long width = readUvarint(b, p, end);
            if (size != 1 && size != 2 && size != 4 && size != 8) throw corrupt("item size " + size);
            if (f < 0 || f > 3) throw corrupt("filters " + f);
            if (width < 1 || start + length > n || length % (size * width) != 0) {
                throw corrupt("region [" + start + ", +" + length + ") of width " + width + " and item size " + size
                    + " does not fit a " + n + "-byte group");
            }
            starts[i] = (int) start;
            lengths[i] = (int) length;
            sizes[i] = (byte) size;
            filters[i] = (byte) f;
            widths[i] = (int) width;
            at = start + length;
        }
        int frame = p[0];
        if (frame >= end) throw corrupt("no frame after the region table");
        long contentSize;
        try {
            contentSize = Zstd.getFrameContentSize(b, frame, end - frame);
        } catch (RuntimeException e) {
            throw new SfcLayerException.CorruptLayer("corrupt compressed tile group (zstd-raster): " + e, e);
        }
        if (contentSize < -1) throw corrupt("not a zstd frame");
        if (contentSize >= 0 && contentSize != n) {
            throw corrupt("frame holds " + contentSize + " bytes but the declared length is " + n);
        }
        byte[] out = new byte[n];
        int got;
        try {
            got = DCTX.get().decompressByteArray(out, 0, n, b, frame, end - frame);
        } catch (RuntimeException e) { // ZstdException, or bounds errors for malformed frames
            throw new SfcLayerException.CorruptLayer("corrupt compressed tile group (zstd-raster): " + SfcLayerException.reason(e), e);
        }
        if (got != n) throw corrupt("frame holds " + got + " bytes but the declared length is " + n);
        byte[] tmp = null;
        for (int i = 0; i < regions; i++) {
            if (tmp == null || tmp.length < lengths[i]) tmp = new byte[lengths[i]];
            RasterPredictor.decode(out, starts[i], lengths[i], sizes[i], filters[i], widths[i], tmp);
        }
        return out;
    }

    /**
     * Which filters make this region smallest: each candidate is tried (filtered and compressed on
     * its own), since none wins everywhere (bench/RESULTS.md, "Codecs": a delta helps smooth rasters
     * and hurts noisy ones, a shuffle helps integers and can hurt floats with noisy mantissas).
     * Leaves the winner's filtered bytes in {@code dst[dOff ..)}.
     */
    private static int bestFilters(byte[] src, int off, int len, int itemSize, int width, byte[] dst, int dOff) {
        int[] candidates = itemSize == 1 ? ONE_BYTE : MULTI_BYTE;
        byte[] trial = TRIAL.get();
        if (trial.length < len) {
            trial = new byte[len];
            if (len <= MAX_KEPT_TRIAL) TRIAL.set(trial);
        }
        byte[] sink = SINK.get();
        int bound = (int) Math.min(MAX_ARRAY, Zstd.compressBound(len));
        if (sink.length < bound) {
            sink = new byte[bound];
            if (bound <= MAX_KEPT_TRIAL) SINK.set(sink);
        }
        int best = -1;
        long bestSize = Long.MAX_VALUE;
        ZstdCompressCtx c = CCTX.get();
        for (int f : candidates) {
            RasterPredictor.encode(src, off, len, itemSize, f, width, trial, 0);
            long size;
            try {
                size = c.compressByteArray(sink, 0, sink.length, trial, 0, len);
            } catch (ZstdException e) {
                throw new SfcLayerException("zstd compression failed: " + e.getMessage(), e);
            }
            if (size < bestSize) {
                bestSize = size;
                best = f;
                System.arraycopy(trial, 0, dst, dOff, len);
            }
        }
        return best;
    }

    private static void putInt(byte[] out, int v) {
        out[0] = (byte) (v >>> 24);
        out[1] = (byte) (v >>> 16);
        out[2] = (byte) (v >>> 8);
        out[3] = (byte) v;
    }

    /** Writes {@code v} (non-negative) as an unsigned LEB128 varint; returns the position after it. */
    private static int uvarint(byte[] b, int p, int v) {
        while ((v & ~0x7F) != 0) {
            b[p++] = (byte) ((v & 0x7F) | 0x80);
            v >>>= 7;
        }
        b[p++] = (byte) v;
        return p;
    }

    private static long readUvarint(byte[] b, int[] p, int end) {
        long v = 0;
        for (int shift = 0; shift < 35; shift += 7) {
            if (p[0] >= end) throw corrupt("truncated region table");
            int x = b[p[0]++] & 0xFF;
            v |= (long) (x & 0x7F) << shift;
            if ((x & 0x80) == 0) return v;
        }
        throw corrupt("region table varint too long");
    }

    private static SfcLayerException.CorruptLayer corrupt(String what) {
        return new SfcLayerException.CorruptLayer("corrupt compressed tile group (zstd-raster): " + what);
    }
}
