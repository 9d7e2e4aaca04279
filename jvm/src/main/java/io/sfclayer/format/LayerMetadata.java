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

/**
 * A layer version's metadata: the JSON document {@code _sfclayer/v<version>.json}, written once by
 * the commit that publishes the version (docs/FORMAT.md, "Metadata").
 */
public final class LayerMetadata implements Serializable {
    private static final long serialVersionUID = 1L;

    public static final String FORMAT = "sfclayer";
    /** The on-disk format version this code writes and the highest it reads. */
    public static final int FORMAT_VERSION = 3;
    /** Per-file field (format 3): the CRC32C of the file's {@code index}. */
    public static final String FILE_INDEX_CRC = "indexCrc32c";
    /** The document's last field (format 3): the CRC32C of the document with its value zeroed. */
    static final String CHECKSUM = "checksum";
    private static final String CHECKSUM_ZERO = "00000000";
    private static final java.util.regex.Pattern CHECKSUM_TRAILER =
        java.util.regex.Pattern.compile("\"" + CHECKSUM + "\"\\s*:\\s*\"([0-9a-f]{8})\"\\s*}\\s*$");

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
    /** Per-file statistics, informational only: readers prune by file name, never by these. */
    public List<Map<String, Object>> files = new ArrayList<>();
    /** What a repair dropped (the version's history entry), or null. */
    public Object repair;

    /** What the document says about each data file, for readers to check the files against. */
    public Map<String, DataFileEntry> fileEntries(String layer) {
        Map<String, DataFileEntry> out = new LinkedHashMap<>();
        for (Map<String, Object> f : files) {
            DataFileEntry e = DataFileEntry.fromJson(f, formatVersion, layer);
            out.put(e.name, e);
        }
        return out;
    }

    public boolean isSpaceTime() {
        return keyIndex.isSpaceTime();
    }

    public byte[] toJsonBytes() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("format", FORMAT);
        m.put("formatVersion", formatVersion);
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
            m.put("files", files);
            if (repair != null) {
                m.put("repair", repair);
            }
            if (!RecordFrame.checked(formatVersion)) {
                return JSON.writeValueAsBytes(m);
            }
            m.put(CHECKSUM, CHECKSUM_ZERO);
            byte[] bytes = JSON.writeValueAsBytes(m);
            String text = new String(bytes, StandardCharsets.UTF_8);
            java.util.regex.Matcher t = CHECKSUM_TRAILER.matcher(text);
            if (!t.find()) {
                throw new IllegalStateException("no checksum trailer in " + text);
            }
            byte[] hex = RecordFrame.hex((int) crc32c(bytes)).getBytes(StandardCharsets.US_ASCII);
            int at = text.substring(0, t.start(1)).getBytes(StandardCharsets.UTF_8).length;
            System.arraycopy(hex, 0, bytes, at, hex.length);
            return bytes;
        } catch (IOException e) {
            throw new IllegalStateException("cannot serialise layer metadata", e);
        }
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
        String text = new String(bytes, StandardCharsets.UTF_8);
        java.util.regex.Matcher t = CHECKSUM_TRAILER.matcher(text);
        if (!t.find()) {
            return text.contains("\"" + CHECKSUM + "\"") || text.contains("\"formatVersion\" : 3")
                ? "its checksum trailer is damaged or missing (truncated?)" : null;
        }
        byte[] zeroed = bytes.clone();
        int at = text.substring(0, t.start(1)).getBytes(StandardCharsets.UTF_8).length;
        System.arraycopy(CHECKSUM_ZERO.getBytes(StandardCharsets.US_ASCII), 0, zeroed, at, CHECKSUM_ZERO.length());
        String actual = RecordFrame.hex((int) crc32c(zeroed));
        return actual.equals(t.group(1)) ? null
            : "checksum mismatch (CRC32C " + actual + ", the document says " + t.group(1) + ")";
    }

    /** Parses a metadata document; {@code source} names it in errors. */
    public static LayerMetadata fromJsonBytes(byte[] bytes, String source) {
        Map<String, Object> m;
        String damage = checkTrailer(bytes);
        try {
            m = JSON.readValue(bytes, new TypeReference<Map<String, Object>>() { });
        } catch (IOException e) {
            throw new SfcLayerException.CorruptLayer("version document " + source + " is damaged or truncated: "
                + (damage != null ? damage + "; " : "") + "not JSON (" + e.getMessage() + ")");
        }
        // A newer format may check itself differently: refuse it by name before judging its checksum.
        Object fv = m == null ? null : m.get("formatVersion");
        if (damage != null && !(fv instanceof Number && ((Number) fv).intValue() > FORMAT_VERSION)) {
            throw new SfcLayerException.CorruptLayer("version document " + source + " is damaged: " + damage);
        }
        if (m == null || !FORMAT.equals(m.get("format"))) {
            throw new SfcLayerException.CorruptLayer("not sfclayer metadata: " + source + " (format is not \"sfclayer\")");
        }
        try {
            LayerMetadata md = new LayerMetadata();
            md.formatVersion = num(m, "formatVersion").intValue();
            if (md.formatVersion > FORMAT_VERSION || md.formatVersion < 1) {
                throw new SfcLayerException.CorruptLayer("layer version document " + source + " has format version "
                    + md.formatVersion + "; this sfclayer reads format versions 1.." + FORMAT_VERSION
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
            md.files = files == null ? new ArrayList<>() : files;
            md.repair = m.get("repair");
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
