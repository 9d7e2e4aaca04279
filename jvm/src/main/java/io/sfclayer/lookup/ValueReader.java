package io.sfclayer.lookup;

import io.sfclayer.SfcLayerException;
import io.sfclayer.curve.KeyIndex;
import io.sfclayer.format.DataFileListing;
import io.sfclayer.format.DataFileReader;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.format.TileCursor;
import io.sfclayer.format.TileSchema;
import io.sfclayer.format.ValueCompression;
import io.sfclayer.layer.Layer;
import org.apache.hadoop.conf.Configuration;

import java.io.ByteArrayOutputStream;
import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Point look-ups on one pinned layer version (the design's "Single Value Queries"): the file listing
 * is read once; a key maps to its index, the file with the greatest first index ≤ it is found by
 * binary search and read through an LRU cache of open MapFile readers; the group at the index is
 * searched for the exact key, since several keys can share an index.
 *
 * <p>Safe for concurrent callers: the cache is guarded by one lock, each open file by its own, and a
 * reader evicted while in use is closed only after its user is done.
 */
public final class ValueReader implements Closeable {
    public static final int DEFAULT_CACHE_SIZE = 16;

    private final Layer layer;
    private final LayerMetadata md;
    private final DataFileListing listing;
    private final KeyIndex keyIndex;
    private final TileSchema schema;
    private final ValueCompression compression;
    private final int cacheSize;
    private final LinkedHashMap<Integer, CachedFile> cache = new LinkedHashMap<>(16, 0.75f, true);
    private boolean closed;
    private long opens;
    private long hits;

    /** One open data file; {@code closed} is set, under its lock, when it is evicted. */
    private static final class CachedFile {
        final DataFileReader reader;
        final TileCursor cursor;
        boolean closed;

        CachedFile(DataFileReader reader, TileCursor cursor) {
            this.reader = reader;
            this.cursor = cursor;
        }
    }

    private ValueReader(Layer layer, int cacheSize) throws IOException {
        if (cacheSize < 1) {
            throw new SfcLayerException.InvalidArgument("look-up cache size must be at least 1, got " + cacheSize);
        }
        this.layer = layer;
        this.md = layer.metadata();
        this.listing = layer.listing();
        this.keyIndex = md.keyIndex;
        this.schema = TileSchema.fromJson(md.valueSchemaJson, md.isSpaceTime());
        this.compression = ValueCompression.parse(md.compression);
        this.cacheSize = cacheSize;
    }

    public static ValueReader open(Configuration conf, String path, int cacheSize) throws IOException {
        return new ValueReader(Layer.open(conf, path), cacheSize);
    }

    /** A reader pinned to {@code version} (≥ 1), or the newest version at {@code asOfMillis} (≥ 0), or the newest. */
    public static ValueReader open(Configuration conf, String path, int cacheSize, long version, long asOfMillis)
            throws IOException {
        return new ValueReader(Layer.open(conf, path, version, asOfMillis), cacheSize);
    }

    public LayerMetadata metadata() {
        return md;
    }

    /** The metadata document of the version this reader is pinned to. */
    public String metadataJson() {
        return new String(md.toJsonBytes(), java.nio.charset.StandardCharsets.UTF_8);
    }

    public String tileSchemaJson() {
        return md.tileSchemaJson;
    }

    public synchronized long filesOpened() {
        return opens;
    }

    public synchronized long cacheHits() {
        return hits;
    }

    public synchronized int openFiles() {
        return cache.size();
    }

    /**
     * The encoded tile record (Avro, the layer's tile schema) of a 2D key.
     *
     * @throws SfcLayerException.KeyNotFound naming the key when the layer has no such tile
     */
    public byte[] get(int col, int row) throws IOException {
        requireKind(false);
        return orThrow(getOrNull(col, row, 0L), col, row, 0L);
    }

    /** The encoded tile record of a space-time key (time in epoch microseconds). */
    public byte[] get(int col, int row, long timeMicros) throws IOException {
        requireKind(true);
        return orThrow(getOrNull(col, row, timeMicros), col, row, timeMicros);
    }

    /** The encoded tile record of a key, or null when missing or outside the bounds. */
    public byte[] getOrNull(int col, int row, long timeMicros) throws IOException {
        if (!inBounds(col, row, timeMicros)) {
            return null;
        }
        long index = md.isSpaceTime() ? keyIndex.index(col, row, timeMicros) : keyIndex.index(col, row);
        return find(col, row, timeMicros, index);
    }

    private boolean inBounds(int col, int row, long time) {
        if (!keyIndex.bounds().contains(col, row)) {
            return false;
        }
        return !md.isSpaceTime() || keyIndex.timeBounds().contains(time);
    }

    private void requireKind(boolean spaceTime) {
        if (spaceTime != md.isSpaceTime()) {
            throw new SfcLayerException.InvalidArgument("layer " + layer.path() + " is "
                + (md.isSpaceTime() ? "space-time: give a time with the key" : "spatial: its keys have no time"));
        }
    }

    private byte[] orThrow(byte[] record, int col, int row, long time) {
        if (record == null) {
            String why = inBounds(col, row, time) ? "" : " (outside its key bounds " + keyIndex.bounds()
                + (md.isSpaceTime() ? ", " + keyIndex.timeBounds() : "") + ")";
            throw new SfcLayerException.KeyNotFound("no tile at key " + KeyIndex.describeKey(col, row, md.isSpaceTime(), time) + " in layer "
                + layer.path() + why);
        }
        return record;
    }

    private byte[] find(int col, int row, long time, long index) throws IOException {
        int file = listing.fileFor(index);
        if (file < 0) {
            return null;
        }
        while (true) {
            CachedFile f = acquire(file);
            synchronized (f) {
                if (f.closed) {
                    continue; // evicted between acquire and lock: open it again
                }
                if (!f.reader.get(index)) {
                    return null;
                }
                return match(f, col, row, time);
            }
        }
    }

    /** The record for the key in the current group of {@code f}, or null: keys sharing an index are told apart here. */
    private byte[] match(CachedFile f, int col, int row, long time) {
        byte[] buf = f.reader.bytes();
        int off = f.reader.offset();
        int len = f.reader.length();
        if (compression != ValueCompression.NONE) {
            buf = compression.decompress(buf, off, len);
            off = 0;
            len = buf.length;
        }
        TileCursor c = f.cursor;
        c.reset(buf, off, len);
        while (c.next()) {
            if (c.col() == col && c.row() == row && (!md.isSpaceTime() || c.timeMicros() == time)) {
                int start = c.recordOffset();
                c.skipValues();
                return Arrays.copyOfRange(buf, start, start + c.recordLength());
            }
            c.skipValues();
        }
        return null;
    }

    private CachedFile acquire(int file) throws IOException {
        List<CachedFile> evicted = new ArrayList<>();
        CachedFile f;
        synchronized (this) {
            if (closed) {
                throw new SfcLayerException("value reader on " + layer.path() + " is closed");
            }
            f = cache.get(file);
            if (f != null) {
                hits++;
                return f;
            }
            DataFileReader r;
            try {
                r = new DataFileReader(layer.conf(), listing.path(file), layer.entry(listing.name(file)), null);
            } catch (SfcLayerException.CorruptLayer e) {
                // name the pinned version: its files may have been vacuumed since it was opened
                throw new SfcLayerException.CorruptLayer("layer " + layer.path() + " version " + md.version + ": "
                    + e.getMessage() + " (a reader pinned to an old version loses it when vacuum removes its"
                    + " files; refresh to the newest version)", e);
            }
            f = new CachedFile(r, new TileCursor(schema));
            opens++;
            cache.put(file, f);
            Iterator<Map.Entry<Integer, CachedFile>> it = cache.entrySet().iterator();
            while (cache.size() > cacheSize && it.hasNext()) {
                Map.Entry<Integer, CachedFile> eldest = it.next();
                if (eldest.getValue() != f) {
                    evicted.add(eldest.getValue());
                    it.remove();
                }
            }
        }
        for (CachedFile e : evicted) {
            closeFile(e);
        }
        return f;
    }

    private static void closeFile(CachedFile f) {
        synchronized (f) {
            if (!f.closed) {
                f.closed = true;
                try {
                    f.reader.close();
                } catch (IOException ignored) {
                    // nothing more to read from it
                }
            }
        }
    }

    /**
     * Many look-ups at once. {@code keys} packs each key as big-endian int col, int row, long time
     * (time ignored for spatial layers). The keys are visited in index order, so each file is opened
     * and walked once. Returns, in the keys' order, each record as a big-endian int length and the
     * record's bytes, or length -1 for a missing key (packed so py4j moves one array, not thousands).
     */
    public byte[] getMany(byte[] keys) throws IOException {
        if (keys.length % 16 != 0) {
            throw new SfcLayerException.InvalidArgument("packed keys must be 16 bytes each, got " + keys.length + " bytes");
        }
        int n = keys.length / 16;
        ByteBuffer in = ByteBuffer.wrap(keys);
        int[] cols = new int[n];
        int[] rows = new int[n];
        long[] times = new long[n];
        long[] indexes = new long[n];
        Integer[] order = new Integer[n];
        for (int i = 0; i < n; i++) {
            cols[i] = in.getInt();
            rows[i] = in.getInt();
            times[i] = in.getLong();
            order[i] = i;
            indexes[i] = !inBounds(cols[i], rows[i], times[i]) ? -1
                : md.isSpaceTime() ? keyIndex.index(cols[i], rows[i], times[i]) : keyIndex.index(cols[i], rows[i]);
        }
        Arrays.sort(order, (a, b) -> Long.compare(indexes[a], indexes[b]));
        byte[][] found = new byte[n][];
        for (int k = 0; k < n; k++) {
            int i = order[k];
            if (indexes[i] >= 0) {
                found[i] = find(cols[i], rows[i], times[i], indexes[i]);
            }
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteBuffer len = ByteBuffer.allocate(4);
        for (byte[] r : found) {
            len.clear();
            len.putInt(r == null ? -1 : r.length);
            out.write(len.array(), 0, 4);
            if (r != null) {
                out.write(r, 0, r.length);
            }
        }
        return out.toByteArray();
    }

    @Override
    public void close() {
        List<CachedFile> all;
        synchronized (this) {
            closed = true;
            all = new ArrayList<>(cache.values());
            cache.clear();
        }
        for (CachedFile f : all) {
            closeFile(f);
        }
    }
}
