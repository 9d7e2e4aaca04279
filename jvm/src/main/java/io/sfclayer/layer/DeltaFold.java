package io.sfclayer.layer;

import io.sfclayer.SfcLayerException;
import io.sfclayer.codec.TileCursor;
import io.sfclayer.codec.TileSchema;
import io.sfclayer.curve.KeyIndex;
import io.sfclayer.format.DataFileEntry;
import io.sfclayer.format.DataFileReader;
import io.sfclayer.format.DeltaFile;
import io.sfclayer.format.ValueCompression;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;

import java.io.IOException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;

/**
 * One task's share of folding a version's delta files into its base files (docs/FORMAT.md section 11,
 * "Folding deltas"): the tiles of every delta in the task's index range {@code [lo, hi)}, merged by
 * key (a later delta's tile replaces an earlier one's: {@link NewestByKey}, the rule reads merge by), then
 * the update's own new tiles on top, all handed in index order to the task's {@link MergeWriter} (delta
 * tiles as {@link MergeWriter#addFolded}), which rewrites every base file they fall into. No Spark in here.
 */
public final class DeltaFold implements TaskWrite.Sink {
    /**
     * What a folding update's tasks are told: the read version's deltas (in list order) and the breaks
     * that split the index space among the tasks (partition p holds {@code [breaks[p-1], breaks[p])}),
     * so that each delta tile is folded by exactly one task.
     */
    public record Plan(List<DeltaFile> deltas, long[] breaks, int documentFormat) implements Serializable {
        /** The lowest index of partition {@code p}. */
        public long lo(int p) {
            return p == 0 ? Long.MIN_VALUE : breaks[p - 1];
        }

        /** The index after partition {@code p}'s last. */
        public long hi(int p) {
            return p >= breaks.length ? Long.MAX_VALUE : breaks[p];
        }
    }

    private final MergeWriter merge;
    private final MergeWriter.OnExisting onExisting;
    private final ValueCompression compression;
    private final boolean spaceTime;
    private final String layer;
    private final long hi;
    /** The deltas meeting the range, in list order (a later one wins at a key); null entries are exhausted. */
    private final List<Source> sources = new ArrayList<>();
    private long ownIndex = Long.MIN_VALUE;
    private final List<byte[]> own = new ArrayList<>();
    /** The deltas' tiles at the index being folded, by key. */
    private final NewestByKey atIndex;
    /** {@link NewestByKey}'s source of the update's own tiles. */
    private static final int OWN = -1;
    private long replaced;
    private long kept;

    /** One delta file read in index order from the task's range on: its current group's records. */
    private static final class Source {
        final DataFileReader reader;
        final TileCursor cursor;
        boolean positioned;

        Source(DataFileReader reader, TileCursor cursor) {
            this.reader = reader;
            this.cursor = cursor;
        }
    }

    public DeltaFold(Configuration conf, Path layerPath, Plan plan, int partition, TileSchema schema,
                     ValueCompression compression, MergeWriter.OnExisting onExisting, MergeWriter merge)
            throws IOException {
        this.merge = merge;
        this.onExisting = onExisting;
        this.compression = compression;
        this.spaceTime = schema.spaceTime();
        this.atIndex = new NewestByKey(spaceTime);
        this.layer = layerPath.toString();
        long lo = plan.lo(partition);
        this.hi = plan.hi(partition);
        try {
            for (DeltaFile d : plan.deltas()) {
                if (d.file.lastIndex < lo || d.file.firstIndex >= hi) {
                    continue;
                }
                DataFileReader r = new DataFileReader(conf, new Path(new Path(layerPath, d.file.dir), d.file.name),
                    DataFileEntry.of(d.file, plan.documentFormat(), layer), null);
                Source s = new Source(r, new TileCursor(schema));
                sources.add(s);
                s.positioned = lo == Long.MIN_VALUE ? r.next() : r.seekCeiling(lo);
                if (s.positioned && r.index() >= hi) {
                    s.positioned = false;
                }
            }
        } catch (IOException | RuntimeException e) {
            abort();
            throw e;
        }
    }

    /** Tiles of the update's own that replaced (onExisting=replace) or yielded to (keep) a delta's tile. */
    public TileCounts counts() {
        return new TileCounts(0, replaced, kept, 0);
    }

    /** One of the update's own new tiles; indexes must not decrease. */
    @Override
    public void add(long index, byte[] record) throws IOException {
        if (index != ownIndex) {
            flushOwn();
            ownIndex = index;
        }
        own.add(record);
    }

    /** Folds what is left of the deltas' tiles in the range. Closes the deltas, not the merge. */
    public void finish() throws IOException {
        flushOwn();
        drainBefore(Long.MAX_VALUE);
        closeSources();
    }

    /** After a failure: closes the deltas; errors suppressed. */
    public void abort() {
        try {
            closeSources();
        } catch (IOException | RuntimeException ignored) {
            // failing already
        }
    }

    private void closeSources() throws IOException {
        IOException first = null;
        for (Source s : sources) {
            try {
                s.reader.close();
            } catch (IOException e) {
                first = first == null ? e : first;
            }
        }
        sources.clear();
        if (first != null) {
            throw first;
        }
    }

    private void flushOwn() throws IOException {
        if (own.isEmpty()) {
            return;
        }
        long x = ownIndex;
        drainBefore(x);
        NewestByKey deltaTiles = deltaTilesAt(x);
        List<byte[]> mine = new ArrayList<>();
        long[] k = new long[3];
        for (byte[] r : own) {
            k[2] = 0;
            TileKeys.read(r, 0, spaceTime, k);
            if (!deltaTiles.contains((int) k[0], (int) k[1], k[2])) {
                mine.add(r); // the merge with the base decides (onExisting against the base's tile)
            } else if (onExisting == MergeWriter.OnExisting.ERROR) {
                throw new SfcLayerException.InvalidInput("key " + KeyIndex.describeKey((int) k[0], (int) k[1],
                    spaceTime, k[2]) + " already exists in layer " + layer
                    + " (write option onExisting=error); nothing was published");
            } else if (onExisting == MergeWriter.OnExisting.KEEP) {
                kept++;
            } else {
                // the version's tile is the delta's: this one, newer, replaces it
                deltaTiles.put((int) k[0], (int) k[1], k[2], r, 0, r.length, OWN);
                replaced++;
            }
        }
        foldAll(x, deltaTiles);
        for (byte[] r : mine) {
            merge.add(x, r);
        }
        own.clear();
    }

    /** Folds every delta index below {@code x} (and below the range's end). */
    private void drainBefore(long x) throws IOException {
        while (true) {
            long m = Long.MAX_VALUE;
            for (Source s : sources) {
                if (s.positioned) {
                    m = Math.min(m, s.reader.index());
                }
            }
            if (m == Long.MAX_VALUE || m >= x) {
                return;
            }
            foldAll(m, deltaTilesAt(m));
        }
    }

    private void foldAll(long x, NewestByKey tiles) throws IOException {
        for (int j = 0; j < tiles.size(); j++) {
            merge.addFolded(x, tiles.record(j));
        }
        tiles.clear();
    }

    /**
     * The deltas' tiles at index {@code x}, merged by key in list order ({@link NewestByKey}, a later delta's
     * replacing an earlier's, the rule reads merge by too); advances past x.
     */
    private NewestByKey deltaTilesAt(long x) throws IOException {
        atIndex.clear();
        for (int i = 0; i < sources.size(); i++) {
            Source s = sources.get(i);
            if (!s.positioned || s.reader.index() != x) {
                continue;
            }
            DataFileReader r = s.reader;
            byte[] group = compression.decompress(r.bytes(), r.offset(), r.length());
            if (group == r.bytes()) {
                group = group.clone(); // the reader's own buffer (no compression): its next group reuses it
            }
            atIndex.addGroup(s.cursor, group, 0, group.length, i);
            s.positioned = r.next() && r.index() < hi;
        }
        return atIndex;
    }
}
