package io.sfclayer.layer;

import io.sfclayer.curve.IndexRange;
import io.sfclayer.format.DataFile;
import io.sfclayer.format.DataFileEntry;
import io.sfclayer.format.DeltaFile;
import io.sfclayer.format.LayerMetadata;
import org.apache.hadoop.fs.Path;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The delta files of one pinned version (format 7, docs/FORMAT.md section 11), for readers: which
 * deltas can hold an index (a look-up asks them newest first) and which meet a query's ranges (a scan
 * merges them with the base files). A delta is known by its position {@code d} in the document's
 * list; later positions win at a key. The files one version added are sorted and disjoint, so each
 * version's run is searched by bisection: a look-up costs one search per delta version.
 */
public final class Deltas {
    private static final int[] NONE = new int[0];

    private final List<DeltaFile> list;
    private final String layer;
    private final Path layerPath;
    private final int documentFormat;
    private final long version;
    /** Each version's run of deltas: {@code runStart[v] .. runStart[v + 1] - 1}, oldest version first. */
    private final int[] runStart;
    private final long[] firsts;
    private final long[] lasts;

    private Deltas(Path layerPath, LayerMetadata md) {
        this.list = md.deltas;
        this.layerPath = layerPath;
        this.layer = layerPath.toString();
        this.documentFormat = md.formatVersion;
        this.version = md.version;
        int n = list.size();
        firsts = new long[n];
        lasts = new long[n];
        List<Integer> starts = new ArrayList<>();
        for (int d = 0; d < n; d++) {
            DataFile f = list.get(d).file;
            firsts[d] = f.firstIndex;
            lasts[d] = f.lastIndex;
            if (d == 0 || list.get(d).addedIn != list.get(d - 1).addedIn) {
                starts.add(d);
            }
        }
        starts.add(n);
        runStart = starts.stream().mapToInt(Integer::intValue).toArray();
    }

    /** The deltas of {@code md}, a version of the layer at {@code layer}. */
    public static Deltas of(Path layer, LayerMetadata md) {
        return new Deltas(layer, md);
    }

    public boolean isEmpty() {
        return list.isEmpty();
    }

    public int size() {
        return list.size();
    }

    public DeltaFile get(int d) {
        return list.get(d);
    }

    /** The delta's MapFile directory. */
    public Path path(int d) {
        DataFile f = list.get(d).file;
        return new Path(new Path(layerPath, f.dir), f.name);
    }

    /** What the document says of the delta, for the reader's checks (as of a base file). */
    public DataFileEntry entry(int d) {
        return DataFileEntry.of(list.get(d).file, documentFormat, layer, version);
    }

    /** The deltas whose span holds {@code index}, newest first (at most one per delta version). */
    public int[] holding(long index) {
        if (list.isEmpty()) {
            return NONE;
        }
        int[] out = new int[runStart.length - 1];
        int k = 0;
        for (int v = runStart.length - 2; v >= 0; v--) {
            int d = lastStartingAtOrBefore(runStart[v], runStart[v + 1], index);
            if (d >= 0 && lasts[d] >= index) {
                out[k++] = d;
            }
        }
        return k == out.length ? out : Arrays.copyOf(out, k);
    }

    /** In {@code [from, to)}: the last delta whose first index is ≤ {@code index}, or -1. */
    private int lastStartingAtOrBefore(int from, int to, long index) {
        int lo = from, hi = to - 1, found = -1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (firsts[mid] <= index) {
                found = mid;
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        return found;
    }

    /**
     * The deltas whose span meets any of the sorted, disjoint ranges {@code pairs} ({@code lo, hi}
     * pairs), in list order (oldest first: the order a merge applies them in).
     */
    public int[] meeting(long[] pairs) {
        if (list.isEmpty() || pairs.length == 0) {
            return NONE;
        }
        int[] out = new int[list.size()];
        int k = 0;
        for (int v = 0; v + 1 < runStart.length; v++) {
            int end = runStart[v + 1];
            // the first delta of the run ending at or after the first range's start (spans are sorted)
            int d = lastStartingAtOrBefore(runStart[v], end, pairs[0]);
            if (d < 0 || lasts[d] < pairs[0]) {
                d = d < 0 ? runStart[v] : d + 1;
            }
            int r = 0;
            for (; d < end && r < pairs.length; ) {
                if (pairs[r + 1] < firsts[d]) {
                    r += 2; // this range ends before the delta starts
                } else if (lasts[d] < pairs[r]) {
                    d++; // the delta ends before this range starts
                } else {
                    out[k++] = d++;
                }
            }
        }
        return Arrays.copyOf(out, k); // runs are visited in list order, each run's deltas in order
    }

    /**
     * The parts of sorted, disjoint {@code ranges} below {@code start} (the first base file's first index,
     * {@code Long.MAX_VALUE} when there is none): what only deltas can hold.
     */
    public static List<IndexRange> before(List<IndexRange> ranges, long start) {
        List<IndexRange> head = new ArrayList<>();
        for (IndexRange r : ranges) {
            if (r.lo < start) {
                head.add(new IndexRange(r.lo, Math.min(r.hi, start - 1)));
            }
        }
        return head;
    }

    /** Whether a delta older than {@code d} (before it in the list) has a span meeting {@code [lo, hi]}. */
    public boolean meetsOlder(long lo, long hi, int d) {
        for (int o = 0; o < d; o++) {
            if (firsts[o] <= hi && lasts[o] >= lo) {
                return true;
            }
        }
        return false;
    }

    /** The span of delta {@code d}: {@code [first, last]}. */
    public long first(int d) {
        return firsts[d];
    }

    public long last(int d) {
        return lasts[d];
    }
}
