package io.sfclayer.layer;

import io.sfclayer.SfcLayerException;
import io.sfclayer.commit.VersionLog;
import io.sfclayer.curve.TimeText;
import io.sfclayer.format.DataFile;
import io.sfclayer.format.DataFileName;
import io.sfclayer.format.LayerMetadata;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * (Over 500 lines: the steps of one vacuum and its sweep are one safety argument, the order of listing,
 * reading the log again and deleting; read together.)
 * Deletes what no retained version needs (docs/FORMAT.md, section 6, "Vacuum"), the only code that
 * deletes committed data. In this order, so that a crash part-way never leaves a version whose files
 * are gone: first the version documents committed before the retention horizon (never the newest),
 * then the data files no remaining version references that were written before the horizon (files of
 * dropped versions, failed or duplicate task attempts, killed writes), stale temporary documents of
 * the log, and data directories left empty. Everything after the documents is collected first and
 * deleted only after the log was read again: what a version committed meanwhile references is kept
 * (a write removes its pending marker only after publishing; FORMAT.md section 6, "Vacuum and commits").
 *
 * <p>Age is the write's, never a directory's own timestamp (on S3 a directory's time is the listing's
 * time): a file was written at its modification time (real on every store), a data file (a
 * {@code part-*} directory) at its newest file's, and an empty directory is as old as the write start
 * time in its {@code data-<writeId>} name. A write in progress keeps its files by rule:
 * it holds a {@link #PENDING} marker in its data directory until its commit, and vacuum skips a data
 * directory whose marker is younger than {@link #PENDING_GRACE_MILLIS} (or the retention, if longer). As
 * Delta does, a retention under 7 days is refused unless the caller says it knows better. A raster
 * layer's pyramid levels ({@code _pyramid/<zoom>/}, layers of their own) are vacuumed with it, each keeping
 * the version the newest pyramid document pins whatever its age.
 */
public final class Vacuum {
    public static final long DEFAULT_RETAIN_MILLIS = 7L * 24 * 3600 * 1000;
    /** The marker a write in progress keeps in its data directory (created first, removed at its end). */
    public static final String PENDING = "_pending";
    /** How long a pending marker protects its directory at least: a killed write's marker expires. */
    public static final long PENDING_GRACE_MILLIS = 24L * 3600 * 1000;
    private static final java.util.regex.Pattern WRITE_TIME =
        java.util.regex.Pattern.compile(VersionLog.DATA_DIR_PREFIX + "(\\d{8}T\\d{6})-.*");

    private Vacuum() {
    }

    /**
     * What was (or, in a dry run, would be) removed: {@code dryRun}, {@code versionsRemoved},
     * {@code filesRemoved} (data files, as {@code dir/name} relative to the layer), {@code otherRemoved}
     * (temporary documents, stray files and empty directories, relative to the layer), {@code bytesFreed}
     * (all of it).
     */
    public static Map<String, Object> run(Configuration conf, String path, long retainMillis, boolean dryRun,
                                          boolean enforceRetention) throws IOException {
        AtomicLongArray counter = new AtomicLongArray(2);
        RUNNING.put(path, counter);
        try {
            return run(conf, path, retainMillis, dryRun, enforceRetention, counter, null);
        } finally {
            RUNNING.remove(path, counter);
        }
    }

    /**
     * The progress of the vacuum of {@code path} running in this JVM (by the path it was given):
     * {@code [removals done, removals known so far]} (the total grows as its listings find more), or null.
     * Read by the Python API's progress bar while the vacuum runs.
     */
    public static long[] progress(String path) {
        AtomicLongArray p = RUNNING.get(path);
        return p == null ? null : new long[] {p.get(0), p.get(1)};
    }

    private static final ConcurrentHashMap<String, AtomicLongArray> RUNNING = new ConcurrentHashMap<>();

    /** The version of a pyramid level the newest pyramid document pins (null: none), read when asked. */
    private interface Pinned {
        Long read() throws IOException;
    }

    /** {@link #run}; {@code pinned} (a pyramid level's) names a version kept whatever its age. */
    private static Map<String, Object> run(Configuration conf, String path, long retainMillis, boolean dryRun,
                                           boolean enforceRetention, AtomicLongArray counter, Pinned pinned)
            throws IOException {
        if (retainMillis < 0) {
            throw new SfcLayerException.InvalidArgument("vacuum retain: " + retainMillis + " ms is negative (0 or more)");
        }
        checkRetention(retainMillis, enforceRetention, "vacuum retain: " + retainMillis / 1000.0 + " s",
            "turn the retention check off (Python: enforce_retention=False, CLI: --force, SQL: force => true)");
        VersionLog log = new VersionLog(conf, new Path(path));
        List<LayerMetadata> versions = snapshot(log, 0);
        if (versions.isEmpty()) {
            log.current(); // LayerNotFound naming the path
        }
        // announced before reading the restores in progress, whose versions are kept (RestoreGuard)
        Path marker = dryRun ? null : RestoreGuard.vacuumStarts(log);
        try {
            // after the snapshot, one listing of the log: the restores and the commits in progress (CommitMarker)
            FileStatus[] logEntries;
            try {
                logEntries = log.fileSystem().listStatus(new Path(log.layerPath(), VersionLog.LOG_DIR));
            } catch (java.io.FileNotFoundException e) {
                logEntries = new FileStatus[0];
            }
            return sweep(conf, log, versions, retainMillis, dryRun, enforceRetention, counter, pinned,
                RestoreGuard.restoring(logEntries),
                io.sfclayer.commit.CommitMarker.keptForCommits(logEntries, System.currentTimeMillis()));
        } finally {
            if (marker != null) {
                RestoreGuard.end(log, marker);
            }
        }
    }

    private static Map<String, Object> sweep(Configuration conf, VersionLog log, List<LayerMetadata> versions,
                                             long retainMillis, boolean dryRun, boolean enforceRetention,
                                             AtomicLongArray counter, Pinned pinned, Set<Long> restoring,
                                             java.util.function.LongPredicate committedMeanwhile)
            throws IOException {
        FileSystem fs = log.fileSystem();
        long now = System.currentTimeMillis();
        long horizon = now - retainMillis;
        Set<String> referenced = new HashSet<>();
        io.sfclayer.format.Manifest.Store manifestStore = new io.sfclayer.format.Manifest.Store(conf, log.layerPath());
        // A pyramid level's version the newest pyramid document pins is what readers of that zoom open, and
        // what an update resumes from, even while a run appends newer ones: kept. Read after the snapshot, so
        // a document published meanwhile pins a version of the snapshot's newest or later (runs hold a lease
        // and publish before the next run writes), never one this vacuum drops (FORMAT.md section 8).
        Long keep = pinned == null ? null : pinned.read();
        List<Long> dropped = new ArrayList<>();
        for (int i = 0; i < versions.size(); i++) {
            LayerMetadata md = versions.get(i);
            // kept too: a version published since a commit in progress began, whose number that commit could
            // publish again once its document is gone (CommitMarker)
            boolean newest = i == versions.size() - 1 || (keep != null && md.version == keep)
                || restoring.contains(md.version) || committedMeanwhile.test(md.version);
            if (newest || Math.floorDiv(TimeText.parseInstantMicros("createdAt", md.createdAt), 1000L) >= horizon) {
                reference(log, manifestStore, md, referenced);
            } else {
                dropped.add(md.version);
            }
        }
        long snapshotVersion = versions.isEmpty() ? 0 : versions.get(versions.size() - 1).version;
        // documents first: a crash after this leaves unreferenced files (removed next time), never a
        // version whose files are gone
        counter.addAndGet(1, dropped.size());
        if (!dryRun) {
            for (long v : dropped) {
                log.deleteVersion(v);
                counter.incrementAndGet(0);
            }
        } else {
            counter.addAndGet(0, dropped.size());
        }
        Sweep sweep = new Sweep(fs, referenced, horizon, now - Math.max(retainMillis, PENDING_GRACE_MILLIS), counter);
        // then manifests no remaining version lists, then data: each step leaves what the remaining versions read
        sweep.manifests(manifestStore.dir(), log.layerPath());
        FileStatus[] top;
        try {
            top = fs.listStatus(log.layerPath());
        } catch (java.io.FileNotFoundException e) {
            top = new FileStatus[0]; // the layer was deleted meanwhile
        }
        for (FileStatus st : top) {
            String name = st.getPath().getName();
            if (st.isDirectory() && name.startsWith(VersionLog.DATA_DIR_PREFIX)) {
                sweep.dataDirectory(st.getPath(), name);
            }
        }
        sweep.temporaryDocuments(new Path(log.layerPath(), VersionLog.LOG_DIR), log.layerPath());
        // A commit that published after the snapshot was read and then removed its pending marker is in no
        // version of the snapshot, and its files may have been listed as unreferenced: read the log again,
        // after every listing, and keep whatever a version newer than the snapshot references. Sound because a
        // write removes its marker only after its version is published: a directory listed without its
        // marker belongs to a version already visible now (FORMAT.md section 6, "Vacuum and commits").
        Set<String> newer = new HashSet<>();
        for (LayerMetadata md : snapshot(log, snapshotVersion)) {
            reference(log, manifestStore, md, newer);
        }
        sweep.apply(newer, dryRun);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("dryRun", dryRun);
        out.put("versionsRemoved", dropped);
        out.put("filesRemoved", sweep.files);
        out.put("otherRemoved", sweep.other);
        out.put("bytesFreed", sweep.bytes);
        out.put("pyramidLevels", vacuumLevels(conf, log, retainMillis, dryRun, enforceRetention, counter));
        return out;
    }

    /**
     * The version documents of the log newer than {@code after}, oldest first. A document that vanished
     * between the listing and its read was removed by another vacuum: skipped, or the log read again when it
     * was the listing's newest and a newer one exists now (two vacuums tolerate each other). Any other
     * unreadable document is an error.
     */
    private static List<LayerMetadata> snapshot(VersionLog log, long after) throws IOException {
        List<LayerMetadata> out = new ArrayList<>();
        List<Long> vs = log.versions();
        for (long v : vs) {
            if (v <= after) {
                continue;
            }
            try {
                out.add(log.read(v));
            } catch (SfcLayerException.LayerNotFound e) {
                if (v == vs.get(vs.size() - 1)) {
                    // the newest is never vacuumed, but the newest of this listing is once a version was committed
                    // after it and another vacuum then ran (the race model found a vacuum failing so): read again
                    List<Long> now = log.versions();
                    if (now.isEmpty() || now.get(now.size() - 1) <= v) {
                        throw e; // no newer version: the layer itself was deleted
                    }
                    return snapshot(log, after);
                }
            }
        }
        return out;
    }

    /**
     * Adds what version {@code md} reads to {@code referenced}: its data files and, with manifests
     * (format 6), every manifest of its tree (each read and checked). A version whose document another
     * vacuum removed meanwhile references nothing.
     */
    private static void reference(VersionLog log, io.sfclayer.format.Manifest.Store manifestStore, LayerMetadata md,
                                  Set<String> referenced) throws IOException {
        if (md.manifests != null) {
            List<DataFile> files = new ArrayList<>();
            List<io.sfclayer.format.ManifestRef> tree;
            try {
                tree = new io.sfclayer.format.ManifestFiles(manifestStore, md.manifests).manifests(files);
            } catch (RuntimeException e) {
                if (!log.versions().contains(md.version)) {
                    return; // removed by a concurrent vacuum, its manifests with it
                }
                throw e;
            }
            for (io.sfclayer.format.ManifestRef r : tree) {
                referenced.add(MANIFEST_ID + r.path);
            }
            for (io.sfclayer.format.ManifestRef r : md.manifests) {
                referenced.add(MANIFEST_ID + r.path);
            }
            for (DataFile f : files) {
                referenced.add(f.id());
            }
        }
        for (DataFile f : md.files) {
            referenced.add(f.id());
        }
        for (io.sfclayer.format.DeltaFile d : md.deltas) { // format 7: a version's deltas are its files too
            referenced.add(d.file.id());
        }
        if (md.formatVersion < 2 && md.files.isEmpty()) {
            referenced.add(md.dataDir + "/*");
        }
    }

    /** A pyramid's levels are layers of their own under {@code _pyramid/<zoom>/}: each vacuumed the same way. */
    private static Map<String, Object> vacuumLevels(Configuration conf, VersionLog log, long retainMillis,
                                                    boolean dryRun, boolean enforceRetention,
                                                    AtomicLongArray counter) throws IOException {
        Map<String, Object> levels = new java.util.TreeMap<>();
        Path dir = new Path(log.layerPath(), PYRAMID_DIR);
        FileSystem fs = log.fileSystem();
        if (!fs.exists(dir)) {
            return levels;
        }
        for (FileStatus st : fs.listStatus(dir)) {
            if (st.isDirectory() && st.getPath().getName().matches("[0-9]+")
                    && new VersionLog(conf, st.getPath()).isLayer()) {
                String zoom = st.getPath().getName();
                levels.put(zoom, run(conf, st.getPath().toString(), retainMillis, dryRun, enforceRetention, counter,
                    () -> PyramidDocuments.pinnedLevelVersion(conf, dir.toString(), zoom))); // one count for all
            }
        }
        return levels;
    }

    /** Where a raster layer's pyramid levels live (docs/FORMAT.md section 8). */
    static final String PYRAMID_DIR = "_pyramid";
    /** How a manifest is named among the referenced ids (data files are {@code dir/name}). */
    private static final String MANIFEST_ID = "manifest:";

    /**
     * The start time (epoch ms) in a {@code data-<writeId>} directory's name; Long.MAX_VALUE (never
     * old) when the name carries none, so only the files' own times decide.
     */
    static long writeStartMillis(String dataDirName) {
        java.util.regex.Matcher m = WRITE_TIME.matcher(dataDirName);
        if (!m.matches()) {
            return Long.MAX_VALUE;
        }
        try {
            return java.time.LocalDateTime.parse(m.group(1), java.time.format.DateTimeFormatter.ofPattern(
                "yyyyMMdd'T'HHmmss")).toInstant(java.time.ZoneOffset.UTC).toEpochMilli();
        } catch (java.time.format.DateTimeParseException e) {
            return Long.MAX_VALUE;
        }
    }

    /**
     * Delta's rule: a retention under 7 days is refused unless {@code enforceRetention} is off. The
     * message starts with {@code what} (the retention in the caller's words, e.g. {@code argument retain:
     * '1d'}) and ends with {@code override}, how that caller turns the check off.
     */
    public static void checkRetention(long retainMillis, boolean enforceRetention, String what, String override) {
        if (enforceRetention && retainMillis < DEFAULT_RETAIN_MILLIS) {
            throw new SfcLayerException.InvalidArgument(what + " is under the 7-day minimum: readers pinned to older"
                + " versions and writes in progress could lose their files; to do it anyway, " + override);
        }
    }

    /**
     * One vacuum's walk over the data directories and the log. It only collects what it would remove
     * ({@link #apply} deletes it), so that what a commit published meanwhile can still be kept.
     */
    private static final class Sweep {
        final FileSystem fs;
        final Set<String> referenced;
        final long horizon;
        final long pendingHorizon;
        /** What to remove, children before their directories. */
        final List<Removal> removals = new ArrayList<>();
        final List<String> files = new ArrayList<>();
        final List<String> other = new ArrayList<>();
        long bytes;
        /** [removals done, removals known] of the whole vacuum ({@link #progress}). */
        final AtomicLongArray counter;

        /** One path to remove: {@code id} relative to the layer; a data file when {@code dataFile}. */
        private record Removal(Path path, String id, long size, boolean dataFile, boolean directory) {
        }

        Sweep(FileSystem fs, Set<String> referenced, long horizon, long pendingHorizon, AtomicLongArray counter) {
            this.counter = counter;
            this.fs = fs;
            this.referenced = referenced;
            this.horizon = horizon;
            this.pendingHorizon = pendingHorizon;
        }

        /** A listing of a directory another vacuum (or the layer's deletion) may have removed: empty then. */
        private FileStatus[] list(Path dir) throws IOException {
            try {
                return fs.listStatus(dir);
            } catch (java.io.FileNotFoundException e) {
                return new FileStatus[0];
            }
        }

        /** A {@code data-<writeId>} directory: skipped while its write is in progress, else walked. */
        void dataDirectory(Path dir, String name) throws IOException {
            if (referenced.contains(name + "/*")) {
                return;
            }
            try {
                if (fs.getFileStatus(new Path(dir, PENDING)).getModificationTime() >= pendingHorizon) {
                    return; // a write in progress
                }
            } catch (java.io.FileNotFoundException e) {
                // no marker: a committed, failed or killed write, or one from before markers
            }
            long written = writeStartMillis(name);
            if (walk(dir, name, written) && written < horizon) {
                removals.add(new Removal(dir, name, 0, false, true));
            }
        }

        /** Walks a data or attempt directory of a write started at {@code written}; whether it is then empty. */
        private boolean walk(Path dir, String rel, long written) throws IOException {
            boolean empty = true;
            for (FileStatus st : list(dir)) {
                String name = st.getPath().getName();
                String id = rel + "/" + name;
                if (st.isDirectory() && DataFileName.looksLikeDataFile(name)) {
                    if (referenced.contains(id)) {
                        empty = false;
                        continue;
                    }
                    long size = 0;
                    FileStatus[] parts = list(st.getPath());
                    long newest = parts.length == 0 ? written : Long.MIN_VALUE; // an empty one is as old as its write
                    for (FileStatus f : parts) {
                        size += f.isDirectory() ? contentLength(f.getPath()) : f.getLen();
                        newest = Math.max(newest, f.isDirectory() ? Long.MAX_VALUE : f.getModificationTime());
                    }
                    if (newest >= horizon) {
                        empty = false; // written after the horizon: may be a write in progress
                        continue;
                    }
                    removals.add(new Removal(st.getPath(), id, size, true, true));
                } else if (st.isDirectory()) {
                    if (!walk(st.getPath(), id, written) || written >= horizon) {
                        empty = false;
                    } else {
                        removals.add(new Removal(st.getPath(), id, 0, false, true));
                    }
                } else if (st.getModificationTime() >= horizon) {
                    empty = false;
                } else {
                    removals.add(new Removal(st.getPath(), id, st.getLen(), false, false));
                }
            }
            return empty;
        }

        private long contentLength(Path p) throws IOException {
            try {
                return fs.getContentSummary(p).getLength();
            } catch (java.io.FileNotFoundException e) {
                return 0;
            }
        }

        /**
         * Manifests ({@code _sfclayer/manifests/m-<writeId>-*.json}) no remaining version lists, written
         * before the horizon, whose write is not in progress (its data directory's pending marker).
         */
        void manifests(Path dir, Path layer) throws IOException {
            for (FileStatus st : list(dir)) {
                String name = st.getPath().getName();
                if (st.isDirectory() || referenced.contains(MANIFEST_ID + name) || st.getModificationTime() >= horizon) {
                    continue;
                }
                if (name.startsWith("m-") && name.length() > 16
                        && inProgress(layer, name.substring(2, name.length() - "-xxxxxxxx.json".length()))) {
                    continue; // its write is committing
                }
                removals.add(new Removal(st.getPath(), MANIFEST_ID + name, st.getLen(), false, false));
            }
        }

        /** Whether write {@code writeId} is in progress: its data directory holds a young pending marker. */
        private boolean inProgress(Path layer, String writeId) throws IOException {
            try {
                Path marker = new Path(new Path(layer, VersionLog.DATA_DIR_PREFIX + writeId), PENDING);
                return fs.getFileStatus(marker).getModificationTime() >= pendingHorizon;
            } catch (java.io.FileNotFoundException e) {
                return false;
            }
        }

        /**
         * Stale temporary documents of commits that never finished ({@code _sfclayer/.tmp-<writeId>.json}),
         * except those of a write in progress (a short retention would otherwise delete a commit's document
         * between its creation and its publish, failing the commit).
         */
        void temporaryDocuments(Path logDir, Path layer) throws IOException {
            for (FileStatus st : list(logDir)) {
                String name = st.getPath().getName();
                if (!st.isDirectory() && name.startsWith(".tmp-") && st.getModificationTime() < horizon
                        && !(name.endsWith(".json")
                             && inProgress(layer, name.substring(".tmp-".length(), name.length() - ".json".length())))) {
                    removals.add(new Removal(st.getPath(), VersionLog.LOG_DIR + "/" + name, st.getLen(), false, false));
                }
            }
        }

        /**
         * Counts (and unless a dry run deletes) what was collected, except what {@code keep} (the
         * references of versions committed since the snapshot) names and the directories holding it.
         * A directory is removed only once it is empty (non-recursively: a write that started in it
         * meanwhile keeps it), a data file recursively.
         */
        void apply(Set<String> keep, boolean dryRun) throws IOException {
            Set<String> kept = new HashSet<>();
            for (String id : keep) {
                if (id.startsWith(MANIFEST_ID)) {
                    continue;
                }
                kept.add(id);
                for (int i = id.indexOf('/'); i > 0; i = id.indexOf('/', i + 1)) {
                    kept.add(id.substring(0, i)); // every directory on its way
                }
            }
            counter.addAndGet(1, removals.size());
            for (Removal r : removals) {
                counter.incrementAndGet(0);
                if (keep.contains(r.id) || kept.contains(r.id)) {
                    continue;
                }
                if (!dryRun && !delete(r)) {
                    continue;
                }
                bytes += r.size;
                if (r.dataFile) {
                    files.add(r.id);
                } else {
                    other.add(r.id.startsWith(MANIFEST_ID)
                        ? VersionLog.LOG_DIR + "/" + io.sfclayer.format.Manifest.DIR + "/"
                          + r.id.substring(MANIFEST_ID.length())
                        : r.id);
                }
            }
        }

        /** Deletes one collected path; false when it is a directory that is no longer empty. */
        private boolean delete(Removal r) throws IOException {
            if (r.dataFile || !r.directory) {
                fs.delete(r.path, r.dataFile); // false when gone already (another vacuum): as good as removed
                return true;
            }
            try {
                fs.delete(r.path, false);
                return !fs.exists(r.path);
            } catch (java.io.FileNotFoundException e) {
                return true;
            } catch (IOException e) {
                if (!fs.exists(r.path)) {
                    return true; // removed meanwhile (another vacuum; a local listing of it then fails)
                }
                if (list(r.path).length > 0) {
                    return false; // something was written into it meanwhile
                }
                throw e;
            }
        }
    }
}
