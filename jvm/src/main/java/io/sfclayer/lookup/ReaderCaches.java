package io.sfclayer.lookup;

import io.sfclayer.SfcLayerException;
import io.sfclayer.codec.TileCursor;
import io.sfclayer.codec.TileSchema;
import io.sfclayer.format.BloomFilter;
import io.sfclayer.format.DataFileEntry;
import io.sfclayer.format.DataFileIndex;
import io.sfclayer.format.DataFileListing;
import io.sfclayer.format.DataFileReader;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.format.ObjectStores;
import io.sfclayer.layer.Layer;
import org.apache.hadoop.fs.Path;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The caches of one {@link ValueReader}, under one memory bound ({@code cacheBytes}): an LRU of open
 * data files ({@value ValueReader#OPEN_FILE_BYTES} bytes counted each, at most {@code cacheSize} of them),
 * every file's index once read (while they fit in half of it; shared with this JVM's other readers
 * through {@link IndexCache}) and every file's bloom filter once read (while they fit in a quarter).
 * For layers of up to {@value #PRELOAD_MAX_FILES} files, filters and indexes are read in the
 * background as the reader opens.
 *
 * <p>The open-file LRU is guarded by this object's lock, under which no file-system call is made; each
 * open file by its own ({@link OpenFile}). A file evicted while in use is closed only after its user is done.
 */
final class ReaderCaches {
    /** Layers with at most this many files have every index read in the background when opened. */
    static final int PRELOAD_MAX_FILES = 4096;
    /** Threads reading indexes at once on an object store (each waits on one request at a time). */
    static final int PRELOAD_THREADS_OBJECT_STORE = 8;
    /** Index reads a look-up starts beside its file's bloom filter read (object stores). Daemon threads. */
    private static final ExecutorService SIDE_READS = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "sfclayer-index-read");
        t.setDaemon(true);
        return t;
    });
    private static final BloomFilter NO_FILTER = BloomFilter.build(new long[0], 0, 0.5);

    private final Layer layer;
    private final LayerMetadata md;
    private final DataFileListing listing;
    /** The version's delta files (format 7): file {@code -1 - d} of the cache is delta {@code d}. */
    private final io.sfclayer.layer.Deltas deltas;
    private final TileSchema schema;
    private final int cacheSize;
    private final long cacheBytes;
    /** Whether files are opened from an index kept here (else by Hadoop's MapFile.Reader, index and all). */
    private final boolean indexInDriver;
    /** Whether the layer is on an object store (reads there are round trips worth overlapping). */
    private final boolean objectStore;
    /** Every file's index once read, while they fit in half of {@code cacheBytes}: a reopen reads data only. */
    private final ConcurrentHashMap<Integer, DataFileIndex> indexes = new ConcurrentHashMap<>();
    private final AtomicLong indexBytes = new AtomicLong();
    private final LinkedHashMap<Integer, OpenFile> cache = new LinkedHashMap<>(16, 0.75f, true);
    private boolean closed;
    private long opens;
    private long hits;
    /**
     * Each file's bloom filter once read ({@link #NO_FILTER} for files without one), while they fit in
     * a quarter of {@code cacheBytes}: a miss the filter rules out opens nothing, cold or warm.
     */
    private final ConcurrentHashMap<Integer, BloomFilter> filters = new ConcurrentHashMap<>();
    private final AtomicLong filterBytes = new AtomicLong();
    private final AtomicLong bloomSkips = new AtomicLong();
    /** The next file a preload thread takes. */
    private final AtomicInteger preloadNext = new AtomicInteger();

    /**
     * One data file of the cache. Its reader is opened outside the cache-wide lock by the first
     * caller that needs it (others wait on this entry, not on the cache); {@code closed} is set,
     * under its lock, when it is evicted or its open failed. Its users read under its lock.
     */
    static final class OpenFile {
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

    /** Caches for {@code layer}'s pinned version; starts the background preload when the layer is small enough. */
    ReaderCaches(Layer layer, TileSchema schema, int cacheSize, long cacheBytes, boolean indexInDriver)
            throws IOException {
        this.layer = layer;
        this.md = layer.metadata();
        this.listing = layer.listing();
        this.deltas = layer.deltas();
        this.schema = schema;
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

    synchronized long filesOpened() {
        return opens;
    }

    synchronized long cacheHits() {
        return hits;
    }

    synchronized int openFiles() {
        return cache.size();
    }

    /** Memory counted against {@code cacheBytes}: open files, kept indexes and bloom filters. */
    synchronized long cachedBytes() {
        return cache.size() * ValueReader.OPEN_FILE_BYTES + indexBytes.get() + filterBytes.get();
    }

    int indexesKept() {
        return indexes.size();
    }

    long bloomSkips() {
        return bloomSkips.get();
    }

    int filtersKept() {
        return (int) filters.values().stream().filter(f -> f != NO_FILTER).count();
    }

    /** Throws when the reader is closed. */
    synchronized void requireOpen() {
        if (closed) {
            throw new SfcLayerException("value reader on " + layer.path() + " is closed");
        }
    }

    /** Counts a look-up its file's bloom filter answered as missing (after checking the reader is open). */
    void skipped() {
        requireOpen();
        bloomSkips.incrementAndGet();
    }

    /**
     * Reads every file's bloom filter and index, in the background, while they fit: the first look-up
     * in a file then opens only its data file (a miss its filter rules out, nothing). Failures are
     * left for that look-up to report.
     */
    private void preloadIndexes() {
        int bases = listing.size();
        for (int j = preloadNext.getAndIncrement(); j < bases + deltas.size(); j = preloadNext.getAndIncrement()) {
            int i = j < bases ? j : -1 - (j - bases); // the deltas after the base files
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
            DataFileEntry entry = entryOf(i);
            String key = IndexCache.key(pathOf(i), entry);
            DataFileIndex index = IndexCache.get(key);
            if (index == null) {
                index = DataFileIndex.readAlone(layer.conf(), pathOf(i), entry); // no data file opened
                if (index == null) {
                    index = DataFileIndex.read(layer.conf(), pathOf(i), entry);
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

    /** False when {@code file}'s bloom filter rules {@code index} out (the file then need not be opened). */
    boolean mayHold(int file, long index) throws IOException {
        BloomFilter f = filters.get(file);
        if (f == null) {
            if (indexInDriver && indexes.containsKey(file)) {
                // the data file alone opens as fast as the filter reads, and a hit would pay both:
                // open it (the preload reads filters before indexes, so this is rare)
                return true;
            }
            Future<?> side = objectStore && indexInDriver ? SIDE_READS.submit(() -> keepIndex(file)) : null;
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

    private static void awaitQuietly(Future<?> f) {
        boolean interrupted = false;
        while (true) {
            try {
                f.get();
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            } catch (ExecutionException e) {
                break; // keepIndex reports nothing: the open that needs the index reads it and says what is wrong
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /** Reads {@code file}'s checked bloom filter, kept while filters fit in a quarter of {@code cacheBytes}. */
    private BloomFilter loadFilter(int file) throws IOException {
        DataFileEntry entry = entryOf(file);
        if (entry.bloomCrc32c == null) {
            filters.putIfAbsent(file, NO_FILTER);
            return NO_FILTER;
        }
        Path path = pathOf(file);
        BloomFilter f = BloomFilter.read(path.getFileSystem(layer.conf()), path, entry.bloomCrc32c,
            layer.path().toString());
        if (filterBytes.get() + f.bytes() > cacheBytes / 4) {
            filters.putIfAbsent(file, NO_FILTER); // no room: its look-ups open the file, as without a filter
        } else if (filters.putIfAbsent(file, f) == null) {
            filterBytes.addAndGet(f.bytes());
        }
        return f;
    }

    /**
     * The cache entry of {@code file}, open. No file-system call happens under the cache-wide lock:
     * a missing entry is put in the cache as a placeholder, and its reader is opened afterwards by
     * this caller, while callers wanting the same file wait on the entry and the others go on.
     */
    OpenFile acquire(int file) throws IOException {
        OpenFile f;
        boolean mine = false;
        synchronized (this) {
            if (closed) {
                throw new SfcLayerException("value reader on " + layer.path() + " is closed");
            }
            f = cache.get(file);
            if (f != null) {
                hits++;
            } else {
                f = new OpenFile();
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
            r.usePositionedReads(ValueReader.POSITIONED_WINDOW_BYTES);
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

    /** File {@code file}'s path: a base file of the listing, or (negative) delta {@code -1 - file}. */
    private Path pathOf(int file) {
        return file >= 0 ? listing.path(file) : deltas.path(-1 - file);
    }

    /** What the version document says of file {@code file} (base or delta, as {@link #pathOf}). */
    private DataFileEntry entryOf(int file) {
        return file >= 0 ? layer.entry(listing.name(file)) : deltas.entry(-1 - file);
    }

    /**
     * A reader of {@code file} outside the cache (the caller closes it), opened as the cache opens
     * them (with its kept index): for a merge that could not hold all its files in the cache at once.
     */
    DataFileReader openUncached(int file) throws IOException {
        requireOpen();
        DataFileReader r = openFile(file);
        r.usePositionedReads(ValueReader.POSITIONED_WINDOW_BYTES);
        return r;
    }

    private DataFileReader openFile(int file) throws IOException {
        Path path = pathOf(file);
        try {
            DataFileEntry entry = entryOf(file);
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
    private void evictBeyondCapacity(OpenFile keep) {
        List<OpenFile> evicted = new ArrayList<>();
        synchronized (this) {
            Iterator<Map.Entry<Integer, OpenFile>> it = cache.entrySet().iterator();
            while ((cache.size() > cacheSize
                    || cache.size() * ValueReader.OPEN_FILE_BYTES + indexBytes.get() + filterBytes.get() > cacheBytes)
                    && it.hasNext()) {
                OpenFile eldest = it.next().getValue();
                if (eldest != keep && eldest.reader != null) {
                    evicted.add(eldest);
                    it.remove();
                }
            }
        }
        for (OpenFile e : evicted) {
            closeFile(e);
        }
    }

    private static void closeFile(OpenFile f) {
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

    /** Closes every open file; later look-ups fail naming the reader as closed, and the preload stops. */
    void close() {
        List<OpenFile> all;
        synchronized (this) {
            closed = true;
            all = new ArrayList<>(cache.values());
            cache.clear();
        }
        for (OpenFile f : all) {
            closeFile(f);
        }
    }
}
