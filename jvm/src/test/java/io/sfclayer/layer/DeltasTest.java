package io.sfclayer.layer;

import io.sfclayer.curve.IndexRange;
import io.sfclayer.format.DataFile;
import io.sfclayer.format.DeltaFile;
import io.sfclayer.format.LayerMetadata;
import org.apache.hadoop.fs.Path;
import org.junit.Test;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;

/** {@link Deltas}' searches (by bisection per delta version) against a brute-force scan of the list. */
public class DeltasTest {
    /** Random delta versions, each some sorted, disjoint files over [0, 1000]. */
    private static LayerMetadata randomDeltas(Random rnd) {
        LayerMetadata md = new LayerMetadata();
        int versions = 1 + rnd.nextInt(5);
        for (int v = 2; v < 2 + versions; v++) {
            long at = rnd.nextInt(50);
            int files = rnd.nextInt(4);
            for (int f = 0; f < files && at < 1000; f++) {
                long last = at + rnd.nextInt(200);
                md.deltas.add(new DeltaFile(new DataFile("data-x" + v, "part-r-0000" + f + "-" + at, at, last, 1, 1, 1),
                    v));
                at = last + 1 + rnd.nextInt(100);
            }
        }
        md.version = 1 + versions;
        return md;
    }

    @Test
    public void holdingAndMeetingAgreeWithAScanOfTheList() {
        Random rnd = new Random(38);
        for (int trial = 0; trial < 300; trial++) {
            LayerMetadata md = randomDeltas(rnd);
            Deltas d = Deltas.of(new Path("/layer"), md);
            for (int q = 0; q < 50; q++) {
                long i = rnd.nextInt(1200);
                List<Integer> want = new ArrayList<>();
                for (int k = md.deltas.size() - 1; k >= 0; k--) {
                    DataFile f = md.deltas.get(k).file;
                    if (f.firstIndex <= i && i <= f.lastIndex) {
                        want.add(k);
                    }
                }
                assertArrayEquals("index " + i + " in " + md.deltas, want.stream().mapToInt(x -> x).toArray(),
                    d.holding(i));
                long[] pairs = randomRanges(rnd);
                List<Integer> meet = new ArrayList<>();
                for (int k = 0; k < md.deltas.size(); k++) {
                    DataFile f = md.deltas.get(k).file;
                    for (int r = 0; r < pairs.length; r += 2) {
                        if (f.firstIndex <= pairs[r + 1] && pairs[r] <= f.lastIndex) {
                            meet.add(k);
                            break;
                        }
                    }
                }
                assertArrayEquals("ranges " + Arrays.toString(pairs) + " in " + md.deltas,
                    meet.stream().mapToInt(x -> x).toArray(), d.meeting(pairs));
            }
        }
    }

    private static long[] randomRanges(Random rnd) {
        int n = rnd.nextInt(4);
        long[] out = new long[2 * n];
        long at = rnd.nextInt(300);
        for (int r = 0; r < n; r++) {
            out[2 * r] = at;
            out[2 * r + 1] = at + rnd.nextInt(150);
            at = out[2 * r + 1] + 1 + rnd.nextInt(300);
        }
        return out;
    }

    @Test
    public void beforeClipsRangesToIndexesBelowTheFirstBaseFile() {
        List<IndexRange> ranges = List.of(new IndexRange(0, 5), new IndexRange(8, 20), new IndexRange(30, 40));
        List<IndexRange> head = Deltas.before(ranges, 10);
        assertEquals(2, head.size());
        assertArrayEquals(new long[] {0, 5, 8, 9}, new long[] {head.get(0).lo, head.get(0).hi, head.get(1).lo,
            head.get(1).hi});
        assertEquals(List.of(), Deltas.before(ranges, 0));
        assertEquals(3, Deltas.before(ranges, Long.MAX_VALUE).size());
    }
}
