package io.sfclayer.format;

import io.sfclayer.SfcLayerException;

import java.io.Serializable;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One data file a version references: its directory (relative to the layer), its name, and what it
 * holds. Format version 2 lists these explicitly in the version document, so a version can keep
 * files written by earlier versions where they are (docs/FORMAT.md, "Metadata").
 */
public final class DataFile implements Serializable, Comparable<DataFile> {
    private static final long serialVersionUID = 1L;

    public final String dir;
    public final String name;
    public final long firstIndex;
    public final long lastIndex;
    public final long records;
    public final long indexes;
    public final long dataBytes;
    /** CRC32C of the file's {@code index} (format 3), or null for files of earlier formats. */
    public final Long indexCrc32c;
    /** Column statistics (optional field {@code stats}); null for files written without them. */
    public final FileStats stats;
    /** CRC32C of the file's bloom filter sidecar (optional field {@value BloomFilter#FILE_CRC}); null: none. */
    public final Long bloomCrc32c;

    public DataFile(String dir, String name, long firstIndex, long lastIndex, long records, long indexes,
                    long dataBytes) {
        this(dir, name, firstIndex, lastIndex, records, indexes, dataBytes, null, null);
    }

    public DataFile(String dir, String name, long firstIndex, long lastIndex, long records, long indexes,
                    long dataBytes, Long indexCrc32c, FileStats stats) {
        this(dir, name, firstIndex, lastIndex, records, indexes, dataBytes, indexCrc32c, stats, null);
    }

    public DataFile(String dir, String name, long firstIndex, long lastIndex, long records, long indexes,
                    long dataBytes, Long indexCrc32c, FileStats stats, Long bloomCrc32c) {
        this.bloomCrc32c = bloomCrc32c;
        this.indexCrc32c = indexCrc32c;
        this.dir = dir;
        this.name = name;
        this.firstIndex = firstIndex;
        this.lastIndex = lastIndex;
        this.records = records;
        this.indexes = indexes;
        this.dataBytes = dataBytes;
        this.stats = stats;
    }

    /** The file's path relative to the layer: what identifies it across versions. */
    public String id() {
        return dir + "/" + name;
    }

    public Map<String, Object> toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("dir", dir);
        m.put("name", name);
        m.put("firstIndex", firstIndex);
        m.put("lastIndex", lastIndex);
        m.put("records", records);
        m.put("indexes", indexes);
        m.put("dataBytes", dataBytes);
        if (indexCrc32c != null) {
            m.put(LayerMetadata.FILE_INDEX_CRC, indexCrc32c);
        }
        if (stats != null) {
            m.put("stats", stats.toJson());
        }
        if (bloomCrc32c != null) {
            m.put(BloomFilter.FILE_CRC, bloomCrc32c);
        }
        return m;
    }

    /** An entry of a document's {@code files}; {@code defaultDir} serves format version 1 entries. */
    public static DataFile fromJson(Map<String, Object> m, String defaultDir) {
        Object dir = m.getOrDefault("dir", defaultDir);
        Object name = m.get("name");
        if (!(dir instanceof String) || !(name instanceof String)) {
            throw new SfcLayerException.CorruptLayer("a files entry lacks its dir or name: " + m);
        }
        DataFileName parsed = DataFileName.parse((String) name);
        Object crc = m.get(LayerMetadata.FILE_INDEX_CRC);
        Object stats = m.get("stats");
        if (stats != null && !(stats instanceof Map)) {
            throw new SfcLayerException.CorruptLayer("files entry " + name + ": field 'stats' is not an object");
        }
        @SuppressWarnings("unchecked")
        FileStats parsedStats = stats == null ? null : FileStats.fromJson((Map<String, Object>) stats, (String) name);
        Object bloom = m.get(BloomFilter.FILE_CRC);
        if (bloom != null && !(bloom instanceof Number)) {
            throw new SfcLayerException.CorruptLayer("files entry " + name + ": field '" + BloomFilter.FILE_CRC
                + "' is not a number");
        }
        return new DataFile((String) dir, (String) name, parsed.firstIndex, num(m, "lastIndex"), num(m, "records"),
            num(m, "indexes"), num(m, "dataBytes"), crc instanceof Number ? ((Number) crc).longValue() : null,
            parsedStats, bloom == null ? null : ((Number) bloom).longValue());
    }

    private static long num(Map<String, Object> m, String field) {
        Object v = m.get(field);
        if (!(v instanceof Number)) {
            throw new SfcLayerException.CorruptLayer("files entry " + m.get("name") + ": field '" + field
                + "' is missing or not a number");
        }
        return ((Number) v).longValue();
    }

    @Override
    public int compareTo(DataFile o) {
        return Long.compare(firstIndex, o.firstIndex);
    }

    @Override
    public String toString() {
        return id();
    }
}
