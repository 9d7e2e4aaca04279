package io.sfclayer.bench;

import io.sfclayer.codec.TileSchema;
import io.sfclayer.codec.TileWriter;
import io.sfclayer.commit.VersionLog;
import io.sfclayer.curve.KeyBounds;
import io.sfclayer.curve.KeyIndex;
import io.sfclayer.format.DataFile;
import io.sfclayer.format.DataFileWriter;
import io.sfclayer.format.FileStats;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.format.ValueCompression;
import io.sfclayer.layer.GroupWriter;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

import java.io.IOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Test-only: a layer of {@code entries} data file entries built in seconds (issue 20's bench and
 * scale test). Most entries are synthetic: their files do not exist (nothing reads them), each covers
 * an equal slice of a 2^16 × 2^16 z-order grid and carries statistics of a raster layer's size (about
 * 470 bytes of JSON an entry, as real layers). The {@code real} entries are real one-tile data files,
 * spread evenly, whose tiles ({@link #keys}) are what a bench or test looks up, plans and replaces.
 */
public final class SyntheticLayer {
    public static final int SIDE = 1 << 16;
    private static final StructType VALUES = new StructType().add("v", DataTypes.LongType, false);

    public final Path path;
    public final KeyIndex keyIndex = KeyIndex.z(new KeyBounds(0, 0, SIDE - 1, SIDE - 1));
    /** {col, row} of each real tile, whose value is {@link #value}. */
    public final List<int[]> keys = new ArrayList<>();
    /** The real files, in index order. */
    public final List<DataFile> realFiles = new ArrayList<>();

    /** How long the last {@link #appendTile}'s commit took (the metadata: manifests and document). */
    public long lastCommitNanos;

    private SyntheticLayer(Path path) {
        this.path = path;
    }

    public static long value(int col, int row) {
        return col * 100_000L + row;
    }

    /** Builds version 1 of a layer at {@code path} with {@code entries} files, {@code real} of them real. */
    public static SyntheticLayer build(Configuration conf, Path path, long entries, int real) throws IOException {
        return build(conf, path, entries, real, true);
    }

    /** As above; without {@code withStats} the synthetic entries have no statistics (a quicker test). */
    public static SyntheticLayer build(Configuration conf, Path path, long entries, int real, boolean withStats)
            throws IOException {
        SyntheticLayer s = new SyntheticLayer(path);
        long cells = (long) SIDE * SIDE;
        long span = cells / entries;
        VersionLog log = new VersionLog(conf, path);
        String writeId = VersionLog.newWriteId();
        String dirName = VersionLog.DATA_DIR_PREFIX + writeId;
        // real tiles: in entries spread evenly, each the first index of its entry's slice plus one
        long[] realAt = new long[real];
        for (int j = 0; j < real; j++) {
            realAt[j] = (entries * (2L * j + 1)) / (2L * real);
        }
        List<DataFile> files = new ArrayList<>();
        FileStats stats = withStats ? rasterStats() : null;
        int next = 0;
        for (long i = 0; i < entries; i++) {
            long first = i * span;
            long last = i == entries - 1 ? cells - 1 : first + span - 1;
            if (next < real && realAt[next] == i) {
                int[] key = keyAt(s.keyIndex, first + 1);
                s.keys.add(key);
                DataFile f = s.writeTile(conf, log, dirName + "/real", writeId, key, next, value(key[0], key[1]));
                s.realFiles.add(f);
                files.add(new DataFile("synthetic", "part-r-00000-" + first, first, first, 4096, 4096, 268_435_456L,
                    2_000_000_000L + i, stats)); // the slice's first index stays synthetic
                files.add(f);
                next++;
                continue;
            }
            files.add(new DataFile("synthetic", "part-r-00000-" + first, first, last, 4096, 4096, 268_435_456L,
                2_000_000_000L + i, stats));
        }
        fixSpans(files);
        LayerMetadata md = new LayerMetadata();
        md.writeId = writeId;
        md.createdAt = Instant.now().toString();
        md.dataDir = dirName;
        md.keyIndex = s.keyIndex;
        md.valueSchemaJson = VALUES.json();
        md.tileSchemaJson = TileSchema.fromSpark(VALUES, false).avroSchemaJson();
        md.blockSize = 256L << 20;
        md.indexInterval = 4;
        md.setFiles(files);
        log.commit(md, files);
        return s;
    }

    /** The synthetic entries' spans end where the next entry starts (a real tile splits its slice). */
    private static void fixSpans(List<DataFile> files) {
        for (int i = 0; i + 1 < files.size(); i++) {
            DataFile f = files.get(i);
            long end = files.get(i + 1).firstIndex - 1;
            if (f.dir.equals("synthetic") && f.lastIndex != end) {
                files.set(i, new DataFile(f.dir, f.name, f.firstIndex, end, f.records, f.indexes, f.dataBytes,
                    f.indexCrc32c, f.stats));
            }
        }
    }

    /**
     * A one-tile append as an update commits it: real tile {@code j} rewritten with value {@code v} in
     * a new data file that replaces its old one (an append's merge of one tile into its file). Returns
     * the committed version.
     */
    public LayerMetadata appendTile(Configuration conf, int j, long v) throws IOException {
        VersionLog log = new VersionLog(conf, path);
        LayerMetadata base = log.current();
        String writeId = VersionLog.newWriteId();
        DataFile old = realFiles.get(j);
        DataFile added = writeTile(conf, log, VersionLog.DATA_DIR_PREFIX + writeId + "/attempt-0", writeId, keys.get(j),
            j, v);
        LayerMetadata md = base.copy();
        md.operation = "append";
        md.readVersion = base.version;
        md.writeId = writeId;
        md.dataDir = VersionLog.DATA_DIR_PREFIX + writeId;
        md.createdAt = Instant.now().toString();
        md.removedFiles = new ArrayList<>(List.of(old.id()));
        md.changedRanges = new ArrayList<>(List.<long[]>of(new long[] {old.firstIndex, old.lastIndex}));
        md.metrics = new java.util.LinkedHashMap<>();
        if (md.manifests == null) {
            List<DataFile> files = new ArrayList<>(base.files);
            files.removeIf(f -> f.id().equals(old.id()));
            files.add(added);
            md.setFiles(files);
        }
        long t0 = System.nanoTime();
        LayerMetadata out = log.commit(md, List.of(added));
        lastCommitNanos = System.nanoTime() - t0;
        realFiles.set(j, added);
        return out;
    }

    /** A key whose index is {@code index} (z-order: de-interleave). */
    static int[] keyAt(KeyIndex ki, long index) {
        int col = 0, row = 0;
        for (int b = 0; b < 32; b++) {
            col |= (int) ((index >>> (2 * b)) & 1) << b;
            row |= (int) ((index >>> (2 * b + 1)) & 1) << b;
        }
        if (ki.index(col, row) != index) {
            throw new IllegalStateException("no key at index " + index);
        }
        return new int[] {col, row};
    }

    /** Writes one real one-tile data file of {@code key} under {@code dir}; its document entry. */
    public DataFile writeTile(Configuration conf, VersionLog log, String dir, String writeId, int[] key, int partition,
                              long v) throws IOException {
        TileSchema schema = TileSchema.fromSpark(VALUES, false);
        TileWriter tiles = new TileWriter(schema, 0, 1, -1, new int[] {2});
        GroupWriter groups = new GroupWriter(new DataFileWriter(conf, log.layerPath(), dir, partition, 1 << 20, 4,
            writeId, LayerMetadata.FORMAT_VERSION), ValueCompression.NONE, keyIndex);
        groups.add(keyIndex.index(key[0], key[1]),
            tiles.encodeRecord(new GenericInternalRow(new Object[] {key[0], key[1], v})));
        groups.close();
        return groups.files().get(0);
    }

    /** Statistics the size of a raster layer's (col, row, width, height, bands, dtype, nodata, v). */
    private static FileStats rasterStats() {
        Map<String, Object> m = new java.util.LinkedHashMap<>();
        m.put("col", Map.of("min", 40_960, "max", 41_215, "nulls", 0));
        m.put("row", Map.of("min", 24_576, "max", 24_831, "nulls", 0));
        m.put("v", Map.of("min", 0, "max", 9_000_000_000L, "nulls", 0));
        m.put("width", Map.of("min", 256, "max", 256, "nulls", 0));
        m.put("height", Map.of("min", 256, "max", 256, "nulls", 0));
        m.put("bands", Map.of("min", 3, "max", 3, "nulls", 0));
        m.put("dtype", Map.of("min", "uint8", "max", "uint8", "nulls", 0));
        m.put("nodata", Map.of("min", 0, "max", 0, "nulls", 4096));
        return FileStats.fromJson(m, "synthetic");
    }
}
