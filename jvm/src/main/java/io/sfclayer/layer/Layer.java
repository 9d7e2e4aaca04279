package io.sfclayer.layer;

import io.sfclayer.SfcLayerException;
import io.sfclayer.commit.VersionLog;
import io.sfclayer.format.DataFile;
import io.sfclayer.format.DataFileListing;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.format.Manifest;
import io.sfclayer.format.ManifestFiles;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;

import java.io.IOException;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * One committed version of a layer, pinned: its metadata and its data files. Everything read
 * through one Layer comes from that version even if the layer changes. Format version 2 documents
 * list their files, so opening one lists no directory; a version 1 document's data directory is
 * listed once, on first use, and checked against the document.
 */
public final class Layer {
    private final Path path;
    private final LayerMetadata metadata;
    private final Configuration conf;
    private DataFileListing listing;
    private java.util.Map<String, io.sfclayer.format.DataFileEntry> entries;

    private Layer(Configuration conf, Path path, LayerMetadata metadata) {
        this.conf = conf;
        this.path = path;
        this.metadata = metadata;
    }

    /** Opens the newest version of the layer at {@code path}. */
    public static Layer open(Configuration conf, String path) throws IOException {
        VersionLog log = new VersionLog(conf, new Path(path));
        return new Layer(conf, log.layerPath(), log.current());
    }

    /**
     * Opens a version: {@code version} when it is ≥ 0, else the newest committed at or before
     * {@code asOfMillis} when that is ≥ 0, else the newest.
     */
    public static Layer open(Configuration conf, String path, long version, long asOfMillis) throws IOException {
        VersionLog log = new VersionLog(conf, new Path(path));
        LayerMetadata md;
        if (version >= 0) {
            md = log.readExisting(version);
        } else if (asOfMillis >= 0) {
            md = log.asOf(asOfMillis);
        } else {
            md = log.current();
        }
        return new Layer(conf, log.layerPath(), md);
    }

    /** What the version document says about a data file (checked by readers). */
    public synchronized io.sfclayer.format.DataFileEntry entry(String name) {
        if (metadata.manifests != null) {
            DataFile f = io.sfclayer.format.DataFileName.looksLikeDataFile(name)
                ? manifests().starting(io.sfclayer.format.DataFileName.parse(name).firstIndex) : null;
            return f != null && f.name.equals(name)
                ? io.sfclayer.format.DataFileEntry.of(f, metadata.formatVersion, path.toString(), metadata.version)
                : io.sfclayer.format.DataFileEntry.unknown(name, path.toString());
        }
        if (entries == null) {
            entries = metadata.fileEntries(path.toString());
        }
        io.sfclayer.format.DataFileEntry e = entries.get(name);
        return e != null ? e : io.sfclayer.format.DataFileEntry.unknown(name, path.toString());
    }

    public Path path() {
        return path;
    }

    private Deltas deltas;

    /** The version's delta files (format 7; empty for other versions): what readers merge with the base files. */
    public synchronized Deltas deltas() {
        if (deltas == null) {
            deltas = Deltas.of(path, metadata);
        }
        return deltas;
    }

    public LayerMetadata metadata() {
        return metadata;
    }

    public Configuration conf() {
        return conf;
    }

    /** The version's data files, sorted by first index. */
    public List<DataFile> files() throws IOException {
        if (metadata.manifests != null) {
            synchronized (this) {
                if (allFiles == null) {
                    allFiles = java.util.Collections.unmodifiableList(manifests().all());
                }
                return allFiles;
            }
        }
        listing();
        if (metadata.files.size() != metadata.fileCount) {
            throw new SfcLayerException.CorruptLayer("layer " + path + " version " + metadata.version
                + " (format version 1) has no statistics for each of its " + metadata.fileCount
                + " files; rewrite it with mode overwrite before updating it");
        }
        return metadata.files;
    }

    private ManifestFiles manifests;
    /** Format 6: every file, once asked for (updates and verify); look-ups and plans never ask. */
    private List<DataFile> allFiles;

    /** Format 6: the version's files through its manifests, read on demand; null for a version listing them inline. */
    public synchronized ManifestFiles manifests() {
        if (metadata.manifests == null) {
            return null;
        }
        if (manifests == null) {
            try {
                manifests = new ManifestFiles(new Manifest.Store(conf, path, metadata.version), metadata.manifests);
            } catch (IOException e) {
                throw new java.io.UncheckedIOException("cannot open the manifests of layer " + path, e);
            }
        }
        return manifests;
    }

    /** The document's entry of the file whose first index is {@code firstIndex}, or null (format 1, or none). */
    public DataFile fileStarting(long firstIndex) throws IOException {
        if (metadata.manifests != null) {
            return manifests().starting(firstIndex);
        }
        List<DataFile> files = metadata.files;
        int lo = 0, hi = files.size() - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            long v = files.get(mid).firstIndex;
            if (v < firstIndex) {
                lo = mid + 1;
            } else if (v > firstIndex) {
                hi = mid - 1;
            } else {
                return files.get(mid);
            }
        }
        return null;
    }

    /**
     * The version document as JSON text, with the files of a format 6 version listed in {@code files}
     * as well (read from every manifest): what tools that read documents whole (Python's) are given.
     */
    public String documentJson() throws IOException {
        return documentJson(-1);
    }

    /**
     * The version document as JSON text with at most {@code maxFiles} of its files in {@code files}
     * (the first in index order; all when negative; none, and no {@code files} field, when 0). Format
     * 6 reads only the manifests on the way to them, so a summary of a layer of millions of files
     * (its totals, its {@code manifests} references) reads the document alone.
     */
    public String documentJson(long maxFiles) throws IOException {
        String text = new String(metadata.toJsonBytes(), java.nio.charset.StandardCharsets.UTF_8);
        if (metadata.manifests == null && (maxFiles < 0 || metadata.files.size() <= maxFiles)) {
            return text;
        }
        com.fasterxml.jackson.databind.ObjectMapper json = new com.fasterxml.jackson.databind.ObjectMapper();
        @SuppressWarnings("unchecked")
        java.util.Map<String, Object> m = json.readValue(text, java.util.LinkedHashMap.class);
        List<DataFile> listed;
        if (metadata.manifests == null) {
            listed = new java.util.ArrayList<>(metadata.files);
            listed.sort(null);
            listed = listed.subList(0, (int) maxFiles);
        } else {
            listed = maxFiles < 0 ? manifests().all() : manifests().first((int) Math.min(Integer.MAX_VALUE, maxFiles));
        }
        if (listed.isEmpty() && maxFiles == 0) {
            m.remove("files");
        } else {
            List<Object> files = new java.util.ArrayList<>();
            for (DataFile f : listed) {
                files.add(f.toJson());
            }
            m.put("files", files);
        }
        return json.writeValueAsString(m);
    }

    /**
     * Listings of format 2+ documents read by {@link VersionLog} (building one parses a path per file, so a
     * layer opened again in this JVM builds none). Owned by this class; keyed by content, the layer's path
     * and its document's digest ({@link LayerMetadata#digest}); bounded to the 64 used last.
     */
    private static final java.util.Map<String, DataFileListing> LISTINGS = java.util.Collections.synchronizedMap(
        new java.util.LinkedHashMap<String, DataFileListing>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(java.util.Map.Entry<String, DataFileListing> eldest) {
                return size() > 64;
            }
        });

    /** The version's data files as a listing: from the document, or (version 1) the directory. */
    public synchronized DataFileListing listing() throws IOException {
        if (listing == null) {
            String source = "layer " + path + " version " + metadata.version;
            if (metadata.manifests != null) {
                listing = DataFileListing.of(path, manifests());
            } else if (metadata.formatVersion >= 2) {
                String key = metadata.digest == null ? null : path + "#" + metadata.digest;
                listing = key == null ? null : LISTINGS.get(key);
                if (listing == null) {
                    listing = DataFileListing.of(path, metadata.files, source);
                    if (key != null) {
                        LISTINGS.put(key, listing);
                    }
                }
            } else {
                Path dataDir = new Path(path, metadata.dataDir);
                DataFileListing listed = DataFileListing.list(dataDir.getFileSystem(conf), dataDir, metadata.fileCount);
                Set<String> named = new HashSet<>();
                for (DataFile f : metadata.files) {
                    named.add(f.name);
                }
                for (int i = 0; i < listed.size() && !named.isEmpty(); i++) {
                    if (!named.contains(listed.name(i))) {
                        throw new SfcLayerException.CorruptLayer(source + ": data file " + listed.path(i)
                            + " is not among the files its metadata lists");
                    }
                }
                listing = listed;
            }
        }
        return listing;
    }
}
