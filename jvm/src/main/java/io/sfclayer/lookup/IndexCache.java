package io.sfclayer.lookup;

import io.sfclayer.format.DataFileEntry;
import io.sfclayer.format.DataFileIndex;
import org.apache.hadoop.fs.Path;

import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Data file indexes read (and checked) by any {@link ValueReader} of this JVM, so that a layer opened
 * again in the same session (a second {@code sfclayer.open}, a {@code refresh} that keeps most files)
 * reads no index it has read before. A data file is written once and never changed; it is known by its
 * path, its length and its index's CRC32C as the version document records them (format 3; files of
 * older formats, with no recorded CRC, are not shared): content, not a modification time. Owned by
 * {@link ValueReader}, its only user; least recently used first out, bounded by bytes.
 */
final class IndexCache {
    /** Memory for shared indexes: 16 bytes an entry, so 64 MiB keeps the indexes of ~4M index entries. */
    static final long MAX_BYTES = 64L << 20;
    private static final LinkedHashMap<String, DataFileIndex> KEPT = new LinkedHashMap<>(64, 0.75f, true);
    private static long bytes;

    private IndexCache() { }

    /** The key of a data file whose identity the version document records, else null. */
    static String key(Path file, DataFileEntry entry) {
        if (entry.indexCrc32c == null || entry.dataBytes < 0) {
            return null;
        }
        return file + "#" + entry.dataBytes + "#" + entry.indexCrc32c;
    }

    static synchronized DataFileIndex get(String key) {
        return key == null ? null : KEPT.get(key);
    }

    static synchronized void put(String key, DataFileIndex index) {
        if (key == null || index == null || index.bytes() > MAX_BYTES / 4 || KEPT.containsKey(key)) {
            return;
        }
        KEPT.put(key, index);
        bytes += index.bytes();
        Iterator<Map.Entry<String, DataFileIndex>> it = KEPT.entrySet().iterator();
        while (bytes > MAX_BYTES && it.hasNext()) {
            bytes -= it.next().getValue().bytes();
            it.remove();
        }
    }

    static synchronized void clear() {
        KEPT.clear();
        bytes = 0;
    }

    static synchronized int size() {
        return KEPT.size();
    }
}
