package io.sfclayer.format;

import com.fasterxml.jackson.core.JsonParser;
import io.sfclayer.SfcLayerException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One manifest, {@code _sfclayer/manifests/m-<writeId>-<8 hex>.json} (docs/FORMAT.md, section 10):
 * an immutable, checksummed JSON document listing the data files (level 0) or the manifests (level
 * n > 0) of one contiguous SFC index span, sorted by first index. Versions share manifests: a commit
 * writes new ones only for the spans it changed. Read through a {@link Store}, which checks each
 * manifest against the reference that led to it and caches what it parsed.
 */
public final class Manifest {
    public static final String DIR = "manifests";
    static final String FORMAT = "sfclayer-manifest";

    public final int level;
    /**
     * Level 0: the data files, sorted by first index; else empty. A manifest read from storage parses
     * each file's entry (its statistics) only when it is first asked for: a plan or a look-up asks for
     * the few files its ranges meet, not the leaf's 32.
     */
    public final List<DataFile> files;
    /** Level n > 0: the child manifests, sorted by span; else empty. */
    public final List<ManifestRef> children;
    /** First and last indexes of the entries, for binary search and checks (no entry parsed). */
    final long[] firsts;
    final long[] lasts;
    /** {@code prefix[i]}: data files under the entries before i. */
    final long[] prefix;
    /** Records, indexes and data bytes under the manifest (what its reference says). */
    private final long records;
    private final long indexes;
    private final long dataBytes;

    Manifest(int level, List<DataFile> files, List<ManifestRef> children) {
        this.level = level;
        this.files = Collections.unmodifiableList(files);
        this.children = Collections.unmodifiableList(children);
        int n = level == 0 ? files.size() : children.size();
        firsts = new long[n];
        lasts = new long[n];
        prefix = new long[n + 1];
        long r = 0, x = 0, b = 0;
        for (int i = 0; i < n; i++) {
            if (level == 0) {
                DataFile f = files.get(i);
                firsts[i] = f.firstIndex;
                lasts[i] = f.lastIndex;
                prefix[i + 1] = prefix[i] + 1;
                r += f.records;
                x += f.indexes;
                b += f.dataBytes;
            } else {
                ManifestRef c = children.get(i);
                firsts[i] = c.firstIndex;
                lasts[i] = c.lastIndex;
                prefix[i + 1] = prefix[i] + c.fileCount;
                r += c.records;
                x += c.indexes;
                b += c.dataBytes;
            }
        }
        records = r;
        indexes = x;
        dataBytes = b;
    }

    /** A leaf read from storage: the entries' spans and totals parsed, each entry whole on first use. */
    private Manifest(ManifestParse.LazyFiles files, long[] firsts, long[] lasts, long records, long indexes,
                     long dataBytes) {
        this.level = 0;
        this.files = files;
        this.children = List.of();
        this.firsts = firsts;
        this.lasts = lasts;
        this.prefix = new long[firsts.length + 1];
        for (int i = 0; i < firsts.length; i++) {
            prefix[i + 1] = i + 1;
        }
        this.records = records;
        this.indexes = indexes;
        this.dataBytes = dataBytes;
    }

    static Manifest leaf(ManifestParse.LazyFiles files, long[] firsts, long[] lasts, long records, long indexes,
                         long dataBytes) {
        return new Manifest(files, firsts, lasts, records, indexes, dataBytes);
    }

    public int size() {
        return firsts.length;
    }

    /** Files whose entries have been parsed whole so far (tests: a plan parses only the files it meets). */
    int parsedFiles() {
        return files instanceof ManifestParse.LazyFiles ? ((ManifestParse.LazyFiles) files).parsed() : files.size();
    }

    /** The entry holding {@code index}: the greatest first index ≤ index; -1 if none. */
    int entryFor(long index) {
        int pos = java.util.Arrays.binarySearch(firsts, index);
        return pos >= 0 ? pos : -pos - 2;
    }

    /** The reference a parent lists for this manifest, once written as {@code path} with {@code checksum}. */
    ManifestRef refAs(String path, String checksum) {
        return new ManifestRef(path, level, firsts[0], lasts[lasts.length - 1], prefix[prefix.length - 1], records,
            indexes, dataBytes, checksum);
    }

    byte[] toJsonBytes(String writeId) throws IOException {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("format", FORMAT);
        m.put("formatVersion", ManifestRef.MANIFEST_FORMAT_VERSION);
        m.put("writeId", writeId);
        m.put("level", level);
        List<Map<String, Object>> entries = new ArrayList<>();
        if (level == 0) {
            for (DataFile f : files) {
                entries.add(f.toJson());
            }
        } else {
            for (ManifestRef r : children) {
                entries.add(r.toJson());
            }
        }
        m.put(level == 0 ? "files" : "manifests", entries);
        return LayerMetadata.sealedCompact(m);
    }

    /** Parses and checks a manifest against the reference that led to it; CorruptLayer naming it otherwise. */
    static Manifest fromJsonBytes(byte[] bytes, ManifestRef ref, String source) {
        String sum = checkedTrailer(bytes, source);
        if (!ref.checksum.equals(sum)) {
            throw new SfcLayerException.CorruptLayer("manifest " + source + " is not the one its version lists: its"
                + " checksum is " + sum + ", the reference says " + ref.checksum);
        }
        Manifest mf = null;
        if (ref.level == 0) { // most of a leaf is statistics no reader needs yet: skipped, not tokenized
            ManifestLeafScan scan = ManifestLeafScan.of(bytes);
            if (scan != null) {
                Object version = scan.formatVersion < 0 ? null : (Object) scan.formatVersion;
                mf = ManifestParse.built(scan.format, version, ref, null, scan.entries, bytes, source);
            }
        }
        if (mf == null) {
            try (JsonParser p = LayerMetadata.json().createParser(bytes)) {
                mf = ManifestParse.parse(p, bytes, ref, source);
            } catch (IOException | ClassCastException e) {
                throw new SfcLayerException.CorruptLayer("manifest " + source + " is damaged: " + e.getMessage(), e);
            }
        }
        mf.check(source);
        ManifestRef said = mf.refAs(ref.path, ref.checksum);
        if (said.firstIndex != ref.firstIndex || said.lastIndex != ref.lastIndex || said.fileCount != ref.fileCount
                || said.records != ref.records || said.indexes != ref.indexes || said.dataBytes != ref.dataBytes) {
            throw new SfcLayerException.CorruptLayer("manifest " + source + " holds " + said.fileCount + " files in ["
                + said.firstIndex + ", " + said.lastIndex + "] but its reference says " + ref.fileCount + " in ["
                + ref.firstIndex + ", " + ref.lastIndex + "] (or other totals differ)");
        }
        return mf;
    }

    /**
     * The manifest's checksum (its trailer's 8 hex digits) after checking the CRC32C of its bytes with
     * them zeroed (LayerMetadata's trailer rule).
     */
    static String checkedTrailer(byte[] bytes, String source) {
        int at = LayerMetadata.trailerAt(bytes);
        if (at < 0) {
            throw new SfcLayerException.CorruptLayer("manifest " + source
                + " is damaged: it has no checksum trailer (truncated?)");
        }
        String said = new String(bytes, at, 8, java.nio.charset.StandardCharsets.US_ASCII);
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        crc.update(bytes, 0, at);
        crc.update(ZEROS, 0, 8);
        crc.update(bytes, at + 8, bytes.length - at - 8);
        String actual = RecordFrame.hex((int) crc.getValue());
        if (!actual.equals(said)) {
            throw new SfcLayerException.CorruptLayer("manifest " + source + " is damaged: checksum mismatch (CRC32C "
                + actual + ", the document says " + said + ")");
        }
        return said;
    }

    private static final byte[] ZEROS = "00000000".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    /** Entries sorted, spans well formed and disjoint: what a reader's binary search relies on. */
    void check(String source) {
        long prevLast = Long.MIN_VALUE;
        for (int i = 0; i < firsts.length; i++) {
            long first = firsts[i];
            long last = lasts[i];
            if (first > last || (i > 0 && first <= prevLast)) {
                throw new SfcLayerException.CorruptLayer("manifest " + source + ": entry " + i + " spans [" + first
                    + ", " + last + "], not after the previous entry's end " + prevLast);
            }
            if (level > 0 && children.get(i).level != level - 1) {
                throw new SfcLayerException.CorruptLayer("manifest " + source + " (level " + level + ") lists "
                    + children.get(i).path + " of level " + children.get(i).level);
            }
            prevLast = last;
        }
    }

    /**
     * Parsed manifests shared by every reader in this JVM: manifests never change, and a reference
     * names one by path and checksum. Bounded to the {@value #CACHED} used last (a leaf of 32 files
     * with statistics is some tens of KB parsed).
     */
    private static final int CACHED = 2048;
    private static final Map<String, Manifest> CACHE = Collections.synchronizedMap(
        new LinkedHashMap<String, Manifest>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, Manifest> eldest) {
                return size() > CACHED;
            }
        });

    /** Forgets every parsed manifest (tests and the bench: a cold reader). */
    public static void forgetCached() {
        CACHE.clear();
    }

    private static final java.util.concurrent.atomic.AtomicLong READS = new java.util.concurrent.atomic.AtomicLong();

    /** Manifests read from storage by every store of this JVM so far (tests and the bench: what a write read). */
    public static long readsTotal() {
        return READS.get();
    }

    /** Reads and writes the manifests of one layer. */
    public static final class Store {
        private final FileSystem fs;
        private final Path dir;
        /** Manifests read from storage through this store (for tests and the bench: what a plan read). */
        public long reads;

        /** The directory as text, and on local files as a java.nio path (building Hadoop paths is not free). */
        private final String dirText;
        private final java.nio.file.Path localDir;

        /** The layer, its settings and the version whose manifests a reader reads (-1: none pinned). */
        private final Configuration conf;
        private final Path layer;
        private final long version;

        public Store(Configuration conf, Path layer) throws IOException {
            this(conf, layer, -1);
        }

        /** A store reading the manifests of {@code version}: one vacuum removed says so (LayerNotFound). */
        public Store(Configuration conf, Path layer, long version) throws IOException {
            this.conf = conf;
            this.layer = layer;
            this.version = version;
            this.fs = layer.getFileSystem(conf);
            this.dir = new Path(new Path(fs.makeQualified(layer), LogDirectory.NAME), DIR);
            this.dirText = dir.toString();
            this.localDir = fs.getClass() == org.apache.hadoop.fs.LocalFileSystem.class
                || fs.getClass() == org.apache.hadoop.fs.RawLocalFileSystem.class
                ? java.nio.file.Paths.get(dir.toUri().getPath()) : null;
        }

        public Path dir() {
            return dir;
        }

        /** The manifest a reference names, checked against it (CorruptLayer otherwise); cached, being immutable. */
        public Manifest read(ManifestRef ref) throws IOException {
            String source = dirText + "/" + ref.path;
            String key = source + "#" + ref.checksum + "#" + ref.level;
            Manifest m = CACHE.get(key);
            if (m != null) {
                return m;
            }
            byte[] bytes = readBytes(source, ref);
            synchronized (this) {
                reads++;
            }
            READS.incrementAndGet();
            m = fromJsonBytes(bytes, ref, source);
            CACHE.put(key, m);
            return m;
        }

        /**
         * A manifest's bytes. On local files directly (Hadoop's local filesystem checks for a
         * {@code .crc} sidecar a manifest never has: it checks itself); on an object store as a whole
         * file (one GET); else through the filesystem.
         */
        private byte[] readBytes(String source, ManifestRef ref) throws IOException {
            try {
                if (localDir != null) {
                    return java.nio.file.Files.readAllBytes(localDir.resolve(ref.path));
                }
                Path p = new Path(dir, ref.path);
                try (FSDataInputStream in = ObjectStores.open(fs, p, ObjectStores.Access.WHOLE_FILE, -1)) {
                    return in.readAllBytes();
                }
            } catch (FileNotFoundException | java.nio.file.NoSuchFileException e) {
                vacuumed(source, e);
                throw new SfcLayerException.CorruptLayer("manifest " + source + " is missing (the version lists it for"
                    + " SFC indexes " + ref.firstIndex + ".." + ref.lastIndex + ")");
            } catch (org.apache.hadoop.fs.ChecksumException e) {
                throw new SfcLayerException.CorruptLayer("manifest " + source + " is damaged: " + e.getMessage(), e);
            }
        }

        /**
         * A manifest of the pinned version is missing: when that version is no longer in the log, vacuum
         * removed it (no damage: LayerNotFound saying so, as DataFileReader says for its data files).
         * Returns when the version is still there or cannot be told: the manifest is lost.
         */
        private void vacuumed(String source, Exception cause) {
            if (version < 1) {
                return;
            }
            List<Long> versions;
            try {
                versions = LogDirectory.versions(conf, layer);
            } catch (IOException | RuntimeException e) {
                return;
            }
            if (!versions.isEmpty() && !versions.contains(version)) {
                throw new SfcLayerException.LayerNotFound("version " + version + " of layer " + layer
                    + " was removed by vacuum while it was being read (its manifest " + source + " is deleted; nothing"
                    + " is damaged): read a retained version, the layer's versions are now "
                    + LogDirectory.describe(versions), cause);
            }
        }

        /** Writes a new manifest of {@code writeId} (never over an existing one) and returns its reference. */
        public ManifestRef write(String writeId, Manifest m) throws IOException {
            byte[] bytes = m.toJsonBytes(writeId);
            String sum = LayerMetadata.trailer(bytes);
            for (int attempt = 0; ; attempt++) {
                String name = "m-" + writeId + "-" + java.util.UUID.randomUUID().toString().substring(0, 8) + ".json";
                Path p = new Path(dir, name);
                try {
                    create(p, bytes);
                } catch (org.apache.hadoop.fs.FileAlreadyExistsException e) {
                    if (attempt < 3) {
                        continue;
                    }
                    throw e;
                }
                written += bytes.length;
                return m.refAs(name, sum);
            }
        }

        /**
         * Creates {@code p} holding {@code bytes}, failing if it exists, as the other structures create their
         * files ({@link ObjectStores#create}: on local files through java.nio, no {@code chmod} child process
         * per file and no {@code .crc} sidecar, which made writing a tree of thousands of manifests take
         * seconds; a manifest checks itself, section 10), durable once closed, its name too.
         */
        private void create(Path p, byte[] bytes) throws IOException {
            try (FSDataOutputStream out = Durable.onClose(fs, p, ObjectStores.create(fs, p, false))) {
                out.write(bytes);
            }
            Durable.directory(fs, p.getParent());
        }

        /** Bytes of manifests this store wrote. */
        public long written;
    }
}
