package io.sfclayer.geotrellis;

import io.sfclayer.curve.IndexRange;

import java.util.List;

/**
 * GeoTrellis' {@code ZSpatialKeyIndex} (absolute col and row, 31 bits each, x in the low bit) and
 * {@code ZSpaceTimeKeyIndex} (21 bits each of col, row and time bin {@code (int) (millis / resolution)}).
 * Z order is monotone in every coordinate, so a box's indexes lie between those of its corners.
 */
final class GtZIndex extends GtKeyIndex {
    private static final long serialVersionUID = 1L;
    /** Milliseconds per time bin (space-time only). */
    private final long temporalResolution;

    GtZIndex(int colMin, int rowMin, int colMax, int rowMax) {
        super(false, colMin, rowMin, colMax, rowMax, 0, 0);
        this.temporalResolution = 1;
    }

    GtZIndex(int colMin, int rowMin, int colMax, int rowMax, long timeMin, long timeMax, long temporalResolution) {
        super(true, colMin, rowMin, colMax, rowMax, timeMin, timeMax);
        if (temporalResolution <= 0) {
            throw new io.sfclayer.SfcLayerException.CorruptLayer("zorder key index: temporalResolution "
                + temporalResolution + " is not positive");
        }
        this.temporalResolution = temporalResolution;
    }

    @Override
    public String kind() {
        return "zorder";
    }

    @Override
    long bin(long millis) {
        return spaceTime ? (int) (millis / temporalResolution) : 0; // Scala's (key.instant / res).toInt
    }

    @Override
    long indexOfBin(int col, int row, long bin) {
        if (!spaceTime) return split2(col) | split2(row) << 1;
        return split3(col) | split3(row) << 1 | split3((int) bin) << 2;
    }

    @Override
    List<IndexRange> span(int c0, int r0, int c1, int r1, long b0, long b1) {
        long lo = indexOfBin(c0, r0, b0), hi = indexOfBin(c1, r1, b1);
        // coordinates past the curve's bits wrap (GeoTrellis masks them): then only the whole curve is safe
        return lo <= hi ? one(lo, hi) : one(0, Long.MAX_VALUE);
    }

    /** Z2.split: 0 between the low 31 bits. */
    static long split2(long value) {
        long x = value & 0x7fffffffL;
        x = (x ^ (x << 32)) & 0x00000000ffffffffL;
        x = (x ^ (x << 16)) & 0x0000ffff0000ffffL;
        x = (x ^ (x << 8)) & 0x00ff00ff00ff00ffL;
        x = (x ^ (x << 4)) & 0x0f0f0f0f0f0f0f0fL;
        x = (x ^ (x << 2)) & 0x3333333333333333L;
        x = (x ^ (x << 1)) & 0x5555555555555555L;
        return x;
    }

    /** Z3.split: 00 between the low 21 bits. */
    static long split3(long value) {
        long x = value & 0x1fffffL;
        x = (x | x << 32) & 0x1f00000000ffffL;
        x = (x | x << 16) & 0x1f0000ff0000ffL;
        x = (x | x << 8) & 0x100f00f00f00f00fL;
        x = (x | x << 4) & 0x10c30c30c30c30c3L;
        return (x | x << 2) & 0x1249249249249249L;
    }
}
