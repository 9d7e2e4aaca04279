package io.sfclayer.lookup;

import io.sfclayer.SfcLayerException;
import io.sfclayer.codec.TileCursor;
import io.sfclayer.codec.TileSchema;
import io.sfclayer.curve.KeyIndex;
import io.sfclayer.format.BloomFilter;
import io.sfclayer.format.DataFileListing;
import io.sfclayer.format.DataFileReader;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.format.ValueCompression;
import io.sfclayer.layer.BoxQuery;
import io.sfclayer.layer.Deltas;
import io.sfclayer.layer.Layer;
import io.sfclayer.layer.QueryPlan;
import org.apache.hadoop.conf.Configuration;

import java.io.Closeable;
import java.io.IOException;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Point look-ups on one pinned layer version (the design's "Single Value Queries"): the file listing
 * is read once; a key maps to its index, the file with the greatest first index ≤ it is found by
 * binary search and read through an LRU cache of open data files; the group at the index is
 * searched for the exact key, since several keys can share an index. Box queries ({@link #query})
 * traverse the same open files.
 *
 * <p>Cold opens are cheap: each file's index is read once and kept (while the indexes fit in half the
 * cache's memory; for layers of up to {@value ReaderCaches#PRELOAD_MAX_FILES} files, all of them are read in the
 * background as the reader opens), so a first or repeated open of a file opens only its data file. The cache is sized by
 * memory ({@code cacheBytes}, counting {@value #OPEN_FILE_BYTES} bytes per open file plus the kept
 * indexes) and by a count of open files (a bound on file descriptors).
 *
 * <p>Files written with bloom filters ({@link BloomFilter}) have theirs read once and kept (within a
 * quarter of {@code cacheBytes}; the preload reads them too): a key whose index a file's filter rules
 * out is answered missing without opening the file ({@link #bloomSkips()} counts them).
 *
 * <p>Safe for concurrent callers: the caches ({@link ReaderCaches}: open files, kept indexes, bloom
 * filters) are guarded by one lock under which no file-system call is made, each open file by its own;
 * a reader evicted while in use is closed only after its user is done. This class holds the three ways
 * through them (get, sorted batches, box queries); each reads an open file under that file's lock.
 */
public final class ValueReader implements Closeable, TileSource<BoxQuery> {
    /** Most data files kept open by default: a bound on file descriptors; memory is bounded by bytes. */
    public static final int DEFAULT_CACHE_SIZE = 1024;
    /** Memory for open files and kept indexes by default: small next to a driver's heap (16 GiB: 1.6%). */
    public static final long DEFAULT_CACHE_BYTES = 256L << 20;
    /** Bytes a positioned read fetches (file systems where that beats seeking: HDFS, not checksummed local files). */
    static final int POSITIONED_WINDOW_BYTES = 16 << 10;
    /** What one open data file is counted as holding (its read window, stream buffers, cursor). */
    static final long OPEN_FILE_BYTES = DataFileReader.WINDOW_BYTES + (64 << 10) + POSITIONED_WINDOW_BYTES;

    private final Layer layer;
    private final LayerMetadata md;
    private final DataFileListing listing;
    /** The version's delta files (format 7; empty for other versions): asked before the base file, newest first. */
    private final Deltas deltas;
    private final TileSchema schema;
    private final KeyIndex keyIndex;
    private final ValueCompression compression;
    /** The open files, kept indexes and bloom filters the three access paths read through. */
    private final ReaderCaches caches;
    /** Box queries and counts: the files' ranges traversed, merged with deltas (format 7). */
    private final BoxWalk walker;

    private ValueReader(Layer layer, int cacheSize, long cacheBytes, boolean indexInDriver) throws IOException {
        if (cacheSize < 1) {
            throw new SfcLayerException.InvalidArgument("look-up cache size must be at least 1, got " + cacheSize);
        }
        if (cacheBytes < OPEN_FILE_BYTES) {
            throw new SfcLayerException.InvalidArgument("look-up cache bytes must be at least " + OPEN_FILE_BYTES
                + " (one open file), got " + cacheBytes);
        }
        this.layer = layer;
        this.md = layer.metadata();
        this.listing = layer.listing();
        this.deltas = layer.deltas();
        this.schema = schema(md);
        this.keyIndex = md.keyIndex;
        this.compression = ValueCompression.parse(md.compression);
        this.caches = new ReaderCaches(layer, schema, cacheSize, cacheBytes, indexInDriver);
        this.walker = new BoxWalk(layer, caches, schema);
    }

    /**
     * Parsed tile schemas (Spark's JSON parser costs a fraction of a millisecond per open). Owned by this
     * class; keyed by content, the value schema's JSON text; bounded to the 64 used last.
     */
    private static final Map<String, TileSchema> SCHEMAS = java.util.Collections.synchronizedMap(
        new LinkedHashMap<String, TileSchema>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, TileSchema> eldest) {
                return size() > 64;
            }
        });

    private static TileSchema schema(LayerMetadata md) {
        String key = md.isSpaceTime() + ":" + md.valueSchemaJson;
        TileSchema s = SCHEMAS.get(key);
        if (s == null) {
            s = TileSchema.fromJson(md.valueSchemaJson, md.isSpaceTime());
            SCHEMAS.put(key, s);
        }
        return s;
    }

    public static ValueReader open(Configuration conf, String path, int cacheSize) throws IOException {
        return open(conf, path, cacheSize, DEFAULT_CACHE_BYTES, true);
    }

    /**
     * @param cacheSize     most data files open at once
     * @param cacheBytes    most memory for open files ({@value #OPEN_FILE_BYTES} bytes each) and kept indexes
     * @param indexInDriver keep each file's index once read and open only its data file (cheap reopens);
     *                      false: Hadoop's MapFile.Reader, which reads the index again at every open
     */
    public static ValueReader open(Configuration conf, String path, int cacheSize, long cacheBytes,
                                   boolean indexInDriver) throws IOException {
        return new ValueReader(Layer.open(conf, path), cacheSize, cacheBytes, indexInDriver);
    }

    /** A reader pinned to {@code version} (≥ 1), or the newest version at {@code asOfMillis} (≥ 0), or the newest. */
    public static ValueReader open(Configuration conf, String path, int cacheSize, long version, long asOfMillis)
            throws IOException {
        return open(conf, path, cacheSize, DEFAULT_CACHE_BYTES, true, version, asOfMillis);
    }

    /** The same with every setting: the cache's bounds, how files open, and the version. */
    public static ValueReader open(Configuration conf, String path, int cacheSize, long cacheBytes,
                                   boolean indexInDriver, long version, long asOfMillis) throws IOException {
        return new ValueReader(Layer.open(conf, path, version, asOfMillis), cacheSize, cacheBytes, indexInDriver);
    }

    public LayerMetadata metadata() {
        return md;
    }

    /** The metadata document of the version this reader is pinned to. */
    public String metadataJson() {
        try {
            return layer.documentJson();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    public String tileSchemaJson() {
        return md.tileSchemaJson;
    }

    public long filesOpened() {
        return caches.filesOpened();
    }

    public long cacheHits() {
        return caches.cacheHits();
    }

    public int openFiles() {
        return caches.openFiles();
    }

    /** Memory counted against {@code cacheBytes}: open files, kept indexes and bloom filters. */
    public long cachedBytes() {
        return caches.cachedBytes();
    }

    /** Forgets the indexes shared by this JVM's readers (benchmarks measure a first open with it). */
    public static void forgetSharedIndexes() {
        IndexCache.clear();
    }

    /** Indexes shared by this JVM's readers now. */
    public static int sharedIndexes() {
        return IndexCache.size();
    }

    /** Indexes kept in memory. */
    public int indexesKept() {
        return caches.indexesKept();
    }

    /**
     * Files a look-up skipped by their bloom filter, without opening them: look-ups answered as missing
     * (and, in a version with deltas, deltas passed over on the way to an older file).
     */
    public long bloomSkips() {
        return caches.bloomSkips();
    }

    /** Bloom filters kept in memory. */
    public int filtersKept() {
        return caches.filtersKept();
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
        if (!deltas.isEmpty()) {
            // format 7: the newest file holding the key answers; deltas (newest first), then the base file
            for (int d : deltas.holding(index)) {
                byte[] found = findIn(-1 - d, col, row, time, index);
                if (found != null) {
                    return found;
                }
            }
        }
        int file = listing.fileFor(index);
        if (file < 0) {
            return null;
        }
        return findIn(file, col, row, time, index);
    }

    /** The key's record in cache file {@code file} (a base file, or delta {@code -1 - file}), or null. */
    private byte[] findIn(int file, int col, int row, long time, long index) throws IOException {
        if (!caches.mayHold(file, index)) {
            caches.skipped();
            return null;
        }
        while (true) {
            ReaderCaches.OpenFile f = caches.acquire(file);
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
    private byte[] match(ReaderCaches.OpenFile f, int col, int row, long time) {
        byte[] buf = group(f);
        TileCursor c = f.cursor;
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

    /**
     * Many look-ups at once, answered in index order (not the keys' order) as they are found, so
     * each file is opened and walked once and no answer waits for the others. A key outside the
     * bounds is a miss (time ignored for spatial layers). {@code answers} is called with no lock held.
     */
    public void getMany(int[] cols, int[] rows, long[] times, Answers answers) throws IOException {
        int n = cols.length;
        long[] indexes = new long[n];
        Integer[] order = new Integer[n];
        for (int i = 0; i < n; i++) {
            order[i] = i;
            indexes[i] = !inBounds(cols[i], rows[i], times[i]) ? -1
                : md.isSpaceTime() ? keyIndex.index(cols[i], rows[i], times[i]) : keyIndex.index(cols[i], rows[i]);
        }
        Arrays.sort(order, (x, y) -> Long.compare(indexes[x], indexes[y]));
        for (int k = 0; k < n; k++) {
            int i = order[k];
            answers.accept(i, indexes[i] < 0 ? null : find(cols[i], rows[i], times[i], indexes[i]));
        }
    }

    /** Records per batch of {@link #query}, and bytes: whichever comes first. */
    static final int BATCH_RECORDS = 512;
    static final int BATCH_BYTES = 1 << 20;

    /**
     * The encoded records of the tiles in a box, in index order, handed to {@code batches} a batch at
     * a time with no lock held (a slow consumer never blocks look-ups). Files are pruned by name, the
     * query's ranges traversed with the cache's open readers, records refined against the boxes: the
     * same {@link QueryPlan} rules as a Spark read. Returns how many records were handed out.
     */
    public long query(BoxQuery q, Batches batches) throws IOException {
        return walker.walk(q, batches);
    }

    /** A box query on this reader's layer from its text form ({@link BoxQuery}). */
    public BoxQuery boxQuery(String spec) {
        return BoxQuery.parse(spec, md, layer.path());
    }

    /** How many tiles lie in the box (keys only: no value is decoded or copied). */
    public long count(BoxQuery q) throws IOException {
        return walker.walk(q, null);
    }

    /** Puts {@code f}'s cursor on its reader's current group (decompressed) and returns the group's bytes. Under f's lock. */
    private byte[] group(ReaderCaches.OpenFile f) {
        return BoxWalk.group(f, compression);
    }

    @Override
    public void close() {
        caches.close();
    }
}
