package io.sfclayer.layer;

import io.sfclayer.SfcLayerException;
import io.sfclayer.codec.TileCursor;
import io.sfclayer.codec.TileSchema;
import io.sfclayer.curve.KeyIndex;
import io.sfclayer.curve.QueryBox;
import io.sfclayer.format.DataFile;
import io.sfclayer.format.DataFileEntry;
import io.sfclayer.format.DataFileReader;
import io.sfclayer.format.ValueCompression;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;

import java.io.Closeable;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;

/**
 * One task of an update (seed 000's incremental update, seed 004's sorted merge): new tile records,
 * sorted by index, are merged with the task's existing files (sorted, disjoint). An existing file is
 * read, once and in order, only when a new record falls inside its index span or it is to be
 * rewritten anyway (a delete's or a compaction's files); every other file is neither read nor
 * copied, and the output rolls to a new file at it so the version's files stay disjoint. Groups of
 * a rewritten file that no new record touches are copied as stored, not decoded. No Spark in here.
 *
 * <p>Each file is opened with its entry in the read version's document (its length, format and
 * checksums), as a read of that version would: a damaged file fails the update with
 * {@link SfcLayerException.CorruptLayer} naming it, instead of being rewritten under fresh checksums.
 */
public final class MergeWriter implements Closeable {
    /** What an append does with a tile whose key the layer already holds (write option onExisting). */
    public enum OnExisting {
        REPLACE, KEEP, ERROR;

        public static OnExisting parse(String v) {
            if (v == null) {
                return REPLACE;
            }
            switch (v.trim().toLowerCase(java.util.Locale.ROOT)) {
                case "replace": return REPLACE;
                case "keep": return KEEP;
                case "error": return ERROR;
                default:
                    throw new SfcLayerException.InvalidArgument("option onExisting: '" + v
                        + "' is unknown (replace, keep or error)");
            }
        }
    }

    /** Tiles inserted (new keys), replaced, kept (new tile dropped by keep), deleted: see {@link #counts()}. */
    private long tilesInserted;
    private long tilesReplaced;
    private long tilesKept;
    private long tilesDeleted;

    private final Configuration conf;
    private final Path layer;
    private final List<DataFile> files;
    private final int baseFormat;
    private final Set<String> rewrite;
    private final GroupWriter out;
    private final TileCursor cursor;
    private final ValueCompression compression;
    private final boolean spaceTime;
    private final OnExisting onExisting;
    private final QueryBox[] deleteBoxes;
    private final List<DataFile> removed = new ArrayList<>();
    /** Where a repair's reads send damage (skipping the damaged records); null: damage fails the update. */
    private DataFileReader.DamageSink damageSink;

    private int fi;
    private DataFileReader open;
    private boolean positioned;
    private long pendingIndex = -1;
    private final List<byte[]> pending = new ArrayList<>();
    /** Per pending record: a delta's tile being folded ({@link #addFolded}), not one of the update's own. */
    private final List<Boolean> pendingFolded = new ArrayList<>();
    private final long[] key = new long[3];

    /**
     * @param files       the existing files this task may touch, sorted by first index, disjoint
     * @param baseFormat  the format version of the document that lists {@code files} (what their entries promise)
     * @param rewrite     ids of files to rewrite even if no new record falls in them
     * @param deleteBoxes tiles of rewritten files whose keys lie in one of these are dropped
     */
    public MergeWriter(Configuration conf, Path layer, List<DataFile> files, int baseFormat, Set<String> rewrite,
                       GroupWriter out, TileSchema schema, ValueCompression compression, OnExisting onExisting,
                       List<QueryBox> deleteBoxes) {
        this.conf = conf;
        this.layer = layer;
        this.files = files;
        this.baseFormat = baseFormat;
        this.rewrite = rewrite;
        this.out = out;
        this.cursor = new TileCursor(schema);
        this.compression = compression;
        this.spaceTime = schema.spaceTime();
        this.onExisting = onExisting;
        this.deleteBoxes = deleteBoxes.toArray(new QueryBox[0]);
    }

    /**
     * Makes this merge skip damaged records of the files it reads, reporting them to {@code sink}:
     * only for a repair, which rewrites the files a verify found damaged and records what it dropped.
     */
    public MergeWriter skipDamage(DataFileReader.DamageSink sink) {
        this.damageSink = sink;
        return this;
    }

    /** What this merge did to tiles so far (all of it once closed). */
    public TileCounts counts() {
        return new TileCounts(tilesInserted, tilesReplaced, tilesKept, tilesDeleted);
    }

    /** Adds a new tile record; indexes must not decrease. */
    public void add(long index, byte[] record) throws IOException {
        add(index, record, false);
    }

    /**
     * Adds a tile of a delta file being folded into the base files (docs/FORMAT.md section 11): it
     * replaces the base tile of its key whatever {@code onExisting} says (it is the version's tile
     * already), is counted nowhere (not new to the layer), and is dropped like a base tile when a
     * delete box holds it. Indexes must not decrease (across both kinds of record).
     */
    public void addFolded(long index, byte[] record) throws IOException {
        add(index, record, true);
    }

    private void add(long index, byte[] record, boolean folded) throws IOException {
        if (index != pendingIndex) {
            if (index < pendingIndex) {
                throw new IllegalStateException("records out of index order: " + index + " after " + pendingIndex);
            }
            flushPending();
            pendingIndex = index;
        }
        pending.add(record);
        pendingFolded.add(folded);
    }

    /** The existing files this task rewrote (the new version no longer references them). */
    public List<DataFile> removed() {
        return removed;
    }

    private void flushPending() throws IOException {
        if (pending.isEmpty()) {
            return;
        }
        long x = pendingIndex;
        finishFilesBefore(x);
        if (fi < files.size() && files.get(fi).firstIndex <= x) {
            ensureOpen();
            while (positioned && open.index() < x) {
                copyGroup();
                advance();
            }
            if (positioned && open.index() == x) {
                mergeGroup(x);
                advance();
            } else {
                writeNew(x);
            }
        } else {
            writeNew(x);
        }
        pending.clear();
        pendingFolded.clear();
    }

    private void writeNew(long x) throws IOException {
        for (int i = 0; i < pending.size(); i++) {
            writeUnmatched(x, i);
        }
    }

    /** A pending record no base tile has the key of: a new tile, or a folded delta tile (dropped if deleted). */
    private void writeUnmatched(long x, int i) throws IOException {
        byte[] r = pending.get(i);
        if (!pendingFolded.get(i)) {
            out.add(x, r);
            tilesInserted++;
            return;
        }
        if (deleteBoxes.length > 0) {
            key[2] = 0;
            TileKeys.read(r, 0, spaceTime, key);
            if (deletedKey((int) key[0], (int) key[1], key[2])) {
                tilesDeleted++;
                return;
            }
        }
        out.add(x, r);
    }

    /** Finishes every file whose span ends before {@code x}: drains a rewritten one, rolls at a kept one. */
    private void finishFilesBefore(long x) throws IOException {
        while (fi < files.size() && files.get(fi).lastIndex < x) {
            DataFile f = files.get(fi);
            if (open == null && rewrite.contains(f.id())) {
                ensureOpen();
            }
            if (open != null) {
                while (positioned) {
                    copyGroup();
                    advance();
                }
                open.close();
                open = null;
            } else {
                out.endFile();
            }
            fi++;
        }
    }

    private void ensureOpen() throws IOException {
        if (open != null) {
            return;
        }
        DataFile f = files.get(fi);
        // without a damage sink (every update but a repair), damage fails it: a CorruptLayer naming the file
        open = new DataFileReader(conf, new Path(new Path(layer, f.dir), f.name),
            DataFileEntry.of(f, baseFormat, layer.toString()), damageSink);
        removed.add(f);
        advance();
    }

    private void advance() throws IOException {
        positioned = open.next();
    }

    /** Copies the open file's current group: as stored, or filtered when deleting. */
    private void copyGroup() throws IOException {
        byte[] group = compression.decompress(open.bytes(), open.offset(), open.length());
        int kept = 0;
        boolean dropAny = false;
        cursor.reset(group, 0, group.length);
        while (cursor.next()) {
            if (deleted()) {
                dropAny = true;
            } else {
                kept++;
            }
        }
        if (!dropAny) {
            out.addStored(open.index(), open.bytes(), open.offset(), open.length(), kept, group);
            return;
        }
        cursor.reset(group, 0, group.length);
        while (cursor.next()) {
            if (deleted()) {
                tilesDeleted++;
            } else {
                int off = cursor.recordOffset();
                out.add(open.index(), Arrays.copyOfRange(group, off, off + cursor.recordLength()));
            }
        }
    }

    private boolean deleted() {
        return deletedKey(cursor.col(), cursor.row(), cursor.timeMicros());
    }

    private boolean deletedKey(int col, int row, long timeMicros) {
        for (QueryBox b : deleteBoxes) {
            if (b.contains(col, row, timeMicros)) {
                return true;
            }
        }
        return false;
    }

    /** The open file's group at the pending index, merged with the pending new records by key. */
    private void mergeGroup(long x) throws IOException {
        byte[] group = compression.decompress(open.bytes(), open.offset(), open.length());
        long[][] newKeys = new long[pending.size()][];
        boolean[] dropNew = new boolean[pending.size()];
        for (int i = 0; i < newKeys.length; i++) {
            newKeys[i] = new long[3];
            TileKeys.read(pending.get(i), 0, spaceTime, newKeys[i]);
        }
        cursor.reset(group, 0, group.length);
        while (cursor.next()) {
            int match = -1;
            for (int i = 0; i < newKeys.length && match < 0; i++) {
                long[] k = newKeys[i];
                if (k[0] == cursor.col() && k[1] == cursor.row() && (!spaceTime || k[2] == cursor.timeMicros())) {
                    match = i;
                }
            }
            boolean keepOld;
            if (match < 0) {
                keepOld = !deleted();
                if (!keepOld) {
                    tilesDeleted++;
                }
            } else if (pendingFolded.get(match)) {
                // a delta's tile replaces the base's (both deleted when a delete box holds the key: counted once)
                keepOld = false;
                dropNew[match] = true;
                if (deleted()) {
                    tilesDeleted++;
                } else {
                    out.add(x, pending.get(match));
                }
            } else if (onExisting == OnExisting.ERROR) {
                throw new SfcLayerException.InvalidInput("key " + KeyIndex.describeKey(cursor.col(), cursor.row(),
                    spaceTime, cursor.timeMicros()) + " already exists in layer " + layer
                    + " (write option onExisting=error); nothing was published");
            } else if (onExisting == OnExisting.KEEP) {
                keepOld = true;
                dropNew[match] = true;
                tilesKept++;
            } else {
                keepOld = false;
                dropNew[match] = true;
                out.add(x, pending.get(match));
                tilesReplaced++;
            }
            if (keepOld) {
                int off = cursor.recordOffset();
                out.add(x, Arrays.copyOfRange(group, off, off + cursor.recordLength()));
            }
        }
        for (int i = 0; i < dropNew.length; i++) {
            if (!dropNew[i]) {
                writeUnmatched(x, i);
            }
        }
    }

    /** Merges what is left and closes the output. */
    @Override
    public void close() throws IOException {
        flushPending();
        finishFilesBefore(Long.MAX_VALUE);
        out.close();
    }

    /** After a failure: closes what is open; errors are suppressed. */
    public void abort() {
        out.abort();
        if (open != null) {
            try {
                open.close();
            } catch (IOException | RuntimeException ignored) {
                // failing already
            }
        }
    }
}
