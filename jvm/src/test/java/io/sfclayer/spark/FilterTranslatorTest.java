package io.sfclayer.spark;

import io.sfclayer.curve.KeyBounds;
import io.sfclayer.curve.QueryBox;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.layer.TileGrid;
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
import org.apache.spark.sql.sources.StringStartsWith;
import org.junit.Test;

import java.sql.Timestamp;
import java.time.Instant;
import java.util.List;
import java.util.Random;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

public class FilterTranslatorTest {
    private static final KeyBounds BOUNDS = new KeyBounds(0, 10, 99, 59);
    /** 100 x 50 tiles of 2 x 2 map units over x 0..200, y 0..100. */
    private static final TileGrid GRID = new TileGrid(new LayerMetadata.Extent(0, 0, 200, 100), BOUNDS);
    private static final FilterTranslator SPATIAL = new FilterTranslator(BOUNDS, false, GRID);
    private static final FilterTranslator SPACE_TIME = new FilterTranslator(BOUNDS, true, null);

    private static final long T0 = 1_577_836_800_000_000L; // 2020-01-01T00:00:00Z in micros

    private static QueryBox box(int c0, int r0, int c1, int r1) {
        return QueryBox.of(c0, r0, c1, r1);
    }

    private static FilterTranslator.Result all(FilterTranslator t, Filter... filters) {
        return t.translateAll(filters, null);
    }

    @Test
    public void comparisonsOnKeysBecomeOneExactBox() {
        FilterTranslator.Result r = all(SPATIAL, new GreaterThanOrEqual("col", 10), new LessThan("col", 21),
            new GreaterThan("row", 4), new LessThanOrEqual("row", 30), new IsNotNull("col"));
        assertEquals(List.of(box(10, 10, 20, 30)), r.boxes);
        assertEquals(5, r.pushed.length);
        assertEquals(0, r.postScan.length);
        assertEquals(List.of(box(7, 12, 7, 12)), all(SPATIAL, new EqualTo("col", 7), new EqualNullSafe("row", 12L)).boxes);
    }

    @Test
    public void outsideTheBoundsMatchesNothing() {
        assertEquals(List.of(), all(SPATIAL, new GreaterThan("col", 99)).boxes);
        assertEquals(List.of(), all(SPATIAL, new LessThan("row", 10)).boxes);
        assertEquals(List.of(), all(SPATIAL, new GreaterThan("col", Long.MAX_VALUE)).boxes);
        assertEquals(List.of(), all(SPATIAL, new EqualTo("col", null)).boxes);
        assertEquals(List.of(), all(SPATIAL, new IsNull("row")).boxes);
        assertEquals(List.of(), all(SPATIAL, new GreaterThan("col", 5), new LessThan("col", 5)).boxes);
    }

    @Test
    public void orsAndInsBecomeSeveralBoxes() {
        FilterTranslator.Result r = all(SPATIAL, new Or(new EqualTo("col", 3), new And(new EqualTo("row", 20),
            new LessThan("col", 50))));
        assertEquals(List.of(box(3, 10, 3, 59), box(0, 20, 49, 20)), r.boxes);
        assertEquals(0, r.postScan.length);
        // consecutive values share a box; nulls never match
        r = all(SPATIAL, new In("col", new Object[] {5, 1, 2, 3, null, 9, 200}));
        assertEquals(List.of(box(1, 10, 3, 59), box(5, 10, 5, 59), box(9, 10, 9, 59)), r.boxes);
        // a box held in another one goes
        r = all(SPATIAL, new Or(new EqualTo("col", 3), new LessThan("col", 10)));
        assertEquals(List.of(box(0, 10, 9, 59)), r.boxes);
    }

    @Test
    public void notIsPushedThrough() {
        FilterTranslator.Result r = all(SPATIAL, new Not(new Or(new LessThan("col", 10), new GreaterThan("col", 20))));
        assertEquals(List.of(box(10, 10, 20, 59)), r.boxes);
        r = all(SPATIAL, new Not(new EqualTo("row", 30)));
        assertEquals(List.of(box(0, 10, 99, 29), box(0, 31, 99, 59)), r.boxes);
        r = all(SPATIAL, new Not(new In("col", new Object[] {0, 1, 5})));
        assertEquals(List.of(box(2, 10, 4, 59), box(6, 10, 99, 59)), r.boxes);
        assertEquals(List.of(), all(SPATIAL, new Not(new In("col", new Object[] {1, null}))).boxes);
        assertEquals(0, r.postScan.length);
    }

    @Test
    public void untranslatableFiltersGoBackToSpark() {
        Filter v = new GreaterThan("value", 3);
        Filter s = new StringStartsWith("name", "a");
        FilterTranslator.Result r = all(SPATIAL, v, s, new EqualTo("col", 4));
        assertEquals(List.of(box(4, 10, 4, 59)), r.boxes);
        assertArrayEquals(new Filter[] {v, s}, r.postScan);
        assertArrayEquals(new Filter[] {new EqualTo("col", 4)}, r.pushed);
        // a decimal, a string or NaN is not translated
        assertEquals(1, all(SPATIAL, new EqualTo("col", new java.math.BigDecimal("4"))).postScan.length);
        assertEquals(1, all(SPATIAL, new EqualTo("col", "4")).postScan.length);
        assertEquals(1, all(SPATIAL, new LessThan("xmin", Double.NaN)).postScan.length);
        // an OR with an untranslatable side gives nothing
        r = all(SPATIAL, new Or(new EqualTo("col", 3), v));
        assertEquals(List.of(SPATIAL.all()), r.boxes);
        assertEquals(0, r.pushed.length);
        assertEquals(1, r.postScan.length);
    }

    @Test
    public void andWithAnUntranslatablePartIsASuperset() {
        Filter f = new Or(new And(new EqualTo("col", 3), new GreaterThan("value", 1)), new EqualTo("col", 9));
        FilterTranslator.Result r = all(SPATIAL, f);
        assertEquals(List.of(box(3, 10, 3, 59), box(9, 10, 9, 59)), r.boxes);
        assertArrayEquals(new Filter[] {f}, r.pushed);
        assertArrayEquals(new Filter[] {f}, r.postScan);
    }

    @Test
    public void tooManyBoxesCollapseToTheirHullAndEverythingGoesBackToSpark() {
        Object[] cols = new Object[FilterTranslator.MAX_BOXES + 1];
        for (int i = 0; i < cols.length; i++) cols[i] = i * 2 + 1;
        Filter in = new In("col", cols);
        Filter row = new EqualTo("row", 11);
        FilterTranslator wide = new FilterTranslator(new KeyBounds(0, 0, 999, 999), false, null);
        FilterTranslator.Result r = all(wide, row, in);
        assertEquals(List.of(box(1, 11, 2 * FilterTranslator.MAX_BOXES + 1, 11)), r.boxes);
        assertArrayEquals(new Filter[] {in}, r.postScan); // row = 11 still holds exactly in the hull
        // within the cap, exact
        Object[] few = new Object[FilterTranslator.MAX_BOXES];
        System.arraycopy(cols, 0, few, 0, few.length);
        assertEquals(0, all(wide, new In("col", few)).postScan.length);
        // two ORs whose product exceeds the cap
        Filter a = new In("col", new Object[] {1, 3, 5, 7, 9, 11, 13, 15, 17});
        Filter b = new In("row", new Object[] {11, 13, 15, 17, 19, 21, 23, 25});
        r = all(SPATIAL, a, b);
        assertEquals(List.of(box(1, 11, 17, 25)), r.boxes);
        assertArrayEquals(new Filter[] {a, b}, r.postScan);
    }

    @Test
    public void timeFiltersTakeTimestampsAndInstants() {
        Timestamp ts = Timestamp.from(Instant.ofEpochSecond(T0 / 1_000_000));
        FilterTranslator.Result r = all(SPACE_TIME, new GreaterThanOrEqual("time", ts),
            new LessThan("time", Instant.ofEpochSecond(T0 / 1_000_000 + 3600)), new EqualTo("col", 1));
        assertEquals(List.of(QueryBox.of(1, 10, 1, 59, T0, T0 + 3_600_000_000L - 1)), r.boxes);
        assertEquals(0, r.postScan.length);
        r = all(SPACE_TIME, new In("time", new Object[] {Instant.ofEpochSecond(T0 / 1_000_000), ts}));
        assertEquals(List.of(QueryBox.of(0, 10, 99, 59, T0, T0)), r.boxes);
        // a spatial layer has no time column: not translated
        assertEquals(1, all(SPATIAL, new EqualTo("time", ts)).postScan.length);
        // a layer without extent has no envelope columns (a value column may bear the name)
        assertEquals(1, all(SPACE_TIME, new EqualTo("xmin", 1.0)).postScan.length);
    }

    @Test
    public void envelopeFiltersSelectExactlyTheTilesWhoseEnvelopeMatches() {
        // intersects form over x 10..20, y 30..40: cols 4..10 (xmax >= 10, xmin <= 20), rows 29..35 in y-down order
        FilterTranslator.Result r = all(SPATIAL, new GreaterThanOrEqual("xmax", 10.0), new LessThanOrEqual("xmin", 20.0),
            new GreaterThanOrEqual("ymax", 30.0), new LessThanOrEqual("ymin", 40.0));
        int[] k = GRID.keyBox(10, 30, 20, 40);
        assertEquals(List.of(box(k[0], k[1], k[2], k[3])), r.boxes);
        assertEquals(List.of(box(4, 39, 10, 45)), r.boxes);
        assertEquals(0, r.postScan.length);
        // strict bounds drop the touching tiles
        r = all(SPATIAL, new GreaterThan("xmax", 10.0), new LessThan("xmin", 20.0));
        assertEquals(List.of(box(5, 10, 9, 59)), r.boxes);
        // the bbox option joins as an extra box
        r = SPATIAL.translateAll(new Filter[] {new EqualTo("col", 5)}, List.of(box(0, 10, 7, 12)));
        assertEquals(List.of(box(5, 10, 5, 12)), r.boxes);
    }

    @Test
    public void randomFiltersAgreeWithBruteForce() {
        Random rnd = new Random(5);
        String[] columns = {"col", "row", "xmin", "ymin", "xmax", "ymax"};
        for (int t = 0; t < 500; t++) {
            Filter[] fs = new Filter[1 + rnd.nextInt(3)];
            for (int i = 0; i < fs.length; i++) fs[i] = randomFilter(rnd, columns, 2);
            FilterTranslator.Result r = SPATIAL.translateAll(fs, null);
            for (int c = BOUNDS.colMin; c <= BOUNDS.colMax; c++) {
                for (int row = BOUNDS.rowMin; row <= BOUNDS.rowMax; row++) {
                    boolean want = true;
                    for (Filter f : fs) want &= eval(f, c, row);
                    boolean inBoxes = false;
                    for (QueryBox b : r.boxes) inBoxes |= b.contains(c, row, 0);
                    if (want) {
                        assertTrue("(" + c + "," + row + ") must be in " + r.boxes + " for " + List.of(fs), inBoxes);
                    }
                    if (r.postScan.length == 0) {
                        assertEquals("exact for " + List.of(fs) + " at (" + c + "," + row + ")", want, inBoxes);
                    }
                }
            }
        }
    }

    private static Filter randomFilter(Random rnd, String[] columns, int depth) {
        int kind = rnd.nextInt(depth > 0 ? 9 : 6);
        String c = columns[rnd.nextInt(columns.length)];
        Object v = c.equals("col") || c.equals("row") ? (Object) (rnd.nextInt(120) - 10)
            : (Object) (rnd.nextBoolean() ? rnd.nextInt(100) * 2.0 : rnd.nextDouble() * 210 - 5);
        switch (kind) {
            case 0: return new EqualTo(c, v);
            case 1: return new LessThan(c, v);
            case 2: return new LessThanOrEqual(c, v);
            case 3: return new GreaterThan(c, v);
            case 4: return new GreaterThanOrEqual(c, v);
            case 5: return new GreaterThan("value", 0); // untranslatable; true in eval
            case 6: return new And(randomFilter(rnd, columns, depth - 1), randomFilter(rnd, columns, depth - 1));
            case 7: return new Or(randomFilter(rnd, columns, depth - 1), randomFilter(rnd, columns, depth - 1));
            default: return new Not(randomFilter(rnd, columns, depth - 1));
        }
    }

    /** The filter on tile (col, row); "value" is taken to be 1. */
    private static boolean eval(Filter f, int col, int row) {
        if (f instanceof And) return eval(((And) f).left(), col, row) && eval(((And) f).right(), col, row);
        if (f instanceof Or) return eval(((Or) f).left(), col, row) || eval(((Or) f).right(), col, row);
        if (f instanceof Not) return !eval(((Not) f).child(), col, row);
        String a = f.references()[0];
        double x;
        switch (a) {
            case "col": x = col; break;
            case "row": x = row; break;
            case "value": x = 1; break;
            default: x = GRID.coordinate(a, col, row);
        }
        double v;
        if (f instanceof EqualTo) return x == ((Number) ((EqualTo) f).value()).doubleValue();
        if (f instanceof LessThan) return x < ((Number) ((LessThan) f).value()).doubleValue();
        if (f instanceof LessThanOrEqual) return x <= ((Number) ((LessThanOrEqual) f).value()).doubleValue();
        if (f instanceof GreaterThan) return x > ((Number) ((GreaterThan) f).value()).doubleValue();
        if (f instanceof GreaterThanOrEqual) return x >= ((Number) ((GreaterThanOrEqual) f).value()).doubleValue();
        throw new IllegalArgumentException(f.toString());
    }

    @Test
    public void negateFollowsThreeValuedLogic() {
        assertEquals(new IsNotNull("col"), FilterTranslator.negate(new EqualNullSafe("col", null)));
        assertEquals(new org.apache.spark.sql.sources.AlwaysFalse(), FilterTranslator.negate(new LessThan("col", null)));
        assertNull(FilterTranslator.negate(new StringStartsWith("name", "a")));
        assertFalse(FilterTranslator.negate(new Not(new EqualTo("col", 1))) instanceof Not);
    }
}
