package io.sfclayer.curve;

import io.sfclayer.SfcLayerException;

import java.io.Serializable;

/** An inclusive range {@code [lo, hi]} of space-filling-curve indexes. Ordered by {@code lo}, then {@code hi}. */
public final class IndexRange implements Serializable, Comparable<IndexRange> {
    private static final long serialVersionUID = 1L;

    /** First index in the range (inclusive). */
    public final long lo;
    /** Last index in the range (inclusive). */
    public final long hi;

    /** @throws SfcLayerException.InvalidArgument if {@code lo > hi} */
    public IndexRange(long lo, long hi) {
        if (lo > hi) {
            throw new SfcLayerException.InvalidArgument("index range: [" + lo + ", " + hi + "] is empty (lo <= hi)");
        }
        this.lo = lo;
        this.hi = hi;
    }

    /** Whether {@code index} lies in {@code [lo, hi]}. */
    public boolean contains(long index) {
        return index >= lo && index <= hi;
    }

    @Override
    public int compareTo(IndexRange o) {
        int c = Long.compare(lo, o.lo);
        return c != 0 ? c : Long.compare(hi, o.hi);
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) return true;
        if (!(o instanceof IndexRange)) return false;
        IndexRange r = (IndexRange) o;
        return lo == r.lo && hi == r.hi;
    }

    @Override
    public int hashCode() {
        return Long.hashCode(lo) * 31 + Long.hashCode(hi);
    }

    @Override
    public String toString() {
        return "[" + lo + ", " + hi + "]";
    }
}
