package io.sfclayer.layer;

import io.sfclayer.codec.TileCursor;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * The one rule of merging tiles at one SFC index by key (docs/FORMAT.md section 11): groups are offered
 * in the order their files apply (a base, then its deltas oldest first), and a later tile replaces an
 * earlier one of the same key, in the earlier one's place; keys first seen first. {@link MergedGroups}
 * (reads) and {@link DeltaFold} (folding deltas into base files) both merge with it.
 *
 * <p>Records are kept as references into the offered buffers, which must stay unchanged until the merge
 * is read; {@link #clear()} starts the next index's merge, reusing its storage.
 */
final class NewestByKey {
    /** A tile's key within one index: col, row and (space-time layers) time. */
    private record Key(int col, int row, long time) {
    }

    private final boolean spaceTime;
    private final Map<Key, Integer> slots = new HashMap<>();
    private byte[][] bufs = new byte[8][];
    private int[] starts = new int[8];
    private int[] lengths = new int[8];
    private int[] sources = new int[8];
    private int n;

    NewestByKey(boolean spaceTime) {
        this.spaceTime = spaceTime;
    }

    /** Forgets the tiles merged so far. */
    void clear() {
        slots.clear();
        Arrays.fill(bufs, 0, n, null);
        n = 0;
    }

    /**
     * Offers every record of the group {@code buf[off, off + len)} (uncompressed), from file {@code source}.
     * A damaged group throws the cursor's CorruptLayer (the records before it are merged).
     */
    void addGroup(TileCursor cursor, byte[] buf, int off, int len, int source) {
        cursor.reset(buf, off, len);
        while (cursor.next()) {
            put(cursor.col(), cursor.row(), spaceTime ? cursor.timeMicros() : 0L, buf, cursor.recordOffset(),
                cursor.recordLength(), source);
        }
    }

    /** Offers one record of key (col, row, time: 0 for spatial layers), from {@code source}. */
    void put(int col, int row, long time, byte[] buf, int start, int length, int source) {
        Key k = new Key(col, row, time);
        Integer slot = slots.get(k);
        int j;
        if (slot == null) {
            if (n == bufs.length) {
                bufs = Arrays.copyOf(bufs, 2 * n);
                starts = Arrays.copyOf(starts, 2 * n);
                lengths = Arrays.copyOf(lengths, 2 * n);
                sources = Arrays.copyOf(sources, 2 * n);
            }
            j = n++;
            slots.put(k, j);
        } else {
            j = slot; // the newer tile, in the older one's place
        }
        bufs[j] = buf;
        starts[j] = start;
        lengths[j] = length;
        sources[j] = source;
    }

    /** Whether a tile of this key was offered. */
    boolean contains(int col, int row, long time) {
        return slots.containsKey(new Key(col, row, time));
    }

    /** Tiles kept: one per key. */
    int size() {
        return n;
    }

    byte[] buf(int j) {
        return bufs[j];
    }

    int start(int j) {
        return starts[j];
    }

    int length(int j) {
        return lengths[j];
    }

    /** The file tile {@code j} came from (as offered). */
    int source(int j) {
        return sources[j];
    }

    /** Tile {@code j}'s record, copied. */
    byte[] record(int j) {
        return Arrays.copyOfRange(bufs[j], starts[j], starts[j] + lengths[j]);
    }
}
