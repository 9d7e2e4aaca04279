package io.sfclayer.curve;

import java.util.ArrayList;
import java.util.List;

/** Merging and capping lists of {@link IndexRange}s. */
public final class RangeMerge {
    private RangeMerge() { }

    /**
     * Sorts {@code ranges}, merges overlapping and adjacent ones ({@code hi + 1 == next lo}) and, when
     * {@code maxRanges > 0}, merges across the smallest gaps until at most {@code maxRanges} remain
     * (equal gaps: the earlier one first). The result covers every index of the input, and with a cap
     * it may cover more. The input list is not modified.
     */
    public static List<IndexRange> capRanges(List<IndexRange> ranges, int maxRanges) {
        List<IndexRange> sorted = new ArrayList<>(ranges);
        sorted.sort(null);
        RangeCollector out = new RangeCollector(maxRanges);
        boolean open = false;
        long lo = 0, hi = 0;
        for (IndexRange r : sorted) {
            if (open && (r.lo <= hi || r.lo == hi + 1)) { // overlapping or adjacent
                if (r.hi > hi) hi = r.hi;
                continue;
            }
            if (open) out.add(lo, hi);
            open = true;
            lo = r.lo;
            hi = r.hi;
        }
        if (open) out.add(lo, hi);
        return out.result();
    }

    /** {@link #capRanges} without a cap: sorted, overlapping and adjacent ranges merged. */
    public static List<IndexRange> merge(List<IndexRange> ranges) {
        return capRanges(ranges, 0);
    }
}
