package io.sfclayer.curve;

import io.sfclayer.SfcLayerException;

import java.io.Serializable;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Maps a layer's tile keys {@code (col, row)} or {@code (col, row, time)} to a 64-bit space-filling-curve
 * index, and query boxes to index ranges. Built from the layer's inclusive {@link KeyBounds} (plus
 * {@link TimeBounds} for {@code z3}); keys are offset by the bounds' minimums, so the smallest index
 * is 0 for every kind. Construction refuses bounds the curve cannot index in 64 bits.
 *
 * <p>Kinds ({@link #kind()}) and their JSON form ({@link #toJson()}, the on-disk contract shared with
 * {@code sfclayer.curves} in Python):
 * <ul>
 *   <li>{@code "z"}: {@link Z2} of {@code (col - colMin, row - rowMin)}; at most 2^31 cols and 2^31 rows.</li>
 *   <li>{@code "hilbert"}: {@link Hilbert} of the offsets, order {@code max(1, ceil(log2(max(width, height))))}
 *       (written as {@code "order"}); order at most 31.</li>
 *   <li>{@code "rowmajor"}: {@code (row - rowMin) * width + (col - colMin)}; at most 2^63-1 keys.</li>
 *   <li>{@code "z3"}: {@link Z3} of the offsets and the time bin {@code floor((t - timeMin) / timeResolution)}
 *       (times in epoch microseconds); at most 2^21 cols, rows and bins.</li>
 * </ul>
 * {@code {"kind":"z","colMin":0,"rowMin":0,"colMax":99,"rowMax":499}}, plus {@code "order"} for hilbert
 * and {@code "timeMin","timeMax","timeResolution"} for z3.
 */
public abstract class KeyIndex implements Serializable {
    private static final long serialVersionUID = 1L;

    final KeyBounds bounds;

    KeyIndex(KeyBounds bounds) {
        if (bounds == null) throw new SfcLayerException.InvalidArgument(
            "key bounds: null is missing (colMin, rowMin, colMax, rowMax)");
        this.bounds = bounds;
    }

    /** Z-order index over {@code bounds}. @throws SfcLayerException.InvalidArgument if a side exceeds 2^31 */
    public static KeyIndex z(KeyBounds bounds) {
        return new ZKeyIndex(bounds);
    }

    /** Hilbert index over {@code bounds}. @throws SfcLayerException.InvalidArgument if a side exceeds 2^31 */
    public static KeyIndex hilbert(KeyBounds bounds) {
        return new HilbertKeyIndex(bounds);
    }

    /** Row-major index over {@code bounds}. @throws SfcLayerException.InvalidArgument if there are over 2^63-1 keys */
    public static KeyIndex rowMajor(KeyBounds bounds) {
        return new RowMajorKeyIndex(bounds);
    }

    /** Space-time Z-order index. @throws SfcLayerException.InvalidArgument if a side or the bin count exceeds 2^21 */
    public static KeyIndex z3(KeyBounds bounds, TimeBounds timeBounds) {
        return new Z3KeyIndex(bounds, timeBounds);
    }

    /**
     * The index of kind {@code kind} ("z", "hilbert", "rowmajor" or "z3"; case-insensitive, "row-major" and
     * "row_major" accepted); {@code timeBounds} is required for z3 and must be null for the others.
     */
    public static KeyIndex create(String kind, KeyBounds bounds, TimeBounds timeBounds) {
        String k = kind == null ? "" : kind.trim().toLowerCase(java.util.Locale.ROOT).replace("-", "").replace("_", "");
        if (!k.equals("z3") && timeBounds != null) {
            throw new SfcLayerException.InvalidArgument("time bounds: " + timeBounds + " are given to a " + k
                + " key index (only z3 takes them)");
        }
        switch (k) {
            case "z": return z(bounds);
            case "hilbert": return hilbert(bounds);
            case "rowmajor": return rowMajor(bounds);
            case "z3":
                if (timeBounds == null) {
                    throw new SfcLayerException.InvalidArgument(
                        "time bounds: null is missing (a z3 key index needs them)");
                }
                return z3(bounds, timeBounds);
            default:
                throw new SfcLayerException.InvalidArgument(
                    "key index kind: \"" + kind + "\" is unknown (z, hilbert, rowmajor or z3)");
        }
    }

    /** "z", "hilbert", "rowmajor" or "z3". */
    public abstract String kind();

    public KeyBounds bounds() {
        return bounds;
    }

    /** Time bounds of a z3 index; null for the 2D kinds. */
    public TimeBounds timeBounds() {
        return null;
    }

    public boolean isSpaceTime() {
        return false;
    }

    /** A key as messages show it: {@code (col=.., row=..)}, or {@code (col=.., row=.., time=<ISO instant>)}. */
    public static String describeKey(long col, long row, boolean spaceTime, long timeMicros) {
        return "(col=" + col + ", row=" + row + (spaceTime ? ", time=" + TimeBounds.formatMicros(timeMicros) : "") + ")";
    }

    /**
     * Index of a 2D key.
     *
     * @throws SfcLayerException.KeyOutOfBounds if the key is outside the bounds
     * @throws SfcLayerException.InvalidArgument on a z3 index (use {@link #index(int, int, long)})
     */
    public long index(int col, int row) {
        if (!bounds.contains(col, row)) {
            throw new SfcLayerException.KeyOutOfBounds(
                "key: " + describeKey(col, row, false, 0) + " is outside the layer's key bounds (" + bounds + ")");
        }
        return offsetIndex((long) col - bounds.colMin, (long) row - bounds.rowMin);
    }

    /**
     * Index of a space-time key (time in epoch microseconds); the 2D kinds ignore {@code timeMicros}.
     *
     * @throws SfcLayerException.KeyOutOfBounds if the key is outside the bounds
     */
    public long index(int col, int row, long timeMicros) {
        return index(col, row);
    }

    /** Index of offsets {@code x = col - colMin}, {@code y = row - rowMin} already known to be in bounds (2D kinds). */
    abstract long offsetIndex(long x, long y);

    /** The largest index of any key in bounds (the smallest is always 0). */
    public abstract long maxIndex();

    /**
     * The key of an index: {@code {col, row}}, or {@code {col, row, timeBin}} for z3 (the bin's first
     * microsecond is {@code timeBounds().binStart(timeBin)}).
     *
     * @throws SfcLayerException.KeyOutOfBounds if no key in bounds has this index
     */
    public long[] decode(long index) {
        long[] xy = index < 0 || index > maxIndex() ? null : decodeOffsets(index);
        if (xy == null || xy[0] >= bounds.width() || xy[1] >= bounds.height()) {
            throw notAnIndex(index);
        }
        return new long[] {bounds.colMin + xy[0], bounds.rowMin + xy[1]};
    }

    /** Offsets {x, y} of a non-negative index no larger than maxIndex() (may be outside width/height). */
    abstract long[] decodeOffsets(long index);

    SfcLayerException.KeyOutOfBounds notAnIndex(long index) {
        return new SfcLayerException.KeyOutOfBounds("index: " + index
            + " is not the index of any key in the layer's key bounds (" + boundsText() + ")");
    }

    String boundsText() {
        return bounds.toString();
    }

    /** Exact index ranges of the keys in {@code box} (clipped to the bounds). */
    public List<IndexRange> ranges(QueryBox box) {
        return ranges(box, 0);
    }

    /**
     * The index ranges of the keys in {@code box}, clipped to the bounds (an empty list when they do not
     * meet): sorted, disjoint, adjacent ranges merged. Exact when {@code maxRanges <= 0}; otherwise at most
     * {@code maxRanges} ranges covering a superset, made by merging across the smallest gaps
     * (see {@link RangeMerge#capRanges}). 2D kinds ignore the box's time range.
     */
    public List<IndexRange> ranges(QueryBox box, int maxRanges) {
        int c0 = Math.max(box.colMin, bounds.colMin), c1 = Math.min(box.colMax, bounds.colMax);
        int r0 = Math.max(box.rowMin, bounds.rowMin), r1 = Math.min(box.rowMax, bounds.rowMax);
        if (c0 > c1 || r0 > r1) return new ArrayList<>(0);
        return offsetRanges((long) c0 - bounds.colMin, (long) r0 - bounds.rowMin,
            (long) c1 - bounds.colMin, (long) r1 - bounds.rowMin, box, maxRanges);
    }

    /** Ranges of the clipped, non-empty offset box {@code x0..x1, y0..y1}. */
    abstract List<IndexRange> offsetRanges(long x0, long y0, long x1, long y1, QueryBox box, int maxRanges);

    /** The JSON form (a LinkedHashMap in a fixed key order). */
    public Map<String, Object> toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("kind", kind());
        m.put("colMin", bounds.colMin);
        m.put("rowMin", bounds.rowMin);
        m.put("colMax", bounds.colMax);
        m.put("rowMax", bounds.rowMax);
        return m;
    }

    /**
     * Reads {@link #toJson()}'s form; numbers may be any {@link Number} holding an integer (Jackson gives
     * Integer, Long or BigInteger). Unknown keys are ignored. For hilbert, {@code "order"} may be absent,
     * but if present must match the bounds.
     *
     * @throws SfcLayerException.InvalidArgument if the map is not a valid key index
     */
    public static KeyIndex fromJson(Map<String, Object> json) {
        if (json == null) throw new SfcLayerException.InvalidArgument("key index JSON: null is not an object (a JSON object)");
        Object kind = json.get("kind");
        if (!(kind instanceof String)) {
            throw new SfcLayerException.InvalidArgument("key index JSON \"kind\": " + (kind == null ? "null" : kind)
                + " is not a string (z, hilbert, rowmajor or z3)");
        }
        KeyBounds b = new KeyBounds(intField(json, "colMin"), intField(json, "rowMin"),
            intField(json, "colMax"), intField(json, "rowMax"));
        switch ((String) kind) {
            case "z":
                return z(b);
            case "rowmajor":
                return rowMajor(b);
            case "hilbert": {
                HilbertKeyIndex h = new HilbertKeyIndex(b);
                if (json.get("order") != null && longField(json, "order") != h.order) {
                    throw new SfcLayerException.InvalidArgument("key index JSON \"order\": " + json.get("order")
                        + " does not match the key bounds (" + b + " give order " + h.order + ")");
                }
                return h;
            }
            case "z3":
                return z3(b, new TimeBounds(longField(json, "timeMin"), longField(json, "timeMax"),
                    longField(json, "timeResolution")));
            default:
                throw new SfcLayerException.InvalidArgument(
                    "key index kind: \"" + kind + "\" is unknown (z, hilbert, rowmajor or z3)");
        }
    }

    static long longField(Map<String, Object> json, String name) {
        Object v = json.get(name);
        if (v == null) {
            throw new SfcLayerException.InvalidArgument("key index JSON \"" + name + "\": null is missing (a required field)");
        }
        if (v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte) {
            return ((Number) v).longValue();
        }
        try {
            if (v instanceof BigInteger) return ((BigInteger) v).longValueExact();
            if (v instanceof Number) return new BigDecimal(v.toString()).longValueExact();
        } catch (ArithmeticException | NumberFormatException e) {
            // fall through
        }
        throw new SfcLayerException.InvalidArgument(
            "key index JSON \"" + name + "\": " + v + " is not a 64-bit integer (-2^63..2^63-1)");
    }

    static int intField(Map<String, Object> json, String name) {
        long v = longField(json, name);
        if (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE) {
            throw new SfcLayerException.InvalidArgument(
                "key index JSON \"" + name + "\": " + v + " is not a 32-bit integer (-2^31..2^31-1)");
        }
        return (int) v;
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) return true;
        if (o == null || o.getClass() != getClass()) return false;
        KeyIndex k = (KeyIndex) o;
        return bounds.equals(k.bounds) && java.util.Objects.equals(timeBounds(), k.timeBounds());
    }

    @Override
    public int hashCode() {
        return kind().hashCode() * 31 + bounds.hashCode() * 7 + java.util.Objects.hashCode(timeBounds());
    }

    @Override
    public String toString() {
        return kind() + " key index over " + boundsText();
    }
}
