package io.sfclayer.curve;

import io.sfclayer.SfcLayerException;

import java.io.Serializable;

/**
 * Inclusive bounds of a layer's tile keys: {@code colMin..colMax} by {@code rowMin..rowMax}.
 * Prints as {@code "cols 0..99, rows 0..499"}.
 */
public final class KeyBounds implements Serializable {
    private static final long serialVersionUID = 1L;

    public final int colMin, rowMin, colMax, rowMax;

    /** @throws SfcLayerException.InvalidArgument if {@code colMin > colMax} or {@code rowMin > rowMax} */
    public KeyBounds(int colMin, int rowMin, int colMax, int rowMax) {
        if (colMin > colMax) {
            throw new SfcLayerException.InvalidArgument(
                "key bounds: cols " + colMin + ".." + colMax + " is empty (min <= max)");
        }
        if (rowMin > rowMax) {
            throw new SfcLayerException.InvalidArgument(
                "key bounds: rows " + rowMin + ".." + rowMax + " is empty (min <= max)");
        }
        this.colMin = colMin;
        this.rowMin = rowMin;
        this.colMax = colMax;
        this.rowMax = rowMax;
    }

    public boolean contains(int col, int row) {
        return col >= colMin && col <= colMax && row >= rowMin && row <= rowMax;
    }

    /** Number of columns, {@code colMax - colMin + 1} (up to 2^32, hence a long). */
    public long width() {
        return (long) colMax - colMin + 1;
    }

    /** Number of rows, {@code rowMax - rowMin + 1}. */
    public long height() {
        return (long) rowMax - rowMin + 1;
    }

    /** The keys in both bounds, or {@code null} when they do not overlap. */
    public KeyBounds intersection(KeyBounds o) {
        int c0 = Math.max(colMin, o.colMin), c1 = Math.min(colMax, o.colMax);
        int r0 = Math.max(rowMin, o.rowMin), r1 = Math.min(rowMax, o.rowMax);
        if (c0 > c1 || r0 > r1) return null;
        return new KeyBounds(c0, r0, c1, r1);
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) return true;
        if (!(o instanceof KeyBounds)) return false;
        KeyBounds b = (KeyBounds) o;
        return colMin == b.colMin && rowMin == b.rowMin && colMax == b.colMax && rowMax == b.rowMax;
    }

    @Override
    public int hashCode() {
        return ((colMin * 31 + rowMin) * 31 + colMax) * 31 + rowMax;
    }

    @Override
    public String toString() {
        return "cols " + colMin + ".." + colMax + ", rows " + rowMin + ".." + rowMax;
    }
}
