package io.sfclayer.curve;

import io.sfclayer.SfcLayerException;

import java.util.List;

/**
 * The 2D Z-order (Morton) curve: bit {@code i} of {@code x} goes to bit {@code 2i} of the index and bit
 * {@code i} of {@code y} to bit {@code 2i+1} (GeoTrellis Z2 / quadkey order). {@code 0 <= x, y < 2^31},
 * so indexes are {@code < 2^62}.
 */
public final class Z2 {
    private Z2() { }

    /** Bits per axis. */
    public static final int BITS = 31;
    /** Exclusive upper limit of {@code x} and {@code y}: {@code 2^31}. */
    public static final long LIMIT = 1L << BITS;

    /** @throws SfcLayerException.InvalidArgument unless {@code 0 <= x, y < 2^31} */
    public static long encode(long x, long y) {
        check("x", x);
        check("y", y);
        return spread(x) | (spread(y) << 1);
    }

    /** {@code {x, y}} of index {@code z}. @throws SfcLayerException.InvalidArgument unless {@code 0 <= z < 2^62} */
    public static long[] decode(long z) {
        if (z < 0 || z >= (1L << 62)) {
            throw new SfcLayerException.InvalidArgument("z2 index: " + z + " is out of range (0..2^62-1)");
        }
        return new long[] {compact(z), compact(z >>> 1)};
    }

    /**
     * Exact (or, with {@code maxRanges > 0}, capped) index ranges covering the inclusive box
     * {@code xmin..xmax, ymin..ymax}: sorted, disjoint, adjacent ranges merged. Capped decompositions
     * take time bounded by the cap ({@link CappedDescent}); exact ones, time proportional to the box's
     * perimeter.
     */
    public static List<IndexRange> ranges(long xmin, long ymin, long xmax, long ymax, int maxRanges) {
        check("xmin", xmin);
        check("ymin", ymin);
        check("xmax", xmax);
        check("ymax", ymax);
        if (xmin > xmax || ymin > ymax) {
            throw new SfcLayerException.InvalidArgument("z2 query box: x " + xmin + ".." + xmax
                + ", y " + ymin + ".." + ymax + " is empty (min <= max)");
        }
        long side = coverSide(Math.max(xmax, ymax));
        if (maxRanges > 0) {
            return CappedDescent.z2(xmin, ymin, xmax, ymax, side, maxRanges);
        }
        RangeCollector out = new RangeCollector(0);
        new Descent(xmin, ymin, xmax, ymax, out).visit(0, 0, side, 0);
        return out.result();
    }

    private static final class Descent {
        final long xmin, ymin, xmax, ymax;
        final RangeCollector out;

        Descent(long xmin, long ymin, long xmax, long ymax, RangeCollector out) {
            this.xmin = xmin;
            this.ymin = ymin;
            this.xmax = xmax;
            this.ymax = ymax;
            this.out = out;
        }

        /** Square {@code [x0, x0+side) x [y0, y0+side)}, whose indexes are {@code base .. base+side^2-1}, meets the box. */
        void visit(long x0, long y0, long side, long base) {
            long x1 = x0 + side - 1, y1 = y0 + side - 1;
            if (x0 >= xmin && x1 <= xmax && y0 >= ymin && y1 <= ymax) {
                out.add(base, base + side * side - 1);
                return;
            }
            long h = side >>> 1, q = h * h;
            for (int i = 0; i < 4; i++) {
                long cx = x0 + (i & 1) * h, cy = y0 + (i >>> 1) * h;
                if (cx <= xmax && cx + h - 1 >= xmin && cy <= ymax && cy + h - 1 >= ymin) {
                    visit(cx, cy, h, base + i * q);
                }
            }
        }
    }

    /** The smallest power of two greater than {@code max >= 0}: the side of the curve's root square. */
    static long coverSide(long max) {
        return max == 0 ? 1 : Long.highestOneBit(max) << 1;
    }

    static void check(String name, long v) {
        if (v < 0 || v >= LIMIT) {
            throw new SfcLayerException.InvalidArgument("z2 " + name + ": " + v + " is out of range (0..2^31-1)");
        }
    }

    /** Spreads the low 32 bits of {@code v} to the even bits. */
    static long spread(long v) {
        v &= 0xFFFFFFFFL;
        v = (v | (v << 16)) & 0x0000FFFF0000FFFFL;
        v = (v | (v << 8)) & 0x00FF00FF00FF00FFL;
        v = (v | (v << 4)) & 0x0F0F0F0F0F0F0F0FL;
        v = (v | (v << 2)) & 0x3333333333333333L;
        v = (v | (v << 1)) & 0x5555555555555555L;
        return v;
    }

    /** Gathers the even bits of {@code v}. */
    static long compact(long v) {
        v &= 0x5555555555555555L;
        v = (v | (v >>> 1)) & 0x3333333333333333L;
        v = (v | (v >>> 2)) & 0x0F0F0F0F0F0F0F0FL;
        v = (v | (v >>> 4)) & 0x00FF00FF00FF00FFL;
        v = (v | (v >>> 8)) & 0x0000FFFF0000FFFFL;
        v = (v | (v >>> 16)) & 0x00000000FFFFFFFFL;
        return v;
    }
}
