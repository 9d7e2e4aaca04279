package io.sfclayer.curve;

import org.junit.Test;

import java.util.List;
import java.util.Random;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

/**
 * Capped range decomposition is bounded by the cap (issue 12): worst-case boxes over huge layers plan
 * (the timeouts only catch the unbounded descent, which takes hours on these), give at most the cap
 * and cover every key of the box; within the budget the answer is the capped exact one.
 */
public class BoundedPlanningTest {
    private static final int CAP = 20000;
    private static final long DAY = 86_400_000_000L;

    /** Every key of {@code samples} random keys of the box has its index in a range. */
    private static void assertCovers(KeyIndex ki, QueryBox box, List<IndexRange> ranges, long binMicros) {
        Random rnd = new Random(3);
        for (int i = 0; i < 2000; i++) {
            int c = box.colMin + (int) (rnd.nextDouble() * ((long) box.colMax - box.colMin + 1));
            int r = box.rowMin + (int) (rnd.nextDouble() * ((long) box.rowMax - box.rowMin + 1));
            if (i % 4 == 0) c = box.colMin; // edges, where a coarse cover is most likely to be wrong
            if (i % 4 == 1) r = box.rowMax;
            long t = box.timeMin + (long) (rnd.nextDouble() * (box.timeMax - box.timeMin) / binMicros) * binMicros;
            long idx = ki.isSpaceTime() ? ki.index(c, r, t) : ki.index(c, r);
            boolean in = false;
            for (IndexRange rg : ranges) in |= rg.lo <= idx && idx <= rg.hi;
            assertTrue(ki + ": key (" + c + ", " + r + ", " + t + ") index " + idx + " is not covered", in);
        }
        for (int i = 1; i < ranges.size(); i++) {
            assertTrue("sorted, disjoint, not adjacent", ranges.get(i).lo > ranges.get(i - 1).hi + 1);
        }
    }

    @Test(timeout = 20000)
    public void zOverTwoToThe31() {
        int m = Integer.MAX_VALUE;
        KeyIndex ki = KeyIndex.z(new KeyBounds(0, 0, m, m)); // 2^31 x 2^31
        QueryBox box = QueryBox.of(1, 3, m - 5, m - 1);
        List<IndexRange> rs = ki.ranges(box, CAP);
        assertTrue(rs.size() + " ranges", rs.size() <= CAP && !rs.isEmpty());
        assertCovers(ki, box, rs, 1);
    }

    @Test(timeout = 20000)
    public void hilbertOverTwoToThe31() {
        int m = Integer.MAX_VALUE;
        KeyIndex ki = KeyIndex.hilbert(new KeyBounds(0, 0, m, m));
        QueryBox box = QueryBox.of(7, 1, m - 2, m - 3);
        List<IndexRange> rs = ki.ranges(box, CAP);
        assertTrue(rs.size() <= CAP && !rs.isEmpty());
        assertCovers(ki, box, rs, 1);
    }

    @Test(timeout = 20000)
    public void z3TimeOnlyFilterOverTwoToThe21Bins() {
        int side = (1 << 21) - 1;
        TimeBounds tb = new TimeBounds(0, ((1L << 21) - 1) * DAY, DAY); // 2^21 daily bins
        KeyIndex ki = KeyIndex.z3(new KeyBounds(0, 0, side, side), tb);
        // all of space, a time range that starts and ends mid-curve
        QueryBox box = QueryBox.of(0, 0, side, side, 12345 * DAY, 1_500_000 * DAY);
        List<IndexRange> rs = ki.ranges(box, CAP);
        assertTrue(rs.size() <= CAP && !rs.isEmpty());
        assertCovers(ki, box, rs, DAY);
    }

    @Test(timeout = 60000)
    public void rowMajorWithAMillionRows() {
        KeyIndex ki = KeyIndex.rowMajor(new KeyBounds(0, 0, 999, 999_999));
        QueryBox box = QueryBox.of(1, 5, 998, 999_990);
        List<IndexRange> rs = ki.ranges(box, 100);
        assertEquals(100, rs.size());
        assertCovers(ki, box, rs, 1);
        // 2 * 10^9 rows: listing each row (what the unbounded planner did) takes minutes
        KeyIndex tall = KeyIndex.rowMajor(new KeyBounds(0, 0, 999, 1_999_999_999));
        QueryBox all = QueryBox.of(1, 0, 998, 1_999_999_999);
        List<IndexRange> coarse = tall.ranges(all, CAP);
        assertEquals(CAP, coarse.size());
        assertCovers(tall, all, coarse, 1);
    }

    @Test
    public void rowMajorWithinTheBudgetListsEveryRow() {
        KeyIndex ki = KeyIndex.rowMajor(new KeyBounds(0, 0, 999, 999_999));
        assertEquals(999_986, ki.ranges(QueryBox.of(1, 5, 998, 999_990), 1_000_000).size());
    }

    /** Within the budget, capped = the exact ranges capped by the gap rule (the cross-language contract). */
    @Test
    public void withinTheBudgetTheCapIsTheExactAnswerCapped() {
        Random rnd = new Random(42);
        KeyBounds b = new KeyBounds(-50, 10, 461, 300);
        TimeBounds tb = new TimeBounds(0, 99 * DAY, DAY);
        KeyIndex[] kis = {KeyIndex.z(b), KeyIndex.hilbert(b), KeyIndex.rowMajor(b), KeyIndex.z3(b, tb)};
        for (int i = 0; i < 400; i++) {
            int c0 = -50 + rnd.nextInt(512), c1 = c0 + rnd.nextInt(200);
            int r0 = 10 + rnd.nextInt(291), r1 = r0 + rnd.nextInt(100);
            long t0 = rnd.nextInt(100) * DAY, t1 = t0 + rnd.nextInt(30) * DAY;
            QueryBox box = QueryBox.of(c0, r0, c1, r1, t0, t1);
            // z3 boxes small enough that their exact pieces fit the budget (a box's surface bounds them)
            QueryBox small = QueryBox.of(c0, r0, c0 + rnd.nextInt(30), r0 + rnd.nextInt(30), t0, t0 + rnd.nextInt(8) * DAY);
            int cap = 1 + rnd.nextInt(60);
            for (KeyIndex ki : kis) {
                if (ki.isSpaceTime()) box = small;
                assertEquals(ki + " " + box + " cap " + cap, RangeMerge.capRanges(ki.ranges(box, 0), cap),
                    ki.ranges(box, cap));
            }
        }
    }
}
