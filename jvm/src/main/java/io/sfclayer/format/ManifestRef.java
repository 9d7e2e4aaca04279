package io.sfclayer.format;

import io.sfclayer.SfcLayerException;

import java.io.Serializable;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A reference to one manifest (docs/FORMAT.md, section 10): an entry of a format 6 version
 * document's {@code manifests}, or of an inner manifest's. It says which SFC index span the manifest
 * covers and what it holds, so readers choose the manifests to open by span alone, and the totals of
 * a version are the sums over its references without opening any manifest.
 */
public final class ManifestRef implements Serializable {
    private static final long serialVersionUID = 1L;
    /** The format version of layers whose version document lists manifests instead of files. */
    public static final int MANIFEST_FORMAT_VERSION = 6;

    /** The manifest's file name in {@code _sfclayer/manifests/}. */
    public final String path;
    /** 0: the manifest lists data files; n > 0: it lists manifests of level n - 1. */
    public final int level;
    /** The first index of its first data file and the last index of its last one. */
    public final long firstIndex;
    public final long lastIndex;
    /** Data files under it (all levels), and their records, indexes and data bytes. */
    public final long fileCount;
    public final long records;
    public final long indexes;
    public final long dataBytes;
    /** The manifest's own checksum trailer (8 hex digits): a manifest swapped for another does not check. */
    public final String checksum;

    public ManifestRef(String path, int level, long firstIndex, long lastIndex, long fileCount, long records,
                       long indexes, long dataBytes, String checksum) {
        this.path = path;
        this.level = level;
        this.firstIndex = firstIndex;
        this.lastIndex = lastIndex;
        this.fileCount = fileCount;
        this.records = records;
        this.indexes = indexes;
        this.dataBytes = dataBytes;
        this.checksum = checksum;
    }

    public Map<String, Object> toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("path", path);
        m.put("level", level);
        m.put("firstIndex", firstIndex);
        m.put("lastIndex", lastIndex);
        m.put("fileCount", fileCount);
        m.put("records", records);
        m.put("indexes", indexes);
        m.put("dataBytes", dataBytes);
        m.put("checksum", checksum);
        return m;
    }

    /** A manifest file name: {@code [A-Za-z0-9._-]+\\.json} (no separator, so it stays in the manifests directory). */
    static boolean validPath(String path) {
        int n = path.length() - ".json".length();
        if (n < 1 || !path.endsWith(".json")) {
            return false;
        }
        for (int i = 0; i < n; i++) {
            char c = path.charAt(i);
            if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_'
                    || c == '-')) {
                return false;
            }
        }
        return true;
    }

    /** 8 lower-case hex digits. */
    static boolean validChecksum(String sum) {
        if (sum.length() != 8) {
            return false;
        }
        for (int i = 0; i < 8; i++) {
            char c = sum.charAt(i);
            if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
                return false;
            }
        }
        return true;
    }

    public static ManifestRef fromJson(Map<String, Object> m, String source) {
        Object path = m.get("path");
        Object sum = m.get("checksum");
        if (!(path instanceof String) || !(sum instanceof String)) {
            throw new SfcLayerException.CorruptLayer(source + ": a manifests entry has no valid path or checksum: " + m);
        }
        return checked((String) path, (int) num(m, "level", source), num(m, "firstIndex", source),
            num(m, "lastIndex", source), num(m, "fileCount", source), num(m, "records", source),
            num(m, "indexes", source), num(m, "dataBytes", source), (String) sum, source);
    }

    /** A reference of these fields once checked (CorruptLayer naming {@code source} otherwise). */
    static ManifestRef checked(String path, int level, long firstIndex, long lastIndex, long fileCount, long records,
                               long indexes, long dataBytes, String sum, String source) {
        if (!validPath(path) || !validChecksum(sum)) {
            throw new SfcLayerException.CorruptLayer(source + ": a manifests entry has no valid path or checksum: "
                + path + ", " + sum);
        }
        ManifestRef r = new ManifestRef(path, level, firstIndex, lastIndex, fileCount, records, indexes, dataBytes, sum);
        if (r.level < 0 || r.firstIndex > r.lastIndex || r.fileCount < 1) {
            throw new SfcLayerException.CorruptLayer(source + ": manifests entry " + r.path + " has level " + r.level
                + ", span [" + r.firstIndex + ", " + r.lastIndex + "] and " + r.fileCount + " files");
        }
        return r;
    }

    private static long num(Map<String, Object> m, String field, String source) {
        Object v = m.get(field);
        if (!(v instanceof Number)) {
            throw new SfcLayerException.CorruptLayer(source + ": manifests entry " + m.get("path") + ": field '" + field
                + "' is missing or not a number");
        }
        return ((Number) v).longValue();
    }

    @Override
    public String toString() {
        return path + " [" + firstIndex + ", " + lastIndex + "]";
    }
}
