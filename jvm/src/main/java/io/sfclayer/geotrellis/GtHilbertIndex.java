package io.sfclayer.geotrellis;

import io.sfclayer.curve.IndexRange;

import java.util.List;

/**
 * GeoTrellis' {@code HilbertSpatialKeyIndex} and {@code HilbertSpaceTimeKeyIndex}: uzaygezen's compact
 * Hilbert curve ({@link CompactHilbert}) over col and row relative to the key bounds' minimum and, for
 * space-time, {@code 2^temporalResolution} time bins spread over the key bounds' time span.
 */
final class GtHilbertIndex extends GtKeyIndex {
    private static final long serialVersionUID = 1L;
    private final int xResolution, yResolution, temporalResolution;
    private transient CompactHilbert curve;

    GtHilbertIndex(int colMin, int rowMin, int colMax, int rowMax, int xResolution, int yResolution) {
        super(false, colMin, rowMin, colMax, rowMax, 0, 0);
        this.xResolution = xResolution;
        this.yResolution = yResolution;
        this.temporalResolution = 0;
        curve();
    }

    GtHilbertIndex(int colMin, int rowMin, int colMax, int rowMax, long timeMin, long timeMax,
                   int xResolution, int yResolution, int temporalResolution) {
        super(true, colMin, rowMin, colMax, rowMax, timeMin, timeMax);
        this.xResolution = xResolution;
        this.yResolution = yResolution;
        this.temporalResolution = temporalResolution;
        curve();
    }

    private CompactHilbert curve() {
        if (curve == null) {
            curve = spaceTime ? new CompactHilbert(xResolution, yResolution, temporalResolution)
                : new CompactHilbert(xResolution, yResolution);
        }
        return curve;
    }

    @Override
    public String kind() {
        return "hilbert";
    }

    /** GeoTrellis' binTime, in its double arithmetic; the key bounds' last instant falls in the last bin. */
    @Override
    long bin(long millis) {
        if (!spaceTime) return 0;
        double count = Math.pow(2, temporalResolution);
        long width = timeMax - timeMin;
        double bin = ((millis - timeMin) * count) / width;
        return (long) (bin == count ? bin - 1 : bin);
    }

    @Override
    long indexOfBin(int col, int row, long bin) {
        long x = (long) col - colMin, y = (long) row - rowMin;
        return spaceTime ? curve().index(x, y, bin) : curve().index(x, y);
    }

    @Override
    List<IndexRange> span(int c0, int r0, int c1, int r1, long b0, long b1) {
        return one(0, (1L << (xResolution + yResolution + temporalResolution)) - 1);
    }
}
