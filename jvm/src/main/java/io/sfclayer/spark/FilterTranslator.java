package io.sfclayer.spark;

import io.sfclayer.curve.KeyBounds;
import io.sfclayer.curve.QueryBox;
import io.sfclayer.layer.TileGrid;
import org.apache.spark.sql.catalyst.util.DateTimeUtils;
import org.apache.spark.sql.sources.AlwaysFalse;
import org.apache.spark.sql.sources.AlwaysTrue;
import org.apache.spark.sql.sources.And;
import org.apache.spark.sql.sources.EqualNullSafe;
import org.apache.spark.sql.sources.EqualTo;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.sources.GreaterThan;
import org.apache.spark.sql.sources.GreaterThanOrEqual;
import org.apache.spark.sql.sources.In;
import org.apache.spark.sql.sources.IsNotNull;
import org.apache.spark.sql.sources.IsNull;
import org.apache.spark.sql.sources.LessThan;
import org.apache.spark.sql.sources.LessThanOrEqual;
import org.apache.spark.sql.sources.Not;
import org.apache.spark.sql.sources.Or;

import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * Turns Spark's pushed filters into key boxes: the union of {@link QueryBox}es (cols, rows and, for
 * space-time layers, times) holding exactly the tiles the filters accept, or a superset of them.
 *
 * <p>Translated: {@code =}, {@code <=>}, {@code <}, {@code <=}, {@code >}, {@code >=}, {@code IN},
 * {@code IS [NOT] NULL}, and {@code AND}, {@code OR} and {@code NOT} of them, on {@code col}, {@code row},
 * {@code time} (Timestamp or Instant values) and, for layers with an extent, the envelope columns
 * {@code xmin}, {@code ymin}, {@code xmax}, {@code ymax} (in map units). An envelope condition becomes
 * the exact run of cols or rows whose envelope coordinate, as {@link TileGrid} computes it (the same
 * value the scan returns), satisfies it. ORs become several boxes; an AND of a translatable and an
 * untranslatable part keeps the translatable part as a superset.
 *
 * <p>A filter translated exactly is handled by the scan (its reader keeps a tile only if some box holds
 * its key), so it is not returned to Spark. A filter translated only as a superset (an AND with an
 * untranslatable part, or more than {@link #MAX_BOXES} boxes collapsed to their hull) narrows the scan
 * and is returned to Spark too. Anything else is returned to Spark untouched. Values of other types
 * (NaN, decimals, strings) are not translated, so the answer is never wrong.
 */
public final class FilterTranslator {
    /** Most boxes a query keeps; beyond this they collapse to their hull (a superset). */
    public static final int MAX_BOXES = 64;

    private final KeyBounds bounds;
    private final boolean spaceTime;
    private final TileGrid grid;

    /**
     * @param grid the layer's grid, or null when it has no extent (envelope columns are then not
     *             the layer's, and filters on them are not translated)
     */
    public FilterTranslator(KeyBounds bounds, boolean spaceTime, TileGrid grid) {
        this.bounds = bounds;
        this.spaceTime = spaceTime;
        this.grid = grid;
    }

    /** A translation: the union of {@link #boxes} (empty: nothing matches), exact or a superset. */
    public static final class Region {
        public final List<QueryBox> boxes;
        public final boolean exact;

        Region(List<QueryBox> boxes, boolean exact) {
            this.boxes = boxes;
            this.exact = exact;
        }

        @Override
        public String toString() {
            return (exact ? "exact " : "superset ") + boxes;
        }
    }

    /** The outcome of pushing a conjunction of filters. */
    public static final class Result {
        /** The key boxes of the whole conjunction (cols and rows within the key bounds); empty if nothing matches. */
        public final List<QueryBox> boxes;
        /** Filters that narrowed the boxes. */
        public final Filter[] pushed;
        /** Filters Spark must still evaluate: untranslated ones and those translated as a superset. */
        public final Filter[] postScan;

        Result(List<QueryBox> boxes, Filter[] pushed, Filter[] postScan) {
            this.boxes = boxes;
            this.pushed = pushed;
            this.postScan = postScan;
        }
    }

    /** The box of every key in bounds, at any time. */
    public QueryBox all() {
        return QueryBox.of(bounds);
    }

    /**
     * Translates the conjunction of {@code filters} and of the {@code extra} boxes (e.g. the bbox option,
     * null for none). The boxes of the result hold exactly the tiles every translated filter and
     * {@code extra} accept, unless a filter is returned in {@link Result#postScan}.
     */
    public Result translateAll(Filter[] filters, List<QueryBox> extra) {
        Region acc = new Region(List.of(all()), true);
        if (extra != null) {
            acc = intersect(acc, new Region(clip(extra), true));
        }
        List<Filter> pushed = new ArrayList<>();
        List<Filter> postScan = new ArrayList<>();
        boolean capped = false;
        for (Filter f : filters) {
            Region r = translate(f);
            if (r == null) {
                postScan.add(f);
                continue;
            }
            pushed.add(f);
            if (!r.exact) {
                postScan.add(f);
            }
            List<QueryBox> both = intersection(acc.boxes, r.boxes);
            capped |= both.size() > MAX_BOXES;
            acc = capped(both, acc.exact && r.exact);
        }
        if (capped) {
            // the boxes became a hull: Spark must evaluate every filter again
            postScan = new ArrayList<>(Arrays.asList(filters));
        }
        return new Result(acc.boxes, pushed.toArray(new Filter[0]), postScan.toArray(new Filter[0]));
    }

    /** The translation of one filter, or null when it gives no key constraint. */
    public Region translate(Filter f) {
        Region r = region(f);
        if (r == null || (!r.exact && r.boxes.size() == 1 && r.boxes.get(0).equals(all()))) {
            return null;
        }
        return r;
    }

    private Region region(Filter f) {
        if (f instanceof And) {
            Region l = region(((And) f).left());
            Region r = region(((And) f).right());
            if (l == null && r == null) return null;
            if (l == null) return new Region(r.boxes, false);
            if (r == null) return new Region(l.boxes, false);
            return intersect(l, r);
        }
        if (f instanceof Or) {
            Region l = region(((Or) f).left());
            Region r = region(((Or) f).right());
            if (l == null || r == null) return null;
            return union(l, r);
        }
        if (f instanceof Not) {
            Filter n = negate(((Not) f).child());
            return n == null ? null : region(n);
        }
        if (f instanceof AlwaysTrue) return new Region(List.of(all()), true);
        if (f instanceof AlwaysFalse) return new Region(List.of(), true);
        if (f instanceof EqualTo) return compare(((EqualTo) f).attribute(), Op.EQ, ((EqualTo) f).value());
        if (f instanceof EqualNullSafe) {
            return compare(((EqualNullSafe) f).attribute(), Op.EQ, ((EqualNullSafe) f).value());
        }
        if (f instanceof GreaterThan) return compare(((GreaterThan) f).attribute(), Op.GT, ((GreaterThan) f).value());
        if (f instanceof GreaterThanOrEqual) {
            return compare(((GreaterThanOrEqual) f).attribute(), Op.GE, ((GreaterThanOrEqual) f).value());
        }
        if (f instanceof LessThan) return compare(((LessThan) f).attribute(), Op.LT, ((LessThan) f).value());
        if (f instanceof LessThanOrEqual) {
            return compare(((LessThanOrEqual) f).attribute(), Op.LE, ((LessThanOrEqual) f).value());
        }
        if (f instanceof In) return in(((In) f).attribute(), ((In) f).values());
        // key and envelope columns are never null
        if (f instanceof IsNull) return column(((IsNull) f).attribute()) == null ? null : new Region(List.of(), true);
        if (f instanceof IsNotNull) {
            return column(((IsNotNull) f).attribute()) == null ? null : new Region(List.of(all()), true);
        }
        return null;
    }

    /**
     * NOT of a filter as a filter without NOT at its top, under SQL's three-valued logic for a
     * non-null column; null when not known (the filter is then not translated).
     */
    static Filter negate(Filter f) {
        if (f instanceof Not) return ((Not) f).child();
        if (f instanceof And) {
            Filter l = negate(((And) f).left()), r = negate(((And) f).right());
            return l == null || r == null ? null : new Or(l, r);
        }
        if (f instanceof Or) {
            Filter l = negate(((Or) f).left()), r = negate(((Or) f).right());
            return l == null || r == null ? null : new And(l, r);
        }
        if (f instanceof AlwaysTrue) return new AlwaysFalse();
        if (f instanceof AlwaysFalse) return new AlwaysTrue();
        if (f instanceof IsNull) return new IsNotNull(((IsNull) f).attribute());
        if (f instanceof IsNotNull) return new IsNull(((IsNotNull) f).attribute());
        if (f instanceof EqualNullSafe && ((EqualNullSafe) f).value() == null) {
            return new IsNotNull(((EqualNullSafe) f).attribute());
        }
        String a;
        Object v;
        if (f instanceof EqualTo || f instanceof EqualNullSafe) {
            a = f instanceof EqualTo ? ((EqualTo) f).attribute() : ((EqualNullSafe) f).attribute();
            v = f instanceof EqualTo ? ((EqualTo) f).value() : ((EqualNullSafe) f).value();
            return v == null ? new AlwaysFalse() : new Or(new LessThan(a, v), new GreaterThan(a, v));
        }
        if (f instanceof GreaterThan) {
            v = ((GreaterThan) f).value();
            return v == null ? new AlwaysFalse() : new LessThanOrEqual(((GreaterThan) f).attribute(), v);
        }
        if (f instanceof GreaterThanOrEqual) {
            v = ((GreaterThanOrEqual) f).value();
            return v == null ? new AlwaysFalse() : new LessThan(((GreaterThanOrEqual) f).attribute(), v);
        }
        if (f instanceof LessThan) {
            v = ((LessThan) f).value();
            return v == null ? new AlwaysFalse() : new GreaterThanOrEqual(((LessThan) f).attribute(), v);
        }
        if (f instanceof LessThanOrEqual) {
            v = ((LessThanOrEqual) f).value();
            return v == null ? new AlwaysFalse() : new GreaterThan(((LessThanOrEqual) f).attribute(), v);
        }
        if (f instanceof In) {
            a = ((In) f).attribute();
            Object[] vs = ((In) f).values();
            Filter acc = new AlwaysTrue();
            for (Object x : vs) {
                if (x == null) return new AlwaysFalse(); // x NOT IN (..., NULL) is never true
                Filter ne = new Or(new LessThan(a, x), new GreaterThan(a, x));
                acc = acc instanceof AlwaysTrue ? ne : new And(acc, ne);
            }
            return acc;
        }
        return null;
    }

    // ---------------------------------------------------------------- comparisons

    private enum Op { EQ, LT, LE, GT, GE }

    /** The key column a filter attribute names ("col", "row", "time", "xmin", ...), or null. */
    private String column(String attribute) {
        String a = attribute.toLowerCase(Locale.ROOT);
        switch (a) {
            case "col":
            case "row":
                return a;
            case "time":
                return spaceTime ? a : null;
            case TileGrid.XMIN:
            case TileGrid.YMIN:
            case TileGrid.XMAX:
            case TileGrid.YMAX:
                return grid != null ? a : null;
            default:
                return null;
        }
    }

    private Region compare(String attribute, Op op, Object value) {
        String c = column(attribute);
        if (c == null) return null;
        if (value == null) return new Region(List.of(), true); // comparing with NULL is never true
        if (c.equals("col") || c.equals("row") || c.equals("time")) {
            Long v = c.equals("time") ? micros(value) : integral(value);
            if (v == null) return null;
            long lo = Long.MIN_VALUE, hi = Long.MAX_VALUE;
            switch (op) {
                case EQ: lo = v; hi = v; break;
                case GE: lo = v; break;
                case LE: hi = v; break;
                case GT:
                    if (v == Long.MAX_VALUE) return new Region(List.of(), true);
                    lo = v + 1;
                    break;
                case LT:
                    if (v == Long.MIN_VALUE) return new Region(List.of(), true);
                    hi = v - 1;
                    break;
                default: throw new IllegalStateException();
            }
            return region(keyBox(c, lo, hi));
        }
        Double d = real(value);
        if (d == null) return null;
        double lo = Double.NEGATIVE_INFINITY, hi = Double.POSITIVE_INFINITY;
        boolean loIn = true, hiIn = true;
        switch (op) {
            case EQ: lo = d; hi = d; break;
            case GE: lo = d; break;
            case GT: lo = d; loIn = false; break;
            case LE: hi = d; break;
            case LT: hi = d; hiIn = false; break;
            default: throw new IllegalStateException();
        }
        return region(envelopeBox(c, lo, loIn, hi, hiIn));
    }

    private Region in(String attribute, Object[] values) {
        String c = column(attribute);
        if (c == null) return null;
        List<QueryBox> boxes = new ArrayList<>();
        if (c.equals("col") || c.equals("row") || c.equals("time")) {
            long[] vs = new long[values.length];
            int n = 0;
            for (Object x : values) {
                if (x == null) continue; // never equal
                Long v = c.equals("time") ? micros(x) : integral(x);
                if (v == null) return null;
                vs[n++] = v;
            }
            vs = Arrays.copyOf(vs, n);
            Arrays.sort(vs);
            // runs of consecutive values become one box each
            for (int i = 0; i < n; ) {
                int j = i;
                while (j + 1 < n && (vs[j + 1] == vs[j] || vs[j + 1] == vs[j] + 1)) j++;
                QueryBox b = keyBox(c, vs[i], vs[j]);
                if (b != null) boxes.add(b);
                i = j + 1;
            }
        } else {
            for (Object x : values) {
                if (x == null) continue;
                Double d = real(x);
                if (d == null) return null;
                QueryBox b = envelopeBox(c, d, true, d, true);
                if (b != null) boxes.add(b);
            }
        }
        return capped(simplify(boxes), true);
    }

    /** The box of {@code lo <= column <= hi} within the bounds; null if empty. */
    private QueryBox keyBox(String c, long lo, long hi) {
        switch (c) {
            case "col": {
                long c0 = Math.max(lo, bounds.colMin), c1 = Math.min(hi, bounds.colMax);
                return c0 > c1 ? null : new QueryBox((int) c0, bounds.rowMin, (int) c1, bounds.rowMax,
                    Long.MIN_VALUE, Long.MAX_VALUE);
            }
            case "row": {
                long r0 = Math.max(lo, bounds.rowMin), r1 = Math.min(hi, bounds.rowMax);
                return r0 > r1 ? null : new QueryBox(bounds.colMin, (int) r0, bounds.colMax, (int) r1,
                    Long.MIN_VALUE, Long.MAX_VALUE);
            }
            default:
                return new QueryBox(bounds.colMin, bounds.rowMin, bounds.colMax, bounds.rowMax, lo, hi);
        }
    }

    private QueryBox envelopeBox(String c, double lo, boolean loIn, double hi, boolean hiIn) {
        int[] run = grid.keysWhere(c, lo, loIn, hi, hiIn);
        if (run == null) return null;
        boolean x = c.equals(TileGrid.XMIN) || c.equals(TileGrid.XMAX);
        return x ? QueryBox.of(run[0], bounds.rowMin, run[1], bounds.rowMax)
            : QueryBox.of(bounds.colMin, run[0], bounds.colMax, run[1]);
    }

    private static Region region(QueryBox b) {
        return new Region(b == null ? List.of() : List.of(b), true);
    }

    /** An integral filter value, or null for anything else (which is then not translated). */
    private static Long integral(Object v) {
        if (v instanceof Integer || v instanceof Long || v instanceof Short || v instanceof Byte) {
            return ((Number) v).longValue();
        }
        return null;
    }

    /** A time filter value in epoch microseconds, or null. */
    private static Long micros(Object v) {
        if (v instanceof Timestamp) return DateTimeUtils.fromJavaTimestamp((Timestamp) v);
        if (v instanceof Instant) return DateTimeUtils.instantToMicros((Instant) v);
        return null;
    }

    /** A double filter value compared exactly as Spark compares it with a double column, or null. */
    private static Double real(Object v) {
        double d;
        if (v instanceof Double || v instanceof Float) {
            d = ((Number) v).doubleValue();
        } else if (v instanceof Integer || v instanceof Short || v instanceof Byte) {
            d = ((Number) v).doubleValue();
        } else if (v instanceof Long && Math.abs((Long) v) <= (1L << 53)) {
            d = (Long) v;
        } else {
            return null;
        }
        return Double.isNaN(d) ? null : d; // NaN sorts above everything in Spark: leave it to Spark
    }

    // ---------------------------------------------------------------- box algebra

    private List<QueryBox> clip(List<QueryBox> boxes) {
        List<QueryBox> out = new ArrayList<>();
        for (QueryBox b : boxes) {
            QueryBox c = b.intersect(all());
            if (c != null) out.add(c);
        }
        return simplify(out);
    }

    static Region intersect(Region a, Region b) {
        return capped(intersection(a.boxes, b.boxes), a.exact && b.exact);
    }

    /** The pairwise intersections of two unions of boxes, simplified (not capped). */
    private static List<QueryBox> intersection(List<QueryBox> a, List<QueryBox> b) {
        List<QueryBox> out = new ArrayList<>();
        for (QueryBox x : a) {
            for (QueryBox y : b) {
                QueryBox z = x.intersect(y);
                if (z != null) out.add(z);
            }
        }
        return simplify(out);
    }

    static Region union(Region a, Region b) {
        List<QueryBox> out = new ArrayList<>(a.boxes);
        out.addAll(b.boxes);
        return capped(simplify(out), a.exact && b.exact);
    }

    /** Drops boxes held in another box (and duplicates). */
    static List<QueryBox> simplify(List<QueryBox> boxes) {
        List<QueryBox> out = new ArrayList<>();
        for (int i = 0; i < boxes.size(); i++) {
            QueryBox b = boxes.get(i);
            boolean redundant = false;
            for (int j = 0; j < boxes.size() && !redundant; j++) {
                if (i == j) continue;
                QueryBox o = boxes.get(j);
                // held in o; of two equal boxes the later one stays
                redundant = holds(o, b) && (!holds(b, o) || j > i);
            }
            if (!redundant) out.add(b);
        }
        return out;
    }

    private static boolean holds(QueryBox outer, QueryBox inner) {
        return outer.colMin <= inner.colMin && outer.colMax >= inner.colMax && outer.rowMin <= inner.rowMin
            && outer.rowMax >= inner.rowMax && outer.timeMin <= inner.timeMin && outer.timeMax >= inner.timeMax;
    }

    /** Collapses more than {@link #MAX_BOXES} boxes into their hull (no longer exact). */
    private static Region capped(List<QueryBox> boxes, boolean exact) {
        if (boxes.size() <= MAX_BOXES) {
            return new Region(boxes, exact);
        }
        QueryBox h = boxes.get(0);
        int c0 = h.colMin, r0 = h.rowMin, c1 = h.colMax, r1 = h.rowMax;
        long t0 = h.timeMin, t1 = h.timeMax;
        for (QueryBox b : boxes) {
            c0 = Math.min(c0, b.colMin);
            r0 = Math.min(r0, b.rowMin);
            c1 = Math.max(c1, b.colMax);
            r1 = Math.max(r1, b.rowMax);
            t0 = Math.min(t0, b.timeMin);
            t1 = Math.max(t1, b.timeMax);
        }
        return new Region(List.of(new QueryBox(c0, r0, c1, r1, t0, t1)), false);
    }
}
