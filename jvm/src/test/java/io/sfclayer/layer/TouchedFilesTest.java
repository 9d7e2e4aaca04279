package io.sfclayer.layer;

import io.sfclayer.curve.IndexRange;
import io.sfclayer.format.DataFile;
import io.sfclayer.format.Manifest;
import io.sfclayer.format.ManifestFiles;
import io.sfclayer.format.ManifestRef;
import io.sfclayer.format.ManifestTree;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.TreeSet;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

/**
 * The files an update of a format 6 version hands its tasks (issue 20), against brute force over the
 * whole file list: the same files as reading everything would give, through only the manifests of the
 * ranges touched.
 */
public class TouchedFilesTest {
    @Rule
    public TemporaryFolder tmp = new TemporaryFolder();

    /** 400 files with gaps between them: [10 i, 10 i + 5]; a tree of one file a leaf, two references a node. */
    private final List<DataFile> all = new ArrayList<>();

    private ManifestFiles tree() throws Exception {
        for (int i = 0; i < 400; i++) {
            all.add(new DataFile("d", "part-r-00000-" + (10L * i), 10L * i, 10L * i + 5, 2, 1, 100, 7L, null));
        }
        Manifest.Store store = new Manifest.Store(new Configuration(), new Path(tmp.newFolder().getPath()));
        List<ManifestRef> top = new ManifestTree(store, "w1", 0, 1, 2).build(all);
        Manifest.forgetCached();
        return new ManifestFiles(store, top);
    }

    /** Files by id (DataFile has no value equality). */
    private static List<String> ids(List<DataFile> files) {
        List<String> out = new ArrayList<>();
        for (DataFile f : files) {
            out.add(f.id());
        }
        return out;
    }

    private static List<List<String>> ids2(List<List<DataFile>> groups) {
        List<List<String>> out = new ArrayList<>();
        for (List<DataFile> g : groups) {
            out.add(ids(g));
        }
        return out;
    }

    /** The file whose covered span (its first index to the next file's first minus one) holds {@code x}, or -1. */
    private int covering(long x) {
        int i = -1;
        while (i + 1 < all.size() && all.get(i + 1).firstIndex <= x) {
            i++;
        }
        return i;
    }

    private static List<IndexRange> randomRanges(Random rng, int n) {
        TreeSet<Long> points = new TreeSet<>();
        while (points.size() < 2 * n) {
            points.add((long) rng.nextInt(4100));
        }
        List<Long> p = new ArrayList<>(points);
        List<IndexRange> out = new ArrayList<>();
        for (int i = 0; i + 1 < p.size(); i += 2) {
            out.add(new IndexRange(p.get(i), p.get(i) + rng.nextInt((int) Math.min(30, p.get(i + 1) - p.get(i)))));
        }
        return out;
    }

    @Test
    public void anAppendsPartitionsGetWhatAFullListWouldGiveThem() throws Exception {
        ManifestFiles mf = tree();
        Random rng = new Random(7);
        for (int trial = 0; trial < 200; trial++) {
            List<IndexRange> ranges = randomRanges(rng, 1 + rng.nextInt(6));
            long[] layerBreaks = new long[rng.nextInt(8)];
            for (int k = 0; k < layerBreaks.length; k++) {
                layerBreaks[k] = rng.nextInt(4100);
            }
            java.util.Arrays.sort(layerBreaks);
            TouchedFiles.Partitioned plan = TouchedFiles.forAppend(mf, layerBreaks, ranges, rng.nextInt(4));
            long[] breaks = plan.breaks;
            for (IndexRange r : ranges) {
                for (long x = r.lo; x <= r.hi; x++) {
                    int p = PartitionBreaks.partitionOf(breaks, x);
                    long[] span = plan.spans[p];
                    assertTrue(trial + ": " + x + " in its partition's span", span != null && span[0] <= x && x <= span[1]);
                    int f = covering(x);
                    if (f >= 0 && all.get(f).lastIndex >= x) {
                        // a record inside a file's span: that file is its partition's (no other task rewrites it)
                        assertTrue(trial + ": file of " + x, ids(plan.perPartition.get(p)).contains(all.get(f).id()));
                    }
                }
            }
            for (int p = 0; p <= breaks.length; p++) {
                List<DataFile> expected = new ArrayList<>();
                long[] span = plan.spans[p];
                for (int i = 0; span != null && i < all.size(); i++) {
                    DataFile f = all.get(i);
                    long coversTo = i + 1 < all.size() ? all.get(i + 1).firstIndex - 1 : Long.MAX_VALUE;
                    if (PartitionBreaks.partitionOf(breaks, f.firstIndex) == p && f.firstIndex <= span[1]
                            && coversTo >= span[0]) {
                        expected.add(f);
                    }
                }
                assertEquals(trial + ": partition " + p, ids(expected), ids(plan.perPartition.get(p)));
            }
        }
    }

    @Test
    public void aOneTileAppendReadsOnePathOfTheTree() throws Exception {
        ManifestFiles mf = tree();
        long before = Manifest.readsTotal();
        TouchedFiles.Partitioned plan = TouchedFiles.forAppend(mf, new long[] {1000, 2000, 3000},
            List.of(new IndexRange(2002, 2002)));
        long reads = Manifest.readsTotal() - before;
        assertEquals(0, plan.breaks.length);
        assertEquals(ids(List.of(all.get(200))), ids(plan.perPartition.get(0)));
        assertTrue("reads " + reads, reads > 0 && reads <= 10); // 400 leaves, 9 levels: one path
    }

    @Test
    public void tilesFarApartInOnePartitionAreSplitAtTheGapNotReadAcross() throws Exception {
        ManifestFiles mf = tree();
        long before = Manifest.readsTotal();
        List<IndexRange> ranges = List.of(new IndexRange(12, 12), new IndexRange(3983, 3983));
        TouchedFiles.Partitioned plan = TouchedFiles.forAppend(mf, new long[0], ranges, 1);
        long reads = Manifest.readsTotal() - before;
        assertEquals(1, plan.breaks.length);
        assertEquals(ids(List.of(all.get(1))), ids(plan.perPartition.get(0)));
        assertEquals(ids(List.of(all.get(398))), ids(plan.perPartition.get(1)));
        assertTrue("reads " + reads, reads <= 2 * 9); // two paths, not the 800 manifests between
        // without the gap's break, one partition spans (and reads) everything between the two tiles
        assertEquals(398, TouchedFiles.forAppend(mf, new long[0], ranges, 0).perPartition.get(0).size());
    }

    @Test
    public void aDeleteGetsRunsOfAdjacentFilesMeetingItsRanges() throws Exception {
        ManifestFiles mf = tree();
        Random rng = new Random(11);
        for (int trial = 0; trial < 100; trial++) {
            List<IndexRange> ranges = randomRanges(rng, 1 + rng.nextInt(8));
            int tasks = 1 + rng.nextInt(4);
            List<DataFile> touched = new ArrayList<>();
            List<List<DataFile>> groups = TouchedFiles.meeting(mf, ranges, tasks, touched);
            List<DataFile> expected = new ArrayList<>();
            for (int i = 0; i < all.size(); i++) {
                long coversTo = i + 1 < all.size() ? all.get(i + 1).firstIndex - 1 : Long.MAX_VALUE;
                for (IndexRange r : ranges) {
                    if (r.lo <= coversTo && r.hi >= all.get(i).firstIndex) {
                        expected.add(all.get(i));
                        break;
                    }
                }
            }
            assertEquals(ids(expected), ids(touched));
            List<DataFile> joined = new ArrayList<>();
            int per = (touched.size() + tasks - 1) / tasks;
            for (List<DataFile> g : groups) {
                assertTrue(g.size() <= per);
                int at = ids(all).indexOf(g.get(0).id());
                assertEquals("a group is adjacent files", ids(all.subList(at, at + g.size())), ids(g));
                joined.addAll(g);
            }
            assertEquals(ids(expected), ids(joined));
        }
    }

    @Test
    public void aRepairFindsTheNamedFilesAndIgnoresOthers() throws Exception {
        ManifestFiles mf = tree();
        List<DataFile> touched = new ArrayList<>();
        List<List<DataFile>> groups = TouchedFiles.named(mf,
            List.of("part-r-00000-30", "part-r-00000-20", "part-r-00000-25", "part-r-00000-900", "notes.txt"), 4,
            touched);
        assertEquals(ids(List.of(all.get(2), all.get(3), all.get(90))), ids(touched));
        assertEquals(ids2(List.of(List.of(all.get(2)), List.of(all.get(3)), List.of(all.get(90)))), ids2(groups));
    }

    @Test
    public void rangesOfIndexesAreJoinedThenCoarsenedToASuperset() {
        assertEquals(List.of(new IndexRange(1, 3), new IndexRange(10, 10), new IndexRange(100, 101)),
            TouchedFiles.ranges(new long[] {1, 2, 2, 3, 10, 100, 101}, 10));
        assertEquals(List.of(new IndexRange(1, 10), new IndexRange(100, 101)),
            TouchedFiles.ranges(new long[] {1, 2, 2, 3, 10, 100, 101}, 2));
        assertEquals(List.of(new IndexRange(0, 9), new IndexRange(20, 30)),
            TouchedFiles.union(List.of(new IndexRange(20, 25), new IndexRange(0, 4), new IndexRange(5, 9),
                new IndexRange(24, 30)), 5));
    }
}
