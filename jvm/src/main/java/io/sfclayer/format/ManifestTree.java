package io.sfclayer.format;

import io.sfclayer.SfcLayerException;
import org.apache.hadoop.conf.Configuration;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * How a commit writes manifests (docs/FORMAT.md, section 10): a B-tree of manifests over the SFC
 * index. A first write or an overwrite builds it whole (full nodes); an update rewrites only the
 * nodes on the paths to the data files it removed or added, splitting a node that grew past its
 * capacity, and reuses every other manifest by reference. A one-tile append thus writes one leaf, one
 * node per level above it and a version document that lists the top level.
 */
public final class ManifestTree {
    /** Hadoop configuration keys of the capacities (tests set them tiny to get many manifests). */
    public static final String INLINE_FILES = "sfclayer.manifest.inlineFiles";
    public static final String LEAF_FILES = "sfclayer.manifest.leafFiles";
    public static final String FANOUT = "sfclayer.manifest.fanout";
    /** A version lists its files inline up to this many (~60 KB with statistics): small layers stay format 3-5. */
    public static final int DEFAULT_INLINE_FILES = 128;
    /** Data files per leaf manifest (~16 KB with a raster layer's statistics). */
    public static final int DEFAULT_LEAF_FILES = 32;
    /** Manifests per inner manifest and in a version document (~13 KB of references). */
    public static final int DEFAULT_FANOUT = 64;

    private final Manifest.Store store;
    private final String writeId;
    public final int inlineFiles;
    private final int leafFiles;
    private final int fanout;

    public ManifestTree(Manifest.Store store, String writeId, Configuration conf) {
        this(store, writeId, conf.getInt(INLINE_FILES, DEFAULT_INLINE_FILES), conf.getInt(LEAF_FILES, DEFAULT_LEAF_FILES),
            conf.getInt(FANOUT, DEFAULT_FANOUT));
    }

    public ManifestTree(Manifest.Store store, String writeId, int inlineFiles, int leafFiles, int fanout) {
        if (leafFiles < 1 || fanout < 2 || inlineFiles < 0) {
            throw new SfcLayerException.InvalidArgument(LEAF_FILES + " must be at least 1 and " + FANOUT
                + " at least 2 (got " + leafFiles + ", " + fanout + "), " + INLINE_FILES + " at least 0");
        }
        this.store = store;
        this.writeId = writeId;
        this.inlineFiles = inlineFiles;
        this.leafFiles = leafFiles;
        this.fanout = fanout;
    }

    /** The top level of a tree holding {@code files} (sorted by first index), every node written. */
    public List<ManifestRef> build(List<DataFile> files) throws IOException {
        List<ManifestRef> level = leaves(files);
        while (level.size() > fanout) {
            level = inner(level);
        }
        return level;
    }

    /**
     * The top level of {@code root} with the files {@code removedIds} ({@link DataFile#id()}) taken out
     * and {@code added} put in: only the nodes on their paths are read and written again. A removed
     * id that the tree does not hold is a writer's bug (SfcLayerException: nothing is published).
     */
    public List<ManifestRef> apply(List<ManifestRef> root, Set<String> removedIds, List<DataFile> added)
            throws IOException {
        TreeMap<Long, String> removed = new TreeMap<>();
        for (String id : removedIds) {
            String name = id.substring(id.lastIndexOf('/') + 1);
            removed.put(DataFileName.parse(name).firstIndex, id);
        }
        List<DataFile> sortedAdded = new ArrayList<>(added);
        sortedAdded.sort(null);
        List<ManifestRef> level = root.isEmpty() ? leaves(sortedAdded) : applyLevel(root, removed, sortedAdded);
        if (!removed.isEmpty()) {
            throw new SfcLayerException("refusing to publish: the files " + removed.values()
                + " to remove are not in the version's manifests; nothing was published");
        }
        while (level.size() > fanout) {
            level = inner(level);
        }
        while (level.size() == 1 && level.get(0).level > 0) {
            level = store.read(level.get(0)).children; // a root of one node: the tree got a level lower
        }
        return level;
    }

    private List<ManifestRef> applyLevel(List<ManifestRef> refs, TreeMap<Long, String> removed, List<DataFile> added)
            throws IOException {
        // each change goes to the entry holding its first index (one before the first goes to the first)
        Map<Integer, List<DataFile>> addedTo = new HashMap<>();
        long[] firsts = new long[refs.size()];
        for (int i = 0; i < firsts.length; i++) {
            firsts[i] = refs.get(i).firstIndex;
        }
        for (DataFile f : added) {
            addedTo.computeIfAbsent(slot(firsts, f.firstIndex), k -> new ArrayList<>()).add(f);
        }
        Map<Integer, TreeMap<Long, String>> removedFrom = new HashMap<>();
        for (Map.Entry<Long, String> e : removed.entrySet()) {
            int i = slot(firsts, e.getKey());
            if (e.getKey() <= refs.get(i).lastIndex) {
                removedFrom.computeIfAbsent(i, k -> new TreeMap<>()).put(e.getKey(), e.getValue());
            }
        }
        // each entry: a reference kept as it is, or the content (files or references) of one to write
        List<Object> slots = new ArrayList<>();
        for (int i = 0; i < refs.size(); i++) {
            ManifestRef ref = refs.get(i);
            List<DataFile> add = addedTo.getOrDefault(i, List.of());
            TreeMap<Long, String> rem = removedFrom.getOrDefault(i, new TreeMap<>());
            if (add.isEmpty() && rem.isEmpty()) {
                slots.add(ref);
                continue;
            }
            Manifest node = store.read(ref);
            if (node.level == 0) {
                List<DataFile> files = new ArrayList<>();
                for (DataFile f : node.files) {
                    String id = rem.get(f.firstIndex);
                    if (id != null && id.equals(f.id())) {
                        removed.remove(f.firstIndex);
                    } else {
                        files.add(f);
                    }
                }
                files.addAll(add);
                files.sort(null);
                if (!files.isEmpty()) {
                    slots.add(files);
                }
            } else {
                TreeMap<Long, String> below = new TreeMap<>(rem);
                List<ManifestRef> children = applyLevel(node.children, below, add);
                for (Long k : rem.keySet()) {
                    if (!below.containsKey(k)) {
                        removed.remove(k);
                    }
                }
                if (!children.isEmpty()) {
                    slots.add(children);
                }
            }
        }
        int level = refs.get(0).level;
        mergeSmall(slots, level);
        List<ManifestRef> out = new ArrayList<>();
        for (Object slot : slots) {
            if (slot instanceof ManifestRef) {
                out.add((ManifestRef) slot);
            } else if (level == 0) {
                @SuppressWarnings("unchecked")
                List<DataFile> files = (List<DataFile>) slot;
                out.addAll(leaves(files));
            } else {
                @SuppressWarnings("unchecked")
                List<ManifestRef> children = (List<ManifestRef>) slot;
                out.addAll(split(children, level));
            }
        }
        return out;
    }

    /**
     * Merges each rewritten entry under a quarter of its capacity with a neighbour (read and rewritten
     * with it), so deletes do not leave a tree of near-empty manifests: B-tree merging, local to the
     * paths an update writes anyway.
     */
    private void mergeSmall(List<Object> slots, int level) throws IOException {
        int min = level == 0 ? Math.max(1, leafFiles / 4) : Math.max(2, fanout / 4);
        for (int i = 0; i < slots.size(); i++) {
            if (!(slots.get(i) instanceof List) || ((List<?>) slots.get(i)).size() >= min || slots.size() == 1) {
                continue;
            }
            int j = i + 1 < slots.size() ? i + 1 : i - 1;
            int lo = Math.min(i, j);
            List<Object> merged = new ArrayList<>(content(slots.get(lo)));
            merged.addAll(content(slots.get(lo + 1)));
            slots.set(lo, merged);
            slots.remove(lo + 1);
            i = lo - 1; // look at the merged entry again
        }
    }

    private List<?> content(Object slot) throws IOException {
        if (slot instanceof List) {
            return (List<?>) slot;
        }
        Manifest m = store.read((ManifestRef) slot);
        return m.level == 0 ? m.files : m.children;
    }

    /** The entry whose span would hold {@code index}: the greatest first ≤ index, else the first. */
    private static int slot(long[] firsts, long index) {
        int pos = java.util.Arrays.binarySearch(firsts, index);
        int i = pos >= 0 ? pos : -pos - 2;
        return Math.max(0, i);
    }

    /** Where part {@code p} of {@code n} entries split evenly into {@code parts} starts (in long: n·p passes 2^31). */
    static int cut(int p, int n, int parts) {
        return (int) ((long) p * n / parts);
    }

    /** Leaves of at most {@code leafFiles} files each, as even as possible. */
    private List<ManifestRef> leaves(List<DataFile> files) throws IOException {
        List<ManifestRef> out = new ArrayList<>();
        int n = files.size();
        int parts = (n + leafFiles - 1) / leafFiles;
        for (int p = 0; p < parts; p++) {
            List<DataFile> part = new ArrayList<>(files.subList(cut(p, n, parts), cut(p + 1, n, parts)));
            out.add(written(new Manifest(0, part, List.of())));
        }
        return out;
    }

    /** Children of one rewritten inner node, as one or more nodes of {@code level} (split when over the fanout). */
    private List<ManifestRef> split(List<ManifestRef> children, int level) throws IOException {
        List<ManifestRef> out = new ArrayList<>();
        int n = children.size();
        int parts = (n + fanout - 1) / fanout;
        for (int p = 0; p < parts; p++) {
            List<ManifestRef> part = new ArrayList<>(children.subList(cut(p, n, parts), cut(p + 1, n, parts)));
            out.add(written(new Manifest(level, List.of(), part)));
        }
        return out;
    }

    /** Writes a node after checking it (a writer's bug is refused, not published). */
    private ManifestRef written(Manifest m) throws IOException {
        try {
            m.check("new manifest of write " + writeId);
        } catch (SfcLayerException.CorruptLayer e) {
            throw new SfcLayerException("refusing to publish: " + SfcLayerException.reason(e) + "; nothing was published");
        }
        return store.write(writeId, m);
    }

    /** One level up: nodes of at most {@code fanout} references. */
    private List<ManifestRef> inner(List<ManifestRef> level) throws IOException {
        return split(level, level.get(0).level + 1);
    }
}
