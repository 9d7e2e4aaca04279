package io.sfclayer.lookup;

import io.sfclayer.SfcLayerException;
import io.sfclayer.codec.TileCursor;
import io.sfclayer.codec.TileSchema;
import io.sfclayer.curve.IndexRange;
import io.sfclayer.curve.KeyIndex;
import io.sfclayer.curve.QueryBox;
import io.sfclayer.format.DataFileListing;
import io.sfclayer.format.DataFileReader;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.format.ValueCompression;
import io.sfclayer.layer.BoxQuery;
import io.sfclayer.layer.Deltas;
import io.sfclayer.layer.Layer;
import io.sfclayer.layer.MergedGroups;
import io.sfclayer.layer.QueryPlan;
import io.sfclayer.layer.RangeTraversal;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * {@link ValueReader}'s box queries and counts: files pruned by name, the query's ranges traversed
 * with the cache's open readers, records refined against the boxes (the {@link QueryPlan} rules of a
 * Spark read), handed out a batch at a time with no lock held. In a version with delta files (format
 * 7), a base file's ranges are read merged with the deltas meeting them ({@link MergedGroups}), as a
 * Spark scan reads them; versions without deltas walk one file at a time, as before.
 */
final class BoxWalk {
    private final Layer layer;
    private final LayerMetadata md;
    private final DataFileListing listing;
    private final Deltas deltas;
    private final ReaderCaches caches;
    private final TileSchema schema;
    private final KeyIndex keyIndex;
    private final ValueCompression compression;

    BoxWalk(Layer layer, ReaderCaches caches, TileSchema schema) throws IOException {
        this.layer = layer;
        this.md = layer.metadata();
        this.listing = layer.listing();
        this.deltas = layer.deltas();
        this.caches = caches;
        this.schema = schema;
        this.keyIndex = md.keyIndex;
        this.compression = ValueCompression.parse(md.compression);
    }

    /** What a walk hands out so far: its batch, its count and how many records it may still take. */
    private static final class Walk {
        final QueryBox[] boxes;
        final Batches batches;
        long left;
        long total;
        List<byte[]> batch = new ArrayList<>();
        long batchBytes;

        Walk(QueryBox[] boxes, Batches batches, long limit) {
            this.boxes = boxes;
            this.batches = batches;
            this.left = limit < 0 ? Long.MAX_VALUE : limit;
        }

        /** Takes the records of the cursor's group that lie in a box; true when the batch is full. */
        boolean take(byte[] buf, TileCursor c) {
            while (left > 0 && c.next()) {
                if (!QueryPlan.anyContains(boxes, c.col(), c.row(), c.timeMicros())) {
                    continue;
                }
                if (batches != null) {
                    int start = c.recordOffset();
                    int length = c.recordLength();
                    batch.add(Arrays.copyOfRange(buf, start, start + length));
                    batchBytes += length;
                }
                total++;
                left--;
            }
            return batches != null && (batch.size() >= ValueReader.BATCH_RECORDS || batchBytes >= ValueReader.BATCH_BYTES);
        }

        /** Hands the batch out (no lock held). */
        void flush() throws IOException {
            if (batches != null && !batch.isEmpty()) {
                batches.accept(batch);
                batch = new ArrayList<>();
                batchBytes = 0;
            }
        }
    }

    /**
     * One file's share of a walk: a base file ({@code base} ≥ 0, its position in the listing) with the
     * ranges clipped to what it covers, and the deltas meeting them (format 7; empty: none).
     */
    private static final class Part {
        final int base;
        final long[] pairs;
        final int[] deltas;

        Part(int base, long[] pairs, int[] deltas) {
            this.base = base;
            this.pairs = pairs;
            this.deltas = deltas;
        }
    }

    /** The files a box's ranges select by name, and (format 7) the deltas each merges, in index order. */
    private List<Part> parts(List<IndexRange> ranges) {
        List<Part> parts = new ArrayList<>();
        if (ranges.isEmpty()) {
            return parts;
        }
        if (!deltas.isEmpty()) {
            // ranges before the first base file: only deltas can hold them
            long[] pairs = QueryPlan.pairs(Deltas.before(ranges, listing.size() == 0 ? Long.MAX_VALUE : listing.start(0)));
            int[] ds = deltas.meeting(pairs);
            if (ds.length > 0) {
                parts.add(new Part(-1, pairs, ds));
            }
        }
        for (DataFileListing.Selection s : listing.select(ranges)) {
            long[] pairs = QueryPlan.pairs(s.ranges);
            parts.add(new Part(listing.fileFor(s.firstIndex), pairs, deltas.meeting(pairs)));
        }
        return parts;
    }

    long walk(BoxQuery q, Batches batches) throws IOException {
        List<IndexRange> ranges = QueryPlan.ranges(keyIndex, q.boxes, q.maxRanges);
        Walk w = new Walk(q.boxes.toArray(new QueryBox[0]), batches, q.limit);
        for (Part p : parts(ranges)) {
            long[] pairs = p.pairs;
            while (pairs != null && w.left > 0) {
                long last = p.deltas.length == 0 ? walkFile(p.base, pairs, w) : walkMerged(p, pairs, w);
                if (last >= 0 && w.left > 0) {
                    w.flush();
                    pairs = after(pairs, last);
                } else {
                    pairs = null;
                }
            }
            if (w.left == 0) {
                break;
            }
        }
        w.flush();
        return w.total;
    }

    /**
     * Walks one file's groups in {@code pairs} (the path of every version without deltas) until the
     * batch is full: the index of the last group taken then, else -1 (the file is done).
     */
    private long walkFile(int file, long[] pairs, Walk w) throws IOException {
        while (true) {
            ReaderCaches.OpenFile f = caches.acquire(file);
            synchronized (f) {
                if (f.closed) {
                    continue; // evicted between acquire and lock: open it again
                }
                RangeTraversal t = new RangeTraversal(f.reader, pairs);
                while (w.left > 0 && t.next()) {
                    if (w.take(group(f, compression), f.cursor)) {
                        return f.reader.index(); // whole groups per batch: resume after this one
                    }
                }
                return -1;
            }
        }
    }

    /** Attempts at holding a merge's files in the cache at once before reading them outside it. */
    private static final int MERGE_ACQUIRE_ATTEMPTS = 3;

    /**
     * Walks a base file merged with its deltas (format 7, {@link MergedGroups}) until the batch is
     * full, as {@link #walkFile}. The files are taken from the cache and locked in one order (base,
     * then deltas in list order), so two walks never wait on each other in a circle; when the cache
     * cannot hold them all at once (a small cache), they are opened outside it for this pass.
     */
    private long walkMerged(Part p, long[] pairs, Walk w) throws IOException {
        int[] slots = new int[(p.base >= 0 ? 1 : 0) + p.deltas.length];
        int k = 0;
        if (p.base >= 0) {
            slots[k++] = p.base;
        }
        for (int d : p.deltas) {
            slots[k++] = -1 - d;
        }
        for (int attempt = 0; attempt < MERGE_ACQUIRE_ATTEMPTS; attempt++) {
            ReaderCaches.OpenFile[] open = new ReaderCaches.OpenFile[slots.length];
            for (int i = 0; i < slots.length; i++) {
                open[i] = caches.acquire(slots[i]);
            }
            long last = underLocks(open, 0, pairs, w);
            if (last != EVICTED) {
                return last;
            }
        }
        DataFileReader[] readers = new DataFileReader[slots.length];
        try {
            for (int i = 0; i < slots.length; i++) {
                readers[i] = caches.openUncached(slots[i]);
            }
            return mergedPass(readers, pairs, w);
        } finally {
            for (DataFileReader r : readers) {
                if (r != null) {
                    r.close();
                }
            }
        }
    }

    /** {@link #walkMerged}'s answer when a file was evicted between its acquire and its lock. */
    private static final long EVICTED = Long.MIN_VALUE;

    /** Locks {@code open[i..]} in order, then reads the merge; {@link #EVICTED} if one of them was closed. */
    private long underLocks(ReaderCaches.OpenFile[] open, int i, long[] pairs, Walk w) throws IOException {
        if (i == open.length) {
            DataFileReader[] readers = new DataFileReader[open.length];
            for (int k = 0; k < open.length; k++) {
                readers[k] = open[k].reader;
            }
            return mergedPass(readers, pairs, w);
        }
        synchronized (open[i]) {
            if (open[i].closed) {
                return EVICTED;
            }
            return underLocks(open, i + 1, pairs, w);
        }
    }

    /** Reads merged groups until the batch is full (the last index taken) or the ranges end (-1). */
    private long mergedPass(DataFileReader[] readers, long[] pairs, Walk w) throws IOException {
        MergedGroups m = new MergedGroups(readers, pairs, compression, schema);
        TileCursor c = new TileCursor(schema);
        while (w.left > 0 && m.next()) {
            c.reset(m.bytes(), m.offset(), m.length());
            boolean full;
            try {
                full = w.take(m.bytes(), c);
            } catch (SfcLayerException.CorruptLayer e) {
                throw new SfcLayerException.CorruptLayer("layer " + layer.path() + " version " + md.version
                    + ", group at index " + m.index() + ": " + SfcLayerException.reason(e), e);
            }
            if (full) {
                return m.index();
            }
        }
        return -1;
    }

    /** Puts {@code f}'s cursor on its reader's current group (decompressed) and returns the group's bytes. Under f's lock. */
    static byte[] group(ReaderCaches.OpenFile f, ValueCompression compression) {
        byte[] buf = f.reader.bytes();
        int off = f.reader.offset();
        int len = f.reader.length();
        if (compression != ValueCompression.NONE) {
            buf = compression.decompress(buf, off, len);
            off = 0;
            len = buf.length;
        }
        f.cursor.reset(buf, off, len);
        return buf;
    }

    /** The {@code lo, hi} pairs clipped to indexes after {@code index}; null when none is left. */
    static long[] after(long[] pairs, long index) {
        int k = 0;
        while (k < pairs.length && pairs[k + 1] <= index) {
            k += 2;
        }
        if (k == pairs.length || index == Long.MAX_VALUE) {
            return null;
        }
        long[] out = Arrays.copyOfRange(pairs, k, pairs.length);
        out[0] = Math.max(out[0], index + 1);
        return out;
    }

}
