package io.sfclayer.geotrellis;

import io.sfclayer.SfcLayerException;
import io.sfclayer.curve.IndexRange;
import io.sfclayer.curve.RangeMerge;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

import java.io.Closeable;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * Look-ups and driver-side box queries on a GeoTrellis layer without Spark: a key's index in the layer's
 * own key index, its file by binary search over the files' first indexes, a seek through the file's
 * index to the record, the tile picked out of the record's pairs. Open files are kept in an LRU cache
 * (each used by one thread at a time). Thread-safe.
 */
public final class GtValueReader implements Closeable {
    private final GtLayer layer;
    private final Configuration conf;
    private final GtLayerFiles files;
    private final int cacheSize;
    private final Map<Integer, GtMapFile> open;
    private final ThreadLocal<GtRecordCodec> codecs;
    private boolean closed;

    public GtValueReader(GtLayer layer, Configuration conf, int cacheSize) {
        this.layer = layer;
        this.conf = conf;
        this.files = GtLayerFiles.list(layer, conf);
        this.cacheSize = Math.max(1, cacheSize);
        this.open = new LinkedHashMap<>(16, 0.75f, true);
        this.codecs = ThreadLocal.withInitial(() -> new GtRecordCodec(layer.schemaJson, layer.toString()));
    }

    public GtLayer layer() {
        return layer;
    }

    public int fileCount() {
        return files.size();
    }

    /** The tile at a key, or null when the layer has none (also outside its key bounds). */
    public GtTile get(int col, int row, long millis) {
        if (!layer.keyIndex.inBounds(col, row, millis)) return null;
        long index = layer.keyIndex.toIndex(col, row, millis);
        int f = files.fileOf(index);
        if (f < 0) return null;
        GtMapFile file = take(f);
        boolean healthy = false;
        try {
            file.seekAnywhere(index);
            GtTile found = null;
            while (file.next()) {
                long k = file.key();
                if (k < index) continue;
                if (k == index) {
                    for (GtTile t : codecs.get().decode(file.value(), 0, file.valueLength(), k, file.dir().toString())) {
                        if (t.col == col && t.row == row && (!layer.spaceTime || t.millis == millis)) found = t;
                    }
                }
                break;
            }
            healthy = true;
            return found;
        } catch (IOException e) {
            throw new SfcLayerException.StorageError("reading " + file.dir() + ": " + e, e);
        } finally {
            give(f, file, healthy);
        }
    }

    /** GeoTrellis' index of a key (times in ms). */
    public long index(int col, int row, long millis) {
        return layer.keyIndex.toIndex(col, row, millis);
    }

    /** Many tiles; null where the layer has none. */
    public List<GtTile> getMany(int[] cols, int[] rows, long[] millis) {
        List<GtTile> out = new ArrayList<>(cols.length);
        for (int i = 0; i < cols.length; i++) out.add(get(cols[i], rows[i], millis[i]));
        return out;
    }

    /**
     * The tiles in an inclusive box (times in ms), in index order, at most {@code limit} (negative: all).
     * Each selected file is opened for the query, so queries never wait on look-ups.
     */
    public List<GtTile> query(int c0, int r0, int c1, int r1, long t0, long t1, long limit) {
        List<GtTile> out = new ArrayList<>();
        scan(c0, r0, c1, r1, t0, t1, limit, out::add);
        return out;
    }

    /** {@link #query}'s tiles handed to {@code out} one at a time as they are read (nothing held); returns how many. */
    public long query(int c0, int r0, int c1, int r1, long t0, long t1, long limit, Consumer<GtTile> out) {
        return scan(c0, r0, c1, r1, t0, t1, limit, out);
    }

    /** How many tiles the box holds (the records in its ranges are decoded: GeoTrellis keeps no counts). */
    public long count(int c0, int r0, int c1, int r1, long t0, long t1) {
        return scan(c0, r0, c1, r1, t0, t1, -1, null);
    }

    private long scan(int c0, int r0, int c1, int r1, long t0, long t1, long limit, Consumer<GtTile> out) {
        List<IndexRange> ranges = RangeMerge.merge(layer.keyIndex.ranges(c0, r0, c1, r1, t0, t1));
        if (ranges.isEmpty()) return 0;
        List<List<IndexRange>> split = files.split(ranges);
        long n = 0;
        boolean st = layer.spaceTime;
        for (int i = 0; i < files.size() && (limit < 0 || n < limit); i++) {
            if (split.get(i) == null) continue;
            Path dir = new Path(files.path(i));
            try (GtFileScan scan = new GtFileScan(GtMapFile.open(dir.getFileSystem(conf), dir), split.get(i),
                    codecs.get(), (c, r, t) -> c >= c0 && c <= c1 && r >= r0 && r <= r1 && (!st || (t >= t0 && t <= t1)))) {
                for (GtTile t = scan.next(); t != null && (limit < 0 || n < limit); t = scan.next()) {
                    n++;
                    if (out != null) out.accept(t);
                }
            } catch (IOException e) {
                throw new SfcLayerException.StorageError("reading " + dir + ": " + e, e);
            }
        }
        return n;
    }

    private GtMapFile take(int f) {
        synchronized (open) {
            if (closed) throw new SfcLayerException.InvalidArgument("this GeoTrellis layer reader is closed");
            GtMapFile file = open.remove(f);
            if (file != null) return file;
        }
        Path dir = new Path(files.path(f));
        try {
            FileSystem fs = dir.getFileSystem(conf);
            return GtMapFile.open(fs, dir);
        } catch (IOException e) {
            throw new SfcLayerException.StorageError("opening " + dir + ": " + e, e);
        }
    }

    /** Back to the cache (a file another thread put back meanwhile, or one that failed, is closed). */
    private void give(int f, GtMapFile file, boolean healthy) {
        GtMapFile evicted = null;
        synchronized (open) {
            if (healthy && !closed && !open.containsKey(f)) {
                open.put(f, file);
                file = null;
                if (open.size() > cacheSize) {
                    Integer eldest = open.keySet().iterator().next();
                    evicted = open.remove(eldest);
                }
            }
        }
        quietly(file);
        quietly(evicted);
    }

    private static void quietly(GtMapFile f) {
        if (f == null) return;
        try {
            f.close();
        } catch (IOException ignored) {
            // a read-only stream
        }
    }

    @Override
    public void close() {
        List<GtMapFile> all;
        synchronized (open) {
            closed = true;
            all = new ArrayList<>(open.values());
            open.clear();
        }
        for (GtMapFile f : all) quietly(f);
    }
}
