package io.sfclayer.curve;

import java.util.ArrayList;
import java.util.List;

/**
 * Capped range decomposition whose time is bounded by the cap, not by the box: the quadtree (octree
 * for z3) is descended level by level, and when the ranges found so far plus the partly covered
 * nodes of the next level exceed {@link #budget(int)}, those partly covered nodes are taken whole.
 * The result is then a coarser superset of the box (reads refine it to the exact answer); work and
 * memory are O(levels x budget) whatever the layer's size.
 *
 * <p>When the descent finishes within the budget it has found the exact ranges, and capping them
 * (smallest gaps bridged first, equal gaps earliest first, as in {@link RangeCollector}) gives the
 * same answer as capping the full exact list: the cross-language contract. Mirrored by
 * {@code sfclayer.curves} in Python, which must use the same {@link #budget(int)}.
 */
final class CappedDescent {
    /** Smallest work budget (partly covered nodes plus ranges found), so small caps still plan finely. */
    static final int MIN_BUDGET = 4096;
    /** Largest work budget, whatever the cap: bounds planning memory to a few tens of MB. */
    static final int MAX_BUDGET = 1 << 20;

    private final long[] min, max; // inclusive box, per axis x, y, t (t is 0..0 for 2D curves)
    private final int dims;
    private final boolean hilbert;

    private CappedDescent(long[] min, long[] max, int dims, boolean hilbert) {
        this.min = min;
        this.max = max;
        this.dims = dims;
        this.hilbert = hilbert;
    }

    /** The work budget of a cap: {@code clamp(4 * maxRanges, 4096, 2^20)}. */
    static int budget(int maxRanges) {
        return (int) Math.min(MAX_BUDGET, Math.max(MIN_BUDGET, 4L * maxRanges));
    }

    static List<IndexRange> z2(long xmin, long ymin, long xmax, long ymax, long side, int maxRanges) {
        return new CappedDescent(new long[] {xmin, ymin, 0}, new long[] {xmax, ymax, 0}, 2, false).run(side, maxRanges);
    }

    static List<IndexRange> z3(long[] min, long[] max, long side, int maxRanges) {
        return new CappedDescent(min, max, 3, false).run(side, maxRanges);
    }

    static List<IndexRange> hilbert(long xmin, long ymin, long xmax, long ymax, long side, int maxRanges) {
        return new CappedDescent(new long[] {xmin, ymin, 0}, new long[] {xmax, ymax, 0}, 2, true).run(side, maxRanges);
    }

    // A node: {x0, y0, t0, base, swap, comp}; swap/comp are the Hilbert orientation bits (see Hilbert).
    private List<IndexRange> run(long side, int maxRanges) {
        List<long[]> found = new ArrayList<>(); // {lo, hi}
        List<long[]> level = new ArrayList<>();
        long[] root = {0, 0, 0, 0, 0, 0};
        if (inside(root, side)) {
            // side^3 wraps to Long.MIN_VALUE for the full 2^21 cube; "- 1" wraps back to the last index
            found.add(new long[] {0, size(side) - 1});
        } else {
            level.add(root);
        }
        int budget = budget(maxRanges);
        int fanout = 1 << dims;
        while (!level.isEmpty()) {
            long h = side >>> 1, q = size(h);
            List<long[]> next = new ArrayList<>();
            for (long[] n : level) {
                for (int k = 0; k < fanout; k++) {
                    long[] c = child(n, k, h, q);
                    if (!meets(c, h)) continue;
                    if (inside(c, h)) {
                        found.add(new long[] {c[3], c[3] + q - 1});
                    } else {
                        next.add(c);
                    }
                }
            }
            side = h;
            if (found.size() + next.size() > budget) {
                for (long[] c : next) found.add(new long[] {c[3], c[3] + q - 1}); // whole: a superset
                break;
            }
            level = next;
        }
        found.sort((a, b) -> Long.compare(a[0], b[0]));
        RangeCollector out = new RangeCollector(maxRanges);
        for (long[] r : found) out.add(r[0], r[1]);
        return out.result();
    }

    private long size(long side) {
        return dims == 2 ? side * side : side * side * side;
    }

    private long[] child(long[] n, int k, long h, long q) {
        if (!hilbert) {
            return new long[] {n[0] + (k & 1) * h, n[1] + ((k >>> 1) & 1) * h, n[2] + ((k >>> 2) & 1) * h,
                n[3] + k * q, 0, 0};
        }
        // quadrants in curve order: local (rx, ry) = (0,0) (0,1) (1,1) (1,0), as Hilbert.Descent
        int rx = k >>> 1, ry = (k ^ rx) & 1;
        long swap = n[4], comp = n[5];
        long ux = rx ^ comp, uy = ry ^ comp;
        return new long[] {n[0] + (swap == 1 ? uy : ux) * h, n[1] + (swap == 1 ? ux : uy) * h, 0, n[3] + k * q,
            ry == 0 ? swap ^ 1 : swap, ry == 0 ? comp ^ rx : comp};
    }

    private boolean meets(long[] c, long side) {
        for (int a = 0; a < dims; a++) {
            if (c[a] > max[a] || c[a] + side - 1 < min[a]) return false;
        }
        return true;
    }

    private boolean inside(long[] c, long side) {
        for (int a = 0; a < dims; a++) {
            if (c[a] < min[a] || c[a] + side - 1 > max[a]) return false;
        }
        return true;
    }
}
