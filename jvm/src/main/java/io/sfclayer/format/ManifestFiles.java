package io.sfclayer.format;

import io.sfclayer.curve.IndexRange;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;

/**
 * The data files of a format 6 version, read through its manifests on demand (docs/FORMAT.md,
 * section 10): a look-up reads the one manifest per level whose span holds the key, planning reads
 * only the manifests whose span meets the query's ranges, and maintenance streams them all. Files
 * have global positions (0 .. fileCount - 1, in index order), found through each reference's file
 * count, so callers can number files as they do for a version that lists them inline.
 */
public final class ManifestFiles {
    private final Manifest.Store store;
    private final Manifest root;

    public ManifestFiles(Manifest.Store store, List<ManifestRef> top) {
        this.store = store;
        int level = top.isEmpty() ? 1 : top.get(0).level + 1;
        this.root = new Manifest(level, List.of(), top);
    }

    public Manifest.Store store() {
        return store;
    }

    public long size() {
        return root.prefix[root.prefix.length - 1];
    }

    private Manifest child(Manifest node, int i) {
        try {
            return store.read(node.children.get(i));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read manifest " + node.children.get(i).path, e);
        }
    }

    /** The position of the file that would hold {@code index} (the greatest first index ≤ index), or -1. */
    public int position(long index) {
        Manifest node = root;
        long base = 0;
        while (true) {
            int i = node.entryFor(index);
            if (i < 0) {
                return -1;
            }
            base += node.prefix[i];
            if (node.level == 0) {
                return (int) base;
            }
            node = child(node, i);
        }
    }

    /** The file at a position. */
    public DataFile at(long position) {
        Manifest node = root;
        long p = position;
        while (true) {
            if (node.level == 0) {
                return node.files.get((int) p);
            }
            int i = java.util.Arrays.binarySearch(node.prefix, p + 1);
            i = i >= 0 ? i - 1 : -i - 2;
            while (i + 1 < node.prefix.length - 1 && node.prefix[i + 1] <= p) {
                i++;
            }
            p -= node.prefix[i];
            node = child(node, i);
        }
    }

    /** The file whose first index is exactly {@code firstIndex}, or null. */
    public DataFile starting(long firstIndex) {
        int p = position(firstIndex);
        if (p < 0) {
            return null;
        }
        DataFile f = at(p);
        return f.firstIndex == firstIndex ? f : null;
    }

    /** What {@link #meeting} hands out: a file, its position, and the upper end of the span it covers. */
    public interface Visitor {
        void file(long position, DataFile file, long coversTo);
    }

    /**
     * Every file whose covered span (its first index up to the next file's first index minus one) meets
     * one of the sorted, disjoint {@code ranges}, in index order; only manifests whose span meets them are read.
     */
    public void meeting(List<IndexRange> ranges, Visitor v) {
        if (!ranges.isEmpty()) {
            walk(root, 0, Long.MAX_VALUE, ranges, v);
        }
    }

    private void walk(Manifest node, long base, long coversTo, List<IndexRange> ranges, Visitor v) {
        int n = node.size();
        for (int i = 0; i < n; i++) {
            long lo = node.firsts[i];
            long hi = i + 1 < n ? node.firsts[i + 1] - 1 : coversTo;
            if (!meets(ranges, lo, hi)) {
                continue;
            }
            if (node.level == 0) {
                v.file(base + i, node.files.get(i), hi);
            } else {
                walk(child(node, i), base + node.prefix[i], hi, ranges, v);
            }
        }
    }

    /** Whether some range meets [lo, hi] (ranges sorted and disjoint). */
    static boolean meets(List<IndexRange> ranges, long lo, long hi) {
        int a = firstEnding(ranges, lo);
        return a < ranges.size() && ranges.get(a).lo <= hi;
    }

    /** The first of the sorted, disjoint ranges whose hi ≥ {@code lo} (ranges.size() if none). */
    public static int firstEnding(List<IndexRange> ranges, long lo) {
        int a = 0, b = ranges.size() - 1;
        while (a <= b) { // the first range whose hi ≥ lo
            int mid = (a + b) >>> 1;
            if (ranges.get(mid).hi < lo) {
                a = mid + 1;
            } else {
                b = mid - 1;
            }
        }
        return a;
    }

    /** Every file, in index order (reads every manifest). */
    public List<DataFile> all() {
        List<DataFile> out = new ArrayList<>((int) Math.min(Integer.MAX_VALUE, size()));
        collect(root, out, null);
        return out;
    }

    /** The first {@code n} files in index order (reads only the manifests on the way to them). */
    public List<DataFile> first(int n) {
        List<DataFile> out = new ArrayList<>((int) Math.min(n, size()));
        if (n > 0) {
            head(root, n, out);
        }
        return out;
    }

    private void head(Manifest node, int n, List<DataFile> out) {
        for (int i = 0; i < node.size() && out.size() < n; i++) {
            if (node.level == 0) {
                out.add(node.files.get(i));
            } else {
                head(child(node, i), n, out);
            }
        }
    }

    /** Every manifest of the tree (reads every inner manifest; leaves too when {@code files} is not null). */
    public List<ManifestRef> manifests(List<DataFile> files) {
        List<ManifestRef> out = new ArrayList<>();
        collect(root, files, out);
        return out;
    }

    private void collect(Manifest node, List<DataFile> files, List<ManifestRef> refs) {
        if (node.level == 0) {
            if (files != null) {
                files.addAll(node.files);
            }
            return;
        }
        for (int i = 0; i < node.size(); i++) {
            if (refs != null) {
                refs.add(node.children.get(i));
            }
            if (node.level > 1 || files != null) {
                collect(child(node, i), files, refs);
            }
        }
    }
}
