package io.sfclayer.geotrellis;

import com.fasterxml.jackson.databind.JsonNode;
import io.sfclayer.SfcLayerException;
import io.sfclayer.curve.IndexRange;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;

/**
 * A GeoTrellis key index as stored in a layer's attributes ({@code keyIndex: {type, properties}}):
 * {@link #toIndex} is bit-identical to GeoTrellis' own ({@code geotrellis.store.index}), so that file
 * names ({@code part-r-<p>-<first index>}) and MapFile keys can be searched. Range decomposition may be
 * a superset of a box's indexes (readers refine by key): boxes of up to {@link #MAX_CELLS} cells are
 * enumerated exactly, larger ones get each index's {@link #span}.
 *
 * <p>Keys are GeoTrellis': col, row and, for space-time, the instant in epoch milliseconds.
 */
public abstract class GtKeyIndex implements Serializable {
    private static final long serialVersionUID = 1L;
    /** Boxes with more cells (× time bins) than this are not enumerated. */
    static final long MAX_CELLS = 1L << 20;

    public final boolean spaceTime;
    /** The key bounds the index was made for (inclusive; times in ms, 0 for spatial layers). */
    public final int colMin, rowMin, colMax, rowMax;
    public final long timeMin, timeMax;

    GtKeyIndex(boolean spaceTime, int colMin, int rowMin, int colMax, int rowMax, long timeMin, long timeMax) {
        this.spaceTime = spaceTime;
        this.colMin = colMin;
        this.rowMin = rowMin;
        this.colMax = colMax;
        this.rowMax = rowMax;
        this.timeMin = timeMin;
        this.timeMax = timeMax;
    }

    /** GeoTrellis' {@code toIndex} of a key ({@code millis} ignored by spatial indexes). */
    public final long toIndex(int col, int row, long millis) {
        return indexOfBin(col, row, bin(millis));
    }

    /** The time bin of an instant (0 for spatial indexes). */
    abstract long bin(long millis);

    abstract long indexOfBin(int col, int row, long bin);

    /** Indexes covering every key of the box (its part within the key bounds): a superset is allowed. */
    abstract List<IndexRange> span(int c0, int r0, int c1, int r1, long b0, long b1);

    /** The kind as GeoTrellis names it: zorder, hilbert or rowmajor. */
    public abstract String kind();

    /**
     * Sorted disjoint ranges holding the index of every key of the inclusive box (times in ms) that lies in
     * the key bounds; empty when the box misses them.
     */
    public final List<IndexRange> ranges(int c0, int r0, int c1, int r1, long t0, long t1) {
        c0 = Math.max(c0, colMin);
        r0 = Math.max(r0, rowMin);
        c1 = Math.min(c1, colMax);
        r1 = Math.min(r1, rowMax);
        long b0 = 0, b1 = 0;
        if (spaceTime) {
            t0 = Math.max(t0, timeMin);
            t1 = Math.min(t1, timeMax);
            if (t0 > t1) return List.of();
            b0 = bin(t0);
            b1 = bin(t1);
        }
        if (c0 > c1 || r0 > r1) return List.of();
        long cells = (long) (c1 - c0 + 1) * (r1 - r0 + 1);
        if (b1 - b0 + 1 > MAX_CELLS || cells * (b1 - b0 + 1) > MAX_CELLS) {
            return span(c0, r0, c1, r1, b0, b1);
        }
        long[] all = new long[(int) (cells * (b1 - b0 + 1))];
        int k = 0;
        for (long b = b0; b <= b1; b++) {
            for (int r = r0; r <= r1; r++) {
                for (int c = c0; c <= c1; c++) {
                    all[k++] = indexOfBin(c, r, b);
                }
            }
        }
        java.util.Arrays.sort(all);
        List<IndexRange> out = new ArrayList<>();
        long lo = all[0], hi = all[0];
        for (int i = 1; i < all.length; i++) {
            if (all[i] <= hi + 1) {
                hi = Math.max(hi, all[i]);
            } else {
                out.add(new IndexRange(lo, hi));
                lo = hi = all[i];
            }
        }
        out.add(new IndexRange(lo, hi));
        return out;
    }

    /** Whether a key lies in the key bounds. */
    public final boolean inBounds(int col, int row, long millis) {
        return col >= colMin && col <= colMax && row >= rowMin && row <= rowMax
            && (!spaceTime || (millis >= timeMin && millis <= timeMax));
    }

    /**
     * The index a layer's attributes describe.
     *
     * @param json      the attribute's {@code keyIndex} object
     * @param spaceTime whether the layer's keys are SpaceTimeKeys
     * @throws SfcLayerException.UnsupportedFormat for a key index type sfclayer does not know
     * @throws SfcLayerException.CorruptLayer      when a property is missing
     */
    public static GtKeyIndex fromJson(JsonNode json, boolean spaceTime, String where) {
        String type = text(json, "type", where);
        JsonNode p = json.get("properties");
        if (p == null) throw new SfcLayerException.CorruptLayer(where + ": keyIndex has no properties");
        JsonNode kb = p.get("keyBounds");
        if (kb == null) throw new SfcLayerException.CorruptLayer(where + ": keyIndex has no keyBounds");
        JsonNode min = kb.get("minKey"), max = kb.get("maxKey");
        if (min == null || max == null) throw new SfcLayerException.CorruptLayer(where + ": keyBounds without minKey/maxKey");
        int c0 = integer(min, "col", where), r0 = integer(min, "row", where);
        int c1 = integer(max, "col", where), r1 = integer(max, "row", where);
        long t0 = spaceTime ? instant(min, where) : 0, t1 = spaceTime ? instant(max, where) : 0;
        switch (type) {
            case "zorder":
                return spaceTime
                    ? new GtZIndex(c0, r0, c1, r1, t0, t1, along(p, "temporalResolution", where))
                    : new GtZIndex(c0, r0, c1, r1);
            case "hilbert":
                return spaceTime
                    ? new GtHilbertIndex(c0, r0, c1, r1, t0, t1, integer(p, "xResolution", where),
                        integer(p, "yResolution", where), integer(p, "temporalResolution", where))
                    : new GtHilbertIndex(c0, r0, c1, r1, integer(p, "xResolution", where),
                        integer(p, "yResolution", where));
            case "rowmajor":
                if (spaceTime) break;
                return new GtRowMajorIndex(c0, r0, c1, r1);
            default:
                break;
        }
        throw new SfcLayerException.UnsupportedFormat(where + ": GeoTrellis key index type '" + type + "'"
            + (spaceTime ? " for space-time keys" : "") + " is not one sfclayer reads (zorder, hilbert, rowmajor)");
    }

    static long instant(JsonNode key, String where) {
        JsonNode v = key.has("instant") ? key.get("instant") : key.get("millis");
        if (v == null || !v.canConvertToLong()) {
            throw new SfcLayerException.CorruptLayer(where + ": space-time key without instant: " + key);
        }
        return v.asLong();
    }

    static String text(JsonNode o, String field, String where) {
        JsonNode v = o.get(field);
        if (v == null || !v.isTextual()) throw new SfcLayerException.CorruptLayer(where + ": no " + field + " in " + o);
        return v.asText();
    }

    static int integer(JsonNode o, String field, String where) {
        JsonNode v = o.get(field);
        if (v == null || !v.canConvertToInt()) throw new SfcLayerException.CorruptLayer(where + ": no integer " + field + " in " + o);
        return v.asInt();
    }

    static long along(JsonNode o, String field, String where) {
        JsonNode v = o.get(field);
        if (v == null || !v.canConvertToLong()) throw new SfcLayerException.CorruptLayer(where + ": no integer " + field + " in " + o);
        return v.asLong();
    }

    static List<IndexRange> one(long lo, long hi) {
        List<IndexRange> out = new ArrayList<>(1);
        out.add(new IndexRange(lo, hi));
        return out;
    }

    @Override
    public String toString() {
        return kind() + (spaceTime ? " space-time" : "") + " index over cols " + colMin + ".." + colMax
            + ", rows " + rowMin + ".." + rowMax + (spaceTime ? ", ms " + timeMin + ".." + timeMax : "");
    }
}
