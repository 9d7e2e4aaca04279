package io.sfclayer.curve;

import io.sfclayer.SfcLayerException;

import java.util.List;

/**
 * The 3D Z-order (Morton) curve: bit {@code i} of {@code x} goes to bit {@code 3i}, of {@code y} to
 * {@code 3i+1}, of {@code t} to {@code 3i+2}. {@code 0 <= x, y, t < 2^21}, so indexes are {@code < 2^63}.
 */
public final class Z3 {
    private Z3() { }

    /** Bits per axis. */
    public static final int BITS = 21;
    /** Exclusive upper limit of {@code x}, {@code y} and {@code t}: {@code 2^21}. */
    public static final long LIMIT = 1L << BITS;

    /** @throws SfcLayerException.InvalidArgument unless {@code 0 <= x, y, t < 2^21} */
    public static long encode(long x, long y, long t) {
        check("x", x);
        check("y", y);
        check("t", t);
        return spread(x) | (spread(y) << 1) | (spread(t) << 2);
    }

    /** {@code {x, y, t}} of index {@code z}. @throws SfcLayerException.InvalidArgument if {@code z < 0} */
    public static long[] decode(long z) {
        if (z < 0) {
            throw new SfcLayerException.InvalidArgument("z3 index: " + z + " is out of range (0..2^63-1)");
        }
        return new long[] {compact(z), compact(z >>> 1), compact(z >>> 2)};
    }

    /**
     * Exact (or, with {@code maxRanges > 0}, capped) index ranges covering the inclusive box
     * {@code xmin..xmax, ymin..ymax, tmin..tmax}: sorted, disjoint, adjacent ranges merged. Capped
     * decompositions take time bounded by the cap ({@link CappedDescent}).
     */
    public static List<IndexRange> ranges(long xmin, long ymin, long tmin, long xmax, long ymax, long tmax,
                                          int maxRanges) {
        check("xmin", xmin);
        check("ymin", ymin);
        check("tmin", tmin);
        check("xmax", xmax);
        check("ymax", ymax);
        check("tmax", tmax);
        if (xmin > xmax || ymin > ymax || tmin > tmax) {
            throw new SfcLayerException.InvalidArgument("z3 query box: x " + xmin + ".." + xmax
                + ", y " + ymin + ".." + ymax + ", t " + tmin + ".." + tmax + " is empty (min <= max)");
        }
        long side = Z2.coverSide(Math.max(xmax, Math.max(ymax, tmax)));
        if (maxRanges > 0) {
            return CappedDescent.z3(new long[] {xmin, ymin, tmin}, new long[] {xmax, ymax, tmax}, side, maxRanges);
        }
        RangeCollector out = new RangeCollector(0);
        new Descent(new long[] {xmin, ymin, tmin}, new long[] {xmax, ymax, tmax}, out).visit(0, 0, 0, side, 0);
        return out.result();
    }

    private static final class Descent {
        final long xmin, ymin, tmin, xmax, ymax, tmax;
        final RangeCollector out;

        Descent(long[] min, long[] max, RangeCollector out) {
            xmin = min[0];
            ymin = min[1];
            tmin = min[2];
            xmax = max[0];
            ymax = max[1];
            tmax = max[2];
            this.out = out;
        }

        void visit(long x0, long y0, long t0, long side, long base) {
            long e = side - 1;
            if (x0 >= xmin && x0 + e <= xmax && y0 >= ymin && y0 + e <= ymax && t0 >= tmin && t0 + e <= tmax) {
                // side^3 is 2^63 for the full 2^21 cube: it wraps to Long.MIN_VALUE and "- 1" wraps back to
                // Long.MAX_VALUE, which is exactly the last index, so this stays right.
                out.add(base, base + side * side * side - 1);
                return;
            }
            long h = side >>> 1, q = h * h * h, f = h - 1;
            for (int i = 0; i < 8; i++) {
                long cx = x0 + (i & 1) * h, cy = y0 + ((i >>> 1) & 1) * h, ct = t0 + (i >>> 2) * h;
                if (cx <= xmax && cx + f >= xmin && cy <= ymax && cy + f >= ymin && ct <= tmax && ct + f >= tmin) {
                    visit(cx, cy, ct, h, base + i * q);
                }
            }
        }
    }

    static void check(String name, long v) {
        if (v < 0 || v >= LIMIT) {
            throw new SfcLayerException.InvalidArgument("z3 " + name + ": " + v + " is out of range (0..2^21-1)");
        }
    }

    /** Spreads the low 21 bits of {@code v} to every third bit. */
    static long spread(long v) {
        v &= 0x1FFFFFL;
        v = (v | (v << 32)) & 0x001F00000000FFFFL;
        v = (v | (v << 16)) & 0x001F0000FF0000FFL;
        v = (v | (v << 8)) & 0x100F00F00F00F00FL;
        v = (v | (v << 4)) & 0x10C30C30C30C30C3L;
        v = (v | (v << 2)) & 0x1249249249249249L;
        return v;
    }

    /** Gathers every third bit of {@code v} (from bit 0). */
    static long compact(long v) {
        v &= 0x1249249249249249L;
        v = (v ^ (v >>> 2)) & 0x10C30C30C30C30C3L;
        v = (v ^ (v >>> 4)) & 0x100F00F00F00F00FL;
        v = (v ^ (v >>> 8)) & 0x001F0000FF0000FFL;
        v = (v ^ (v >>> 16)) & 0x001F00000000FFFFL;
        v = (v ^ (v >>> 32)) & 0x1FFFFFL;
        return v;
    }
}
