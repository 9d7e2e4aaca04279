package io.sfclayer.geotrellis;

import io.sfclayer.SfcLayerException;
import io.sfclayer.curve.IndexRange;

import java.io.Closeable;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.List;

/**
 * The tiles of one GeoTrellis MapFile within index ranges: for each range, seek to the index entry at or
 * before its start (only forward: a range starting within what was just read reads on), read its records,
 * decode them and keep the tiles whose key passes the refinement (range decomposition may cover more
 * than the query). Unlike GeoTrellis' reader, which stops seeking after the first gap and reads the
 * span between, every range is sought.
 */
public final class GtFileScan implements Closeable {
    /** Which keys the query wants (col, row, instant in ms). */
    public interface KeyFilter {
        boolean test(int col, int row, long millis);
    }

    private final GtMapFile file;
    private final List<IndexRange> ranges;
    private final GtRecordCodec codec;
    private final KeyFilter filter;
    private final String where;
    private final ArrayDeque<GtTile> ready = new ArrayDeque<>();
    private int range = -1;
    /** A record read past the current range, kept for the next one. */
    private boolean pending;
    private boolean done;

    private long groupsRead, recordsRead, recordsReturned, recordsDiscarded;

    public GtFileScan(GtMapFile file, List<IndexRange> ranges, GtRecordCodec codec, KeyFilter filter) {
        this.file = file;
        this.ranges = ranges;
        this.codec = codec;
        this.filter = filter;
        this.where = "GeoTrellis MapFile " + file.dir();
    }

    /** The next tile, or null at the end. */
    public GtTile next() {
        try {
            while (ready.isEmpty()) {
                if (!advance()) return null;
            }
        } catch (IOException e) {
            throw new SfcLayerException.StorageError("reading " + where + ": " + e, e);
        }
        return ready.poll();
    }

    /** Reads records up to one in range (its wanted tiles go to {@link #ready}); false at the end. */
    private boolean advance() throws IOException {
        if (range < 0) {
            if (!nextRange()) return false;
        }
        while (!done) {
            IndexRange r = ranges.get(range);
            if (!pending) {
                if (!file.next()) {
                    done = true;
                    return false;
                }
                groupsRead++;
            }
            pending = false;
            long k = file.key();
            if (k < r.lo) continue; // before the range (read from the index entry before it)
            if (k > r.hi) {
                pending = true; // may start a later range
                if (!nextRange()) return false;
                continue;
            }
            for (GtTile t : codec.decode(file.value(), 0, file.valueLength(), k, where)) {
                recordsRead++;
                if (filter.test(t.col, t.row, t.millis)) {
                    ready.add(t);
                    recordsReturned++;
                } else {
                    recordsDiscarded++;
                }
            }
            if (k == r.hi) nextRange(); // keys grow within a file: nothing more in this range
            return true;
        }
        return false;
    }

    /**
     * Moves to the next range; seeks when the record at hand (if any) comes before it. False (and done)
     * when no range is left.
     */
    private boolean nextRange() throws IOException {
        range++;
        if (range >= ranges.size()) {
            done = true;
            return false;
        }
        long lo = ranges.get(range).lo;
        if (!pending || file.key() < lo) {
            pending = false;
            file.seekFloor(lo);
        }
        return true;
    }

    public long rangeCount() {
        return ranges.size();
    }

    public long seeks() {
        return file.seeks();
    }

    public long groupsRead() {
        return groupsRead;
    }

    public long recordsRead() {
        return recordsRead;
    }

    public long recordsReturned() {
        return recordsReturned;
    }

    public long recordsDiscarded() {
        return recordsDiscarded;
    }

    public long bytesRead() {
        return file.bytesRead();
    }

    @Override
    public void close() throws IOException {
        file.close();
    }
}
