package io.sfclayer.curve;

import io.sfclayer.SfcLayerException;

import java.util.List;

/**
 * The 2D Hilbert curve of order {@code n} over the square {@code [0, 2^n)^2}: indexes {@code 0 .. 4^n - 1}.
 *
 * <p>{@link #encode} and {@link #decode} are Wikipedia's {@code xy2d} / {@code d2xy} ("Hilbert curve"
 * article), transcribed literally, including its {@code rot}: in {@code xy2d} the flip is
 * {@code x = n-1-x, y = n-1-y} with {@code n} the FULL side (not the current sub-square side {@code s}).
 * That also flips bits above {@code s}, but those bits are never read again, and {@code n-1-x} and
 * {@code s-1-x} agree modulo {@code s}, so the curve is the classic one either way; we keep Wikipedia's
 * text so the code can be checked line by line. {@code d2xy} flips with {@code s} (as Wikipedia does).
 * Order 1 visits (0,0), (0,1), (1,1), (1,0).
 *
 * <p>{@link #ranges} descends the quadtree tracking the curve's orientation (a swap bit and a
 * complement bit, which is what Wikipedia's successive {@code rot}s amount to); every quadrant of a
 * Hilbert square is one contiguous index range, so a sub-square fully inside the box is one range.
 */
public final class Hilbert {
    private Hilbert() { }

    /** Largest supported order: indexes then fit in 62 bits. */
    public static final int MAX_ORDER = 31;

    /** @throws SfcLayerException.InvalidArgument unless {@code 0 <= order <= 31} and {@code 0 <= x, y < 2^order} */
    public static long encode(long x, long y, int order) {
        checkOrder(order);
        long n = 1L << order;
        check("x", x, n);
        check("y", y, n);
        long rx, ry, d = 0;
        for (long s = n / 2; s > 0; s /= 2) {
            rx = (x & s) > 0 ? 1 : 0;
            ry = (y & s) > 0 ? 1 : 0;
            d += s * s * ((3 * rx) ^ ry);
            // rot(n, &x, &y, rx, ry)
            if (ry == 0) {
                if (rx == 1) {
                    x = n - 1 - x;
                    y = n - 1 - y;
                }
                long t = x;
                x = y;
                y = t;
            }
        }
        return d;
    }

    /** {@code {x, y}} of index {@code d}. @throws SfcLayerException.InvalidArgument unless {@code 0 <= d < 4^order} */
    public static long[] decode(long d, int order) {
        checkOrder(order);
        long n = 1L << order;
        if (d < 0 || d >= n * n) {
            throw new SfcLayerException.InvalidArgument(
                "hilbert index: " + d + " is out of range (0.." + (n * n - 1) + " for order " + order + ")");
        }
        long rx, ry, t = d, x = 0, y = 0;
        for (long s = 1; s < n; s *= 2) {
            rx = 1 & (t / 2);
            ry = 1 & (t ^ rx);
            // rot(s, &x, &y, rx, ry)
            if (ry == 0) {
                if (rx == 1) {
                    x = s - 1 - x;
                    y = s - 1 - y;
                }
                long tmp = x;
                x = y;
                y = tmp;
            }
            x += s * rx;
            y += s * ry;
            t /= 4;
        }
        return new long[] {x, y};
    }

    /** The order a key-index uses for a {@code width x height} grid: {@code max(1, ceil(log2(max(w, h))))}. */
    public static int orderFor(long width, long height) {
        long m = Math.max(width, height);
        int order = 1;
        while ((1L << order) < m) order++;
        return order;
    }

    /**
     * Exact (or, with {@code maxRanges > 0}, capped) index ranges covering the inclusive box
     * {@code xmin..xmax, ymin..ymax} on the order-{@code order} curve: sorted, disjoint, adjacent merged.
     * Capped decompositions take time bounded by the cap ({@link CappedDescent}).
     */
    public static List<IndexRange> ranges(long xmin, long ymin, long xmax, long ymax, int order, int maxRanges) {
        checkBox(xmin, ymin, xmax, ymax, order);
        if (maxRanges > 0) {
            return CappedDescent.hilbert(xmin, ymin, xmax, ymax, 1L << order, maxRanges);
        }
        RangeCollector out = new RangeCollector(0);
        new Descent(xmin, ymin, xmax, ymax, out).visit(0, 0, 1L << order, 0, 0, 0);
        return out.result();
    }

    /** The largest index of any cell in the inclusive box (O(order)). */
    public static long maxIndex(long xmin, long ymin, long xmax, long ymax, int order) {
        checkBox(xmin, ymin, xmax, ymax, order);
        long x0 = 0, y0 = 0, side = 1L << order, base = 0;
        int swap = 0, comp = 0;
        while (true) {
            if (x0 >= xmin && x0 + side - 1 <= xmax && y0 >= ymin && y0 + side - 1 <= ymax) {
                return base + side * side - 1;
            }
            long h = side >>> 1, q = h * h;
            int k = 3;
            for (; k >= 0; k--) {
                int rx = k >>> 1, ry = (k ^ rx) & 1;
                int ux = rx ^ comp, uy = ry ^ comp;
                long cx = x0 + (swap == 1 ? uy : ux) * h, cy = y0 + (swap == 1 ? ux : uy) * h;
                if (cx <= xmax && cx + h - 1 >= xmin && cy <= ymax && cy + h - 1 >= ymin) {
                    x0 = cx;
                    y0 = cy;
                    base += k * q;
                    if (ry == 0) {
                        swap ^= 1;
                        comp ^= rx;
                    }
                    break;
                }
            }
            side = h;
        }
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

        /**
         * Square {@code [x0, x0+side) x [y0, y0+side)} meets the box; its indexes are {@code base .. base+side^2-1};
         * within it, the curve's local coordinates are the actual ones swapped (if {@code swap}) and then
         * bit-complemented (if {@code comp}).
         */
        void visit(long x0, long y0, long side, long base, int swap, int comp) {
            if (x0 >= xmin && x0 + side - 1 <= xmax && y0 >= ymin && y0 + side - 1 <= ymax) {
                out.add(base, base + side * side - 1);
                return;
            }
            long h = side >>> 1, q = h * h;
            for (int k = 0; k < 4; k++) { // quadrants in curve order: local (rx, ry) = (0,0) (0,1) (1,1) (1,0)
                int rx = k >>> 1, ry = (k ^ rx) & 1;
                int ux = rx ^ comp, uy = ry ^ comp;
                long cx = x0 + (swap == 1 ? uy : ux) * h, cy = y0 + (swap == 1 ? ux : uy) * h;
                if (cx <= xmax && cx + h - 1 >= xmin && cy <= ymax && cy + h - 1 >= ymin) {
                    visit(cx, cy, h, base + k * q, ry == 0 ? swap ^ 1 : swap, ry == 0 ? comp ^ rx : comp);
                }
            }
        }
    }

    private static void checkBox(long xmin, long ymin, long xmax, long ymax, int order) {
        checkOrder(order);
        long n = 1L << order;
        check("xmin", xmin, n);
        check("ymin", ymin, n);
        check("xmax", xmax, n);
        check("ymax", ymax, n);
        if (xmin > xmax || ymin > ymax) {
            throw new SfcLayerException.InvalidArgument("hilbert query box: x " + xmin + ".." + xmax
                + ", y " + ymin + ".." + ymax + " is empty (min <= max)");
        }
    }

    static void checkOrder(int order) {
        if (order < 0 || order > MAX_ORDER) {
            throw new SfcLayerException.InvalidArgument("hilbert order: " + order + " is out of range (0.." + MAX_ORDER + ")");
        }
    }

    private static void check(String name, long v, long n) {
        if (v < 0 || v >= n) {
            throw new SfcLayerException.InvalidArgument(
                "hilbert " + name + ": " + v + " is out of range (0.." + (n - 1) + " for order "
                    + Long.numberOfTrailingZeros(n) + ")");
        }
    }
}
