package io.sfclayer.format;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.type.TypeReference;
import io.sfclayer.SfcLayerException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.util.AbstractList;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.RandomAccess;

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
    private Manifest(LazyFiles files, long[] firsts, long[] lasts, long records, long indexes, long dataBytes) {
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

    public int size() {
        return firsts.length;
    }

    /** Files whose entries have been parsed whole so far (tests: a plan parses only the files it meets). */
    int parsedFiles() {
        return files instanceof LazyFiles ? ((LazyFiles) files).parsed() : files.size();
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
                mf = built(scan.format, scan.formatVersion < 0 ? null : (Object) scan.formatVersion, ref, null,
                    scan.entries, bytes, source);
            }
        }
        if (mf == null) {
            try (JsonParser p = LayerMetadata.json().createParser(bytes)) {
                mf = parse(p, bytes, ref, source);
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
    /**
     * One pass of a streaming parser over a manifest. Inner manifests' references are parsed whole; a
     * leaf's file entries only as far as their spans and totals (name, lastIndex, records, indexes,
     * dataBytes), each entry's bytes kept for {@link LazyFiles} to parse whole when it is asked for.
     */
    private static Manifest parse(JsonParser p, byte[] bytes, ManifestRef ref, String source) throws IOException {
        if (p.nextToken() != JsonToken.START_OBJECT) {
            throw new SfcLayerException.CorruptLayer("manifest " + source + " is damaged: not a JSON object");
        }
        Object format = null;
        Object formatVersion = null;
        String entriesField = ref.level == 0 ? "files" : "manifests";
        List<ManifestRef> children = null;
        LeafEntries leaf = null;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String field = p.currentName();
            JsonToken t = p.nextToken();
            if (field.equals("format")) {
                format = t == JsonToken.VALUE_STRING ? p.getText() : t.toString();
            } else if (field.equals("formatVersion")) {
                formatVersion = t == JsonToken.VALUE_NUMBER_INT ? (Object) p.getLongValue() : t.toString();
            } else if (field.equals(entriesField) && t == JsonToken.START_ARRAY) {
                if (ref.level == 0) {
                    leaf = leafEntries(p, bytes, source);
                } else {
                    children = new ArrayList<>();
                    JsonToken e;
                    while ((e = p.nextToken()) == JsonToken.START_OBJECT) {
                        children.add(refEntry(p, bytes, "manifest " + source));
                    }
                    if (e != JsonToken.END_ARRAY) {
                        throw new SfcLayerException.CorruptLayer("manifest " + source
                            + ": its manifests are not a list of objects");
                    }
                }
            } else {
                p.skipChildren();
            }
        }
        if (p.currentToken() != JsonToken.END_OBJECT || p.nextToken() != null) {
            throw new SfcLayerException.CorruptLayer("manifest " + source + " is damaged: not one JSON object");
        }
        return built(format, formatVersion, ref, children, leaf, bytes, source);
    }

    /** The manifest a parse found, once its format and entries are checked. */
    private static Manifest built(Object format, Object formatVersion, ManifestRef ref, List<ManifestRef> children,
                                  LeafEntries leaf, byte[] bytes, String source) {
        if (!FORMAT.equals(format) || !(formatVersion instanceof Long)
                || (Long) formatVersion > LayerMetadata.MAX_FORMAT_VERSION) {
            throw new SfcLayerException.CorruptLayer("manifest " + source + " is not an sfclayer manifest this"
                + " sfclayer reads (format " + format + ", formatVersion " + formatVersion + ")");
        }
        if (ref.level == 0 ? leaf == null || leaf.count == 0 : children == null || children.isEmpty()) {
            throw new SfcLayerException.CorruptLayer("manifest " + source + " lists nothing");
        }
        if (ref.level > 0) {
            return new Manifest(ref.level, List.of(), children);
        }
        int n = leaf.count;
        long[] firsts = Arrays.copyOf(leaf.firsts, n);
        long[] lasts = Arrays.copyOf(leaf.lasts, n);
        return new Manifest(new LazyFiles(bytes, Arrays.copyOf(leaf.starts, n), Arrays.copyOf(leaf.ends, n), firsts,
            lasts, source), firsts, lasts, leaf.records, leaf.indexes, leaf.dataBytes);
    }

    private static final TypeReference<Map<String, Object>> ENTRY = new TypeReference<Map<String, Object>>() { };

    private static final String[] REF_FIELDS = {"level", "firstIndex", "lastIndex", "fileCount", "records", "indexes",
        "dataBytes"};

    /**
     * One entry of an inner manifest's {@code manifests} (the parser on its START_OBJECT), read field by
     * field; an entry that is not plainly well formed is read again as {@link ManifestRef#fromJson}
     * does, which says what is wrong.
     */
    private static ManifestRef refEntry(JsonParser p, byte[] bytes, String source) throws IOException {
        int start = (int) p.currentTokenLocation().getByteOffset();
        String path = null, sum = null;
        long[] v = new long[REF_FIELDS.length];
        int seen = 0;
        boolean plain = true;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String field = p.currentName();
            JsonToken t = p.nextToken();
            int k = -1;
            for (int j = 0; j < REF_FIELDS.length && k < 0; j++) {
                k = REF_FIELDS[j].equals(field) ? j : -1;
            }
            if (k >= 0) {
                plain &= t == JsonToken.VALUE_NUMBER_INT;
                if (t == JsonToken.VALUE_NUMBER_INT) {
                    v[k] = p.getLongValue();
                    seen |= 1 << k;
                }
            } else if (field.equals("path")) {
                plain &= t == JsonToken.VALUE_STRING;
                path = t == JsonToken.VALUE_STRING ? p.getText() : null;
            } else if (field.equals("checksum")) {
                plain &= t == JsonToken.VALUE_STRING;
                sum = t == JsonToken.VALUE_STRING ? p.getText() : null;
            }
            p.skipChildren();
        }
        if (!plain || path == null || sum == null || seen != (1 << REF_FIELDS.length) - 1 || v[0] != (int) v[0]) {
            int end = (int) p.currentTokenLocation().getByteOffset() + 1;
            return ManifestRef.fromJson(LayerMetadata.json().readValue(bytes, start, end - start, ENTRY), source);
        }
        return ManifestRef.checked(path, (int) v[0], v[1], v[2], v[3], v[4], v[5], v[6], sum, source);
    }

    /** What a first pass over a leaf keeps of its entries. */
    static final class LeafEntries {
        int count;
        int[] starts = new int[32];
        int[] ends = new int[32];
        long[] firsts = new long[32];
        long[] lasts = new long[32];
        long records;
        long indexes;
        long dataBytes;

        void add(int start, int end, long first, long last) {
            if (count == starts.length) {
                starts = Arrays.copyOf(starts, 2 * count);
                ends = Arrays.copyOf(ends, 2 * count);
                firsts = Arrays.copyOf(firsts, 2 * count);
                lasts = Arrays.copyOf(lasts, 2 * count);
            }
            starts[count] = start;
            ends[count] = end;
            firsts[count] = first;
            lasts[count] = last;
            count++;
        }
    }

    /** The entries of a leaf's {@code files} array (the parser on its START_ARRAY). */
    private static LeafEntries leafEntries(JsonParser p, byte[] bytes, String source) throws IOException {
        LeafEntries out = new LeafEntries();
        JsonToken t;
        while ((t = p.nextToken()) == JsonToken.START_OBJECT) {
            int start = (int) p.currentTokenLocation().getByteOffset();
            String name = null;
            long last = 0, records = 0, indexes = 0, dataBytes = 0;
            int seen = 0;
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String field = p.currentName();
                JsonToken v = p.nextToken();
                int bit = field.equals("lastIndex") ? 1 : field.equals("records") ? 2 : field.equals("indexes") ? 4
                    : field.equals("dataBytes") ? 8 : 0;
                if (field.equals("name") && v == JsonToken.VALUE_STRING) {
                    name = p.getText();
                } else if (bit != 0 && v == JsonToken.VALUE_NUMBER_INT) {
                    long x = p.getLongValue();
                    seen |= bit;
                    if (bit == 1) {
                        last = x;
                    } else if (bit == 2) {
                        records = x;
                    } else if (bit == 4) {
                        indexes = x;
                    } else {
                        dataBytes = x;
                    }
                } else {
                    p.skipChildren();
                }
            }
            int end = (int) p.currentTokenLocation().getByteOffset() + 1;
            if (name == null || seen != 15) {
                // the entry as DataFile reads it says what is missing
                DataFile.fromJson(LayerMetadata.json().readValue(bytes, start, end - start, ENTRY), null);
                throw new SfcLayerException.CorruptLayer("manifest " + source + ": files entry " + out.count
                    + " lacks its name, lastIndex, records, indexes or dataBytes");
            }
            out.add(start, end, DataFileName.parse(name).firstIndex, last);
            out.records += records;
            out.indexes += indexes;
            out.dataBytes += dataBytes;
        }
        if (t != JsonToken.END_ARRAY) {
            throw new SfcLayerException.CorruptLayer("manifest " + source + ": its files are not a list of objects");
        }
        return out;
    }

    /**
     * A leaf's files, each parsed whole (statistics and all, as {@link DataFile#fromJson}) when first
     * asked for, from the bytes of its entry in the checked manifest. Parsed files are kept; the
     * bytes are kept until every file has been parsed.
     */
    private static final class LazyFiles extends AbstractList<DataFile> implements RandomAccess {
        private byte[] bytes;
        private final int[] starts;
        private final int[] ends;
        private final DataFile[] parsed;
        private int left;
        private final long[] firsts;
        private final long[] lasts;
        private final String source;

        LazyFiles(byte[] bytes, int[] starts, int[] ends, long[] firsts, long[] lasts, String source) {
            this.bytes = bytes;
            this.starts = starts;
            this.ends = ends;
            this.firsts = firsts;
            this.lasts = lasts;
            this.parsed = new DataFile[starts.length];
            this.left = starts.length;
            this.source = source;
        }

        @Override
        public int size() {
            return parsed.length;
        }

        synchronized int parsed() {
            return parsed.length - left;
        }

        @Override
        public synchronized DataFile get(int i) {
            DataFile f = parsed[i];
            if (f != null) {
                return f;
            }
            try {
                f = DataFile.fromJson(LayerMetadata.json().readValue(bytes, starts[i], ends[i] - starts[i], ENTRY), null);
            } catch (IOException e) {
                throw new SfcLayerException.CorruptLayer("manifest " + source + " is damaged: files entry " + i + ": "
                    + e.getMessage(), e);
            }
            if (f.firstIndex != firsts[i] || f.lastIndex != lasts[i]) { // the first pass read these bytes otherwise
                throw new SfcLayerException.CorruptLayer("manifest " + source + ": files entry " + i + " spans ["
                    + f.firstIndex + ", " + f.lastIndex + "] read whole but [" + firsts[i] + ", " + lasts[i] + "] at first");
            }
            parsed[i] = f;
            if (--left == 0) {
                bytes = null;
            }
            return f;
        }
    }

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

        public Store(Configuration conf, Path layer) throws IOException {
            this.fs = layer.getFileSystem(conf);
            this.dir = new Path(new Path(fs.makeQualified(layer), VersionLog.LOG_DIR), DIR);
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
                try (FSDataInputStream in = ObjectStores.open(fs, new Path(dir, ref.path), ObjectStores.Access.WHOLE_FILE,
                        -1)) {
                    return in.readAllBytes();
                }
            } catch (FileNotFoundException | java.nio.file.NoSuchFileException e) {
                throw new SfcLayerException.CorruptLayer("manifest " + source + " is missing (the version lists it for"
                    + " SFC indexes " + ref.firstIndex + ".." + ref.lastIndex + ")");
            } catch (org.apache.hadoop.fs.ChecksumException e) {
                throw new SfcLayerException.CorruptLayer("manifest " + source + " is damaged: " + e.getMessage(), e);
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
                } catch (org.apache.hadoop.fs.FileAlreadyExistsException
                         | java.nio.file.FileAlreadyExistsException e) {
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
         * Creates {@code p} holding {@code bytes}, failing if it exists. On local files directly: Hadoop's
         * local filesystem forks a {@code chmod} for each file and its {@code .crc} sidecar without its
         * native library (a manifest checks itself, section 10), which made writing a tree of thousands of
         * manifests take seconds.
         */
        private void create(Path p, byte[] bytes) throws IOException {
            if (fs instanceof org.apache.hadoop.fs.LocalFileSystem || fs instanceof org.apache.hadoop.fs.RawLocalFileSystem) {
                java.nio.file.Path local = java.nio.file.Paths.get(p.toUri().getPath());
                java.nio.file.Files.createDirectories(local.getParent());
                java.nio.file.Files.write(local, bytes, java.nio.file.StandardOpenOption.CREATE_NEW,
                    java.nio.file.StandardOpenOption.WRITE);
                return;
            }
            try (FSDataOutputStream out = fs.create(p, false)) {
                out.write(bytes);
            }
        }

        /** Bytes of manifests this store wrote. */
        public long written;
    }
}
