package io.sfclayer.lookup;

// Over 500 lines on purpose: single look-ups, batches and box queries share one LRU of open files,
// its memory bound and its locking; the three access paths sit next to the cache they must respect.

import io.sfclayer.SfcLayerException;
import io.sfclayer.curve.IndexRange;
import io.sfclayer.curve.KeyIndex;
import io.sfclayer.curve.QueryBox;
import io.sfclayer.format.BloomFilter;
import io.sfclayer.format.DataFileEntry;
import io.sfclayer.format.DataFileIndex;
import io.sfclayer.format.DataFileListing;
import io.sfclayer.format.DataFileReader;
import io.sfclayer.format.ObjectStores;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.format.TileCursor;
import io.sfclayer.format.TileSchema;
import io.sfclayer.format.ValueCompression;
import io.sfclayer.layer.BoxQuery;
import io.sfclayer.layer.Layer;
import io.sfclayer.layer.QueryPlan;
import io.sfclayer.layer.RangeTraversal;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;

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
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Point look-ups on one pinned layer version (the design's "Single Value Queries"): the file listing
 * is read once; a key maps to its index, the file with the greatest first index ≤ it is found by
 * binary search and read through an LRU cache of open data files; the group at the index is
 * searched for the exact key, since several keys can share an index. Box queries ({@link #query})
 * traverse the same open files.
 *
 * <p>Cold opens are cheap: each file's index is read once and kept (while the indexes fit in half the
 * cache's memory; for layers of up to {@value #PRELOAD_MAX_FILES} files, all of them are read in the
 * background as the reader opens), so a first or repeated open of a file opens only its data file. The cache is sized by
 * memory ({@code cacheBytes}, counting {@value #OPEN_FILE_BYTES} bytes per open file plus the kept
 * indexes) and by a count of open files (a bound on file descriptors).
 *
 * <p>Files written with bloom filters ({@link BloomFilter}) have theirs read once and kept (within a
 * quarter of {@code cacheBytes}; the preload reads them too): a key whose index a file's filter rules
 * out is answered missing without opening the file ({@link #bloomSkips()} counts them).
 *
 * <p>Safe for concurrent callers: the cache is guarded by one lock under which no file-system call
 * is made, each open file by its own; a reader evicted while in use is closed only after its user is done.
 *
 * <p>About 600 lines on purpose: the cache, its locking and eviction, and the three ways through it
 * (get, sorted batches, box queries) share one set of invariants that read best in one place.
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
    private final KeyIndex keyIndex;
    private final TileSchema schema;
    private final ValueCompression compression;
    private final int cacheSize;
    private final long cacheBytes;
    /** Whether files are opened from an index kept here (else by Hadoop's MapFile.Reader, index and all). */
    private final boolean indexInDriver;
    /** Every file's index once read, while they fit in half of {@code cacheBytes}: a reopen reads data only. */
    private final ConcurrentHashMap<Integer, DataFileIndex> indexes = new ConcurrentHashMap<>();
    private final AtomicLong indexBytes = new AtomicLong();
    private final LinkedHashMap<Integer, CachedFile> cache = new LinkedHashMap<>(16, 0.75f, true);
    private boolean closed;
    private long opens;
    private long hits;
    /**
     * Each file's bloom filter once read ({@link #NO_FILTER} for files without one), while they fit in
     * a quarter of {@code cacheBytes}: a miss the filter rules out opens nothing, cold or warm.
     */
    private final ConcurrentHashMap<Integer, BloomFilter> filters = new ConcurrentHashMap<>();
    private static final BloomFilter NO_FILTER = BloomFilter.build(new long[0], 0, 0.5);
    private final AtomicLong filterBytes = new AtomicLong();
    private final AtomicLong bloomSkips = new AtomicLong();

    /**
     * One data file of the cache. Its reader is opened outside the reader-wide lock by the first
     * caller that needs it (others wait on this entry, not on the cache); {@code closed} is set,
     * under its lock, when it is evicted or its open failed.
     */
    private static final class CachedFile {
        volatile DataFileReader reader;
        TileCursor cursor;
        /** Why the open failed, for the callers that waited on it. */
        IOException failure;
        RuntimeException runtimeFailure;
        boolean closed;

        /** Publishes the open reader; false (and the reader closed) if the entry was closed meanwhile. */
        synchronized boolean opened(DataFileReader reader, TileCursor cursor) throws IOException {
            if (closed) {
                reader.close();
                return false;
            }
            this.cursor = cursor;
            this.reader = reader;
            notifyAll();
            return true;
        }

        synchronized void failed(IOException io, RuntimeException rt) {
            this.failure = io;
            this.runtimeFailure = rt;
            this.closed = true;
            notifyAll();
        }

        /** Waits (on this entry only) until the opening caller is done; rethrows its failure. */
        synchronized void awaitOpen() throws IOException {
            boolean interrupted = false;
            while (reader == null && !closed) {
                try {
                    wait();
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
            if (failure != null) {
                throw new IOException(failure.getMessage(), failure);
            }
            if (runtimeFailure != null) {
                throw runtimeFailure;
            }
        }
    }

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
        this.keyIndex = md.keyIndex;
        this.schema = schema(md);
        this.compression = ValueCompression.parse(md.compression);
        this.cacheSize = cacheSize;
        this.cacheBytes = cacheBytes;
        this.indexInDriver = indexInDriver;
        this.objectStore = ObjectStores.isObjectStore(layer.path().getFileSystem(layer.conf()));
        // not through manifests (format 6): that would read every manifest, which look-ups avoid
        if (indexInDriver && md.manifests == null && listing.size() > 1 && listing.size() <= PRELOAD_MAX_FILES) {
            // an object store answers each read in tens of ms, mostly waiting: read several files at once
            int threads = objectStore ? Math.min(PRELOAD_THREADS_OBJECT_STORE, listing.size()) : 1;
            for (int t = 0; t < threads; t++) {
                Thread thread = new Thread(this::preloadIndexes, "sfclayer-index-preload");
                thread.setDaemon(true);
                thread.start();
            }
        }
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

    /** Layers with at most this many files have every index read in the background when opened. */
    static final int PRELOAD_MAX_FILES = 4096;
    /** Threads reading indexes at once on an object store (each waits on one request at a time). */
    static final int PRELOAD_THREADS_OBJECT_STORE = 8;
    /** Index reads a look-up starts beside its file's bloom filter read (object stores). Daemon threads. */
    private static final java.util.concurrent.ExecutorService SIDE_READS =
        java.util.concurrent.Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "sfclayer-index-read");
            t.setDaemon(true);
            return t;
        });
    /** Whether the layer is on an object store (reads there are round trips worth overlapping). */
    private final boolean objectStore;
    /** The next file a preload thread takes. */
    private final java.util.concurrent.atomic.AtomicInteger preloadNext = new java.util.concurrent.atomic.AtomicInteger();

    /**
     * Reads every file's bloom filter and index, in the background, while they fit: the first look-up
     * in a file then opens only its data file (a miss its filter rules out, nothing). Failures are
     * left for that look-up to report.
     */
    private void preloadIndexes() {
        for (int i = preloadNext.getAndIncrement(); i < listing.size(); i = preloadNext.getAndIncrement()) {
            synchronized (this) {
                if (closed) {
                    return;
                }
            }
            try {
                if (!filters.containsKey(i)) {
                    loadFilter(i); // a miss in this file then opens nothing, even the first time
                }
            } catch (IOException | RuntimeException e) {
                continue; // nor its index: the look-up that needs the file reads the filter and reports it
            }
            if (!indexes.containsKey(i) && !keepIndex(i)) {
                return; // no room for more
            }
        }
    }

    /**
     * Reads and keeps file {@code i}'s index (shared with this JVM's other readers); false when the kept
     * indexes have no room for it. Failures are left for the look-up that opens the file to report.
     */
    private boolean keepIndex(int i) {
        try {
            DataFileEntry entry = layer.entry(listing.name(i));
            String key = IndexCache.key(listing.path(i), entry);
            DataFileIndex index = IndexCache.get(key);
            if (index == null) {
                index = DataFileIndex.readAlone(layer.conf(), listing.path(i), entry); // no data file opened
                if (index == null) {
                    index = DataFileIndex.read(layer.conf(), listing.path(i), entry);
                }
                IndexCache.put(key, index);
            }
            if (indexBytes.get() + index.bytes() > cacheBytes / 2) {
                return false;
            }
            if (indexes.putIfAbsent(i, index) == null) {
                indexBytes.addAndGet(index.bytes());
            }
        } catch (IOException | RuntimeException e) {
            // the look-up that needs this file reads it again and reports what is wrong
        }
        return true;
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

    public synchronized long filesOpened() {
        return opens;
    }

    public synchronized long cacheHits() {
        return hits;
    }

    public synchronized int openFiles() {
        return cache.size();
    }

    /** Memory counted against {@code cacheBytes}: open files, kept indexes and bloom filters. */
    public synchronized long cachedBytes() {
        return cache.size() * OPEN_FILE_BYTES + indexBytes.get() + filterBytes.get();
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
        return indexes.size();
    }

    /** Look-ups answered as missing by a file's bloom filter, without opening the file. */
    public long bloomSkips() {
        return bloomSkips.get();
    }

    /** Bloom filters kept in memory. */
    public int filtersKept() {
        return (int) filters.values().stream().filter(f -> f != NO_FILTER).count();
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
        if (!mayHold(file, index)) {
            synchronized (this) {
                if (closed) {
                    throw new SfcLayerException("value reader on " + layer.path() + " is closed");
                }
            }
            bloomSkips.incrementAndGet();
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

    /** False when {@code file}'s bloom filter rules {@code index} out (the file then need not be opened). */
    private boolean mayHold(int file, long index) throws IOException {
        BloomFilter f = filters.get(file);
        if (f == null) {
            if (indexInDriver && indexes.containsKey(file)) {
                // the data file alone opens as fast as the filter reads, and a hit would pay both:
                // open it (the preload reads filters before indexes, so this is rare)
                return true;
            }
            java.util.concurrent.Future<?> side = objectStore && indexInDriver
                ? SIDE_READS.submit(() -> keepIndex(file)) : null;
            try {
                f = loadFilter(file);
            } finally {
                if (side != null) {
                    awaitQuietly(side); // the file's index, read beside its filter: one round trip for both
                }
            }
        }
        return f == NO_FILTER || f.mightContain(index);
    }

    private static void awaitQuietly(java.util.concurrent.Future<?> f) {
        boolean interrupted = false;
        while (true) {
            try {
                f.get();
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            } catch (java.util.concurrent.ExecutionException e) {
                break; // keepIndex reports nothing: the open that needs the index reads it and says what is wrong
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /** Reads {@code file}'s checked bloom filter, kept while filters fit in a quarter of {@code cacheBytes}. */
    private BloomFilter loadFilter(int file) throws IOException {
        DataFileEntry entry = layer.entry(listing.name(file));
        if (entry.bloomCrc32c == null) {
            filters.putIfAbsent(file, NO_FILTER);
            return NO_FILTER;
        }
        Path path = listing.path(file);
        BloomFilter f = BloomFilter.read(path.getFileSystem(layer.conf()), path, entry.bloomCrc32c,
            layer.path().toString());
        if (filterBytes.get() + f.bytes() > cacheBytes / 4) {
            filters.putIfAbsent(file, NO_FILTER); // no room: its look-ups open the file, as without a filter
        } else if (filters.putIfAbsent(file, f) == null) {
            filterBytes.addAndGet(f.bytes());
        }
        return f;
    }

    /** The record for the key in the current group of {@code f}, or null: keys sharing an index are told apart here. */
    private byte[] match(CachedFile f, int col, int row, long time) {
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
     * The cache entry of {@code file}, open. No file-system call happens under the reader-wide lock:
     * a missing entry is put in the cache as a placeholder, and its reader is opened afterwards by
     * this caller, while callers wanting the same file wait on the entry and the others go on.
     */
    private CachedFile acquire(int file) throws IOException {
        CachedFile f;
        boolean mine = false;
        synchronized (this) {
            if (closed) {
                throw new SfcLayerException("value reader on " + layer.path() + " is closed");
            }
            f = cache.get(file);
            if (f != null) {
                hits++;
            } else {
                f = new CachedFile();
                opens++;
                cache.put(file, f);
                mine = true;
            }
        }
        if (!mine) {
            f.awaitOpen();
            return f;
        }
        try {
            DataFileReader r = openFile(file);
            r.usePositionedReads(POSITIONED_WINDOW_BYTES);
            if (!f.opened(r, new TileCursor(schema))) {
                throw new SfcLayerException("value reader on " + layer.path() + " is closed");
            }
        } catch (IOException | RuntimeException e) {
            synchronized (this) {
                cache.remove(file, f);
            }
            f.failed(e instanceof IOException ? (IOException) e : null,
                e instanceof RuntimeException ? (RuntimeException) e : null);
            throw e;
        }
        evictBeyondCapacity(f);
        return f;
    }

    private DataFileReader openFile(int file) throws IOException {
        Path path = listing.path(file);
        try {
            DataFileEntry entry = layer.entry(listing.name(file));
            if (!indexInDriver) {
                return new DataFileReader(layer.conf(), path, entry, null, null, ObjectStores.Access.RANDOM);
            }
            DataFileIndex index = indexes.get(file);
            String key = IndexCache.key(path, entry);
            if (index == null && (index = IndexCache.get(key)) != null) {
                keep(file, index); // read by another reader of this JVM (an earlier open of the layer)
            }
            if (index == null && ObjectStores.isObjectStore(path.getFileSystem(layer.conf()))
                    && (index = indexAlone(path, entry)) != null) {
                // an object store: the index alone (HEAD, GET), then the data file opens asking nothing
                // and the look-up is one ranged GET, where the header would cost one more first
                keep(file, index);
                IndexCache.put(key, index);
            }
            if (index != null) {
                return new DataFileReader(layer.conf(), path, entry, null, index, ObjectStores.Access.RANDOM);
            }
            // the first open reads (and checks) the index; later opens of the file reuse it
            DataFileReader r = new DataFileReader(layer.conf(), path, entry, null, null, ObjectStores.Access.RANDOM);
            try {
                index = r.loadedIndex();
            } catch (IOException | RuntimeException e) {
                r.close();
                throw e;
            }
            keep(file, index);
            IndexCache.put(key, index);
            return r;
        } catch (SfcLayerException.CorruptLayer e) {
            // name the pinned version: its files may have been vacuumed since it was opened
            throw new SfcLayerException.CorruptLayer("layer " + layer.path() + " version " + md.version + ": "
                + SfcLayerException.reason(e) + " (a reader pinned to an old version loses it when vacuum removes its"
                + " files; refresh to the newest version)", e);
        }
    }

    /** The file's index read without its data file; null when that cannot be (the reader then reads and reports it). */
    private DataFileIndex indexAlone(Path path, DataFileEntry entry) {
        try {
            return DataFileIndex.readAlone(layer.conf(), path, entry);
        } catch (IOException | RuntimeException e) {
            return null; // damaged or missing: the data file's reader says so, naming the file
        }
    }

    /** Keeps a file's index for its reopens, while the kept indexes fit in half of {@code cacheBytes}. */
    private void keep(int file, DataFileIndex index) {
        if (index != null && indexBytes.get() + index.bytes() <= cacheBytes / 2
                && indexes.putIfAbsent(file, index) == null) {
            indexBytes.addAndGet(index.bytes());
        }
    }

    /** Drops the least recently used open entries beyond the capacity (never {@code keep}); closes them unlocked. */
    private void evictBeyondCapacity(CachedFile keep) {
        List<CachedFile> evicted = new ArrayList<>();
        synchronized (this) {
            Iterator<Map.Entry<Integer, CachedFile>> it = cache.entrySet().iterator();
            while ((cache.size() > cacheSize
                    || cache.size() * OPEN_FILE_BYTES + indexBytes.get() + filterBytes.get() > cacheBytes)
                    && it.hasNext()) {
                CachedFile eldest = it.next().getValue();
                if (eldest != keep && eldest.reader != null) {
                    evicted.add(eldest);
                    it.remove();
                }
            }
        }
        for (CachedFile e : evicted) {
            closeFile(e);
        }
    }

    private static void closeFile(CachedFile f) {
        synchronized (f) {
            if (!f.closed) {
                f.closed = true;
                f.notifyAll(); // callers waiting for an open in progress see it closed
                if (f.reader != null) {
                    try {
                        f.reader.close();
                    } catch (IOException ignored) {
                        // nothing more to read from it
                    }
                }
            }
        }
    }

    /** Receives look-up answers: the key's position in the request, and its record or null. */
    @FunctionalInterface
    public interface Answers {
        void accept(int position, byte[] record) throws IOException;
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

    /**
     * Many look-ups at once. {@code keys} packs each key as big-endian int col, int row, long time
     * (time ignored for spatial layers). The keys are visited in index order, so each file is opened
     * and walked once. Returns, in the keys' order, each record as a big-endian int length and the
     * record's bytes, or length -1 for a missing key (packed so py4j moves one array, not thousands).
     */
    public byte[] getMany(byte[] keys) throws IOException {
        PackedKeys k = PackedKeys.decode(keys);
        byte[][] found = new byte[k.size()][];
        getMany(k.cols, k.rows, k.times, (i, record) -> found[i] = record);
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

    /** Receives a box query's records, a batch at a time. */
    @FunctionalInterface
    public interface Batches {
        void accept(List<byte[]> records) throws IOException;
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
        return walk(q, batches);
    }

    /** A box query on this reader's layer from its text form ({@link BoxQuery}). */
    public BoxQuery boxQuery(String spec) {
        return BoxQuery.parse(spec, md, layer.path());
    }

    /** How many tiles lie in the box (keys only: no value is decoded or copied). */
    public long count(BoxQuery q) throws IOException {
        return walk(q, null);
    }

    private long walk(BoxQuery q, Batches batches) throws IOException {
        List<IndexRange> ranges = QueryPlan.ranges(keyIndex, q.boxes, q.maxRanges);
        QueryBox[] boxes = q.boxes.toArray(new QueryBox[0]);
        long left = q.limit < 0 ? Long.MAX_VALUE : q.limit;
        long total = 0;
        List<byte[]> batch = new ArrayList<>();
        long batchBytes = 0;
        for (DataFileListing.Selection s : ranges.isEmpty() ? List.<DataFileListing.Selection>of()
                : listing.select(ranges)) {
            int file = listing.fileFor(s.firstIndex);
            long[] pairs = QueryPlan.pairs(s.ranges);
            while (pairs != null && left > 0) {
                CachedFile f = acquire(file);
                long last;
                synchronized (f) {
                    if (f.closed) {
                        continue; // evicted between acquire and lock: open it again
                    }
                    RangeTraversal t = new RangeTraversal(f.reader, pairs);
                    last = -1;
                    while (left > 0 && t.next()) {
                        byte[] buf = group(f);
                        TileCursor c = f.cursor;
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
                        if (batches != null && (batch.size() >= BATCH_RECORDS || batchBytes >= BATCH_BYTES)) {
                            last = f.reader.index(); // whole groups per batch: resume after this one
                            break;
                        }
                    }
                }
                if (last >= 0 && left > 0) {
                    batches.accept(batch);
                    batch = new ArrayList<>();
                    batchBytes = 0;
                    pairs = after(pairs, last);
                } else {
                    pairs = null;
                }
            }
            if (left == 0) {
                break;
            }
        }
        if (batches != null && !batch.isEmpty()) {
            batches.accept(batch);
        }
        return total;
    }

    /** Puts {@code f}'s cursor on its reader's current group (decompressed) and returns the group's bytes. Under f's lock. */
    private byte[] group(CachedFile f) {
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
