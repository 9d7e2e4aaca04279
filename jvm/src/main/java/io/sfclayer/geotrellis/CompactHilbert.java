package io.sfclayer.geotrellis;

import io.sfclayer.SfcLayerException;

/**
 * The compact Hilbert index of uzaygezen 0.2 ({@code com.google.uzaygezen.core.CompactHilbertCurve#index}),
 * which GeoTrellis' Hilbert key indexes call: a port of its algorithm (Hamilton and Rau-Chaplin's compact
 * Hilbert indices, one resolution per dimension) on {@code long} bit vectors, so that our index of a key
 * is bit-identical to the one GeoTrellis wrote into its file names and MapFile keys. Ported rather than
 * depended on: uzaygezen brings Guava and commons-lang into the connector jar, which ships no dependencies.
 * Dimension 0 is the most significant bit of each level's vertex (uzaygezen's {@code p[n - j - 1]}).
 */
final class CompactHilbert {
    private final int[] m;
    private final int n;
    private final int mMax;
    private final int sumBits;
    /** Per level i: the dimensions with more than i bits, as bits {@code j} for dimension {@code n - j - 1}. */
    private final long[] masks;
    private final int[] cardinalities;

    /**
     * @param bitsPerDimension bits of each dimension (GeoTrellis: x, y, and t for space-time)
     * @throws SfcLayerException.InvalidInput if the curve does not fit 63 bits (uzaygezen's long index)
     */
    CompactHilbert(int... bitsPerDimension) {
        m = bitsPerDimension.clone();
        n = m.length;
        int max = 0, sum = 0;
        for (int b : m) {
            if (b < 0) throw new SfcLayerException.InvalidInput("hilbert key index: negative resolution " + b);
            max = Math.max(max, b);
            sum += b;
        }
        if (sum > 62) {
            throw new SfcLayerException.InvalidInput("hilbert key index: " + sum
                + " bits in all do not fit a long index (at most 62)");
        }
        mMax = max;
        sumBits = sum;
        masks = new long[mMax];
        cardinalities = new int[mMax];
        for (int i = 0; i < mMax; i++) {
            for (int j = 0; j < n; j++) {
                if (m[n - j - 1] > i) masks[i] |= 1L << j;
                if (m[j] > i) cardinalities[i]++;
            }
        }
    }

    /** The index of the point {@code p} (each coordinate below {@code 2^bits} of its dimension). */
    long index(long... p) {
        if (p.length != n) throw new IllegalArgumentException("wrong number of coordinates: " + p.length);
        for (int i = 0; i < n; i++) {
            if (p[i] < 0 || (m[i] < 63 && p[i] >>> m[i] != 0)) {
                throw new SfcLayerException.InvalidArgument("hilbert key index: coordinate " + p[i]
                    + " of dimension " + i + " does not fit its " + m[i] + " bits");
            }
        }
        long nMask = n == 64 ? -1L : (1L << n) - 1;
        long index = 0;
        int d = 0;
        long e = 0;
        int upper = sumBits;
        for (int i = mMax; --i >= 0; ) {
            int card = cardinalities[i];
            long mu = rotate(masks[i], d, n, nMask);
            long w = 0;
            for (int j = n; --j >= 0; ) {
                if (((p[n - j - 1] >>> i) & 1L) != 0) w |= 1L << j;
            }
            // computeCompactHilbertBits: t = grayInverse(rotate(w ^ e, d)); r = grayCodeRank(mu, t)
            long t = grayInverse(rotate(w ^ e, d, n, nMask));
            long r = 0, pos = 1;
            for (int k = 0; k < n; k++) {
                if ((mu & (1L << k)) != 0) {
                    if ((t & (1L << k)) != 0) r |= pos;
                    pos <<= 1;
                }
            }
            upper -= card;
            index |= r << upper;
            int oldD = d;
            // updateD uses w after computeCompactHilbertBits turned it into t
            d = (d + lowestDifferentBit(t, nMask) + 1) % n;
            e ^= rotate(smallerEvenAndGrayCode(t), -oldD, n, nMask);
        }
        return index;
    }

    /** uzaygezen's {@code LongBitVector.rotate}: right by {@code count} within {@code size} bits. */
    private static long rotate(long data, int count, int size, long mask) {
        count %= size;
        if (count > 0) return ((data >>> count) | (data << (size - count))) & mask;
        return ((data >>> (size + count)) | (data << -count)) & mask;
    }

    private static long grayInverse(long x) {
        x ^= x >>> 1;
        x ^= x >>> 2;
        x ^= x >>> 4;
        x ^= x >>> 8;
        x ^= x >>> 16;
        x ^= x >>> 32;
        return x;
    }

    private static int lowestDifferentBit(long x, long mask) {
        if ((x & 1L) == 0) return x == 0 ? 0 : Long.numberOfTrailingZeros(x);
        return x == mask ? 0 : Long.numberOfTrailingZeros(~x);
    }

    private static long smallerEvenAndGrayCode(long x) {
        if ((x & 1L) == 1) return x ^ (x >>> 1) ^ 1L;
        if (x == 0) return 0;
        long y = x - 2;
        return y ^ (y >>> 1);
    }
}
