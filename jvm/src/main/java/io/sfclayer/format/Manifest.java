package io.sfclayer.format;

import com.fasterxml.jackson.core.type.TypeReference;
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
    /** Level 0: the data files, sorted by first index; else empty. */
    public final List<DataFile> files;
    /** Level n > 0: the child manifests, sorted by span; else empty. */
    public final List<ManifestRef> children;
    /** First indexes of the entries, for binary search. */
    final long[] firsts;
    /** {@code prefix[i]}: data files under the entries before i. */
    final long[] prefix;

    Manifest(int level, List<DataFile> files, List<ManifestRef> children) {
        this.level = level;
        this.files = Collections.unmodifiableList(files);
        this.children = Collections.unmodifiableList(children);
        int n = level == 0 ? files.size() : children.size();
        firsts = new long[n];
        prefix = new long[n + 1];
        for (int i = 0; i < n; i++) {
            firsts[i] = level == 0 ? files.get(i).firstIndex : children.get(i).firstIndex;
            prefix[i + 1] = prefix[i] + (level == 0 ? 1 : children.get(i).fileCount);
        }
    }

    public int size() {
        return firsts.length;
    }

    /** The entry holding {@code index}: the greatest first index ≤ index; -1 if none. */
    int entryFor(long index) {
        int pos = java.util.Arrays.binarySearch(firsts, index);
        return pos >= 0 ? pos : -pos - 2;
    }

    /** The reference a parent lists for this manifest, once written as {@code path} with {@code checksum}. */
    ManifestRef refAs(String path, String checksum) {
        long records = 0, indexes = 0, bytes = 0;
        long first, last;
        if (level == 0) {
            for (DataFile f : files) {
                records += f.records;
                indexes += f.indexes;
                bytes += f.dataBytes;
            }
            first = files.get(0).firstIndex;
            last = files.get(files.size() - 1).lastIndex;
        } else {
            for (ManifestRef r : children) {
                records += r.records;
                indexes += r.indexes;
                bytes += r.dataBytes;
            }
            first = children.get(0).firstIndex;
            last = children.get(children.size() - 1).lastIndex;
        }
        return new ManifestRef(path, level, first, last, prefix[prefix.length - 1], records, indexes, bytes, checksum);
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
        String damage = LayerMetadata.checkTrailer(bytes);
        if (damage == null && LayerMetadata.trailer(bytes) == null) {
            damage = "it has no checksum trailer (truncated?)";
        }
        if (damage != null) {
            throw new SfcLayerException.CorruptLayer("manifest " + source + " is damaged: " + damage);
        }
        if (!ref.checksum.equals(LayerMetadata.trailer(bytes))) {
            throw new SfcLayerException.CorruptLayer("manifest " + source + " is not the one its version lists: its"
                + " checksum is " + LayerMetadata.trailer(bytes) + ", the reference says " + ref.checksum);
        }
        try {
            Map<String, Object> m = LayerMetadata.json().readValue(bytes, new TypeReference<Map<String, Object>>() { });
            Object fv = m.get("formatVersion");
            if (!FORMAT.equals(m.get("format")) || !(fv instanceof Number)
                    || ((Number) fv).intValue() > LayerMetadata.MAX_FORMAT_VERSION) {
                throw new SfcLayerException.CorruptLayer("manifest " + source + " is not an sfclayer manifest this"
                    + " sfclayer reads (format " + m.get("format") + ", formatVersion " + fv + ")");
            }
            List<DataFile> files = new ArrayList<>();
            List<ManifestRef> children = new ArrayList<>();
            @SuppressWarnings("unchecked")
            List<Map<String, Object>> entries = (List<Map<String, Object>>) m.get(ref.level == 0 ? "files" : "manifests");
            if (entries == null || entries.isEmpty()) {
                throw new SfcLayerException.CorruptLayer("manifest " + source + " lists nothing");
            }
            for (Map<String, Object> e : entries) {
                if (ref.level == 0) {
                    files.add(DataFile.fromJson(e, null));
                } else {
                    children.add(ManifestRef.fromJson(e, "manifest " + source));
                }
            }
            Manifest mf = new Manifest(ref.level, files, children);
            mf.check(source);
            ManifestRef said = mf.refAs(ref.path, ref.checksum);
            if (said.firstIndex != ref.firstIndex || said.lastIndex != ref.lastIndex || said.fileCount != ref.fileCount
                    || said.records != ref.records || said.indexes != ref.indexes || said.dataBytes != ref.dataBytes) {
                throw new SfcLayerException.CorruptLayer("manifest " + source + " holds " + said.fileCount + " files in ["
                    + said.firstIndex + ", " + said.lastIndex + "] but its reference says " + ref.fileCount + " in ["
                    + ref.firstIndex + ", " + ref.lastIndex + "] (or other totals differ)");
            }
            return mf;
        } catch (IOException | ClassCastException e) {
            throw new SfcLayerException.CorruptLayer("manifest " + source + " is damaged: " + e.getMessage(), e);
        }
    }

    /** Entries sorted, spans well formed and disjoint: what a reader's binary search relies on. */
    void check(String source) {
        long prevLast = Long.MIN_VALUE;
        for (int i = 0; i < firsts.length; i++) {
            long first = firsts[i];
            long last = level == 0 ? files.get(i).lastIndex : children.get(i).lastIndex;
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

        public Store(Configuration conf, Path layer) throws IOException {
            this.fs = layer.getFileSystem(conf);
            this.dir = new Path(new Path(fs.makeQualified(layer), VersionLog.LOG_DIR), DIR);
        }

        public Path dir() {
            return dir;
        }

        public Manifest read(ManifestRef ref) throws IOException {
            String key = dir + "/" + ref.path + "#" + ref.checksum + "#" + ref.level;
            Manifest m = CACHE.get(key);
            if (m != null) {
                return m;
            }
            Path p = new Path(dir, ref.path);
            byte[] bytes;
            try (FSDataInputStream in = fs.open(p)) {
                bytes = in.readAllBytes();
            } catch (FileNotFoundException e) {
                throw new SfcLayerException.CorruptLayer("manifest " + p + " is missing (the version lists it for SFC"
                    + " indexes " + ref.firstIndex + ".." + ref.lastIndex + ")");
            } catch (org.apache.hadoop.fs.ChecksumException e) {
                throw new SfcLayerException.CorruptLayer("manifest " + p + " is damaged: " + e.getMessage(), e);
            }
            synchronized (this) {
                reads++;
            }
            READS.incrementAndGet();
            m = fromJsonBytes(bytes, ref, p.toString());
            CACHE.put(key, m);
            return m;
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
