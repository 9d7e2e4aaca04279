package io.sfclayer.layer;

import io.sfclayer.SfcLayerException;
import io.sfclayer.codec.TileCursor;
import io.sfclayer.codec.TileSchema;
import io.sfclayer.codec.Varint;
import io.sfclayer.format.DataFileReader;
import io.sfclayer.format.ValueCompression;

import java.io.IOException;

/**
 * The merge of a base file and the delta files meeting its ranges (format 7, docs/FORMAT.md section
 * 11): each file is traversed in step with the query's ranges ({@link RangeTraversal}), and the groups
 * come out merge-sorted by SFC index. At an index held by one file its group is handed out as it is
 * (decompressed); at an index held by several, their tiles are merged by key in the files' order (the
 * base, then the deltas oldest first), a later tile replacing an earlier one of the same key
 * ({@link NewestByKey}, the rule {@link DeltaFold} folds by too), and
 * handed out as one uncompressed group (an Avro array of the kept records, as section 4 encodes it).
 * Readers of versions without deltas never come here: their one-file traversal is unchanged.
 *
 * <pre>
 *   MergedGroups m = new MergedGroups(readers, pairs, compression, schema);
 *   while (m.next()) { cursor.reset(m.bytes(), m.offset(), m.length()); ... m.source(k) ... }
 * </pre>
 */
public final class MergedGroups {
    private final DataFileReader[] files;
    private final RangeTraversal[] traversals;
    /** Whether file s is on a group not yet handed out. */
    private final boolean[] has;
    /** Whether file s's group was handed out by the last {@link #next()} (so it moves on at the next). */
    private final boolean[] taken;
    private final TileCursor cursor;
    private final ValueCompression compression;
    private final NewestByKey byKey;
    private boolean started;
    private long index;
    private byte[] out;
    private int outOffset;
    private int outLength;
    /** The file each record of a merged group came from; -1 in {@code single} when the group is one file's. */
    private int[] recordSource = new int[16];
    private int single = -1;
    /** The merged group's buffer, reused. */
    private byte[] merged = new byte[256];

    /**
     * @param files  the files in the order their tiles apply: the base file first (when there is one), then
     *               the deltas in list order; each positioned nowhere yet
     * @param pairs  the query's sorted, disjoint ranges as {@code lo, hi} pairs
     */
    public MergedGroups(DataFileReader[] files, long[] pairs, ValueCompression compression, TileSchema schema) {
        this.files = files;
        this.traversals = new RangeTraversal[files.length];
        for (int s = 0; s < files.length; s++) {
            traversals[s] = new RangeTraversal(files[s], pairs);
        }
        this.has = new boolean[files.length];
        this.taken = new boolean[files.length];
        this.cursor = new TileCursor(schema);
        this.compression = compression;
        this.byKey = new NewestByKey(schema.spaceTime());
    }

    /** Moves to the next index any file holds within the ranges; false when none is left. */
    public boolean next() throws IOException {
        for (int s = 0; s < files.length; s++) {
            if (!started || taken[s]) {
                has[s] = traversals[s].next();
                taken[s] = false;
            }
        }
        started = true;
        long min = Long.MAX_VALUE;
        int count = 0;
        int first = -1;
        for (int s = 0; s < files.length; s++) {
            if (has[s]) {
                long i = files[s].index();
                if (first < 0 || i < min) {
                    min = i;
                    first = s;
                    count = 1;
                } else if (i == min) {
                    count++;
                }
            }
        }
        if (first < 0) {
            return false;
        }
        index = min;
        if (count == 1) {
            taken[first] = true;
            single = first;
            decompressed(first);
            return true;
        }
        single = -1;
        merge(min);
        return true;
    }

    /** Points {@code out} at file s's current group, decompressed. */
    private void decompressed(int s) {
        DataFileReader f = files[s];
        if (compression == ValueCompression.NONE) {
            out = f.bytes();
            outOffset = f.offset();
            outLength = f.length();
            return;
        }
        try {
            out = compression.decompress(f.bytes(), f.offset(), f.length());
        } catch (SfcLayerException.CorruptLayer e) {
            throw corrupt(s, e);
        }
        outOffset = 0;
        outLength = out.length;
    }

    /** Merges the groups at {@code at} by key, later files' tiles replacing earlier ones' ({@link NewestByKey}). */
    private void merge(long at) {
        byKey.clear();
        for (int s = 0; s < files.length; s++) {
            if (!has[s] || files[s].index() != at) {
                continue;
            }
            taken[s] = true;
            decompressed(s);
            try {
                byKey.addGroup(cursor, out, outOffset, outLength, s);
            } catch (SfcLayerException.CorruptLayer e) {
                throw corrupt(s, e);
            }
        }
        int n = byKey.size();
        int size = 20;
        for (int j = 0; j < n; j++) {
            size += byKey.length(j);
        }
        if (merged.length < size) {
            merged = new byte[Math.max(size, 2 * merged.length)];
        }
        int p = Varint.writeLong(merged, 0, n); // one Avro block of n items, then the end of the array
        if (recordSource.length < n) {
            recordSource = new int[Math.max(n, 2 * recordSource.length)];
        }
        for (int j = 0; j < n; j++) {
            System.arraycopy(byKey.buf(j), byKey.start(j), merged, p, byKey.length(j));
            p += byKey.length(j);
            recordSource[j] = byKey.source(j);
        }
        if (n > 0) {
            p = Varint.writeLong(merged, p, 0);
        }
        byKey.clear(); // lets go of the files' buffers
        out = merged;
        outOffset = 0;
        outLength = p;
    }

    private SfcLayerException.CorruptLayer corrupt(int s, SfcLayerException.CorruptLayer e) {
        return new SfcLayerException.CorruptLayer("data file " + files[s].path() + ", group at index "
            + files[s].index() + ": " + SfcLayerException.reason(e), e);
    }

    /** The current index. */
    public long index() {
        return index;
    }

    /** The current group (uncompressed): {@code bytes()[offset() .. offset() + length())}. */
    public byte[] bytes() {
        return out;
    }

    public int offset() {
        return outOffset;
    }

    public int length() {
        return outLength;
    }

    /** The file (its position among the files given) record {@code k} of the current group came from. */
    public int source(int k) {
        return single >= 0 ? single : recordSource[k];
    }

    /** Seeks made in all the files. */
    public long seeks() {
        long n = 0;
        for (RangeTraversal t : traversals) {
            n += t.seeks();
        }
        return n;
    }
}
