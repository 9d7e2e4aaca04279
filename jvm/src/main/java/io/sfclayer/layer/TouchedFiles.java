package io.sfclayer.layer;

import io.sfclayer.curve.IndexRange;
import io.sfclayer.format.DataFile;
import io.sfclayer.format.DataFileName;
import io.sfclayer.format.ManifestFiles;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The existing files an update of a format 6 version hands its tasks, found through only the
 * manifests whose span meets the index ranges the update touches (issue 20; docs/FORMAT.md, section
 * 10): an append's new indexes, a delete's ranges, a repair's damaged files. The rest of the version
 * is never read; the commit carries it by reference ({@link io.sfclayer.format.ManifestTree#apply}).
 *
 * <p>A task's output rolls at every file it is given, so a task must be given every file lying between
 * its first and last record: an append gives each partition the files meeting the span from its least to
 * its greatest new index; a delete or a repair gives each task a run of adjacent files.
 */
public final class TouchedFiles {
    private TouchedFiles() {
    }

    /** The partition breaks of an append and each partition's existing files (those starting in it). */
    public static final class Partitioned {
        public final long[] breaks;
        public final List<List<DataFile>> perPartition;
        /** Each partition's span of new indexes {lo, hi} (what its files were chosen by), or null: none. */
        public final long[][] spans;

        Partitioned(long[] breaks, List<List<DataFile>> perPartition, long[][] spans) {
            this.breaks = breaks;
            this.perPartition = perPartition;
            this.spans = spans;
        }
    }

    /**
     * An append of records whose indexes lie in the sorted, disjoint {@code ranges} (a superset is fine)
     * to the files of {@code mf}: of the layer's {@code breaks}, only those between the least and the
     * greatest new index split records. A break in a gap between two ranges moves up to the next range
     * (no record changes partition); then, as {@code SfcLayerUpdate.snap} does, a break inside a file's span
     * moves down to its first index, so no file straddles two partitions. Reads the manifests on the paths
     * to those breaks and those meeting each partition's span of new indexes, nothing else.
     */
    public static Partitioned forAppend(ManifestFiles mf, long[] breaks, List<IndexRange> ranges) {
        return forAppend(mf, breaks, ranges, 0);
    }

    /**
     * As above, with a break added at the start of the range after each of the {@code gapBreaks} widest gaps
     * between ranges: a partition's span then never crosses them, so an append of tiles far apart reads the
     * manifests around each of them, not those of the layer between (at the cost of at most {@code gapBreaks}
     * more output files, where no existing file lies in such a gap).
     */
    public static Partitioned forAppend(ManifestFiles mf, long[] breaks, List<IndexRange> ranges, int gapBreaks) {
        if (ranges.isEmpty()) {
            return new Partitioned(new long[0], List.of(new ArrayList<>()), new long[1][]);
        }
        long min = ranges.get(0).lo;
        long max = ranges.get(ranges.size() - 1).hi;
        List<Long> candidates = new ArrayList<>();
        for (long b : breaks) {
            candidates.add(b);
        }
        Integer[] gaps = new Integer[ranges.size() - 1];
        for (int i = 0; i < gaps.length; i++) {
            gaps[i] = i;
        }
        // widest first (gap i lies between range i and range i + 1)
        java.util.Arrays.sort(gaps, (x, y) -> Long.compare(ranges.get(y + 1).lo - ranges.get(y).hi,
            ranges.get(x + 1).lo - ranges.get(x).hi));
        for (int k = 0; k < Math.min(gapBreaks, gaps.length); k++) {
            candidates.add(ranges.get(gaps[k] + 1).lo);
        }
        TreeSet<Long> kept = new TreeSet<>();
        for (long b : candidates) {
            if (b <= min || b > max) {
                continue;
            }
            long c = Math.max(b, ranges.get(ManifestFiles.firstEnding(ranges, b)).lo);
            int pos = mf.position(c);
            DataFile f = pos < 0 ? null : mf.at(pos);
            kept.add(f != null && f.firstIndex < c && f.lastIndex >= c ? f.firstIndex : c);
        }
        long[] out = kept.stream().mapToLong(Long::longValue).toArray();
        List<List<DataFile>> perPartition = new ArrayList<>();
        long[][] spans = new long[out.length + 1][];
        for (int p = 0; p <= out.length; p++) {
            List<DataFile> mine = new ArrayList<>();
            perPartition.add(mine);
            long lo = p == 0 ? Long.MIN_VALUE : out[p - 1];
            long hi = p == out.length ? Long.MAX_VALUE : out[p] - 1;
            int a = ManifestFiles.firstEnding(ranges, lo);
            if (a == ranges.size() || ranges.get(a).lo > hi) {
                continue; // no new record in this partition
            }
            int z = a;
            while (z + 1 < ranges.size() && ranges.get(z + 1).lo <= hi) {
                z++;
            }
            IndexRange span = new IndexRange(Math.max(lo, ranges.get(a).lo), Math.min(hi, ranges.get(z).hi));
            spans[p] = new long[] {span.lo, span.hi};
            final int part = p;
            mf.meeting(List.of(span), (position, file, coversTo) -> {
                if (PartitionBreaks.partitionOf(out, file.firstIndex) == part) {
                    mine.add(file);
                }
            });
        }
        return new Partitioned(out, perPartition, spans);
    }

    /**
     * A delete's files: those whose covered span meets the sorted, disjoint {@code ranges}, added to
     * {@code touched}, as groups of adjacent files (one task each) of at most their count / {@code tasks}
     * files (at least 1). Reads only the manifests meeting the ranges.
     */
    public static List<List<DataFile>> meeting(ManifestFiles mf, List<IndexRange> ranges, int tasks,
                                               List<DataFile> touched) {
        TreeMap<Long, DataFile> byPosition = new TreeMap<>();
        mf.meeting(ranges, (position, file, coversTo) -> byPosition.put(position, file));
        touched.addAll(byPosition.values());
        return runs(byPosition, tasks);
    }

    /**
     * A repair's files: those of {@code mf} named in {@code names} (bare data file names; names it does not
     * hold are left out), added to {@code touched}, grouped as {@link #meeting} does. Reads one path per name.
     */
    public static List<List<DataFile>> named(ManifestFiles mf, Collection<String> names, int tasks,
                                             List<DataFile> touched) {
        TreeMap<Long, DataFile> byPosition = new TreeMap<>();
        for (String name : names) {
            if (!DataFileName.looksLikeDataFile(name)) {
                continue;
            }
            int pos = mf.position(DataFileName.parse(name).firstIndex);
            DataFile f = pos < 0 ? null : mf.at(pos);
            if (f != null && f.name.equals(name)) {
                byPosition.put((long) pos, f);
            }
        }
        touched.addAll(byPosition.values());
        return runs(byPosition, tasks);
    }

    /** Runs of consecutive positions, each cut into groups of at most size / tasks files. */
    static List<List<DataFile>> runs(TreeMap<Long, DataFile> byPosition, int tasks) {
        int per = Math.max(1, (byPosition.size() + Math.max(1, tasks) - 1) / Math.max(1, tasks));
        List<List<DataFile>> out = new ArrayList<>();
        List<DataFile> cur = new ArrayList<>();
        long last = Long.MIN_VALUE;
        for (var e : byPosition.entrySet()) {
            if (!cur.isEmpty() && (e.getKey() != last + 1 || cur.size() >= per)) {
                out.add(cur);
                cur = new ArrayList<>();
            }
            cur.add(e.getValue());
            last = e.getKey();
        }
        if (!cur.isEmpty()) {
            out.add(cur);
        }
        return out;
    }

    /**
     * The sorted, disjoint ranges of sorted {@code indexes} (equal and consecutive ones joined), at most
     * {@code max} of them ({@link #coarsen}: a superset, so more files read, never fewer).
     */
    public static List<IndexRange> ranges(long[] indexes, int max) {
        List<long[]> spans = new ArrayList<>();
        for (long x : indexes) {
            long[] last = spans.isEmpty() ? null : spans.get(spans.size() - 1);
            if (last != null && x <= last[1] + 1) {
                last[1] = Math.max(last[1], x);
            } else {
                spans.add(new long[] {x, x});
            }
        }
        List<IndexRange> out = new ArrayList<>();
        for (long[] s : coarsen(spans, max)) {
            out.add(new IndexRange(s[0], s[1]));
        }
        return out;
    }

    /** The union of {@code ranges} (any order, overlapping or not) as sorted, disjoint ranges, at most {@code max}. */
    public static List<IndexRange> union(Collection<IndexRange> ranges, int max) {
        List<IndexRange> sorted = new ArrayList<>(ranges);
        sorted.sort(null);
        List<long[]> spans = new ArrayList<>();
        for (IndexRange r : sorted) {
            long[] last = spans.isEmpty() ? null : spans.get(spans.size() - 1);
            if (last != null && r.lo <= last[1] + 1) {
                last[1] = Math.max(last[1], r.hi);
            } else {
                spans.add(new long[] {r.lo, r.hi});
            }
        }
        List<IndexRange> out = new ArrayList<>();
        for (long[] s : coarsen(spans, max)) {
            out.add(new IndexRange(s[0], s[1]));
        }
        return out;
    }

    /**
     * {@code spans} (sorted, disjoint) as at most {@code max} spans covering them: the smallest gaps
     * are closed. A superset is safe wherever spans say what may be touched (a plan reads more; a
     * commit's changed ranges give a false conflict, a retry, never a loss).
     */
    public static List<long[]> coarsen(List<long[]> spans, int max) {
        if (spans.size() <= max) {
            return spans;
        }
        Integer[] gaps = new Integer[spans.size() - 1];
        for (int i = 0; i < gaps.length; i++) {
            gaps[i] = i;
        }
        // close the size() - max smallest gaps (gap i lies between span i and span i + 1)
        java.util.Arrays.sort(gaps, (x, y) -> Long.compare(spans.get(x + 1)[0] - spans.get(x)[1],
            spans.get(y + 1)[0] - spans.get(y)[1]));
        boolean[] close = new boolean[gaps.length];
        for (int k = 0; k < spans.size() - max; k++) {
            close[gaps[k]] = true;
        }
        List<long[]> out = new ArrayList<>();
        long[] cur = spans.get(0).clone();
        for (int i = 1; i < spans.size(); i++) {
            if (close[i - 1]) {
                cur[1] = spans.get(i)[1];
            } else {
                out.add(cur);
                cur = spans.get(i).clone();
            }
        }
        out.add(cur);
        return out;
    }
}
