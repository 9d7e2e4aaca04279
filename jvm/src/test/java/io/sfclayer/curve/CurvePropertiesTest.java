package io.sfclayer.curve;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sfclayer.SfcLayerException;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeSet;

import org.junit.Test;

/** Randomised and brute-force checks of the curves, independent of the golden vectors. */
public class CurvePropertiesTest {
    private final Random rnd = new Random(42);

    private static long naiveZ2(long x, long y) {
        long z = 0;
        for (int i = 0; i < 31; i++) z |= ((x >>> i) & 1) << (2 * i) | ((y >>> i) & 1) << (2 * i + 1);
        return z;
    }

    private static long naiveZ3(long x, long y, long t) {
        long z = 0;
        for (int i = 0; i < 21; i++) {
            z |= ((x >>> i) & 1) << (3 * i) | ((y >>> i) & 1) << (3 * i + 1) | ((t >>> i) & 1) << (3 * i + 2);
        }
        return z;
    }

    @Test
    public void zEncodingsMatchNaiveBitLoops() {
        for (int n = 0; n < 20000; n++) {
            long x = rnd.nextInt() & 0x7FFFFFFFL, y = rnd.nextInt() & 0x7FFFFFFFL;
            long z = Z2.encode(x, y);
            assertEquals(naiveZ2(x, y), z);
            assertArrayEquals(new long[] {x, y}, Z2.decode(z));
            long a = x & 0x1FFFFF, b = y & 0x1FFFFF, t = rnd.nextInt(1 << 21);
            long z3 = Z3.encode(a, b, t);
            assertEquals(naiveZ3(a, b, t), z3);
            assertArrayEquals(new long[] {a, b, t}, Z3.decode(z3));
        }
        assertEquals((1L << 62) - 1, Z2.encode(Z2.LIMIT - 1, Z2.LIMIT - 1));
        assertEquals(Long.MAX_VALUE, Z3.encode(Z3.LIMIT - 1, Z3.LIMIT - 1, Z3.LIMIT - 1));
    }

    @Test
    public void hilbertIsABijectionWithNeighbouringSteps() {
        for (int order = 0; order <= 6; order++) {
            long n = 1L << order;
            boolean[] seen = new boolean[(int) (n * n)];
            long[] prev = null;
            for (long d = 0; d < n * n; d++) {
                long[] xy = Hilbert.decode(d, order);
                assertEquals(d, Hilbert.encode(xy[0], xy[1], order));
                assertTrue(!seen[(int) d]);
                seen[(int) d] = true;
                if (prev != null) {
                    assertEquals("step " + d + " order " + order, 1, Math.abs(xy[0] - prev[0]) + Math.abs(xy[1] - prev[1]));
                }
                prev = xy;
            }
        }
        for (int k = 0; k < 20000; k++) {
            int order = 1 + rnd.nextInt(31);
            long n = 1L << order;
            long d = (rnd.nextLong() & Long.MAX_VALUE) % (n * n - 1);
            long[] a = Hilbert.decode(d, order), b = Hilbert.decode(d + 1, order);
            assertEquals(1, Math.abs(a[0] - b[0]) + Math.abs(a[1] - b[1]));
            assertEquals(d, Hilbert.encode(a[0], a[1], order));
        }
    }

    /** Every cell of the box, as indexes, by brute force. */
    private static TreeSet<Long> cells(KeyIndex ki, int c0, int r0, int c1, int r1, long t0, long t1) {
        TreeSet<Long> s = new TreeSet<>();
        KeyBounds b = ki.bounds();
        for (int c = Math.max(c0, b.colMin); c <= Math.min(c1, b.colMax); c++) {
            for (int r = Math.max(r0, b.rowMin); r <= Math.min(r1, b.rowMax); r++) {
                if (!ki.isSpaceTime()) {
                    s.add(ki.index(c, r));
                    continue;
                }
                TimeBounds tb = ki.timeBounds();
                for (long bin = 0; bin < tb.bins(); bin++) {
                    long start = tb.binStart(bin), end = Math.min(tb.maxMicros, start + tb.resolutionMicros - 1);
                    if (end >= t0 && start <= t1) s.add(ki.index(c, r, start));
                }
            }
        }
        return s;
    }

    private static void assertExact(String ctx, TreeSet<Long> want, List<IndexRange> got) {
        TreeSet<Long> have = new TreeSet<>();
        for (int k = 0; k < got.size(); k++) {
            IndexRange r = got.get(k);
            if (k > 0) assertTrue(ctx + ": not sorted/merged " + got, r.lo > got.get(k - 1).hi + 1);
            for (long i = r.lo; i <= r.hi; i++) have.add(i);
        }
        assertEquals(ctx, want, have);
    }

    /** A capped decomposition within the planning budget: the exact ranges with the smallest gaps bridged. */
    private static void assertCapped(String ctx, List<IndexRange> exact, List<IndexRange> capped, int cap) {
        assertCovers(ctx, exact, capped, cap);
        assertEquals(ctx, Math.min(cap, exact.size()), capped.size());
        for (IndexRange r : exact) {
            boolean in = false;
            for (IndexRange c : capped) in |= c.lo <= r.lo && r.hi <= c.hi;
            assertTrue(ctx + ": " + r + " not covered by " + capped, in);
        }
        if (!exact.isEmpty()) {
            assertEquals(ctx, RangeMerge.capRanges(exact, cap), capped);
            assertEquals(exact.get(0).lo, capped.get(0).lo);
            assertEquals(exact.get(exact.size() - 1).hi, capped.get(capped.size() - 1).hi);
        }
    }

    /**
     * Any capped decomposition: at most {@code cap} sorted, disjoint ranges covering every exact one (past
     * the planning budget the cover is coarser than the exact ranges capped, see CappedDescent).
     */
    private static void assertCovers(String ctx, List<IndexRange> exact, List<IndexRange> capped, int cap) {
        assertTrue(ctx, capped.size() <= cap);
        for (int k = 1; k < capped.size(); k++) assertTrue(ctx, capped.get(k).lo > capped.get(k - 1).hi + 1);
        for (IndexRange r : exact) {
            boolean in = false;
            for (IndexRange c : capped) in |= c.lo <= r.lo && r.hi <= c.hi;
            assertTrue(ctx + ": " + r + " not covered by " + capped, in);
        }
    }

    @Test
    public void rangesCoverExactlyTheBoxCells() {
        for (int n = 0; n < 400; n++) {
            int c0 = rnd.nextInt(41) - 20, r0 = rnd.nextInt(41) - 20;
            KeyBounds b = new KeyBounds(c0, r0, c0 + rnd.nextInt(20), r0 + rnd.nextInt(20));
            TimeBounds tb = new TimeBounds(rnd.nextInt(1000) - 500, 1000 + rnd.nextInt(1000), 1 + rnd.nextInt(300));
            KeyIndex[] kis = {KeyIndex.z(b), KeyIndex.hilbert(b), KeyIndex.rowMajor(b), KeyIndex.z3(b, tb)};
            int q0 = c0 + rnd.nextInt(30) - 5, q1 = r0 + rnd.nextInt(30) - 5;
            int q2 = q0 + rnd.nextInt(15), q3 = q1 + rnd.nextInt(15);
            long t0 = rnd.nextInt(3000) - 1000, t1 = t0 + rnd.nextInt(1500);
            for (KeyIndex ki : kis) {
                QueryBox box = QueryBox.of(q0, q1, q2, q3, t0, t1);
                String ctx = ki + " " + box;
                List<IndexRange> exact = ki.ranges(box, 0);
                assertExact(ctx, cells(ki, q0, q1, q2, q3, t0, t1), exact);
                int cap = 1 + rnd.nextInt(6);
                assertCapped(ctx, exact, ki.ranges(box, cap), cap);
                // max index and decode over all of the bounds
                long max = -1;
                for (int c = b.colMin; c <= b.colMax; c++) {
                    for (int r = b.rowMin; r <= b.rowMax; r++) {
                        long i = ki.isSpaceTime() ? ki.index(c, r, tb.maxMicros) : ki.index(c, r);
                        max = Math.max(max, i);
                        long[] k = ki.decode(i);
                        assertEquals(c, k[0]);
                        assertEquals(r, k[1]);
                    }
                }
                assertEquals(ctx, max, ki.maxIndex());
            }
        }
    }

    @Test
    public void bigBoxesAreFastAndSane() {
        KeyIndex z = KeyIndex.z(new KeyBounds(0, 0, (1 << 20) - 1, (1 << 20) - 1));
        KeyIndex h = KeyIndex.hilbert(new KeyBounds(0, 0, (1 << 20) - 1, (1 << 20) - 1));
        QueryBox box = QueryBox.of(123457, 654321, 124456, 655320);
        for (KeyIndex ki : new KeyIndex[] {z, h}) {
            List<IndexRange> exact = ki.ranges(box);
            long cells = 0;
            for (IndexRange r : exact) cells += r.hi - r.lo + 1;
            assertEquals(1_000_000L, cells);
            assertCovers(ki.kind(), exact, ki.ranges(box, 64), 64); // past the budget of cap 64: coarser
        }
        // the full 2^21 cube: its single range ends at Long.MAX_VALUE (side^3 wraps and unwraps)
        List<IndexRange> full = Z3.ranges(0, 0, 0, Z3.LIMIT - 1, Z3.LIMIT - 1, Z3.LIMIT - 1, 0);
        assertEquals(List.of(new IndexRange(0, Long.MAX_VALUE)), full);
    }

    @Test
    public void refusesBoundsTooLarge() {
        KeyIndex.z(new KeyBounds(Integer.MIN_VALUE, 0, -1, 0)); // exactly 2^31 cols: fine
        expectInvalid(() -> KeyIndex.z(new KeyBounds(Integer.MIN_VALUE, 0, 0, 0)));
        expectInvalid(() -> KeyIndex.hilbert(new KeyBounds(Integer.MIN_VALUE, 0, Integer.MAX_VALUE, 0)));
        expectInvalid(() -> KeyIndex.rowMajor(new KeyBounds(Integer.MIN_VALUE, Integer.MIN_VALUE,
            Integer.MAX_VALUE, Integer.MAX_VALUE)));
        KeyIndex rm = KeyIndex.rowMajor(new KeyBounds(Integer.MIN_VALUE, 0, Integer.MAX_VALUE, Integer.MAX_VALUE - 1));
        assertEquals(Long.MAX_VALUE - (1L << 32), rm.maxIndex()); // 2^32 * (2^31 - 1) keys
        TimeBounds tb = new TimeBounds(0, (1L << 21) - 1, 1);
        KeyIndex.z3(new KeyBounds(0, 0, (1 << 21) - 1, 0), tb);
        expectInvalid(() -> KeyIndex.z3(new KeyBounds(0, 0, 1 << 21, 0), tb));
        expectInvalid(() -> KeyIndex.z3(new KeyBounds(0, 0, 0, 0), new TimeBounds(0, 1L << 21, 1)));
        expectInvalid(() -> new TimeBounds(Long.MIN_VALUE, Long.MAX_VALUE, 1));
        expectInvalid(() -> new TimeBounds(0, 1, 0));
        expectInvalid(() -> new KeyBounds(1, 0, 0, 0));
        expectInvalid(() -> QueryBox.of(0, 1, 0, 0));
        expectInvalid(() -> KeyIndex.z3(new KeyBounds(0, 0, 0, 0), tb).index(0, 0));
    }

    private static void expectInvalid(Runnable r) {
        try {
            r.run();
            fail("expected InvalidArgument");
        } catch (SfcLayerException.InvalidArgument e) {
            assertTrue(SfcLayerException.reason(e), SfcLayerException.reason(e).length() > 10);
        }
    }

    @Test
    public void outOfBoundsMessageNamesKeyAndBounds() {
        KeyIndex ki = KeyIndex.z(new KeyBounds(0, 0, 99, 499));
        try {
            ki.index(5, 900);
            fail();
        } catch (SfcLayerException.KeyOutOfBounds e) {
            assertEquals("key: (col=5, row=900) is outside the layer's key bounds (cols 0..99, rows 0..499)", SfcLayerException.reason(e));
        }
        assertTrue(ki.ranges(QueryBox.of(100, 0, 200, 10)).isEmpty());
        assertEquals(2, ki.ranges(QueryBox.of(-5, -5, 2, 0)).size()); // clipped to x 0..2, y 0..0: {0,1}, {4}
    }

    @Test
    public void jsonRoundTripsThroughJacksonAndAcceptsAnyIntegerNumber() throws Exception {
        ObjectMapper om = new ObjectMapper();
        KeyBounds b = new KeyBounds(-3, 7, 1000, 2000);
        KeyIndex[] kis = {KeyIndex.z(b), KeyIndex.hilbert(b), KeyIndex.rowMajor(b),
            KeyIndex.z3(b, new TimeBounds(1_577_836_800_000_000L, 1_577_836_800_000_000L + 86_400_000_000L, 3_600_000_000L))};
        for (KeyIndex ki : kis) {
            String text = om.writeValueAsString(ki.toJson());
            Map<String, Object> back = om.readValue(text, new TypeReference<Map<String, Object>>() { });
            assertEquals(ki, KeyIndex.fromJson(back));
            assertEquals(ki.hashCode(), KeyIndex.fromJson(back).hashCode());
            Map<String, Object> odd = new HashMap<>(ki.toJson());
            odd.put("colMin", -3L);
            odd.put("rowMin", BigInteger.valueOf(7));
            odd.put("colMax", 1000.0);
            assertEquals(ki, KeyIndex.fromJson(odd));
            // and Java serialization (Spark ships key indexes to executors)
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
                out.writeObject(ki);
            }
            Object copy = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray())).readObject();
            assertEquals(ki, copy);
            assertEquals(ki.ranges(QueryBox.of(0, 10, 50, 60)), ((KeyIndex) copy).ranges(QueryBox.of(0, 10, 50, 60)));
        }
        assertEquals("hilbert", KeyIndex.create("Hilbert", b, null).kind());
        assertEquals("rowmajor", KeyIndex.create("row-major", b, null).kind());
    }

    @Test
    public void valueTypes() {
        KeyBounds b = new KeyBounds(0, 0, 99, 499);
        assertEquals("cols 0..99, rows 0..499", b.toString());
        assertEquals(100, b.width());
        assertEquals(500, b.height());
        assertEquals(new KeyBounds(50, 450, 99, 499), b.intersection(new KeyBounds(50, 450, 150, 550)));
        assertNull(b.intersection(new KeyBounds(100, 0, 150, 10)));
        TimeBounds tb = new TimeBounds(1_577_836_800_000_000L, 1_577_919_600_000_000L, 3_600_000_000L);
        assertEquals("times 2020-01-01T00:00:00Z..2020-01-01T23:00:00Z, resolution 3600000000 us", tb.toString());
        assertEquals(24, tb.bins());
        assertEquals(5, tb.bin(1_577_836_800_000_000L + 5 * 3_600_000_000L + 1));
        QueryBox q = QueryBox.of(0, 0, 10, 10, 5, 50);
        assertTrue(q.contains(10, 0, 5));
        assertEquals(QueryBox.of(5, 0, 10, 3, 5, 20), q.intersect(QueryBox.of(5, -3, 20, 3, 0, 20)));
        assertNull(q.intersect(QueryBox.of(11, 0, 20, 3)));
        List<IndexRange> rs = new ArrayList<>(List.of(new IndexRange(5, 6), new IndexRange(0, 1)));
        assertEquals(List.of(new IndexRange(0, 1), new IndexRange(5, 6)), RangeMerge.merge(rs));
        assertEquals(List.of(new IndexRange(0, 6)), RangeMerge.capRanges(rs, 1));
        assertEquals("[0, 1]", new IndexRange(0, 1).toString());
    }
}
