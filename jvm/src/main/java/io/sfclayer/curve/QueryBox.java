package io.sfclayer.curve;

import io.sfclayer.SfcLayerException;

import java.io.Serializable;

/**
 * A query: inclusive col and row ranges and an inclusive time range in epoch microseconds
 * ({@link Long#MIN_VALUE}..{@link Long#MAX_VALUE} when time is unbounded).
 */
public final class QueryBox implements Serializable {
    private static final long serialVersionUID = 1L;

    public final int colMin, rowMin, colMax, rowMax;
    public final long timeMin, timeMax;

    /** @throws SfcLayerException.InvalidArgument if any range is empty (min > max) */
    public QueryBox(int colMin, int rowMin, int colMax, int rowMax, long timeMin, long timeMax) {
        if (colMin > colMax) {
            throw new SfcLayerException.InvalidArgument(
                "query box: cols " + colMin + ".." + colMax + " is empty (min <= max)");
        }
        if (rowMin > rowMax) {
            throw new SfcLayerException.InvalidArgument(
                "query box: rows " + rowMin + ".." + rowMax + " is empty (min <= max)");
        }
        if (timeMin > timeMax) {
            throw new SfcLayerException.InvalidArgument("query box: times " + timeMin + ".." + timeMax
                + " us is empty (min <= max)");
        }
        this.colMin = colMin;
        this.rowMin = rowMin;
        this.colMax = colMax;
        this.rowMax = rowMax;
        this.timeMin = timeMin;
        this.timeMax = timeMax;
    }

    /** A box with no time restriction. */
    public static QueryBox of(int colMin, int rowMin, int colMax, int rowMax) {
        return new QueryBox(colMin, rowMin, colMax, rowMax, Long.MIN_VALUE, Long.MAX_VALUE);
    }

    /** A box restricted to times {@code timeMin..timeMax} (inclusive, epoch microseconds). */
    public static QueryBox of(int colMin, int rowMin, int colMax, int rowMax, long timeMin, long timeMax) {
        return new QueryBox(colMin, rowMin, colMax, rowMax, timeMin, timeMax);
    }

    /** All keys of {@code bounds}, at any time. */
    public static QueryBox of(KeyBounds bounds) {
        return of(bounds.colMin, bounds.rowMin, bounds.colMax, bounds.rowMax);
    }

    public boolean contains(int col, int row, long time) {
        return col >= colMin && col <= colMax && row >= rowMin && row <= rowMax && time >= timeMin && time <= timeMax;
    }

    public boolean isTimeBounded() {
        return timeMin != Long.MIN_VALUE || timeMax != Long.MAX_VALUE;
    }

    /** The part of both boxes, or {@code null} when they do not overlap. */
    public QueryBox intersect(QueryBox o) {
        int c0 = Math.max(colMin, o.colMin), c1 = Math.min(colMax, o.colMax);
        int r0 = Math.max(rowMin, o.rowMin), r1 = Math.min(rowMax, o.rowMax);
        long t0 = Math.max(timeMin, o.timeMin), t1 = Math.min(timeMax, o.timeMax);
        if (c0 > c1 || r0 > r1 || t0 > t1) return null;
        return new QueryBox(c0, r0, c1, r1, t0, t1);
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) return true;
        if (!(o instanceof QueryBox)) return false;
        QueryBox b = (QueryBox) o;
        return colMin == b.colMin && rowMin == b.rowMin && colMax == b.colMax && rowMax == b.rowMax
            && timeMin == b.timeMin && timeMax == b.timeMax;
    }

    @Override
    public int hashCode() {
        int h = ((colMin * 31 + rowMin) * 31 + colMax) * 31 + rowMax;
        return (h * 31 + Long.hashCode(timeMin)) * 31 + Long.hashCode(timeMax);
    }

    @Override
    public String toString() {
        String s = "cols " + colMin + ".." + colMax + ", rows " + rowMin + ".." + rowMax;
        if (!isTimeBounded()) return s;
        String t0 = timeMin == Long.MIN_VALUE ? "-inf" : TimeBounds.formatMicros(timeMin);
        String t1 = timeMax == Long.MAX_VALUE ? "+inf" : TimeBounds.formatMicros(timeMax);
        return s + ", times " + t0 + ".." + t1;
    }
}
