package io.sfclayer.format;

import java.io.Serializable;

/**
 * What a version document says about one data file (its {@code files} entry): enough for a reader
 * to check the file before trusting it. From format 3 on, {@code dataBytes} is the exact length of
 * {@code data} and {@code indexCrc32c} the CRC32C of {@code index}; earlier formats leave them
 * unchecked (-1, null).
 */
public final class DataFileEntry implements Serializable {
    private static final long serialVersionUID = 1L;

    public final String name;
    public final long firstIndex;
    /** The last index the file holds, or -1 when unknown. */
    public final long lastIndex;
    /** Index groups (records), or -1 when unknown. */
    public final long indexes;
    public final long dataBytes;
    public final Long indexCrc32c;
    public final int formatVersion;
    /** The layer, for messages. */
    public final String layer;
    /** CRC32C of the file's bloom filter sidecar, or null when the file has none ({@link BloomFilter}). */
    public final Long bloomCrc32c;
    /**
     * The version whose document listed the file, or -1 when unknown: a reader that finds the file
     * missing tells a version vacuum removed (nothing damaged) from a lost file by it.
     */
    public final long version;

    public DataFileEntry(String name, long firstIndex, long lastIndex, long indexes, long dataBytes, Long indexCrc32c,
                         int formatVersion, String layer) {
        this(name, firstIndex, lastIndex, indexes, dataBytes, indexCrc32c, formatVersion, layer, null);
    }

    public DataFileEntry(String name, long firstIndex, long lastIndex, long indexes, long dataBytes, Long indexCrc32c,
                         int formatVersion, String layer, Long bloomCrc32c) {
        this(name, firstIndex, lastIndex, indexes, dataBytes, indexCrc32c, formatVersion, layer, bloomCrc32c, -1);
    }

    private DataFileEntry(String name, long firstIndex, long lastIndex, long indexes, long dataBytes, Long indexCrc32c,
                          int formatVersion, String layer, Long bloomCrc32c, long version) {
        this.version = version;
        this.bloomCrc32c = bloomCrc32c;
        this.name = name;
        this.firstIndex = firstIndex;
        this.lastIndex = lastIndex;
        this.indexes = indexes;
        this.dataBytes = dataBytes;
        this.indexCrc32c = indexCrc32c;
        this.formatVersion = formatVersion;
        this.layer = layer;
    }

    /** An entry that checks nothing beyond what the file itself says (direct reads, tests). */
    public static DataFileEntry unknown(String name, String layer) {
        long first = DataFileName.looksLikeDataFile(name) ? DataFileName.parse(name).firstIndex : 0;
        return new DataFileEntry(name, first, -1, -1, -1, null, 0, layer);
    }

    /**
     * From a version document's {@code files} item. A file written in format 3 carries its index
     * checksum and must be a checked file of exactly its recorded length; files an update kept from
     * an earlier format (no checksum) are read as that format.
     */
    public static DataFileEntry of(DataFile f, int documentFormat, String layer) {
        return of(f, documentFormat, layer, -1);
    }

    /** {@link #of(DataFile, int, String)} of the file as version {@code version} lists it. */
    public static DataFileEntry of(DataFile f, int documentFormat, String layer, long version) {
        boolean checked = RecordFrame.checked(documentFormat) && f.indexCrc32c != null;
        return new DataFileEntry(f.name, f.firstIndex, f.lastIndex, f.indexes, checked ? f.dataBytes : -1,
            checked ? f.indexCrc32c : null, checked ? RecordFrame.FIRST_CHECKED_VERSION : 0, layer, f.bloomCrc32c,
            version);
    }

    /** "indexes a..b" for messages. */
    public String indexRange() {
        return "SFC indexes " + firstIndex + ".." + (lastIndex >= 0 ? Long.toString(lastIndex) : "?");
    }
}
