package io.sfclayer.curve;

import io.sfclayer.SfcLayerException;

import java.util.List;

/** {@link KeyIndex#rowMajor}: {@code (row - rowMin) * width + (col - colMin)}. */
final class RowMajorKeyIndex extends KeyIndex {
    private static final long serialVersionUID = 1L;

    private final long width, maxIndex;

    RowMajorKeyIndex(KeyBounds bounds) {
        super(bounds);
        width = bounds.width();
        long h = bounds.height();
        if (Math.multiplyHigh(width, h) != 0 || width * h < 0) {
            throw new SfcLayerException.InvalidArgument("key bounds: " + bounds + " hold " + width + " cols x " + h
                + " rows, too many for a rowmajor index (at most 9223372036854775807 = 2^63-1 keys)");
        }
        maxIndex = width * h - 1;
    }

    @Override
    public String kind() {
        return "rowmajor";
    }

    @Override
    long offsetIndex(long x, long y) {
        return y * width + x;
    }

    @Override
    public long maxIndex() {
        return maxIndex;
    }

    @Override
    long[] decodeOffsets(long index) {
        return new long[] {index % width, index / width};
    }

    @Override
    List<IndexRange> offsetRanges(long x0, long y0, long x1, long y1, QueryBox box, int maxRanges) {
        RangeCollector out = new RangeCollector(maxRanges);
        long rows = y1 - y0 + 1;
        if (x0 == 0 && x1 == width - 1) {
            out.add(y0 * width, y1 * width + width - 1); // whole rows: one range
        } else if (maxRanges > 0 && rows > CappedDescent.budget(maxRanges)) {
            // Too many rows to list within the cap's budget: maxRanges bands of whole consecutive rows
            // (each from the first row's x0 to the last row's x1), a superset found in O(maxRanges).
            long per = (rows + maxRanges - 1) / maxRanges;
            for (long y = y0; y <= y1; y += per) out.add(y * width + x0, Math.min(y1, y + per - 1) * width + x1);
        } else {
            for (long y = y0; y <= y1; y++) out.add(y * width + x0, y * width + x1);
        }
        return out.result();
    }
}
