package io.sfclayer.format;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.sfclayer.SfcLayerException;
import io.sfclayer.curve.KeyIndex;

import java.io.IOException;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A layer version's metadata: the JSON document {@code _sfclayer/v<version>.json}, written once by
 * the commit that publishes the version (docs/FORMAT.md, "Metadata"), up to format 7. It says what
 * operation made the version and lists the version's base data files ({@link DataFile}): inline in
 * {@code files}, or (format 6: more than {@link ManifestTree#DEFAULT_INLINE_FILES} files by default) through a tree of
 * manifests, of which the document holds the top level ({@link ManifestRef}, read through
 * {@link ManifestFiles}); and, in format 7 only, the delta files appended since the last compaction
 * ({@link DeltaFile}, in {@code deltas}, which readers merge over the base files). The CRC trailer
 * (format 3 on, {@link #CHECKSUM}) closes it; the format version a document says follows from what it
 * holds ({@link #writtenFormatVersion()}). Formats 1 (one data directory, listed) to 6 are still read.
 * Over 500 lines: one document, its every field, read and written here for all seven format versions.
 */
public final class LayerMetadata implements Serializable {
    private static final long serialVersionUID = 1L;

    public static final String FORMAT = "sfclayer";
    /**
     * The on-disk format version this code writes, unless the layer's compression needs a higher one
     * ({@link ValueCompression#formatVersion()}: zstd-raster, format 4; see {@link #writtenFormatVersion()}).
     */
    public static final int FORMAT_VERSION = 3;
    /** Format 7 (section 11): a version that lists delta files; it says 7 only while it has some. */
    public static final int DELTA_FORMAT_VERSION = 7;
    /** The highest format version this code reads. */
    public static final int MAX_FORMAT_VERSION = DELTA_FORMAT_VERSION;
    /** Per-file field (format 3): the CRC32C of the file's {@code index}. */
    public static final String FILE_INDEX_CRC = "indexCrc32c";
    /** The document's last field (format 3): the CRC32C of the document with its value zeroed. */
    static final String CHECKSUM = "checksum";
    private static final String CHECKSUM_ZERO = "00000000";
    private static final java.util.regex.Pattern CHECKSUM_TRAILER =
        java.util.regex.Pattern.compile("\"" + CHECKSUM + "\"\\s*:\\s*\"([0-9a-f]{8})\"\\s*}\\s*$");
    /** Top-level fields this class reads; any other field is kept as it is when a version is rebuilt. */
    private static final Set<String> KNOWN = Set.of("format", "formatVersion", "version", "writeId", "createdAt",
        "dataDir", "keyIndex", "keyColumns", "compression", "blockSize", "indexInterval", "extent", "crs",
        "recordCount", "indexCount", "fileCount", "dataBytes", "valueSchema", "tileSchema", "files", "deltas", "operation",
        "checksum", "manifests", "transactions");

    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    /** Grid georeferencing: the map extent of the whole key bounds, and its CRS. */
    public static final class Extent implements Serializable {
        private static final long serialVersionUID = 1L;
        public final double xmin, ymin, xmax, ymax;

        public Extent(double xmin, double ymin, double xmax, double ymax) {
            if (!(xmin < xmax && ymin < ymax) || Double.isInfinite(xmax - xmin) || Double.isInfinite(ymax - ymin)) {
                throw new SfcLayerException.InvalidArgument("extent must have xmin < xmax and ymin < ymax, got "
                    + xmin + "," + ymin + "," + xmax + "," + ymax);
            }
            this.xmin = xmin;
            this.ymin = ymin;
            this.xmax = xmax;
            this.ymax = ymax;
        }

        Map<String, Object> toJson() {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("xmin", xmin);
            m.put("ymin", ymin);
            m.put("xmax", xmax);
            m.put("ymax", ymax);
            return m;
        }
    }

    public int formatVersion = FORMAT_VERSION;
    public long version;
    /**
     * The SHA-256 of the document bytes this was read from, set by {@code commit.VersionLog#read} (null
     * for a document built or copied in memory, which may change): the content key of what the JVM caches
     * about the document (the listing of its files, {@code io.sfclayer.layer.Layer#listing}).
     */
    public transient String digest;
    public String writeId;
    public String createdAt;
    public String dataDir;
    public KeyIndex keyIndex;
    /** The Spark schema of the value columns, as Spark's JSON. */
    public String valueSchemaJson;
    /** The Avro schema of one tile record (docs/FORMAT.md, "Values"). */
    public String tileSchemaJson;
    public String compression = "none";
    public long blockSize;
    public int indexInterval;
    public Extent extent;
    public String crs;
    public long recordCount;
    public long indexCount;
    public long fileCount;
    public long dataBytes;
    /**
     * The version's data files, sorted by first index. Format version 2: the authoritative list (no
     * directory is listed). Version 1: per-file statistics of the files in {@link #dataDir}.
     */
    public List<DataFile> files = new ArrayList<>();
    /**
     * Format 6: the top level of the version's manifest tree (docs/FORMAT.md, section 10), sorted by
     * span; then {@link #files} is empty and the files are read through {@link ManifestFiles}. Null
     * when the document lists its files inline.
     */
    public List<ManifestRef> manifests;
    /**
     * Format 7: the version's delta files in the order they were added (later entries win at a key),
     * outside the base files ({@link #files} or {@link #manifests}) and their totals. Empty: none.
     */
    public List<DeltaFile> deltas = new ArrayList<>();
    /**
     * Operation field {@code "delta": true} (section 11): an append that wrote delta files, not base files.
     * Read back with the document, not carried into a {@link #copy()} (a rebuilt version is another operation).
     */
    public boolean deltaAppend;
    /** Operation field {@code "auto": true}: a compaction an append started ({@code compactAfterDeltas}). */
    public boolean autoCompact;
    /**
     * Ids among {@link #removedFiles} that are deltas a folding update folded (not base files: a version
     * with manifests removes only the others from them). Not in the document; set by the writer.
     */
    public transient java.util.Set<String> foldedDeltas;
    /** What made this version: write (a first write), overwrite, append, delete, compact. */
    public String operation = "write";
    /** The version this one was based on (-1: none, as for a first write or a version 1 document). */
    public long readVersion = -1;
    /** Files of the read version this one no longer references (by {@link DataFile#id()}). */
    public List<String> removedFiles = new ArrayList<>();
    /** Index spans [lo, hi] this version changed: its new files' and its removed files' spans. */
    public List<long[]> changedRanges = new ArrayList<>();
    /** Counts for history: files and records added and removed, bytes written, tiles written/deleted. */
    public Map<String, Object> metrics = new LinkedHashMap<>();
    /**
     * The newest batch committed by each application that writes idempotently (streaming queries,
     * {@code txnAppId}), carried into every version ({@link Transactions}); empty for other layers.
     */
    public java.util.SortedMap<String, Long> transactions = new java.util.TreeMap<>();
    /** This version's own batch ({@code operation.transaction}); null for writes without one. */
    public Transactions.Txn txn;
    /** Fields this class does not know (e.g. {@code raster}), kept verbatim. */
    public Map<String, Object> extras = new LinkedHashMap<>();

    /** What the document says about each data file, for readers to check the files against. */
    public Map<String, DataFileEntry> fileEntries(String layer) {
        Map<String, DataFileEntry> out = new LinkedHashMap<>();
        for (DataFile f : files) {
            out.put(f.name, DataFileEntry.of(f, formatVersion, layer, version));
        }
        return out;
    }

    public boolean isSpaceTime() {
        return keyIndex.isSpaceTime();
    }

    /**
     * The version a document says: {@code formatVersion}, raised to what the compression (4 for
     * zstd-raster) and the raster mask column (5) need, so a reader that does not know them refuses
     * the layer by its version (formats 4 and 5 frame records as format 3 does: only the document says so).
     */
    public int writtenFormatVersion() {
        int need = compression == null ? 1 : ValueCompression.parse(compression).formatVersion();
        if (keyIndex != null && RasterLayout.hasMask(valueSchemaJson, keyIndex.isSpaceTime())) {
            need = Math.max(need, RasterLayout.MASK_FORMAT_VERSION); // raster tiles' mask column
        }
        if (manifests != null) {
            need = Math.max(need, ManifestRef.MANIFEST_FORMAT_VERSION);
        }
        if (!deltas.isEmpty()) {
            need = Math.max(need, DELTA_FORMAT_VERSION);
        }
        if (need > formatVersion && !RecordFrame.checked(formatVersion)) {
            throw new IllegalStateException("format " + need + " content (compression " + compression
                + " or raster masks) in a format " + formatVersion + " layer");
        }
        return Math.max(formatVersion, need);
    }

    public byte[] toJsonBytes() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("format", FORMAT);
        m.put("formatVersion", writtenFormatVersion());
        m.put("version", version);
        m.put("writeId", writeId);
        m.put("createdAt", createdAt);
        m.put("dataDir", dataDir);
        m.put("keyIndex", keyIndex.toJson());
        m.put("keyColumns", keyIndex.isSpaceTime() ? List.of("col", "row", "time") : List.of("col", "row"));
        m.put("compression", compression);
        m.put("blockSize", blockSize);
        m.put("indexInterval", indexInterval);
        m.put("extent", extent == null ? null : extent.toJson());
        m.put("crs", crs);
        m.put("recordCount", recordCount);
        m.put("indexCount", indexCount);
        m.put("fileCount", fileCount);
        m.put("dataBytes", dataBytes);
        try {
            m.put("valueSchema", JSON.readValue(valueSchemaJson, Object.class));
            m.put("tileSchema", JSON.readValue(tileSchemaJson, Object.class));
            if (manifests != null) {
                List<Map<String, Object>> ml = new ArrayList<>();
                for (ManifestRef r : manifests) {
                    ml.add(r.toJson());
                }
                m.put("manifests", ml);
            } else {
                List<Map<String, Object>> fl = new ArrayList<>();
                for (DataFile f : files) {
                    fl.add(f.toJson());
                }
                m.put("files", fl);
            }
            if (!deltas.isEmpty()) {
                List<Map<String, Object>> dl = new ArrayList<>();
                for (DeltaFile d : deltas) {
                    dl.add(d.toJson(version));
                }
                m.put("deltas", dl);
            }
            Map<String, Object> op = new LinkedHashMap<>();
            op.put("name", operation);
            op.put("readVersion", readVersion < 0 ? null : readVersion);
            op.put("removedFiles", removedFiles);
            op.put("changedRanges", changedRanges);
            op.put("metrics", metrics);
            if (deltaAppend) {
                op.put("delta", true);
            }
            if (autoCompact) {
                op.put("auto", true);
            }
            if (txn != null) {
                Map<String, Object> t = new LinkedHashMap<>();
                t.put("appId", txn.appId);
                t.put("txnVersion", txn.version);
                op.put("transaction", t);
            }
            m.put("operation", op);
            if (!transactions.isEmpty()) {
                m.put("transactions", transactions);
            }
            m.putAll(extras);
            m.remove(CHECKSUM);
            if (!RecordFrame.checked(formatVersion)) {
                return JSON.writeValueAsBytes(m);
            }
            return sealed(m);
        } catch (IOException e) {
            throw new IllegalStateException("cannot serialise layer metadata", e);
        }
    }

    /**
     * {@code m} as JSON whose last member is {@code "checksum"}: the CRC32C of the bytes with its 8 hex
     * digits zeroed (section 9); version documents and manifests alike.
     */
    static byte[] sealed(Map<String, Object> m) throws IOException {
        return sealed(m, JSON);
    }

    /** Manifests are written compact (no indentation): a third smaller, and nobody reads them by eye. */
    static byte[] sealedCompact(Map<String, Object> m) throws IOException {
        return sealed(m, COMPACT);
    }

    private static final ObjectMapper COMPACT = new ObjectMapper();

    private static byte[] sealed(Map<String, Object> m, ObjectMapper mapper) throws IOException {
        m.remove(CHECKSUM);
        m.put(CHECKSUM, CHECKSUM_ZERO);
        byte[] bytes = mapper.writeValueAsBytes(m);
        String text = new String(bytes, StandardCharsets.UTF_8);
        java.util.regex.Matcher t = CHECKSUM_TRAILER.matcher(text);
        if (!t.find()) {
            throw new IllegalStateException("no checksum trailer in " + text);
        }
        byte[] hex = RecordFrame.hex((int) crc32c(bytes)).getBytes(StandardCharsets.US_ASCII);
        int at = text.substring(0, t.start(1)).getBytes(StandardCharsets.UTF_8).length;
        System.arraycopy(hex, 0, bytes, at, hex.length);
        return bytes;
    }

    /** The checksum trailer's 8 hex digits of sealed bytes ({@link #sealed}), or null when there is none. */
    static String trailer(byte[] bytes) {
        int at = trailerAt(bytes);
        return at < 0 ? null : new String(bytes, at, 8, StandardCharsets.US_ASCII);
    }

    private static final byte[] CHECKSUM_FIELD = ("\"" + CHECKSUM + "\"")
        .getBytes(java.nio.charset.StandardCharsets.US_ASCII);

    /**
     * Where the 8 hex digits of the trailer start, else -1: {@link #CHECKSUM_TRAILER} ({@code "checksum" :
     * "<8 hex>" }} with any white space around the separators, at the end), matched on the bytes from
     * their end, as every document and manifest read runs it.
     */
    static int trailerAt(byte[] b) {
        int i = skipSpaceBack(b, b.length - 1);
        if (i < 0 || b[i] != '}') {
            return -1;
        }
        i = skipSpaceBack(b, i - 1);
        if (i < 9 || b[i] != '"') {
            return -1;
        }
        int digits = i - 8;
        for (int k = digits; k < i; k++) {
            if (!((b[k] >= '0' && b[k] <= '9') || (b[k] >= 'a' && b[k] <= 'f'))) {
                return -1;
            }
        }
        i = digits - 1;
        if (b[i] != '"') {
            return -1;
        }
        i = skipSpaceBack(b, i - 1);
        if (i < 0 || b[i] != ':') {
            return -1;
        }
        i = skipSpaceBack(b, i - 1);
        int start = i - CHECKSUM_FIELD.length + 1;
        if (start < 0) {
            return -1;
        }
        for (int k = 0; k < CHECKSUM_FIELD.length; k++) {
            if (b[start + k] != CHECKSUM_FIELD[k]) {
                return -1;
            }
        }
        return digits;
    }

    /** The last position at or before {@code i} that is not white space (as a regex's \s), or -1. */
    private static int skipSpaceBack(byte[] b, int i) {
        while (i >= 0 && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == 0x0B || b[i] == '\f' || b[i] == '\r')) {
            i--;
        }
        return i;
    }

    static ObjectMapper json() {
        return JSON;
    }

    private static long crc32c(byte[] bytes) {
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        crc.update(bytes, 0, bytes.length);
        return crc.getValue();
    }

    /**
     * Checks the checksum trailer of a document: null when it holds (or the document has none), else
     * what is wrong. The CRC32C covers the document with the trailer's 8 hex digits zeroed.
     */
    static String checkTrailer(byte[] bytes) {
        int at = trailerAt(bytes);
        if (at < 0) {
            String text = new String(bytes, StandardCharsets.UTF_8);
            return text.contains("\"" + CHECKSUM + "\"") || text.matches("(?s).*\"formatVersion\" : [3-9]\\b.*")
                ? "its checksum trailer is damaged or missing (truncated?)" : null;
        }
        String said = new String(bytes, at, 8, StandardCharsets.US_ASCII);
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        crc.update(bytes, 0, at);
        crc.update(CHECKSUM_ZERO.getBytes(StandardCharsets.US_ASCII), 0, 8);
        crc.update(bytes, at + 8, bytes.length - at - 8);
        String actual = RecordFrame.hex((int) crc.getValue());
        return actual.equals(said) ? null : "checksum mismatch (CRC32C " + actual + ", the document says " + said + ")";
    }

    /** Parses a metadata document; {@code source} names it in errors. */
    public static LayerMetadata fromJsonBytes(byte[] bytes, String source) {
        Map<String, Object> m;
        String damage = checkTrailer(bytes);
        try {
            m = JSON.readValue(bytes, new TypeReference<Map<String, Object>>() { });
        } catch (IOException e) {
            throw new SfcLayerException.CorruptLayer("bad layer metadata in " + source + ": the version document is"
                + " damaged or truncated: " + (damage != null ? damage + "; " : "") + "not JSON (" + e.getMessage() + ")");
        }
        // A newer format may check itself differently: refuse it by name before judging its checksum.
        Object fv = m == null ? null : m.get("formatVersion");
        if (damage != null && !(fv instanceof Number && ((Number) fv).intValue() > MAX_FORMAT_VERSION)) {
            throw new SfcLayerException.CorruptLayer("version document " + source + " is damaged: " + damage);
        }
        if (m == null || !FORMAT.equals(m.get("format"))) {
            throw new SfcLayerException.CorruptLayer("not sfclayer metadata: " + source + " (format is not \"sfclayer\")");
        }
        try {
            LayerMetadata md = new LayerMetadata();
            md.formatVersion = num(m, "formatVersion").intValue();
            if (md.formatVersion > MAX_FORMAT_VERSION || md.formatVersion < 1) {
                throw new SfcLayerException.UnsupportedFormat("layer version document " + source + " has format version "
                    + md.formatVersion + "; this sfclayer reads format versions 1.." + MAX_FORMAT_VERSION
                    + " (upgrade sfclayer to read it)");
            }
            md.version = num(m, "version").longValue();
            md.writeId = (String) m.get("writeId");
            md.createdAt = (String) m.get("createdAt");
            md.dataDir = str(m, "dataDir");
            @SuppressWarnings("unchecked")
            Map<String, Object> ki = (Map<String, Object>) req(m, "keyIndex");
            md.keyIndex = KeyIndex.fromJson(ki);
            md.valueSchemaJson = JSON.writeValueAsString(req(m, "valueSchema"));
            md.tileSchemaJson = JSON.writeValueAsString(req(m, "tileSchema"));
            md.compression = str(m, "compression");
            md.blockSize = num(m, "blockSize").longValue();
            md.indexInterval = num(m, "indexInterval").intValue();
            @SuppressWarnings("unchecked")
            Map<String, Object> ext = (Map<String, Object>) m.get("extent");
            if (ext != null) {
                md.extent = new Extent(num(ext, "xmin").doubleValue(), num(ext, "ymin").doubleValue(),
                    num(ext, "xmax").doubleValue(), num(ext, "ymax").doubleValue());
            }
            md.crs = (String) m.get("crs");
            md.recordCount = num(m, "recordCount").longValue();
            md.indexCount = num(m, "indexCount").longValue();
            md.fileCount = num(m, "fileCount").longValue();
            md.dataBytes = num(m, "dataBytes").longValue();
            @SuppressWarnings("unchecked")
            List<Map<String, Object>> files = (List<Map<String, Object>>) m.get("files");
            @SuppressWarnings("unchecked")
            List<Map<String, Object>> refs = (List<Map<String, Object>>) m.get("manifests");
            if (refs != null) {
                if (md.formatVersion < ManifestRef.MANIFEST_FORMAT_VERSION || files != null) {
                    throw new SfcLayerException.CorruptLayer("it lists manifests but says format version "
                        + md.formatVersion + (files != null ? " and lists files too" : ""));
                }
                md.manifests = new ArrayList<>();
                long count = 0;
                for (Map<String, Object> r : refs) {
                    ManifestRef ref = ManifestRef.fromJson(r, source);
                    if (!md.manifests.isEmpty() && (ref.firstIndex <= md.manifests.get(md.manifests.size() - 1).lastIndex
                            || ref.level != md.manifests.get(0).level)) {
                        throw new SfcLayerException.CorruptLayer("its manifests " + md.manifests.get(md.manifests.size() - 1)
                            + " and " + ref + " are not sorted, disjoint and of one level");
                    }
                    md.manifests.add(ref);
                    count += ref.fileCount;
                }
                if (count != md.fileCount) {
                    throw new SfcLayerException.CorruptLayer("its manifests hold " + count + " files but fileCount is "
                        + md.fileCount);
                }
            } else if (md.formatVersion == ManifestRef.MANIFEST_FORMAT_VERSION) {
                // format 6 says it lists manifests; format 7 (deltas) lists either, as the version it updates did
                throw new SfcLayerException.CorruptLayer("field 'manifests' is missing");
            }
            if (files == null && md.formatVersion >= 2 && md.manifests == null) {
                throw new SfcLayerException.CorruptLayer("field 'files' is missing");
            }
            if (files != null) {
                for (Map<String, Object> f : files) {
                    md.files.add(DataFile.fromJson(f, md.dataDir));
                }
            }
            md.files.sort(null);
            if (md.formatVersion >= 2 && md.manifests == null && md.files.size() != md.fileCount) {
                throw new SfcLayerException.CorruptLayer("it lists " + md.files.size() + " files but fileCount is "
                    + md.fileCount);
            }
            @SuppressWarnings("unchecked")
            List<Map<String, Object>> deltas = (List<Map<String, Object>>) m.get("deltas");
            if (deltas != null && !deltas.isEmpty()) {
                if (md.formatVersion < DELTA_FORMAT_VERSION) {
                    throw new SfcLayerException.CorruptLayer("it lists deltas but says format version " + md.formatVersion);
                }
                for (Map<String, Object> d : deltas) {
                    md.deltas.add(DeltaFile.fromJson(d, source));
                }
                String bad = DeltaFile.checkOrder(md.deltas, md.version);
                if (bad != null) {
                    throw new SfcLayerException.CorruptLayer(bad);
                }
            }
            @SuppressWarnings("unchecked")
            Map<String, Object> op = (Map<String, Object>) m.get("operation");
            if (op != null) {
                md.operation = String.valueOf(op.getOrDefault("name", "write"));
                Object rv = op.get("readVersion");
                md.readVersion = rv instanceof Number ? ((Number) rv).longValue() : -1;
                md.deltaAppend = Boolean.TRUE.equals(op.get("delta"));
                md.autoCompact = Boolean.TRUE.equals(op.get("auto"));
                @SuppressWarnings("unchecked")
                List<Object> removed = (List<Object>) op.getOrDefault("removedFiles", List.of());
                for (Object r : removed) {
                    md.removedFiles.add(String.valueOf(r));
                }
                @SuppressWarnings("unchecked")
                List<List<Number>> ranges = (List<List<Number>>) op.getOrDefault("changedRanges", List.of());
                for (List<Number> r : ranges) {
                    md.changedRanges.add(new long[] {r.get(0).longValue(), r.get(1).longValue()});
                }
                @SuppressWarnings("unchecked")
                Map<String, Object> metrics = (Map<String, Object>) op.get("metrics");
                if (metrics != null) {
                    md.metrics.putAll(metrics);
                }
                @SuppressWarnings("unchecked")
                Map<String, Object> t = (Map<String, Object>) op.get("transaction");
                if (t != null) {
                    md.txn = new Transactions.Txn(String.valueOf(t.get("appId")), ((Number) t.get("txnVersion")).longValue());
                }
            }
            @SuppressWarnings("unchecked")
            Map<String, Number> txns = (Map<String, Number>) m.getOrDefault("transactions", Map.of());
            for (Map.Entry<String, Number> e : txns.entrySet()) {
                md.transactions.put(e.getKey(), e.getValue().longValue());
            }
            for (Map.Entry<String, Object> e : m.entrySet()) {
                if (!KNOWN.contains(e.getKey())) {
                    md.extras.put(e.getKey(), e.getValue());
                }
            }
            if (RecordFrame.checked(md.formatVersion) && !m.containsKey(CHECKSUM)) {
                throw new SfcLayerException.CorruptLayer("version document " + source
                    + " is damaged: format version " + md.formatVersion + " but no checksum");
            }
            return md;
        } catch (SfcLayerException.CorruptLayer e) {
            throw e;
        } catch (SfcLayerException | ClassCastException | IOException e) {
            throw new SfcLayerException.CorruptLayer("bad layer metadata in " + source + ": " + e.getMessage(), e);
        }
    }

    /** A deep copy (through the JSON form), to rebuild a version from a previous one. */
    public LayerMetadata copy() {
        LayerMetadata c = fromJsonBytes(toJsonBytes(), "copy of version " + version);
        c.txn = null; // a rebuilt version is another operation: its batch, if any, is its writer's to set
        c.deltaAppend = false; // and so are its history flags
        c.autoCompact = false;
        return c;
    }

    /** Sets the manifests (format 6) and the totals from them; the files are then listed by the manifests only. */
    public void setManifests(List<ManifestRef> refs) {
        manifests = new ArrayList<>(refs);
        files = new ArrayList<>();
        recordCount = 0;
        indexCount = 0;
        dataBytes = 0;
        fileCount = 0;
        for (ManifestRef r : manifests) {
            recordCount += r.records;
            indexCount += r.indexes;
            dataBytes += r.dataBytes;
            fileCount += r.fileCount;
        }
    }

    /** Sets the files and recomputes the totals (record, index, file counts and data bytes). */
    public void setFiles(List<DataFile> newFiles) {
        files = new ArrayList<>(newFiles);
        files.sort(null);
        recordCount = 0;
        indexCount = 0;
        dataBytes = 0;
        for (DataFile f : files) {
            recordCount += f.records;
            indexCount += f.indexes;
            dataBytes += f.dataBytes;
        }
        fileCount = files.size();
    }

    private static Object req(Map<String, Object> m, String field) {
        Object v = m.get(field);
        if (v == null) {
            throw new SfcLayerException.CorruptLayer("field '" + field + "' is missing");
        }
        return v;
    }

    private static Number num(Map<String, Object> m, String field) {
        Object v = req(m, field);
        if (!(v instanceof Number)) {
            throw new SfcLayerException.CorruptLayer("field '" + field + "' is not a number: " + v);
        }
        return (Number) v;
    }

    private static String str(Map<String, Object> m, String field) {
        Object v = req(m, field);
        if (!(v instanceof String)) {
            throw new SfcLayerException.CorruptLayer("field '" + field + "' is not a string: " + v);
        }
        return (String) v;
    }
}
