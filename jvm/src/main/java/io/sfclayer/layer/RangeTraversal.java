package io.sfclayer.layer;

import io.sfclayer.format.DataFileReader;

import java.io.IOException;

/**
 * The in-step traversal of one data file's groups and a query's index ranges (the design's
 * "in-sync traversal of query SFC ranges and file records"): seeks to a range's start unless the
 * file is already at or past it, reads groups in order to the range's end, then moves to the next
 * range that can still match, and stops at the file's end. Groups between ranges are never read,
 * except that a group read right after one inside a range may turn out to lie beyond it (there is
 * no knowing before reading it); when the last group read sits exactly at a range's end, the
 * traversal seeks rather than reading on.
 *
 * <pre>
 *   RangeTraversal t = new RangeTraversal(reader, new long[] {lo0, hi0, lo1, hi1});
 *   while (t.next()) use(reader.index(), reader.bytes(), reader.length());
 * </pre>
 */
public final class RangeTraversal {
    private final DataFileReader file;
    private final long[] ranges;
    private final int count;
    /** The range the traversal is in (or looking for). */
    private int r;
    /** Whether the reader is on a group not yet handed out. */
    private boolean positioned;
    /** Whether the reader is on a group handed out by the last {@link #next()}. */
    private boolean emitted;
    private long seeks;

    /**
     * @param ranges sorted, disjoint inclusive ranges as {@code lo, hi} pairs
     */
    public RangeTraversal(DataFileReader file, long[] ranges) {
        if ((ranges.length & 1) != 0) {
            throw new IllegalArgumentException("ranges must be lo, hi pairs; got " + ranges.length + " values");
        }
        for (int i = 0; i < ranges.length; i += 2) {
            if (ranges[i] > ranges[i + 1] || (i > 0 && ranges[i] <= ranges[i - 1])) {
                throw new IllegalArgumentException("ranges must be sorted, disjoint and non-empty; range "
                    + (i / 2) + " is [" + ranges[i] + ", " + ranges[i + 1] + "]");
            }
        }
        this.file = file;
        this.ranges = ranges;
        this.count = ranges.length / 2;
    }

    /**
     * Moves the reader to the next group whose index lies in one of the ranges; false when there
     * is none left in the file. The group is the reader's current one ({@link DataFileReader#index()},
     * {@link DataFileReader#bytes()}, {@link DataFileReader#length()}).
     */
    public boolean next() throws IOException {
        if (emitted) {
            emitted = false;
            if (file.index() < ranges[2 * r + 1]) {
                // the next group may still be in this range: read on
                if (!file.next()) {
                    r = count;
                    return false;
                }
                positioned = true;
            } else {
                r++;
                positioned = false;
            }
        }
        while (r < count) {
            long lo = ranges[2 * r];
            if (!positioned) {
                seeks++;
                if (!file.seekCeiling(lo)) {
                    r = count;
                    return false;
                }
                positioned = true;
            }
            long index = file.index();
            while (r < count && ranges[2 * r + 1] < index) {
                r++;
            }
            if (r == count) {
                return false;
            }
            if (index < ranges[2 * r]) {
                positioned = false; // between ranges: seek to the next one's start
                continue;
            }
            positioned = false;
            emitted = true;
            return true;
        }
        return false;
    }

    /** Number of ranges. */
    public int rangeCount() {
        return count;
    }

    /** How many seeks the traversal made. */
    public long seeks() {
        return seeks;
    }
}
