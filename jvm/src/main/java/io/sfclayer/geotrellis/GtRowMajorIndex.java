package io.sfclayer.geotrellis;

import io.sfclayer.curve.IndexRange;

import java.util.ArrayList;
import java.util.List;

/** GeoTrellis' {@code RowMajorSpatialKeyIndex}: {@code layoutCols * (row - minRow) + (col - minCol)}. */
final class GtRowMajorIndex extends GtKeyIndex {
    private static final long serialVersionUID = 1L;

    GtRowMajorIndex(int colMin, int rowMin, int colMax, int rowMax) {
        super(false, colMin, rowMin, colMax, rowMax, 0, 0);
    }

    @Override
    public String kind() {
        return "rowmajor";
    }

    @Override
    long bin(long millis) {
        return 0;
    }

    @Override
    long indexOfBin(int col, int row, long bin) {
        int layoutCols = colMax - colMin + 1;
        return (long) (layoutCols * (row - rowMin) + (col - colMin)); // GeoTrellis multiplies Ints
    }

    @Override
    List<IndexRange> span(int c0, int r0, int c1, int r1, long b0, long b1) {
        List<IndexRange> out = new ArrayList<>();
        for (int r = r0; r <= r1; r++) {
            long lo = indexOfBin(c0, r, 0);
            long hi = indexOfBin(c1, r, 0);
            if (!out.isEmpty() && out.get(out.size() - 1).hi + 1 >= lo) {
                out.set(out.size() - 1, new IndexRange(out.get(out.size() - 1).lo, hi));
            } else {
                out.add(new IndexRange(lo, hi));
            }
        }
        return out;
    }
}
