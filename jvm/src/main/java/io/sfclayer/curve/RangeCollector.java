package io.sfclayer.curve;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.PriorityQueue;

/**
 * Receives index ranges in ascending order (each starting after the previous one ends), merges adjacent
 * ones ({@code hi + 1 == next lo}) and, when capped, keeps only the {@code maxRanges - 1} widest gaps:
 * merging across the smallest gaps, streaming, in O(maxRanges) memory.
 *
 * <p>Capping rule (the on-disk/cross-language contract, mirrored in {@code sfclayer.curves}): of the
 * {@code n} merged exact ranges, the {@code n - maxRanges} gaps that come first in the order
 * (gap size ascending, then position ascending) are bridged. So among equal gaps the earlier ones are
 * bridged first.
 */
final class RangeCollector {
    private final int maxRanges; // <= 0: exact

    private boolean any;
    private long firstLo, curLo, curHi;

    // exact mode: closed ranges as lo/hi pairs
    private long[] buf;
    private int size;

    // capped mode: kept gaps {size, position, hiBefore, loAfter}, min-heap by (size, position)
    private final PriorityQueue<long[]> gaps;
    private long gapCount;

    RangeCollector(int maxRanges) {
        this.maxRanges = maxRanges;
        if (maxRanges > 0) {
            gaps = new PriorityQueue<>(Math.min(maxRanges, 1024), (a, b) -> {
                int c = Long.compare(a[0], b[0]);
                return c != 0 ? c : Long.compare(a[1], b[1]);
            });
        } else {
            gaps = null;
            buf = new long[64];
        }
    }

    /** Adds {@code [lo, hi]}; {@code lo} must be greater than the previous range's {@code hi}. */
    void add(long lo, long hi) {
        if (!any) {
            any = true;
            firstLo = curLo = lo;
            curHi = hi;
            return;
        }
        if (lo <= curHi) {
            throw new IllegalStateException("ranges out of order: [" + lo + ", " + hi + "] after " + curHi);
        }
        if (lo == curHi + 1) {
            curHi = hi;
            return;
        }
        if (gaps == null) {
            if (size + 2 > buf.length) buf = Arrays.copyOf(buf, buf.length * 2);
            buf[size++] = curLo;
            buf[size++] = curHi;
        } else {
            long gap = lo - curHi - 1, pos = gapCount++;
            // Positions only grow, so when the heap is full a gap narrower than its smallest would be
            // bridged at once: skip it without allocating (same result, fewer objects).
            if (gaps.size() < maxRanges - 1) {
                gaps.add(new long[] {gap, pos, curHi, lo});
            } else if (maxRanges > 1 && gap >= gaps.peek()[0]) { // on a tie the older gap goes
                gaps.poll();
                gaps.add(new long[] {gap, pos, curHi, lo});
            }
        }
        curLo = lo;
        curHi = hi;
    }

    List<IndexRange> result() {
        if (!any) return new ArrayList<>(0);
        if (gaps == null) {
            List<IndexRange> out = new ArrayList<>(size / 2 + 1);
            for (int i = 0; i < size; i += 2) out.add(new IndexRange(buf[i], buf[i + 1]));
            out.add(new IndexRange(curLo, curHi));
            return out;
        }
        long[][] kept = gaps.toArray(new long[0][]);
        Arrays.sort(kept, (a, b) -> Long.compare(a[1], b[1]));
        List<IndexRange> out = new ArrayList<>(kept.length + 1);
        long lo = firstLo;
        for (long[] g : kept) {
            out.add(new IndexRange(lo, g[2]));
            lo = g[3];
        }
        out.add(new IndexRange(lo, curHi));
        return out;
    }
}
