package io.sfclayer.format;

import io.sfclayer.SfcLayerException;
import io.sfclayer.curve.TimeText;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.FileContext;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Options;
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
 * is one atomic, non-overwriting rename of a fully written temporary document, so a reader sees
 * the old layer or the new one and never a partial one (docs/FORMAT.md, "Commit protocol").
 */
public final class VersionLog {
    public static final String LOG_DIR = "_sfclayer";
    public static final String DATA_DIR_PREFIX = "data-";
    private static final Pattern VERSION_FILE = Pattern.compile("v(\\d{8,})\\.json");
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
        return String.format("v%08d.json", version);
    }

    /** A fresh id for a write; it names the write's data directory. */
    public static String newWriteId() {
        return ZonedDateTime.now(ZoneOffset.UTC).format(WRITE_ID_TIME) + "-"
            + UUID.randomUUID().toString().substring(0, 8);
    }

    /** Committed versions, ascending. Empty when there is no layer. */
    public List<Long> versions() throws IOException {
        List<Long> out = new ArrayList<>();
        FileStatus[] entries;
        try {
            entries = fs.listStatus(logDir());
        } catch (FileNotFoundException e) {
            return out;
        }
        for (FileStatus st : entries) {
            Matcher m = VERSION_FILE.matcher(st.getPath().getName());
            if (m.matches()) {
                out.add(Long.parseLong(m.group(1)));
            }
        }
        out.sort(null);
        return out;
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
     * opened and parsed the document again). A version document is written once and never changed, so
     * its path, length and modification time identify its content; a layer deleted and rewritten at the
     * same path gets new documents, hence new keys. Callers treat cached metadata as read-only (updates
     * work on a {@link LayerMetadata#copy()}).
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
        long hinted = newestFromHint();
        if (hinted > 0) {
            return read(hinted);
        }
        FileStatus newest = null;
        long newestVersion = -1;
        try {
            for (FileStatus st : fs.listStatus(logDir())) {
                Matcher m = VERSION_FILE.matcher(st.getPath().getName());
                if (m.matches() && Long.parseLong(m.group(1)) > newestVersion) {
                    newestVersion = Long.parseLong(m.group(1));
                    newest = st;
                }
            }
        } catch (FileNotFoundException e) {
            // no log: below
        }
        if (newest != null) {
            return read(newestVersion, newest);
        }
        List<Long> vs = versions();
        if (vs.isEmpty()) {
            if (!fs.exists(layer)) {
                throw new SfcLayerException.LayerNotFound("no sfclayer layer at " + layer + ": path does not exist");
            }
            throw new SfcLayerException.LayerNotFound("no sfclayer layer at " + layer
                + ": no committed version in " + logDir() + " (not an sfclayer layer, or never committed)");
        }
        return read(vs.get(vs.size() - 1));
    }

    public LayerMetadata read(long version) throws IOException {
        FileStatus st;
        try {
            st = fs.getFileStatus(new Path(logDir(), versionFileName(version)));
        } catch (FileNotFoundException e) {
            st = null;
        }
        return read(version, st);
    }

    /** Reads a version document, from the cache when {@code st} (its status, or null) matches an entry. */
    private LayerMetadata read(long version, FileStatus st) throws IOException {
        String key = st == null ? null
            : fs.makeQualified(st.getPath()) + "#" + st.getLen() + "#" + st.getModificationTime();
        if (key != null) {
            LayerMetadata cached = DOCUMENTS.get(key);
            if (cached != null) {
                return cached;
            }
        }
        LayerMetadata md = parse(version);
        if (key != null) {
            DOCUMENTS.put(key, md);
        }
        return md;
    }

    private LayerMetadata parse(long version) throws IOException {
        Path p = new Path(logDir(), versionFileName(version));
        byte[] bytes;
        try (FSDataInputStream in = fs.open(p)) {
            bytes = in.readAllBytes();
        } catch (FileNotFoundException e) {
            throw new SfcLayerException.LayerNotFound("layer " + layer + " has no version " + version + " (" + p + ")");
        }
        LayerMetadata md;
        try {
            md = LayerMetadata.fromJsonBytes(bytes, p.toString());
        } catch (SfcLayerException.CorruptLayer e) {
            if (e.getMessage().contains("upgrade sfclayer")) {
                throw e;
            }
            throw new SfcLayerException.CorruptLayer(e.getMessage() + ". Other versions of the layer are not affected"
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
                + (vs.isEmpty() ? " (it has no versions)" : "; its versions are " + describe(vs)));
        }
        return read(version);
    }

    /** The newest version committed at or before {@code millis} (epoch milliseconds). */
    public LayerMetadata asOf(long millis) throws IOException {
        List<Long> vs = versions();
        LayerMetadata best = null;
        String oldest = null;
        for (long v : vs) {
            LayerMetadata md = read(v);
            if (oldest == null) {
                oldest = "version " + v + " at " + md.createdAt;
            }
            if (Math.floorDiv(TimeText.parseInstantMicros("createdAt", md.createdAt), 1000L) <= millis) {
                best = md;
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
        if (vs.size() <= 12) {
            return vs.toString();
        }
        return "[" + vs.get(0) + ", " + vs.get(1) + ", ... " + vs.get(vs.size() - 1) + "] (" + vs.size() + " versions)";
    }

    /** Lost races a commit retries after, backing off (as Iceberg's commit.retry defaults). */
    static final int COMMIT_RETRIES = 4;
    static final long BACKOFF_MIN_MILLIS = 100;
    static final long BACKOFF_MAX_MILLIS = 60_000;

    /**
     * Publishes {@code md} (whose data files are fully written) as the next version and returns the
     * committed document. {@code md.readVersion} is the version the write read; if newer versions
     * exist, the write is checked against them ({@link Conflicts}) and rebased on the newest, or fails
     * with ConcurrentUpdate. Never overwrites a version document.
     *
     * @param added the files the write added (what a rebase keeps on top of the newest version)
     */
    public LayerMetadata commit(LayerMetadata md, List<DataFile> added) throws IOException {
        fs.mkdirs(logDir());
        Path tmp = new Path(logDir(), ".tmp-" + md.writeId + ".json");
        long based = Math.max(0, md.readVersion);
        LayerMetadata candidate = md;
        try {
            for (int attempt = 0; ; attempt++) {
                List<Long> vs = versions();
                long latest = vs.isEmpty() ? 0 : vs.get(vs.size() - 1);
                if (latest > based) {
                    List<LayerMetadata> newer = new ArrayList<>();
                    for (long v = based + 1; v <= latest; v++) {
                        newer.add(read(v));
                    }
                    Conflicts.check(layer.toString(), md, newer);
                    candidate = Conflicts.rebase(md, added, newer.get(newer.size() - 1));
                }
                candidate.version = latest + 1;
                try (FSDataOutputStream out = fs.create(tmp, true)) {
                    out.write(candidate.toJsonBytes());
                }
                if (publish(tmp, new Path(logDir(), versionFileName(latest + 1)))) {
                    writeHint(latest + 1);
                    return candidate;
                }
                if (attempt >= COMMIT_RETRIES) {
                    throw new SfcLayerException.ConcurrentUpdate("could not commit to layer " + layer + ": version "
                        + (latest + 1) + " was taken by another writer " + (attempt + 1)
                        + " times in a row; nothing was published");
                }
                long backoff = Math.min(BACKOFF_MAX_MILLIS, BACKOFF_MIN_MILLIS << attempt);
                try {
                    Thread.sleep(backoff / 2 + (long) (Math.random() * backoff / 2));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new SfcLayerException("commit to layer " + layer + " interrupted; nothing was published");
                }
            }
        } finally {
            fs.delete(tmp, false);
        }
    }

    /**
     * Makes {@code tmp} the version document {@code target} unless {@code target} exists; false if
     * another writer took it. HDFS (and FileContext filesystems): a rename without OVERWRITE,
     * atomic. The local filesystem: its rename replaces an existing target, so a hard link instead
     * (creating a link fails atomically when the name exists).
     */
    private boolean publish(Path tmp, Path target) throws IOException {
        if ("file".equals(fs.getScheme())) {
            java.nio.file.Path from = java.nio.file.Paths.get(tmp.toUri().getPath());
            java.nio.file.Path to = java.nio.file.Paths.get(target.toUri().getPath());
            try {
                java.nio.file.Files.createLink(to, from);
                return true;
            } catch (java.nio.file.FileAlreadyExistsException e) {
                return false;
            }
        }
        FileContext fc = FileContext.getFileContext(layer.toUri(), conf);
        try {
            fc.rename(tmp, target, Options.Rename.NONE);
            return true;
        } catch (FileAlreadyExistsException e) {
            return false;
        }
    }

    /** A hint for readers: a committed version, so the newest is found without listing the log. */
    public static final String HINT_FILE = "_last_version";

    /**
     * The newest version found from the hint: the hinted version (if its document still exists) and
     * then the next numbers while they exist. The hint is only ever a committed version, hence a lower
     * bound of the newest; 0 when there is no usable hint (then the log is listed).
     */
    private long newestFromHint() {
        long n;
        try (FSDataInputStream in = fs.open(new Path(logDir(), HINT_FILE))) {
            n = Long.parseLong(new String(in.readAllBytes(), java.nio.charset.StandardCharsets.US_ASCII).trim());
            if (n < 1 || !fs.exists(new Path(logDir(), versionFileName(n)))) {
                return 0;
            }
            while (fs.exists(new Path(logDir(), versionFileName(n + 1)))) {
                n++;
            }
            return n;
        } catch (IOException | NumberFormatException e) {
            return 0;
        }
    }

    /** Best effort, after a commit: readers then find the newest version with a few look-ups, no listing. */
    private void writeHint(long version) {
        try (FSDataOutputStream out = fs.create(new Path(logDir(), HINT_FILE), true)) {
            out.write(Long.toString(version).getBytes(java.nio.charset.StandardCharsets.US_ASCII));
        } catch (IOException e) {
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
