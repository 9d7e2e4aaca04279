package io.sfclayer.layer;

import io.sfclayer.curve.IndexRange;
import io.sfclayer.curve.KeyIndex;
import io.sfclayer.curve.QueryBox;

import java.util.Arrays;
import java.util.List;

/**
 * Partition breaks computed from the key bounds alone (no sampling): the indexes that the keys in
 * the bounds can take are cut into {@code n} spans holding equally many possible keys, so a layer
 * that fills its bounds evenly gives even partitions. Partition p holds indexes in
 * {@code [breaks[p-1], breaks[p])}.
 */
public final class PartitionBreaks {
    /** Enough ranges to follow the curve closely without a costly decomposition. */
    static final int MAX_RANGES = 1 << 14;

    private PartitionBreaks() {
    }

    public static long[] compute(KeyIndex index, int n) {
        if (n <= 1) {
            return new long[0];
        }
        var b = index.bounds();
        QueryBox all = index.isSpaceTime()
            ? QueryBox.of(b.colMin, b.rowMin, b.colMax, b.rowMax, index.timeBounds().minMicros, index.timeBounds().maxMicros)
            : QueryBox.of(b.colMin, b.rowMin, b.colMax, b.rowMax);
        List<IndexRange> ranges = index.ranges(all, MAX_RANGES);
        double total = 0;
        for (IndexRange r : ranges) {
            total += (double) (r.hi - r.lo) + 1;
        }
        long[] breaks = new long[n - 1];
        int p = 1;
        double seen = 0;
        for (IndexRange r : ranges) {
            double size = (double) (r.hi - r.lo) + 1;
            while (p < n && seen + size >= total * p / n) {
                double into = total * p / n - seen;
                breaks[p - 1] = r.lo + (long) Math.floor(Math.max(0, into));
                p++;
            }
            seen += size;
        }
        while (p < n) {
            breaks[p - 1] = ranges.isEmpty() ? 0 : ranges.get(ranges.size() - 1).hi;
            p++;
        }
        return breaks;
    }

    /** The partition of {@code index}: how many breaks are ≤ it. */
    public static int partitionOf(long[] breaks, long index) {
        int pos = Arrays.binarySearch(breaks, index);
        if (pos < 0) {
            return -pos - 1;
        }
        // several equal breaks: the partition after the last of them
        while (pos + 1 < breaks.length && breaks[pos + 1] == index) {
            pos++;
        }
        return pos + 1;
    }
}
