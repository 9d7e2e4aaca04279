package io.sfclayer.curve;

import io.sfclayer.SfcLayerException;

import java.util.List;
import java.util.Map;

/** {@link KeyIndex#hilbert}: Hilbert curve of the offsets, over the smallest power-of-two square covering the bounds. */
final class HilbertKeyIndex extends KeyIndex {
    private static final long serialVersionUID = 1L;

    final int order;
    private final long maxIndex;

    HilbertKeyIndex(KeyBounds bounds) {
        super(bounds);
        int o = Hilbert.orderFor(bounds.width(), bounds.height());
        if (o > Hilbert.MAX_ORDER) {
            throw new SfcLayerException.InvalidArgument("key bounds: " + bounds + " need order " + o + " ("
                + Math.max(bounds.width(), bounds.height()) + " keys on a side), too large for a hilbert index"
                + " (at most order " + Hilbert.MAX_ORDER + " = 2147483648 per axis)");
        }
        order = o;
        maxIndex = Hilbert.maxIndex(0, 0, bounds.width() - 1, bounds.height() - 1, order);
    }

    /** The curve's order: the index covers a {@code 2^order} square. */
    public int order() {
        return order;
    }

    @Override
    public String kind() {
        return "hilbert";
    }

    @Override
    long offsetIndex(long x, long y) {
        return Hilbert.encode(x, y, order);
    }

    @Override
    public long maxIndex() {
        return maxIndex;
    }

    @Override
    long[] decodeOffsets(long index) {
        return Hilbert.decode(index, order);
    }

    @Override
    List<IndexRange> offsetRanges(long x0, long y0, long x1, long y1, QueryBox box, int maxRanges) {
        return Hilbert.ranges(x0, y0, x1, y1, order, maxRanges);
    }

    @Override
    public Map<String, Object> toJson() {
        Map<String, Object> m = super.toJson();
        m.put("order", order);
        return m;
    }

    @Override
    public String toString() {
        return "hilbert key index (order " + order + ") over " + boundsText();
    }
}
