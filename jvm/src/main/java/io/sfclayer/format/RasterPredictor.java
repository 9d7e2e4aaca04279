package io.sfclayer.format;

/**
 * The reversible filters that make raster pixels compressible (docs/FORMAT.md section 4,
 * {@code zstd-raster}): values are little-endian, {@code itemSize} bytes each, in rows of
 * {@code width} values. Both filters keep the length, so a region is filtered in place of itself.
 *
 * <ul>
 *   <li>{@link #DELTA}: in every row, each value but the first becomes its difference from the
 *       value before it, modulo 2^(8·itemSize) (GeoTIFF's horizontal predictor 2; floats by their
 *       bit pattern as unsigned integers);</li>
 *   <li>{@link #SHUFFLE}: then byte {@code j} of value {@code i} moves to {@code j·N + i}, N values
 *       in the region (Blosc's byte shuffle): the slowly varying high bytes end up together.</li>
 * </ul>
 */
public final class RasterPredictor {
    public static final int DELTA = 1;
    public static final int SHUFFLE = 2;

    private RasterPredictor() {
    }

    /** Filters {@code src[off .. off+len)} into {@code dst[dOff ..)}; {@code len} is a multiple of itemSize × width. */
    public static void encode(byte[] src, int off, int len, int itemSize, int filters, int width, byte[] dst,
                              int dOff) {
        int n = len / itemSize;
        boolean delta = (filters & DELTA) != 0;
        boolean shuffle = (filters & SHUFFLE) != 0 && itemSize > 1;
        for (int row = 0; row < n; row += width) {
            long prev = 0;
            for (int i = row; i < row + width; i++) {
                long cur = get(src, off + i * itemSize, itemSize);
                long v = delta && i > row ? cur - prev : cur;
                prev = cur;
                if (shuffle) {
                    for (int j = 0, q = dOff + i; j < itemSize; j++, q += n, v >>>= 8) dst[q] = (byte) v;
                } else {
                    put(dst, dOff + i * itemSize, itemSize, v);
                }
            }
        }
    }

    /** Undoes {@link #encode} on {@code b[off .. off+len)} in place; {@code tmp} holds at least len bytes. */
    public static void decode(byte[] b, int off, int len, int itemSize, int filters, int width, byte[] tmp) {
        int n = len / itemSize;
        boolean delta = (filters & DELTA) != 0;
        boolean shuffle = (filters & SHUFFLE) != 0 && itemSize > 1;
        if (shuffle && itemSize == 2) { // the common case (int16, uint16) in one fused pass
            System.arraycopy(b, off, tmp, 0, len);
            for (int row = 0; row < n; row += width) {
                int prev = 0;
                for (int i = row, p = off + 2 * row; i < row + width; i++, p += 2) {
                    int v = (tmp[i] & 0xFF) | (tmp[n + i] & 0xFF) << 8;
                    if (delta) v += prev;
                    b[p] = (byte) v;
                    b[p + 1] = (byte) (v >>> 8);
                    prev = v;
                }
            }
            return;
        }
        if (shuffle && itemSize == 4) { // float32, (u)int32
            System.arraycopy(b, off, tmp, 0, len);
            for (int row = 0; row < n; row += width) {
                int prev = 0;
                for (int i = row, p = off + 4 * row; i < row + width; i++, p += 4) {
                    int v = (tmp[i] & 0xFF) | (tmp[n + i] & 0xFF) << 8 | (tmp[2 * n + i] & 0xFF) << 16
                        | (tmp[3 * n + i] & 0xFF) << 24;
                    if (delta) v += prev;
                    b[p] = (byte) v;
                    b[p + 1] = (byte) (v >>> 8);
                    b[p + 2] = (byte) (v >>> 16);
                    b[p + 3] = (byte) (v >>> 24);
                    prev = v;
                }
            }
            return;
        }
        if (shuffle) {
            System.arraycopy(b, off, tmp, 0, len);
            for (int i = 0; i < n; i++) {
                long v = 0;
                for (int j = itemSize - 1; j >= 0; j--) v = (v << 8) | (tmp[j * n + i] & 0xFF);
                put(b, off + i * itemSize, itemSize, v);
            }
        }
        if (!delta) return;
        if (itemSize == 1) {
            for (int row = off; row < off + len; row += width) {
                for (int p = row + 1; p < row + width; p++) b[p] += b[p - 1];
            }
            return;
        }
        for (int row = 0; row < n; row += width) {
            long prev = get(b, off + row * itemSize, itemSize);
            for (int i = row + 1, p = off + (row + 1) * itemSize; i < row + width; i++, p += itemSize) {
                prev += get(b, p, itemSize);
                put(b, p, itemSize, prev);
            }
        }
    }

    private static long get(byte[] b, int p, int size) {
        switch (size) {
            case 1: return b[p] & 0xFFL;
            case 2: return (b[p] & 0xFFL) | (b[p + 1] & 0xFFL) << 8;
            case 4: return (b[p] & 0xFFL) | (b[p + 1] & 0xFFL) << 8 | (b[p + 2] & 0xFFL) << 16 | (b[p + 3] & 0xFFL) << 24;
            default: {
                long v = 0;
                for (int j = size - 1; j >= 0; j--) v = (v << 8) | (b[p + j] & 0xFFL);
                return v;
            }
        }
    }

    /** Writes the low {@code size} bytes of {@code v}, little-endian (the difference wraps modulo 2^(8·size)). */
    private static void put(byte[] b, int p, int size, long v) {
        for (int j = 0; j < size; j++, v >>>= 8) b[p + j] = (byte) v;
    }
}
