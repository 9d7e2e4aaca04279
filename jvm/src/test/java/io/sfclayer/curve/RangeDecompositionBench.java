package io.sfclayer.curve;

import java.util.List;
import java.util.Random;

/**
 * Range-decomposition timing (not a test): ms per decomposition of a 1000 x 1000 query box in a
 * 2^20 x 2^20 layer, for the z and hilbert key indexes (exact, and capped at 64 ranges), after warm-up.
 * Boxes are placed at random (unaligned) offsets. Run with {@code gradle benchCurves}.
 */
public final class RangeDecompositionBench {
    private RangeDecompositionBench() { }

    public static void main(String[] args) {
        int side = 1 << 20, box = 1000;
        int warmup = args.length > 0 ? Integer.parseInt(args[0]) : 200;
        int runs = args.length > 1 ? Integer.parseInt(args[1]) : 500;
        KeyBounds bounds = new KeyBounds(0, 0, side - 1, side - 1);
        KeyIndex[] kis = {KeyIndex.z(bounds), KeyIndex.hilbert(bounds)};
        System.out.printf("range decomposition: %dx%d box in a 2^20 x 2^20 layer (%d warm-up, %d timed runs, java %s)%n",
            box, box, warmup, runs, System.getProperty("java.version"));
        for (KeyIndex ki : kis) {
            for (int cap : new int[] {0, 64}) {
                Random rnd = new Random(7);
                long sink = 0, ranges = 0;
                for (int i = 0; i < warmup; i++) sink += run(ki, rnd, side, box, cap).size();
                rnd = new Random(11);
                long[] times = new long[runs];
                for (int i = 0; i < runs; i++) {
                    long t0 = System.nanoTime();
                    List<IndexRange> rs = run(ki, rnd, side, box, cap);
                    times[i] = System.nanoTime() - t0;
                    ranges += rs.size();
                    sink += rs.get(0).lo;
                }
                java.util.Arrays.sort(times);
                double mean = java.util.Arrays.stream(times).average().orElse(0) / 1e6;
                System.out.printf("  %-8s %-10s mean %7.3f ms  median %7.3f ms  p99 %7.3f ms  (%.0f ranges avg)%s%n",
                    ki.kind(), cap == 0 ? "exact" : "cap " + cap, mean, times[runs / 2] / 1e6,
                    times[(int) (runs * 0.99)] / 1e6, (double) ranges / runs, sink == 42 ? " " : "");
            }
        }
        worstCases(Math.max(1, runs / 50));
    }

    /**
     * Worst cases for planning (issue 12): boxes over huge layers whose exact decomposition is billions
     * of ranges, planned with Spark's default cap of 20000 ranges; the time is bounded by the cap.
     */
    static void worstCases(int runs) {
        int m = Integer.MAX_VALUE, s21 = (1 << 21) - 1;
        long day = 86_400_000_000L;
        Object[][] cases = {
            {"z 2^31 x 2^31, box inset by a few cells", KeyIndex.z(new KeyBounds(0, 0, m, m)), QueryBox.of(1, 3, m - 5, m - 1)},
            {"hilbert 2^31 x 2^31, box inset", KeyIndex.hilbert(new KeyBounds(0, 0, m, m)), QueryBox.of(7, 1, m - 2, m - 3)},
            {"z3 2^21^2, 2^21 daily bins, time-only filter",
                KeyIndex.z3(new KeyBounds(0, 0, s21, s21), new TimeBounds(0, (long) s21 * day, day)),
                QueryBox.of(0, 0, s21, s21, 12345 * day, 1_500_000 * day)},
            {"rowmajor 1000 x 10^6 rows, all rows, cols 1..998", KeyIndex.rowMajor(new KeyBounds(0, 0, 999, 999_999)),
                QueryBox.of(1, 0, 998, 999_999)},
        };
        System.out.printf("worst cases, cap 20000 (%d timed runs each after 2 warm-up runs)%n", runs);
        for (Object[] c : cases) {
            KeyIndex ki = (KeyIndex) c[1];
            QueryBox box = (QueryBox) c[2];
            for (int i = 0; i < 2; i++) ki.ranges(box, 20000);
            long[] times = new long[runs];
            int n = 0;
            for (int i = 0; i < runs; i++) {
                long t0 = System.nanoTime();
                n = ki.ranges(box, 20000).size();
                times[i] = System.nanoTime() - t0;
            }
            java.util.Arrays.sort(times);
            System.out.printf("  %-48s median %8.2f ms  max %8.2f ms  (%d ranges)%n", c[0], times[runs / 2] / 1e6,
                times[runs - 1] / 1e6, n);
        }
    }

    private static List<IndexRange> run(KeyIndex ki, Random rnd, int side, int box, int cap) {
        int c = rnd.nextInt(side - box), r = rnd.nextInt(side - box);
        return ki.ranges(QueryBox.of(c, r, c + box - 1, r + box - 1), cap);
    }
}
