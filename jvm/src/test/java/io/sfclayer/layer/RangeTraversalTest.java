package io.sfclayer.layer;

import io.sfclayer.format.DataFileReader;
import io.sfclayer.format.DataFileWriter;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.junit.BeforeClass;
import org.junit.ClassRule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

public class RangeTraversalTest {
    @ClassRule
    public static final TemporaryFolder TMP = new TemporaryFolder();

    private static final Configuration CONF = new Configuration();
    /** Indexes stored: multiples of 3 from 30 to 2997. */
    private static final long FIRST = 30, STEP = 3, LAST = 2997;
    private static Path dense;
    private static Path sparse;

    @BeforeClass
    public static void writeFiles() throws IOException {
        dense = write("dense", 1);
        sparse = write("sparse", 16);
    }

    /** One MapFile of groups at FIRST, FIRST + STEP, ..., LAST; each group's bytes hold its index. */
    private static Path write(String name, int indexInterval) throws IOException {
        Path dir = new Path(TMP.newFolder(name).getAbsolutePath());
        try (DataFileWriter w = new DataFileWriter(CONF, dir, 0, 1 << 30, indexInterval, "test")) {
            for (long i = FIRST; i <= LAST; i += STEP) {
                byte[] b = ByteBuffer.allocate(8).putLong(i).array();
                w.append(i, b, 0, b.length, 1);
            }
        }
        return new Path(dir, "part-r-00000-" + FIRST);
    }

    private static long[] traverse(Path file, long[] ranges, long[] groupsRead) throws IOException {
        List<Long> out = new ArrayList<>();
        try (DataFileReader r = new DataFileReader(CONF, file)) {
            RangeTraversal t = new RangeTraversal(r, ranges);
            while (t.next()) {
                assertEquals(r.index(), ByteBuffer.wrap(r.bytes(), r.offset(), r.length()).getLong());
                out.add(r.index());
            }
            assertFalse(t.next());
            groupsRead[0] = r.groupsRead();
        }
        return out.stream().mapToLong(Long::longValue).toArray();
    }

    private static long[] bruteForce(long[] ranges) {
        List<Long> out = new ArrayList<>();
        for (long i = FIRST; i <= LAST; i += STEP) {
            for (int k = 0; k < ranges.length; k += 2) {
                if (i >= ranges[k] && i <= ranges[k + 1]) {
                    out.add(i);
                }
            }
        }
        return out.stream().mapToLong(Long::longValue).toArray();
    }

    @Test
    public void readsOnlyTheGroupsInRanges() throws IOException {
        long[] read = new long[1];
        // [30, 36] ends on a group: the traversal seeks to the next range instead of reading 39
        long[] got = traverse(dense, new long[] {30, 36, 100, 104, 1000, 1000, 2990, 5000}, read);
        assertArrayEquals(new long[] {30, 33, 36, 102, 2991, 2994, 2997}, got);
        // 30, 33, 36 | 102 then 105 (past the range) | 1002 (past [1000, 1000], nothing there) | 2991 .. 2997
        assertEquals(3 + 2 + 1 + 3, read[0]);
    }

    @Test
    public void rangesBetweenGroupsAndBeyondTheFile() throws IOException {
        long[] read = new long[1];
        assertEquals(0, traverse(dense, new long[] {0, 29}, read).length);
        assertEquals(1, read[0]); // the seek lands on 30, which is past the range
        assertEquals(0, traverse(dense, new long[] {31, 32, 3000, 4000}, read).length);
        assertArrayEquals(new long[] {2997}, traverse(dense, new long[] {2996, Long.MAX_VALUE}, read));
        assertEquals(0, traverse(dense, new long[] {}, read).length);
        assertEquals(0, read[0]);
    }

    @Test
    public void randomRangesMatchBruteForceAndNeverScanBetweenRanges() throws IOException {
        Random rnd = new Random(3);
        for (Path file : new Path[] {dense, sparse}) {
            for (int t = 0; t < 200; t++) {
                int n = 1 + rnd.nextInt(30);
                long[] ranges = new long[2 * n];
                long at = rnd.nextInt(200);
                for (int i = 0; i < n; i++) {
                    ranges[2 * i] = at;
                    ranges[2 * i + 1] = at + rnd.nextInt(rnd.nextBoolean() ? 5 : 150);
                    at = ranges[2 * i + 1] + 1 + rnd.nextInt(rnd.nextBoolean() ? 3 : 300);
                }
                long[] read = new long[1];
                long[] got = traverse(file, ranges, read);
                assertArrayEquals(bruteForce(ranges), got);
                // at most one group per range that turns out not to be in it
                assertTrue(read[0] + " groups read for " + got.length + " in " + n + " ranges",
                    read[0] <= got.length + n);
            }
        }
    }

    @Test(expected = IllegalArgumentException.class)
    public void refusesUnsortedRanges() throws IOException {
        try (DataFileReader r = new DataFileReader(CONF, dense)) {
            new RangeTraversal(r, new long[] {10, 20, 15, 30});
        }
    }
}
