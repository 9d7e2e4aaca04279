package io.sfclayer.curve;

import io.sfclayer.SfcLayerException;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** {@link KeyIndex#z3}: Z-order of the col and row offsets and the time bin. */
final class Z3KeyIndex extends KeyIndex {
    private static final long serialVersionUID = 1L;

    private final TimeBounds time;
    private final long maxIndex;

    Z3KeyIndex(KeyBounds bounds, TimeBounds time) {
        super(bounds);
        if (time == null) {
            throw new SfcLayerException.InvalidArgument("time bounds: null is missing (a z3 key index needs them)");
        }
        ZKeyIndex.checkSide(bounds, "z3", Z3.LIMIT, "2^21");
        if (time.bins() > Z3.LIMIT) {
            throw new SfcLayerException.InvalidArgument("time bounds: " + time + " span " + time.bins()
                + " time bins, too many for a z3 index (at most " + Z3.LIMIT + " = 2^21)");
        }
        this.time = time;
        maxIndex = Z3.encode(bounds.width() - 1, bounds.height() - 1, time.bins() - 1);
    }

    @Override
    public String kind() {
        return "z3";
    }

    @Override
    public TimeBounds timeBounds() {
        return time;
    }

    @Override
    public boolean isSpaceTime() {
        return true;
    }

    @Override
    public long index(int col, int row) {
        throw new SfcLayerException.InvalidArgument(
            "time: null is missing (a z3 key index needs a time: use index(col, row, timeMicros))");
    }

    @Override
    public long index(int col, int row, long timeMicros) {
        if (!bounds.contains(col, row) || !time.contains(timeMicros)) {
            throw new SfcLayerException.KeyOutOfBounds("key: " + describeKey(col, row, true, timeMicros)
                + " is outside the layer's key bounds (" + boundsText() + ")");
        }
        return Z3.encode((long) col - bounds.colMin, (long) row - bounds.rowMin, time.bin(timeMicros));
    }

    @Override
    long offsetIndex(long x, long y) {
        throw new IllegalStateException("z3 needs a time");
    }

    @Override
    String boundsText() {
        return bounds + ", " + time;
    }

    @Override
    public long maxIndex() {
        return maxIndex;
    }

    @Override
    public long[] decode(long index) {
        long[] xyt = index < 0 || index > maxIndex ? null : Z3.decode(index);
        if (xyt == null || xyt[0] >= bounds.width() || xyt[1] >= bounds.height() || xyt[2] >= time.bins()) {
            throw notAnIndex(index);
        }
        return new long[] {bounds.colMin + xyt[0], bounds.rowMin + xyt[1], xyt[2]};
    }

    @Override
    long[] decodeOffsets(long index) {
        throw new IllegalStateException("not used by z3");
    }

    @Override
    List<IndexRange> offsetRanges(long x0, long y0, long x1, long y1, QueryBox box, int maxRanges) {
        long t0 = Math.max(box.timeMin, time.minMicros), t1 = Math.min(box.timeMax, time.maxMicros);
        if (t0 > t1) return new ArrayList<>(0);
        return Z3.ranges(x0, y0, time.bin(t0), x1, y1, time.bin(t1), maxRanges);
    }

    @Override
    public Map<String, Object> toJson() {
        Map<String, Object> m = super.toJson();
        m.put("timeMin", time.minMicros);
        m.put("timeMax", time.maxMicros);
        m.put("timeResolution", time.resolutionMicros);
        return m;
    }
}
