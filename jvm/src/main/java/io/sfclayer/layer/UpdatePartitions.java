package io.sfclayer.layer;

import io.sfclayer.format.DataFile;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * How an update hands existing files to its tasks (docs/FORMAT.md, "Updates"): a task's output rolls
 * at every file it is given, so no file may straddle two tasks and a task gets every file between its
 * first and last. Pure functions of sorted, disjoint file lists; no Spark.
 */
public final class UpdatePartitions {
    private UpdatePartitions() {
    }

    /**
     * Partition breaks moved so no existing file straddles two partitions: a break inside a file's
     * span moves down to the file's first index (the whole file goes to the upper partition).
     */
    public static long[] snap(long[] breaks, List<DataFile> files) {
        long[] firsts = files.stream().mapToLong(f -> f.firstIndex).toArray();
        long[] out = breaks.clone();
        for (int k = 0; k < out.length; k++) {
            int pos = Arrays.binarySearch(firsts, out[k]);
            int i = pos >= 0 ? pos : -pos - 2;
            if (i >= 0 && firsts[i] < out[k] && files.get(i).lastIndex >= out[k]) {
                out[k] = firsts[i];
            }
        }
        return out;
    }

    /** The existing files of each partition under {@code breaks}. */
    public static List<List<DataFile>> assign(long[] breaks, List<DataFile> files) {
        List<List<DataFile>> out = new ArrayList<>();
        for (int p = 0; p <= breaks.length; p++) {
            out.add(new ArrayList<>());
        }
        for (DataFile f : files) {
            out.get(PartitionBreaks.partitionOf(breaks, f.firstIndex)).add(f);
        }
        return out;
    }

    /** Splits sorted files into at most {@code n} groups of adjacent files. */
    public static List<List<DataFile>> chunks(List<DataFile> files, int n) {
        List<List<DataFile>> out = new ArrayList<>();
        int per = Math.max(1, (files.size() + n - 1) / Math.max(1, n));
        for (int i = 0; i < files.size(); i += per) {
            out.add(new ArrayList<>(files.subList(i, Math.min(files.size(), i + per))));
        }
        return out;
    }

    /**
     * Groups of {@code touched} (some of {@code all}, both sorted) for at most {@code tasks} tasks: each a slice
     * of adjacent files of {@code all}, its touched ones and the kept ones between them (at which its
     * output rolls, so the version's files stay disjoint).
     */
    public static List<List<DataFile>> slices(List<DataFile> all, List<DataFile> touched, int tasks) {
        Map<String, Integer> position = new HashMap<>();
        for (int i = 0; i < all.size(); i++) {
            position.put(all.get(i).id(), i);
        }
        List<List<DataFile>> groups = new ArrayList<>();
        for (List<DataFile> c : chunks(touched, tasks)) {
            groups.add(new ArrayList<>(all.subList(position.get(c.get(0).id()), position.get(c.get(c.size() - 1).id()) + 1)));
        }
        return groups;
    }
}
