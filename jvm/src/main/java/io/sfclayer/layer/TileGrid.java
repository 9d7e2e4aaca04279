package io.sfclayer.layer;

import io.sfclayer.SfcLayerException;
import io.sfclayer.curve.KeyBounds;
import io.sfclayer.format.LayerMetadata;

import java.io.Serializable;
import java.util.List;
import java.util.function.LongPredicate;

/**
 * The georeferencing of a layer with an extent: the map envelope of every tile, and the tiles whose
 * envelopes meet a map box. The one place this arithmetic lives: the envelope columns a scan returns,
 * the key boxes of envelope filters and the {@code bbox} read option all come from here, so a filter
 * on an envelope column selects exactly the tiles whose returned envelope satisfies it.
 *
 * <p>The extent covers the key bounds {@code b}: tiles are {@code tw = (xmax - xmin) / (b.colMax - b.colMin + 1)}
 * wide and {@code th = (ymax - ymin) / (b.rowMax - b.rowMin + 1)} high; tile {@code (col, row)} has
 * {@code xmin = extent.xmin + (col - b.colMin) * tw}, {@code xmax = xmin + tw},
 * {@code ymax = extent.ymax - (row - b.rowMin) * th}, {@code ymin = ymax - th} (row 0 at the top, the
 * raster convention). Each envelope coordinate is monotone in col (x) or row (y), so the tiles whose
 * coordinate lies in an interval form a run of cols or rows, found exactly by binary search.
 */
public final class TileGrid implements Serializable {
    private static final long serialVersionUID = 1L;

    /** Envelope column names, in the order of the table's columns. */
    public static final String XMIN = "xmin", YMIN = "ymin", XMAX = "xmax", YMAX = "ymax";
    public static final List<String> COLUMNS = List.of(XMIN, YMIN, XMAX, YMAX);

    private final KeyBounds bounds;
    private final double xmin0, ymax0, tileWidth, tileHeight;

    public TileGrid(LayerMetadata.Extent extent, KeyBounds bounds) {
        this.bounds = bounds;
        this.xmin0 = extent.xmin;
        this.ymax0 = extent.ymax;
        this.tileWidth = (extent.xmax - extent.xmin) / (double) bounds.width();
        this.tileHeight = (extent.ymax - extent.ymin) / (double) bounds.height();
    }

    /** The grid of a layer, or null when the layer has no extent. */
    public static TileGrid of(LayerMetadata md) {
        return md.extent == null ? null : new TileGrid(md.extent, md.keyIndex.bounds());
    }

    public KeyBounds bounds() {
        return bounds;
    }

    public double tileWidth() {
        return tileWidth;
    }

    public double tileHeight() {
        return tileHeight;
    }

    public double xmin(int col) {
        return xAt((long) col - bounds.colMin);
    }

    public double xmax(int col) {
        return xAt((long) col - bounds.colMin) + tileWidth;
    }

    public double ymax(int row) {
        return yAt((long) row - bounds.rowMin);
    }

    public double ymin(int row) {
        return yAt((long) row - bounds.rowMin) - tileHeight;
    }

    /** The envelope {@code {xmin, ymin, xmax, ymax}} of tile {@code (col, row)}. */
    public double[] envelope(int col, int row) {
        return new double[] {xmin(col), ymin(row), xmax(col), ymax(row)};
    }

    /** The value of envelope column {@code column} ("xmin", "ymin", "xmax" or "ymax") of a tile. */
    public double coordinate(String column, int col, int row) {
        switch (column) {
            case XMIN: return xmin(col);
            case YMIN: return ymin(row);
            case XMAX: return xmax(col);
            case YMAX: return ymax(row);
            default: throw new IllegalArgumentException("not an envelope column: " + column);
        }
    }

    private double xAt(long colOffset) {
        return xmin0 + colOffset * tileWidth;
    }

    private double yAt(long rowOffset) {
        return ymax0 - rowOffset * tileHeight;
    }

    /**
     * The tiles whose closed envelope intersects the closed map box: {@code xmax >= boxXmin && xmin <= boxXmax
     * && ymax >= boxYmin && ymin <= boxYmax} (tiles that only touch the box count), as
     * {@code {colMin, rowMin, colMax, rowMax}} within the key bounds; null when no tile does.
     *
     * @throws SfcLayerException.InvalidArgument if a coordinate is NaN or the box is inverted
     */
    public int[] keyBox(double boxXmin, double boxYmin, double boxXmax, double boxYmax) {
        if (Double.isNaN(boxXmin) || Double.isNaN(boxYmin) || Double.isNaN(boxXmax) || Double.isNaN(boxYmax)) {
            throw new SfcLayerException.InvalidArgument("map box: " + boxXmin + "," + boxYmin + "," + boxXmax + ","
                + boxYmax + " has a NaN coordinate (numbers xmin,ymin,xmax,ymax)");
        }
        if (boxXmin > boxXmax || boxYmin > boxYmax) {
            throw new SfcLayerException.InvalidArgument("map box: " + boxXmin + "," + boxYmin + "," + boxXmax + ","
                + boxYmax + " has a minimum above its maximum (xmin <= xmax and ymin <= ymax)");
        }
        int[] c1 = keysWhere(XMAX, boxXmin, true, Double.POSITIVE_INFINITY, true);
        int[] c2 = keysWhere(XMIN, Double.NEGATIVE_INFINITY, true, boxXmax, true);
        int[] r1 = keysWhere(YMAX, boxYmin, true, Double.POSITIVE_INFINITY, true);
        int[] r2 = keysWhere(YMIN, Double.NEGATIVE_INFINITY, true, boxYmax, true);
        if (c1 == null || c2 == null || r1 == null || r2 == null) {
            return null;
        }
        int colMin = Math.max(c1[0], c2[0]), colMax = Math.min(c1[1], c2[1]);
        int rowMin = Math.max(r1[0], r2[0]), rowMax = Math.min(r1[1], r2[1]);
        if (colMin > colMax || rowMin > rowMax) {
            return null;
        }
        return new int[] {colMin, rowMin, colMax, rowMax};
    }

    /**
     * The run of cols (for "xmin"/"xmax") or rows (for "ymin"/"ymax") within the key bounds whose
     * envelope coordinate {@code v} satisfies {@code lo <(=) v <(=) hi}, as {@code {first, last}}; null if
     * none does. Exact for the values {@link #envelope} returns (no tolerance).
     */
    public int[] keysWhere(String column, double lo, boolean loInclusive, double hi, boolean hiInclusive) {
        if (Double.isNaN(lo) || Double.isNaN(hi)) {
            throw new IllegalArgumentException("NaN bound on " + column);
        }
        boolean x = column.equals(XMIN) || column.equals(XMAX);
        if (!x && !column.equals(YMIN) && !column.equals(YMAX)) {
            throw new IllegalArgumentException("not an envelope column: " + column);
        }
        long n = x ? bounds.width() : bounds.height();
        int base = x ? bounds.colMin : bounds.rowMin;
        java.util.function.LongToDoubleFunction f;
        switch (column) {
            case XMIN: f = this::xAt; break;
            case XMAX: f = k -> xAt(k) + tileWidth; break;
            case YMAX: f = this::yAt; break;
            default: f = k -> yAt(k) - tileHeight; break;
        }
        LongPredicate aboveLo = k -> loInclusive ? f.applyAsDouble(k) >= lo : f.applyAsDouble(k) > lo;
        LongPredicate belowHi = k -> hiInclusive ? f.applyAsDouble(k) <= hi : f.applyAsDouble(k) < hi;
        long first, last;
        if (x) { // coordinates grow with the col
            first = firstTrue(n, aboveLo);
            last = firstTrue(n, belowHi.negate()) - 1;
        } else { // and shrink as the row grows
            first = firstTrue(n, belowHi);
            last = firstTrue(n, aboveLo.negate()) - 1;
        }
        if (first > last) {
            return null;
        }
        return new int[] {(int) (base + first), (int) (base + last)};
    }

    /** The smallest k in [0, n) where the monotone (false, then true) predicate holds; n if none. */
    private static long firstTrue(long n, LongPredicate p) {
        long lo = 0, hi = n; // answer in [lo, hi]
        while (lo < hi) {
            long mid = (lo + hi) >>> 1;
            if (p.test(mid)) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        return lo;
    }

    @Override
    public String toString() {
        return "TileGrid(" + bounds + ", tiles " + tileWidth + " x " + tileHeight + " from (" + xmin0 + ", " + ymax0 + "))";
    }
}
