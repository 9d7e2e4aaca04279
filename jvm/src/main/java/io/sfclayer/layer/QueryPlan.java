package io.sfclayer.layer;

import io.sfclayer.SfcLayerException;
import io.sfclayer.curve.IndexRange;
import io.sfclayer.curve.KeyIndex;
import io.sfclayer.curve.QueryBox;
import io.sfclayer.curve.RangeMerge;
import org.apache.hadoop.fs.Path;

import java.util.ArrayList;
import java.util.List;

/**
 * The box rules every reader of a layer shares, Spark's scan and the driver's box queries alike: a map
 * bbox as key boxes, key boxes as SFC ranges, and refinement (a record is kept when some box holds
 * its key). One implementation, so both paths answer a box the same way.
 */
public final class QueryPlan {
    private QueryPlan() {
    }

    /**
     * The bbox option ("xmin,ymin,xmax,ymax" in map units) as key boxes: the tiles whose closed envelope
     * intersects it; an empty list when none does.
     *
     * @param grid the layer's grid, null when it has no extent (an error: it has no map coordinates)
     */
    public static List<QueryBox> bbox(String value, TileGrid grid, Path layer) {
        if (grid == null) {
            throw new SfcLayerException.InvalidArgument("option bbox: the layer at " + layer
                + " has no extent, so it has no map coordinates; write it with the extent option, or filter on"
                + " col and row");
        }
        double[] v = LayerWriteOptions.parseBox("bbox", value);
        int[] k = grid.keyBox(v[0], v[1], v[2], v[3]);
        return k == null ? List.of() : List.of(QueryBox.of(k[0], k[1], k[2], k[3]));
    }

    /**
     * The SFC ranges of the union of {@code boxes}: sorted, disjoint, at most {@code maxRanges} when it
     * is positive (each box decomposes with its share of the cap, then the union is capped again).
     */
    public static List<IndexRange> ranges(KeyIndex keyIndex, List<QueryBox> boxes, int maxRanges) {
        if (boxes.isEmpty()) {
            return List.of();
        }
        if (boxes.size() == 1) {
            return keyIndex.ranges(boxes.get(0), maxRanges);
        }
        int share = maxRanges <= 0 ? 0 : Math.max(16, (maxRanges + boxes.size() - 1) / boxes.size());
        List<IndexRange> all = new ArrayList<>();
        for (QueryBox b : boxes) {
            all.addAll(keyIndex.ranges(b, share));
        }
        return RangeMerge.capRanges(all, maxRanges);
    }

    /** Refinement: whether some box holds the key (ranges bring in more: collisions, detours, caps). */
    public static boolean anyContains(QueryBox[] boxes, int col, int row, long time) {
        for (QueryBox b : boxes) {
            if (b.contains(col, row, time)) {
                return true;
            }
        }
        return false;
    }

    /** Clipped ranges as {@code lo, hi} pairs, as {@link RangeTraversal} takes them. */
    public static long[] pairs(List<IndexRange> ranges) {
        long[] out = new long[2 * ranges.size()];
        for (int j = 0; j < ranges.size(); j++) {
            out[2 * j] = ranges.get(j).lo;
            out[2 * j + 1] = ranges.get(j).hi;
        }
        return out;
    }
}
