package io.sfclayer.commit;

import io.sfclayer.SfcLayerException;
import io.sfclayer.curve.TimeText;
import io.sfclayer.format.DataFile;
import io.sfclayer.format.DeltaFile;
import io.sfclayer.format.Durable;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.format.LogDirectory;
import io.sfclayer.format.Manifest;
import io.sfclayer.format.ManifestTree;
import io.sfclayer.format.ObjectStores;
import io.sfclayer.format.RecordFrame;
import io.sfclayer.format.S3AListing;
import io.sfclayer.format.Transactions;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A layer's commit log, the directory {@code <layer>/_sfclayer/} of version documents
 * {@code v<8-digit version>.json}. The highest version present is the layer; publishing a version
 * is one atomic create-if-absent of its complete document (how depends on the filesystem:
 * {@link CommitPublisher}), so a reader sees the old layer or the new one and never a partial one
 * (docs/FORMAT.md, section 6). Over 500 lines: reading and committing the log are one role, the races
 * between them (a vacuum removing a version a reader or a commit just listed) handled where they meet.
 */
public final class VersionLog {
    public static final String LOG_DIR = LogDirectory.NAME;
    public static final String DATA_DIR_PREFIX = "data-";
    private static final Pattern VERSION_FILE = LogDirectory.VERSION_FILE;
    private static final DateTimeFormatter WRITE_ID_TIME = DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss");

    private final Configuration conf;
    private final Path layer;
    private final FileSystem fs;

    public VersionLog(Configuration conf, Path layer) throws IOException {
        this.conf = conf;
        this.fs = layer.getFileSystem(conf);
        this.layer = fs.makeQualified(layer);
    }

    public Path layerPath() {
        return layer;
    }

    public FileSystem fileSystem() {
        return fs;
    }

    private Path logDir() {
        return new Path(layer, LOG_DIR);
    }

    public static String versionFileName(long version) {
        return LogDirectory.versionFileName(version);
    }

    /** A fresh id for a write; it names the write's data directory. */
    public static String newWriteId() {
        return ZonedDateTime.now(ZoneOffset.UTC).format(WRITE_ID_TIME) + "-"
            + UUID.randomUUID().toString().substring(0, 8);
    }

    /** Committed versions, ascending. Empty when there is no layer. */
    public List<Long> versions() throws IOException {
        return LogDirectory.versions(fs, logDir());
    }

    /**
     * Whether version {@code version}'s document exists: one probe (a streaming batch's commit asks
     * whether a version was committed since its batch opened the layer).
     */
    public boolean hasVersion(long version) throws IOException {
        return fs.exists(new Path(logDir(), versionFileName(version)));
    }

    /**
     * The versions a commit builds on (the newest, and each document's length when known, else -1); empty
     * when there is none. Always a listing, never the hint: a hint names a committed version, and the next
     * numbers probed from it may be ones a vacuum removed while a newer one exists (it keeps versions a restore
     * pins below the newest), which a commit would then publish again (the race model found it). On plain
     * local files the names alone (LogDirectory.versionLengths); elsewhere one listing call (per 1,000
     * documents on an object store). A version published meanwhile makes the publish fail and the commit look
     * again.
     */
    private java.util.TreeMap<Long, Long> newestForCommit() throws IOException {
        return LogDirectory.versionLengths(fs, logDir());
    }

    /** Whether anything is at the layer's path at all (an sfclayer layer or not). */
    public boolean pathExists() throws IOException {
        return fs.exists(layer);
    }

    public boolean isLayer() throws IOException {
        return !versions().isEmpty();
    }

    /**
     * Parsed version documents, shared by every reader in this JVM (the driver's planning of each query
     * opened and parsed the document again). Owned by this class; bounded to the 256 used last. Keyed by
     * content, the SHA-256 of the document's bytes (also {@link LayerMetadata#digest}): a path with its
     * length and modification time is no identity where clocks are coarse (object stores count whole
     * seconds: a layer deleted and rewritten within one has documents of the same path, length and time)
     * or where bytes change in place (a damaged document must be read as damaged, not as it was).
     * Callers treat cached metadata as read-only (updates work on a {@link LayerMetadata#copy()}).
     */
    private static final int CACHED_DOCUMENTS = 256;
    private static final java.util.Map<String, LayerMetadata> DOCUMENTS = java.util.Collections.synchronizedMap(
        new java.util.LinkedHashMap<String, LayerMetadata>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(java.util.Map.Entry<String, LayerMetadata> eldest) {
                return size() > CACHED_DOCUMENTS;
            }
        });

    /** The metadata of the newest version; LayerNotFound naming the path if there is none. */
    public LayerMetadata current() throws IOException {
        // The newest version found can be gone when it is read: a commit made a newer one meanwhile and a
        // vacuum (which never removes the newest) removed it. Looking again finds the newer one (the race
        // model found an append failing with "no version 7" while 8 was there).
        for (int attempt = 1; ; attempt++) {
            try {
                return newest();
            } catch (SfcLayerException.LayerNotFound e) {
                if (attempt == 3 || versions().isEmpty()) {
                    throw e;
                }
            }
        }
    }

    private LayerMetadata newest() throws IOException {
        // Object stores list the log instead of following the hint: one strongly consistent LIST (per
        // 1000 documents) names the newest document and its length, which is then read in one GET;
        // the hint costs a HEAD and a GET for itself, a HEAD per probed version and a HEAD before the
        // document's GET (FORMAT.md section 6). On S3A, the copy of the newest document and a LIST from
        // its version first: 2 requests however long the log.
        // Elsewhere the listing too (names alone on local files), not the hint and probes: a version a vacuum
        // kept below the newest (a restore's) can leave a gap the probes stop at, below the newest (section 6)
        if (ObjectStores.isObjectStore(fs)) {
            LayerMetadata fromCopy = newestFromCopy();
            if (fromCopy != null) {
                return fromCopy;
            }
        }
        java.util.TreeMap<Long, Long> listed = LogDirectory.versionLengths(fs, logDir());
        if (!listed.isEmpty()) {
            return read(listed.lastKey(), listed.lastEntry().getValue());
        }
        if (!fs.exists(layer)) {
            throw new SfcLayerException.LayerNotFound("no sfclayer layer at " + layer + ": path does not exist");
        }
        throw new SfcLayerException.LayerNotFound("no sfclayer layer at " + layer
            + ": no committed version in " + logDir() + " (not an sfclayer layer, or never committed)");
    }

    public LayerMetadata read(long version) throws IOException {
        return read(version, -1);
    }

    /** {@link #read(long)} of a document whose length a listing gave (an object store then asks no HEAD). */
    private LayerMetadata read(long version, long knownLength) throws IOException {
        Path p = new Path(logDir(), versionFileName(version));
        byte[] bytes;
        try (FSDataInputStream in = ObjectStores.open(fs, p, ObjectStores.Access.WHOLE_FILE, knownLength)) {
            bytes = in.readAllBytes();
        } catch (FileNotFoundException e) {
            throw new SfcLayerException.LayerNotFound("layer " + layer + " has no version " + version + " (" + p + ")");
        }
        return parsed(version, p, bytes);
    }

    /** Version {@code version}'s document from its bytes, read at {@code p} (cached by content). */
    private LayerMetadata parsed(long version, Path p, byte[] bytes) {
        String digest = digest(bytes);
        LayerMetadata cached = DOCUMENTS.get(digest);
        if (cached != null && cached.version == version) {
            return cached;
        }
        LayerMetadata md = parse(version, p, bytes);
        md.digest = digest;
        DOCUMENTS.put(digest, md);
        return md;
    }

    /** The hex SHA-256 of a document's bytes: its key in {@link #DOCUMENTS}. */
    static String digest(byte[] bytes) {
        try {
            return java.util.HexFormat.of().formatHex(java.security.MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JVM has SHA-256", e);
        }
    }

    private LayerMetadata parse(long version, Path p, byte[] bytes) {
        LayerMetadata md;
        try {
            md = LayerMetadata.fromJsonBytes(bytes, p.toString());
        } catch (SfcLayerException.UnsupportedFormat e) {
            throw e; // not damage: a newer sfclayer reads it
        } catch (SfcLayerException.CorruptLayer e) {
            throw new SfcLayerException.CorruptLayer(SfcLayerException.reason(e) + ". Other versions of the layer are not affected"
                + (version > 1 ? " (read version " + (version - 1) + " with option versionAsOf=" + (version - 1) + ")" : "")
                + "; `sfclayer verify " + layer + "` checks the whole layer", e);
        }
        if (md.version != version) {
            throw new SfcLayerException.CorruptLayer("bad layer metadata in " + p + ": it says version " + md.version);
        }
        return md;
    }

    public Path dataDir(String dirName) {
        return new Path(layer, dirName);
    }

    /** Like {@link #read} but a missing version is an error naming the versions that exist. */
    public LayerMetadata readExisting(long version) throws IOException {
        List<Long> vs = versions();
        if (!vs.contains(version)) {
            throw new SfcLayerException.LayerNotFound("layer " + layer + " has no version " + version
                // numbers are dense from 1, so one below the newest was removed by vacuum (not only one below
                // the oldest: versions a restore in progress names are kept, leaving holes)
                + (!vs.isEmpty() && version >= 1 && version < vs.get(vs.size() - 1) ? ": it was removed by vacuum" : "")
                + (vs.isEmpty() ? " (it has no versions)" : "; its versions are " + describe(vs)));
        }
        return read(version);
    }

    /** The newest version committed at or before {@code millis} (epoch milliseconds). */
    public LayerMetadata asOf(long millis) throws IOException {
        List<Long> vs;
        LayerMetadata best;
        String oldest;
        for (int attempt = 0; ; attempt++) {
            vs = versions();
            best = null;
            oldest = null;
            try {
                for (long v : vs) {
                    LayerMetadata md = read(v);
                    if (oldest == null) {
                        oldest = "version " + v + " at " + md.createdAt;
                    }
                    if (Math.floorDiv(TimeText.parseInstantMicros("createdAt", md.createdAt), 1000L) <= millis) {
                        best = md;
                    }
                }
                break;
            } catch (SfcLayerException.LayerNotFound e) {
                // a version listed a moment ago is gone: a vacuum removed it (and the older ones before it,
                // never the newest) while this scanned; look again at what remains (the race model found
                // "has no version N" here)
                if (attempt >= READ_ATTEMPTS - 1) {
                    throw e;
                }
            }
        }
        if (best == null) {
            throw new SfcLayerException.LayerNotFound("layer " + layer + " has no version committed at or before "
                + Instant.ofEpochMilli(millis) + (oldest == null ? " (it has no versions)"
                : "; its oldest is " + oldest + " (versions " + describe(vs) + ")"));
        }
        return best;
    }

    static String describe(List<Long> vs) {
        return LogDirectory.describe(vs);
    }

    /** Scans of the log a time-travel read makes while vacuums remove versions under it. */
    static final int READ_ATTEMPTS = 5;

    /**
     * Lost races a commit retries after, backing off from Iceberg's commit.retry minimum, more times than its
     * 4 (six writers appending at once starved one in a hundred commits in the race model: each retry only
     * rereads the versions it lost to) and waiting at most 2 s at a time (about 8 s in all, with the jitter).
     */
    static final int COMMIT_RETRIES = 9;
    static final long BACKOFF_MIN_MILLIS = 100;
    static final long BACKOFF_MAX_MILLIS = 2_000;

    /**
     * Publishes {@code md} (whose data files are fully written) as the next version and returns the
     * committed document. {@code md.readVersion} is the version the write read; if newer versions
     * exist, the write is checked against them ({@link Conflicts}) and rebased on the newest, or fails
     * with ConcurrentUpdate. Never overwrites a version document. The candidate is checked
     * ({@link CandidateCheck}) before it is published.
     *
     * <p>Outcomes (docs/FORMAT.md, section 6): returns only when the version is published; after that
     * nothing throws. ConcurrentUpdate, SfcLayerException itself (a bad candidate), InvalidArgument (a store that
     * cannot publish atomically) and StorageError mean nothing was published: the caller may delete its
     * data. {@link SfcLayerException.CommitStateUnknown} means the outcome could not be decided: the
     * caller must keep its data (the version may reference it).
     *
     * @param added the files the write added (what a rebase keeps on top of the newest version)
     */
    public LayerMetadata commit(LayerMetadata md, List<DataFile> added) throws IOException {
        CommitPublisher publisher = publisher();
        publisher.prepare(logDir());
        List<DataFile> written = new ArrayList<>(added);
        for (DeltaFile d : md.deltas) {
            if (d.addedIn < 0) {
                written.add(d.file); // this write's own delta files (section 11)
            }
        }
        syncNames(written);
        long based = Math.max(0, md.readVersion);
        LayerMetadata candidate = md;
        if (md.txn != null && md.readVersion > 0) {
            Transactions.check(layer.toString(), md, md); // the version it read (whose transactions md carries)
        }
        // announced before the log is listed: vacuum keeps every version published from now on (CommitMarker)
        Path marker = CommitMarker.start(fs, logDir(), md.writeId == null ? "unnamed" : md.writeId);
        try {
            return publishNext(md, added, publisher, based, candidate);
        } finally {
            CommitMarker.end(fs, marker);
        }
    }

    private LayerMetadata publishNext(LayerMetadata md, List<DataFile> added, CommitPublisher publisher, long based,
                                      LayerMetadata candidate) throws IOException {
        for (int attempt = 0; ; attempt++) {
            java.util.TreeMap<Long, Long> listed = newestForCommit();
            long latest = listed.isEmpty() ? 0 : listed.lastKey();
            if (listed.isEmpty() && md.readVersion > 0) {
                // vacuum never removes the newest version: an empty log is a layer removed meanwhile, and
                // publishing version 1 would list files that went with it
                throw new SfcLayerException.LayerNotFound("layer " + layer + " has no version any more (it was"
                    + " removed while this " + md.operation + " of version " + md.readVersion + " ran); nothing was"
                    + " published");
            }
            try {
                if (latest > based) {
                    List<LayerMetadata> newer = new ArrayList<>();
                    for (long v = based + 1; v <= latest; v++) {
                        newer.add(read(v));
                    }
                    // a batch a newer version holds is not written twice (a replay, or a concurrent duplicate
                    // that won the race for this number): decided here, before anything is published
                    Transactions.check(layer.toString(), md, newer.get(newer.size() - 1));
                    Conflicts.check(layer.toString(), md, newer);
                    candidate = Conflicts.rebase(md, added, newer.get(newer.size() - 1));
                }
                Transactions.record(candidate);
                candidate.version = latest + 1;
                candidate = withManifests(candidate, added);
                candidate.createdAt = stamp(latest, listed.getOrDefault(latest, -1L));
            } catch (SfcLayerException.LayerNotFound e) {
                // A version listed a moment ago is gone: a vacuum removed it (a newer one was committed
                // meanwhile, the newest is never removed), so this commit cannot check it for conflicts or
                // stamp after it. Nothing is published (the race model found appends failing with
                // LayerNotFound "no version 9" here, which named no cause and no remedy).
                throw new SfcLayerException.ConcurrentUpdate("concurrent update of layer " + layer + ": this "
                    + md.operation + " read version " + based + ", and a version committed since was removed by a"
                    + " vacuum before this commit could check it (" + SfcLayerException.reason(e) + "); nothing was"
                    + " published, retry the " + md.operation);
            }
            CandidateCheck.check(layer.toString(), candidate);
            if (candidate.manifests != null) {
                // its manifests directory's name, before a document lists them (a version listing its
                // files inline adds nothing here but the document, whose link is synced after it)
                Durable.directory(fs, logDir());
            }
            byte[] document = candidate.toJsonBytes();
            if (publisher.publishDecided(new Path(logDir(), versionFileName(latest + 1)), document,
                    candidate.writeId, documents(candidate.writeId))) {
                writeNewestCopy(document);
                writeHint(latest + 1);
                return candidate;
            }
            if (attempt >= COMMIT_RETRIES) {
                // each attempt lost the number it tried to another writer (the numbers differ: each retry tries the
                // next one); the old message named only the last as "taken 5 times", and no remedy
                throw new SfcLayerException.ConcurrentUpdate("could not commit to layer " + layer + ": other writers"
                    + " took the next version " + (attempt + 1) + " times in a row (the last, version " + (latest + 1)
                    + "); nothing was published, retry the " + md.operation);
            }
            long backoff = Math.min(BACKOFF_MAX_MILLIS, BACKOFF_MIN_MILLIS << attempt);
            try {
                Thread.sleep(backoff / 2 + (long) (Math.random() * backoff / 2));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new SfcLayerException("commit to layer " + layer + " interrupted; nothing was published");
            }
        }
    }

    /**
     * The directory entries naming the added files' directories (their {@code attempt-*} in the
     * write's {@code data-<writeId>}, which is in the layer) made durable before the version lists
     * them; each file and its own directory were synced when written (Durable, DataFileWriter).
     */
    private void syncNames(List<DataFile> added) throws IOException {
        java.util.Set<String> dataDirs = new java.util.TreeSet<>();
        for (DataFile f : added) {
            dataDirs.add(new Path(layer, f.dir).getParent().toString());
        }
        for (String d : dataDirs) {
            Durable.directory(fs, new Path(d));
        }
        if (!dataDirs.isEmpty()) {
            Durable.directory(fs, layer);
        }
    }

    /**
     * The time a version is stamped with ({@code createdAt}): now, taken at each publish attempt (a
     * commit that lost its number and was rebased is stamped again), and after the stamp of the version
     * it follows ({@code previous}) by at least a microsecond, so stamps increase with the version
     * whatever the writers' clocks say: {@code as_of} and vacuum's ages rely on it (FORMAT.md section 6).
     */
    private String stamp(long previous, long previousLength) throws IOException {
        long micros = java.time.temporal.ChronoUnit.MICROS.between(Instant.EPOCH, Instant.now());
        if (previous > 0) {
            long before;
            try {
                before = TimeText.parseInstantMicros("createdAt", read(previous, previousLength).createdAt);
            } catch (SfcLayerException.CorruptLayer e) {
                // a damaged document (a repair commits over it): its file's time bounds its stamp
                before = fs.getFileStatus(new Path(logDir(), versionFileName(previous))).getModificationTime() * 1000L;
            }
            micros = Math.max(micros, before + 1);
        }
        return Instant.EPOCH.plus(micros, java.time.temporal.ChronoUnit.MICROS).toString();
    }

    /**
     * The candidate as it is published (docs/FORMAT.md, section 10): an update of a version with
     * manifests rewrites only the manifests on the paths to the files it removed and added; a version
     * with more files than {@link ManifestTree#INLINE_FILES} gets manifests (format 6) built whole;
     * others list their files inline. Manifests are written before the document that lists them: a
     * commit that then fails leaves them unreferenced, for vacuum.
     */
    private LayerMetadata withManifests(LayerMetadata c, List<DataFile> added) throws IOException {
        boolean restore = c.operation.equals(Conflicts.RESTORE);
        if (restore && c.manifests != null) {
            return c; // the restored version's manifests, as they were
        }
        ManifestTree tree = new ManifestTree(new Manifest.Store(conf, layer), c.writeId, conf);
        if (c.manifests != null && !Conflicts.replacesLayer(c)) {
            java.util.Set<String> removedBase = new java.util.HashSet<>(c.removedFiles);
            if (c.foldedDeltas != null) {
                removedBase.removeAll(c.foldedDeltas); // deltas are never in manifests (section 11)
            }
            c.setManifests(tree.apply(c.manifests, removedBase, added));
        } else if (RecordFrame.checked(c.formatVersion) && c.files.size() > tree.inlineFiles) {
            c.setManifests(tree.build(c.files));
        } else {
            c.manifests = null;
        }
        return c;
    }

    private CommitPublisher publisher;

    /** The layer's commit primitive, chosen once (its filesystem's capability; docs/FORMAT.md, section 6). */
    public synchronized CommitPublisher publisher() throws IOException {
        if (publisher == null) {
            publisher = CommitPublisher.forLayer(fs, conf, layer);
        }
        return publisher;
    }

    /** The version documents, as {@link CommitPublisher#publishDecided} decides the outcome of {@code writeId}'s commit by them. */
    private CommitPublisher.Documents documents(String writeId) {
        return new CommitPublisher.Documents() {
            @Override
            public String idAt(Path p) throws IOException {
                return writeIdAt(p);
            }

            @Override
            public SfcLayerException unknown(Path target, String why, Throwable cause) {
                return VersionLog.this.unknown(target, writeId, why, cause);
            }
        };
    }

    private SfcLayerException.CommitStateUnknown unknown(Path target, String writeId, String why, Throwable cause) {
        return new SfcLayerException.CommitStateUnknown("the commit of write " + writeId + " to layer " + layer
            + " has an unknown outcome: version document " + target + " " + why + "; the write's data (data-"
            + writeId + ") was kept. Check the layer's history (`sfclayer history " + layer + "`: the write is"
            + " committed if a version's writeId is " + writeId + ") before writing again", cause);
    }

    /** The writeId of the version document at {@code p}, or null when there is none (an unparsable one is not ours). */
    private String writeIdAt(Path p) throws IOException {
        byte[] bytes;
        try (FSDataInputStream in = fs.open(p)) {
            bytes = in.readAllBytes();
        } catch (FileNotFoundException e) {
            return null;
        }
        try {
            return LayerMetadata.fromJsonBytes(bytes, p.toString()).writeId;
        } catch (SfcLayerException.CorruptLayer e) {
            return ""; // this write's documents are complete and valid: a damaged one is someone else's
        }
    }

    /** A hint for readers: a committed version, so the newest is found without listing the log. */
    public static final String HINT_FILE = "_last_version";
    /** On object stores, a copy of the newest version document, byte for byte (FORMAT.md section 6). */
    public static final String NEWEST_COPY = "_newest.json";

    /**
     * On S3A: the newest version's document from the writers' copy {@link #NEWEST_COPY} (one GET) and
     * one LIST of the documents from just before the version it holds (start-after), which names every
     * newer one. The copy's bytes are taken as the newest document only when its version is the highest
     * listed and the listed ETag is their MD5 (S3's ETag of a single-part upload without KMS), so the
     * copy is trusted for nothing: a stale one (a writer died before refreshing it, or two refreshed it
     * out of order) costs the newest's GET. Without a usable copy, the hint {@code _last_version} gives
     * the version to list from. Null (then the whole log is listed) when neither names a listed document
     * (missing, unparsable, vacuumed, or ahead of the log), on another store, or when a request fails.
     */
    private LayerMetadata newestFromCopy() {
        S3AListing s3 = S3AListing.of(fs);
        if (s3 == null) {
            return null;
        }
        try {
            byte[] copy = s3.get(new Path(logDir(), NEWEST_COPY));
            long n = copy == null ? 0 : LogDirectory.versionOf(copy);
            if (n >= 1) {
                LayerMetadata found = listedFrom(s3, n, copy);
                if (found != null) {
                    return found;
                }
            }
            // no usable copy (or its version is not listed: writers that predate it committed since, and
            // a vacuum removed it): the hint says where to list from
            byte[] hint = s3.get(new Path(logDir(), HINT_FILE));
            long h = hint == null ? 0 : parseHint(hint);
            return h >= 1 && h != n ? listedFrom(s3, h, null) : null;
        } catch (IOException e) {
            return null; // the same requests through Hadoop's listing (its retries and errors)
        }
    }

    /**
     * One LIST from just before {@code v<n>.json}: the newest document ({@code copy} when it holds that
     * document's bytes), or null when {@code v<n>.json} is not listed.
     */
    private LayerMetadata listedFrom(S3AListing s3, long n, byte[] copy) throws IOException {
        java.util.TreeMap<Long, S3AListing.Entry> listed = new java.util.TreeMap<>();
        for (S3AListing.Entry e : s3.listAfter(logDir(), n > 1 ? versionFileName(n - 1) : "v")) {
            Matcher m = VERSION_FILE.matcher(e.name);
            if (m.matches()) {
                listed.put(Long.parseLong(m.group(1)), e);
            }
        }
        if (!listed.containsKey(n) || LogDirectory.mayMissLongerNames(listed.keySet(), n)) {
            return null;
        }
        long newest = listed.lastKey();
        S3AListing.Entry e = listed.get(newest);
        if (copy != null && newest == n && e.length == copy.length && e.etag.equals(md5(copy))) {
            return parsed(n, new Path(logDir(), versionFileName(n)), copy);
        }
        return read(newest, e.length);
    }

    private static long parseHint(byte[] hint) {
        try {
            return Long.parseLong(new String(hint, java.nio.charset.StandardCharsets.US_ASCII).trim());
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    private static String md5(byte[] bytes) {
        try {
            return java.util.HexFormat.of().formatHex(java.security.MessageDigest.getInstance("MD5").digest(bytes));
        } catch (java.security.NoSuchAlgorithmException e) {
            return ""; // no MD5 (a FIPS JVM): the listed document is read instead
        }
    }

    /**
     * Best effort, after a commit on an object store: the copy of the newest document that readers open
     * the layer with in 2 requests (checked against the listing, so a stale copy is only slower).
     */
    private void writeNewestCopy(byte[] document) {
        if (!ObjectStores.isObjectStore(fs)) {
            return;
        }
        try (FSDataOutputStream out = ObjectStores.create(fs, new Path(logDir(), NEWEST_COPY), true)) {
            out.write(document);
        } catch (IOException | RuntimeException e) {
            // readers list from the hint or list the log instead
        }
    }

    /** Best effort, after a commit: readers then find the newest version with a few look-ups, no listing. */
    private void writeHint(long version) {
        try (FSDataOutputStream out = ObjectStores.create(fs, new Path(logDir(), HINT_FILE), true)) {
            out.write(Long.toString(version).getBytes(java.nio.charset.StandardCharsets.US_ASCII));
        } catch (IOException | RuntimeException e) {
            // readers list the log instead
        }
    }

    /** Every committed version's document, oldest first (unreadable ones are errors). */
    public List<LayerMetadata> history() throws IOException {
        List<LayerMetadata> out = new ArrayList<>();
        for (long v : versions()) {
            out.add(read(v));
        }
        return out;
    }

    /** Deletes one version document (vacuum only). */
    public void deleteVersion(long version) throws IOException {
        fs.delete(new Path(logDir(), versionFileName(version)), false);
    }
}
