package io.sfclayer.curve;

import io.sfclayer.SfcLayerException;

import java.util.List;

/** {@link KeyIndex#z}: Z-order of the offsets from the bounds' minimum. */
final class ZKeyIndex extends KeyIndex {
    private static final long serialVersionUID = 1L;

    private final long maxIndex;

    ZKeyIndex(KeyBounds bounds) {
        super(bounds);
        checkSide(bounds, "z", Z2.LIMIT, "2^31");
        maxIndex = Z2.encode(bounds.width() - 1, bounds.height() - 1); // Z order grows along each axis
    }

    /** Refuses bounds with more than {@code limit} cols or rows. */
    static void checkSide(KeyBounds b, String kind, long limit, String limitText) {
        String axis = b.width() > limit ? "cols" : b.height() > limit ? "rows" : null;
        if (axis != null) {
            long n = axis.equals("cols") ? b.width() : b.height();
            throw new SfcLayerException.InvalidArgument("key bounds: " + b + " span " + n + " " + axis
                + ", too many for a " + kind + " index (at most " + limit + " = " + limitText + " per axis)");
        }
    }

    @Override
    public String kind() {
        return "z";
    }

    @Override
    long offsetIndex(long x, long y) {
        return Z2.encode(x, y);
    }

    @Override
    public long maxIndex() {
        return maxIndex;
    }

    @Override
    long[] decodeOffsets(long index) {
        return Z2.decode(index);
    }

    @Override
    List<IndexRange> offsetRanges(long x0, long y0, long x1, long y1, QueryBox box, int maxRanges) {
        return Z2.ranges(x0, y0, x1, y1, maxRanges);
    }
}
