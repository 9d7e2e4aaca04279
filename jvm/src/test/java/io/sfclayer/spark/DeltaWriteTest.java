package io.sfclayer.spark;

// Over 500 lines on purpose: every delta write test shares one dict model, one session and one
// independent file-by-file reader of a version's tiles (contents), which a split would duplicate.

import com.fasterxml.jackson.databind.ObjectMapper;
import io.sfclayer.SfcLayerException;
import io.sfclayer.codec.TileCursor;
import io.sfclayer.codec.TileSchema;
import io.sfclayer.commit.VersionLog;
import io.sfclayer.format.DataFile;
import io.sfclayer.format.DataFileEntry;
import io.sfclayer.format.DataFileReader;
import io.sfclayer.format.DeltaFile;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.format.ValueCompression;
import io.sfclayer.layer.Layer;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SaveMode;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.ClassRule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

/**
 * The write side of delta files (format 7, docs/FORMAT.md section 11) against a dict model: random,
 * seeded sequences of delta, copy-on-write and auto appends, deletes, compactions and overwrites; after
 * each, every version's tiles as its document says (base files, then each delta in list order, read
 * here file by file: an independent reader) equal the model's state after that version.
 */
public class DeltaWriteTest {
    @ClassRule
    public static TemporaryFolder tmp = new TemporaryFolder();

    private static SparkSession spark;
    private static final ObjectMapper JSON = new ObjectMapper();
    /** A 64 x 64 grid; tiles carry ~200 bytes so that 64k blocks make a dozen base files. */
    private static final int N = 64;
    private static final StructType SCHEMA = new StructType()
        .add("col", DataTypes.IntegerType, false).add("row", DataTypes.IntegerType, false)
        .add("v", DataTypes.LongType, false).add("payload", DataTypes.StringType, false);

    @BeforeClass
    public static void start() {
        spark = SparkSession.builder().master("local[2]").appName("delta-write")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .getOrCreate();
    }

    @AfterClass
    public static void stop() {
        spark.stop();
    }

    private static Row tile(int col, int row, long v) {
        return RowFactory.create(col, row, v, ("p" + v + "-").repeat(20));
    }

    /** Tiles as a local relation (written on the driver, no job) or as an RDD (a Spark job, shuffled). */
    private static Dataset<Row> frame(List<Row> rows, boolean local) {
        if (local) {
            return spark.createDataFrame(rows, SCHEMA);
        }
        return spark.createDataFrame(JavaSparkContext.fromSparkContext(spark.sparkContext()).parallelize(rows, 2), SCHEMA);
    }

    private static Map<String, String> options(String... kv) {
        Map<String, String> m = new HashMap<>();
        m.put("bounds", "0,0," + (N - 1) + "," + (N - 1));
        m.put("blockSize", "64k");
        m.put("compactAfterDeltas", "0");
        for (int i = 0; i < kv.length; i += 2) {
            m.put(kv[i], kv[i + 1]);
        }
        return m;
    }

    /** Tiles of the box (col0, row0, col1, row1) with values from {@code seed}. */
    private static List<Row> box(int c0, int r0, int c1, int r1, long seed) {
        List<Row> out = new ArrayList<>();
        for (int c = c0; c <= c1; c++) {
            for (int r = r0; r <= r1; r++) {
                out.add(tile(c, r, seed * 100_000 + c * 100 + r));
            }
        }
        return out;
    }

    private static void put(TreeMap<Integer, Long> model, List<Row> rows) {
        for (Row t : rows) {
            model.put(t.getInt(0) * 1000 + t.getInt(1), t.getLong(2));
        }
    }

    private static Configuration conf() {
        return spark.sparkContext().hadoopConfiguration();
    }

    /** Version {@code v}'s tiles (key col*1000+row → v) as its document says: base files, then deltas in order. */
    static TreeMap<Integer, Long> contents(String path, long v) throws IOException {
        Layer layer = Layer.open(conf(), path, v, -1);
        LayerMetadata md = layer.metadata();
        TreeMap<Integer, Long> out = new TreeMap<>();
        for (DataFile f : layer.files()) {
            readInto(path, md, f, out, false);
        }
        for (DeltaFile d : md.deltas) {
            readInto(path, md, d.file, out, true);
        }
        return out;
    }

    private static void readInto(String path, LayerMetadata md, DataFile f, TreeMap<Integer, Long> out, boolean delta)
            throws IOException {
        TileSchema schema = TileSchema.fromJson(md.valueSchemaJson, false);
        StructType values = (StructType) org.apache.spark.sql.types.DataType.fromJson(md.valueSchemaJson);
        int[] targets = new int[values.size()];
        java.util.Arrays.fill(targets, -1);
        targets[values.fieldIndex("v")] = 0;
        ValueCompression compression = ValueCompression.parse(md.compression);
        TileCursor cursor = new TileCursor(schema);
        Object[] o = new Object[1];
        java.util.Set<Integer> seen = new java.util.HashSet<>();
        try (DataFileReader r = new DataFileReader(conf(), new Path(new Path(path, f.dir), f.name),
                DataFileEntry.of(f, md.formatVersion, path), null)) {
            while (r.next()) {
                byte[] g = compression.decompress(r.bytes(), r.offset(), r.length());
                cursor.reset(g, 0, g.length);
                while (cursor.next()) {
                    cursor.readValues(o, targets);
                    int key = cursor.col() * 1000 + cursor.row();
                    assertTrue("key " + key + " twice in " + f.id(), seen.add(key));
                    if (!delta) {
                        assertFalse("base files overlap at " + key, out.containsKey(key));
                    }
                    out.put(key, (Long) o[0]);
                }
            }
        }
    }

    private static TreeMap<Integer, Long> inBox(TreeMap<Integer, Long> model, int[] b) {
        TreeMap<Integer, Long> out = new TreeMap<>();
        model.forEach((k, v) -> {
            int c = k / 1000, r = k % 1000;
            if (c >= b[0] && c <= b[2] && r >= b[1] && r <= b[3]) {
                out.put(k, v);
            }
        });
        return out;
    }

    private static org.apache.avro.generic.GenericRecord decode(org.apache.avro.Schema schema, byte[] record) {
        try {
            return new org.apache.avro.generic.GenericDatumReader<org.apache.avro.generic.GenericRecord>(schema)
                .read(null, org.apache.avro.io.DecoderFactory.get().binaryDecoder(record, null));
        } catch (IOException e) {
            throw new AssertionError("record does not decode", e);
        }
    }

    /** The version document of {@code v} as JSON. */
    @SuppressWarnings("unchecked")
    static Map<String, Object> document(String path, long v) throws IOException {
        File f = new File(path, VersionLog.LOG_DIR + "/" + VersionLog.versionFileName(v));
        return JSON.readValue(Files.readAllBytes(f.toPath()), Map.class);
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> operation(String path, long v) throws IOException {
        return (Map<String, Object>) document(path, v).get("operation");
    }

    private static LayerMetadata append(String path, List<Row> rows, boolean local, String... kv) {
        return SfcLayerWrite.run(spark, frame(rows, local), path, SaveMode.Append, options(kv));
    }

    @Test
    public void randomSequencesAgreeWithTheModel() throws Exception {
        long seed = Long.getLong("sfclayer.deltas.seed", System.nanoTime() % 1_000_000_000L);
        System.out.println("delta model seed " + seed + " (replay: -Dsfclayer.deltas.seed=" + seed + ")");
        Random rnd = new Random(seed);
        String path = new File(tmp.getRoot(), "model-" + seed).getAbsolutePath();
        TreeMap<Integer, Long> model = new TreeMap<>();
        Map<Long, TreeMap<Integer, Long>> versions = new TreeMap<>();
        List<Row> first = box(0, 0, N - 1, N - 1, 1);
        LayerMetadata md = SfcLayerWrite.run(spark, frame(first, false), path, SaveMode.ErrorIfExists, options());
        put(model, first);
        versions.put(md.version, new TreeMap<>(model));
        assertTrue("a dozen base files", md.fileCount >= 8);
        int ops = Integer.getInteger("sfclayer.deltas.ops", 6);
        for (int i = 0; i < ops; i++) {
            int kind = rnd.nextInt(10);
            int c0 = rnd.nextInt(N), r0 = rnd.nextInt(N);
            int c1 = Math.min(N - 1, c0 + rnd.nextInt(6)), r1 = Math.min(N - 1, r0 + rnd.nextInt(6));
            long before = md.version;
            String what;
            if (kind < 4) { // a delta append, on the driver or shuffled
                boolean local = rnd.nextBoolean();
                List<Row> rows = box(c0, r0, c1, r1, 10 + i);
                what = "delta append " + (local ? "(driver) " : "(shuffled) ") + c0 + "," + r0 + "," + c1 + "," + r1;
                md = append(path, rows, local, "appendMode", "delta", "smallAppendBytes", local ? "16m" : "0");
                put(model, rows);
                assertTrue(what + ": lists deltas", !md.deltas.isEmpty());
                Map<String, Object> op = operation(path, md.version);
                assertEquals(what, Boolean.TRUE, op.get("delta"));
                assertEquals(what, List.of(), op.get("removedFiles"));
                assertNull(what, ((Map<?, ?>) op.get("metrics")).get("tilesInserted"));
                assertEquals(what, (long) rows.size(), ((Number) ((Map<?, ?>) op.get("metrics")).get("tilesWritten")).longValue());
                assertEquals(what, 7, ((Number) document(path, md.version).get("formatVersion")).intValue());
            } else if (kind < 6) { // copy-on-write or auto: folds every delta when it rewrites
                boolean rewrite = kind == 4;
                List<Row> rows = box(c0, r0, c1, r1, 10 + i);
                what = (rewrite ? "copy-on-write" : "auto") + " append " + c0 + "," + r0 + "," + c1 + "," + r1;
                md = append(path, rows, rnd.nextBoolean(), "appendMode", rewrite ? "rewrite" : "auto");
                put(model, rows);
                if (rewrite) {
                    assertTrue(what + ": no delta left", md.deltas.isEmpty());
                }
            } else if (kind < 8) {
                what = "delete " + c0 + "," + r0 + "," + c1 + "," + r1;
                md = SfcLayerCommands.deleteVersion(spark, path, c0 + "," + r0 + "," + c1 + "," + r1, null, null);
                boolean any = false;
                for (int c = c0; c <= c1; c++) {
                    for (int r = r0; r <= r1; r++) {
                        any |= model.remove(c * 1000 + r) != null;
                    }
                }
                if (any) {
                    assertTrue(what + ": folds the deltas", md.deltas.isEmpty());
                }
            } else if (kind < 9) {
                what = "compact";
                md = SfcLayerUpdate.compact(spark, path);
                assertTrue(what + ": folds the deltas", md.deltas.isEmpty());
                assertTrue(what + ": says format 6 or less again",
                    ((Number) document(path, md.version).get("formatVersion")).intValue() < 7);
            } else {
                what = "overwrite";
                List<Row> rows = box(0, 0, N - 1, rnd.nextInt(N), 10 + i);
                md = SfcLayerWrite.run(spark, frame(rows, false), path, SaveMode.Overwrite, options());
                model.clear();
                put(model, rows);
            }
            System.out.println("op " + i + ": " + what + " -> v" + md.version + " (" + md.deltas.size() + " deltas)");
            if (md.version > before) {
                versions.put(md.version, new TreeMap<>(model));
            }
            // every version, the new one and all before it, reads as the model said it was: file by file
            // as its document says, and by the in-process reader (count, a box's count, look-ups in a box)
            int[] q = {rnd.nextInt(N / 2), rnd.nextInt(N / 2), N / 2 + rnd.nextInt(N / 2), N / 2 + rnd.nextInt(N / 2)};
            for (Map.Entry<Long, TreeMap<Integer, Long>> e : versions.entrySet()) {
                String at = "seed " + seed + ", after op " + i + " (" + what + "): version " + e.getKey();
                assertEquals(at, e.getValue(), contents(path, e.getKey()));
                try (io.sfclayer.lookup.ValueReader r = io.sfclayer.lookup.ValueReader.open(conf(), path, 16,
                        e.getKey(), -1)) {
                    assertEquals(at + ": count", e.getValue().size(), r.count(r.boxQuery("")));
                    assertEquals(at + ": a box's count", inBox(e.getValue(), q).size(),
                        r.count(r.boxQuery("keys=" + q[0] + "," + q[1] + "," + q[2] + "," + q[3])));
                    org.apache.avro.Schema schema = new org.apache.avro.Schema.Parser().parse(r.tileSchemaJson());
                    for (int c = q[0]; c <= q[2]; c += 3) {
                        for (int row = q[1]; row <= q[3]; row += 2) {
                            byte[] rec = r.getOrNull(c, row, 0);
                            assertEquals(at + ": look-up " + c + "," + row, e.getValue().get(c * 1000 + row),
                                rec == null ? null : (Long) decode(schema, rec).get("v"));
                        }
                    }
                }
            }
        }
        // Spark (its jobs cost most of this test's time): the newest version's and every version with
        // deltas' box scan and count (three of them at most)
        int[] b = {5, 3, 40, 50};
        int withDeltas = 0;
        for (Map.Entry<Long, TreeMap<Integer, Long>> e : versions.entrySet()) {
            if (e.getKey() != md.version && (withDeltas >= 3
                    || Layer.open(conf(), path, e.getKey(), -1).metadata().deltas.isEmpty())) {
                continue;
            }
            withDeltas += e.getKey() != md.version ? 1 : 0;
            Dataset<Row> scan = spark.read().format("sfclayer").option("versionAsOf", e.getKey().toString()).load(path)
                .where("col between " + b[0] + " and " + b[2] + " and row between " + b[1] + " and " + b[3]);
            TreeMap<Integer, Long> got = new TreeMap<>();
            for (Row r : scan.select("col", "row", "v").collectAsList()) {
                got.put(r.getInt(0) * 1000 + r.getInt(1), r.getLong(2));
            }
            assertEquals("seed " + seed + ": Spark's box scan of version " + e.getKey(), inBox(e.getValue(), b), got);
            assertEquals("seed " + seed + ": Spark's count of version " + e.getKey(), e.getValue().size(),
                spark.read().format("sfclayer").option("versionAsOf", e.getKey().toString()).load(path).count());
        }
    }

    @Test
    public void autoWritesDeltasForSmallAppendsAndRewritesForLargeOnes() throws Exception {
        String path = new File(tmp.getRoot(), "auto").getAbsolutePath();
        SfcLayerWrite.run(spark, frame(box(0, 0, N - 1, N - 1, 1), false), path, SaveMode.ErrorIfExists, options());
        SfcLayerCommands.deleteVersion(spark, path, "9,9,9,9", null, null);
        LayerMetadata one = append(path, List.of(tile(5, 5, 42)), true);
        assertEquals("one tile into a 64k file: a delta", 1, one.deltas.size());
        assertTrue(one.deltas.get(0).file.dir.endsWith("/driver"));
        // onExisting=keep must know the keys the version holds: copy-on-write, folding the delta
        LayerMetadata kept = append(path, List.of(tile(5, 5, 43), tile(9, 9, 44)), true, "onExisting", "keep");
        assertEquals(one.version + 1, kept.version);
        assertTrue("keep folds", kept.deltas.isEmpty());
        assertEquals(Long.valueOf(42), contents(path, kept.version).get(5005));
        assertEquals(Long.valueOf(44), contents(path, kept.version).get(9009));
        Map<?, ?> metrics = (Map<?, ?>) operation(path, kept.version).get("metrics");
        assertEquals(1, ((Number) metrics.get("tilesInserted")).intValue());
        assertEquals(1, ((Number) metrics.get("tilesKept")).intValue());
        // a whole-layer append rewrites
        LayerMetadata all = append(path, box(0, 0, N - 1, N - 1, 2), false);
        assertTrue("a large append is copy-on-write", all.deltas.isEmpty());
        assertEquals(Boolean.FALSE, operation(path, all.version).getOrDefault("delta", false));
        // a shuffled small append: a delta too, by the first pass's ranges and bytes
        LayerMetadata shuffled = append(path, box(7, 7, 8, 8, 3), false, "smallAppendBytes", "0");
        assertFalse(shuffled.deltas.isEmpty());
        assertTrue(shuffled.deltas.get(0).file.dir.contains("/attempt-"));
        TreeMap<Integer, Long> want = new TreeMap<>();
        put(want, box(0, 0, N - 1, N - 1, 2));
        put(want, box(7, 7, 8, 8, 3));
        assertEquals(want, contents(path, shuffled.version));
    }

    @Test
    public void compactionFoldsOnlyTheFilesDeltasMeetAndEqualsAFreshWrite() throws Exception {
        String path = new File(tmp.getRoot(), "compact").getAbsolutePath();
        String fresh = new File(tmp.getRoot(), "compact-fresh").getAbsolutePath();
        List<Row> all = box(0, 0, N - 1, N - 1, 1);
        LayerMetadata v1 = SfcLayerWrite.run(spark, frame(all, false), path, SaveMode.ErrorIfExists, options());
        TreeMap<Integer, Long> model = new TreeMap<>();
        put(model, all);
        List<Row> a = box(0, 0, 1, 1, 2);
        List<Row> b = box(0, 1, 1, 2, 3); // overlaps a: the later wins
        append(path, a, true, "appendMode", "delta");
        LayerMetadata withDeltas = append(path, b, true, "appendMode", "delta");
        put(model, a);
        put(model, b);
        assertEquals(2, withDeltas.deltas.size());
        LayerMetadata c = SfcLayerUpdate.compact(spark, path);
        assertTrue(c.deltas.isEmpty());
        assertEquals(model, contents(path, c.version));
        Map<String, Object> op = operation(path, c.version);
        @SuppressWarnings("unchecked")
        List<String> removed = (List<String>) op.get("removedFiles");
        for (DeltaFile d : withDeltas.deltas) {
            assertTrue("the deltas are removed", removed.contains(d.id()));
        }
        int baseRemoved = removed.size() - withDeltas.deltas.size();
        assertTrue("only the base files the deltas meet: " + baseRemoved, baseRemoved >= 1 && baseRemoved < v1.fileCount / 2);
        List<Row> now = new ArrayList<>();
        for (Map.Entry<Integer, Long> e : model.entrySet()) {
            now.add(tile(e.getKey() / 1000, e.getKey() % 1000, e.getValue()));
        }
        LayerMetadata f = SfcLayerWrite.run(spark, frame(now, false), fresh, SaveMode.ErrorIfExists, options());
        assertEquals(contents(fresh, f.version), contents(path, c.version));
        assertEquals(f.recordCount, c.recordCount);
    }

    /** Manifests read by opening version {@code v} of {@code path} and reading its whole file list. */
    private static long manifestsOfAllFiles(String path, long v) throws IOException {
        io.sfclayer.format.Manifest.forgetCached();
        long r0 = io.sfclayer.format.Manifest.readsTotal();
        Layer.open(conf(), path, v, -1).files();
        return io.sfclayer.format.Manifest.readsTotal() - r0;
    }

    /**
     * Issue 38: an update folding deltas into a version with manifests (a copy-on-write append on the
     * driver, a shuffled one, the compaction an append starts) reads only the manifests on the paths to
     * the new records' and the deltas' ranges, not the whole file list; the result equals the model.
     */
    @Test
    public void foldingWithManifestsReadsOnlyTheManifestsTheChangedRangesNeed() throws Exception {
        String path = new File(tmp.getRoot(), "fold-manifests").getAbsolutePath();
        Configuration c = conf();
        c.setInt(io.sfclayer.format.ManifestTree.INLINE_FILES, 2);
        c.setInt(io.sfclayer.format.ManifestTree.LEAF_FILES, 2);
        c.setInt(io.sfclayer.format.ManifestTree.FANOUT, 2);
        try {
            LayerMetadata v1 = SfcLayerWrite.run(spark, frame(box(0, 0, N - 1, N - 1, 1), false), path,
                SaveMode.ErrorIfExists, options());
            assertTrue("a layer with manifests", v1.manifests != null && v1.fileCount >= 8);
            TreeMap<Integer, Long> model = new TreeMap<>();
            put(model, box(0, 0, N - 1, N - 1, 1));
            long whole = manifestsOfAllFiles(path, v1.version);
            String[][] appends = {
                {"appendMode", "rewrite"}, // on the driver (appendOnDriver)
                {"appendMode", "rewrite", "smallAppendBytes", "0"}, // shuffled (a Spark job)
            };
            for (int i = 0; i < appends.length; i++) {
                for (int d = 0; d < 2; d++) { // two deltas in the first corner of the curve
                    List<Row> rows = box(d, 0, d + 1, 1, 10 * i + d + 2);
                    append(path, rows, true, "appendMode", "delta");
                    put(model, rows);
                }
                List<Row> rows = box(2, 2, 3, 3, 10 * i + 5);
                io.sfclayer.format.Manifest.forgetCached();
                long r0 = io.sfclayer.format.Manifest.readsTotal();
                LayerMetadata folded = append(path, rows, appends[i].length == 2, appends[i]);
                long read = io.sfclayer.format.Manifest.readsTotal() - r0;
                put(model, rows);
                assertTrue("the deltas are folded", folded.deltas.isEmpty());
                assertTrue(String.join(",", appends[i]) + ": " + read + " manifests read of the " + whole
                    + " the whole file list takes", read < whole);
                assertEquals(model, contents(path, folded.version));
            }
            // the compaction an append starts (compactAfterDeltas) folds reading only what the deltas need
            LayerMetadata last = null;
            long read = 0;
            for (int d = 0; d < 3; d++) {
                List<Row> rows = List.of(tile(d, d, 900 + d));
                io.sfclayer.format.Manifest.forgetCached();
                long r0 = io.sfclayer.format.Manifest.readsTotal();
                last = append(path, rows, true, "appendMode", "delta", "compactAfterDeltas", "3");
                read = io.sfclayer.format.Manifest.readsTotal() - r0;
                put(model, rows);
            }
            assertTrue("the third delta append and its compaction: " + read + " manifests read of " + whole,
                read < whole);
            LayerMetadata compacted = Layer.open(conf(), path).metadata();
            assertEquals(last.version + 1, compacted.version);
            assertEquals(Boolean.TRUE, operation(path, compacted.version).get("auto"));
            assertTrue(compacted.deltas.isEmpty());
            assertEquals(model, contents(path, compacted.version));
            assertTrue("still listed by manifests", compacted.manifests != null);
        } finally {
            c.unset(io.sfclayer.format.ManifestTree.INLINE_FILES);
            c.unset(io.sfclayer.format.ManifestTree.LEAF_FILES);
            c.unset(io.sfclayer.format.ManifestTree.FANOUT);
        }
    }

    @Test
    public void aSmallLocalAppendRunsNoSparkJob() throws Exception {
        String path = new File(tmp.getRoot(), "no-job").getAbsolutePath();
        SfcLayerWrite.run(spark, frame(box(0, 0, N - 1, N - 1, 1), false), path, SaveMode.ErrorIfExists, options());
        java.util.concurrent.atomic.AtomicInteger jobs = new java.util.concurrent.atomic.AtomicInteger();
        org.apache.spark.scheduler.SparkListener counter = new org.apache.spark.scheduler.SparkListener() {
            @Override
            public void onJobStart(org.apache.spark.scheduler.SparkListenerJobStart start) {
                jobs.incrementAndGet();
            }
        };
        spark.sparkContext().addSparkListener(counter);
        try {
            LayerMetadata md = append(path, List.of(tile(1, 2, 7), tile(40, 41, 8)), true);
            spark.sparkContext().listenerBus().waitUntilEmpty();
            assertEquals("Spark jobs of a two-tile local append", 0, jobs.get());
            assertEquals(1, md.deltas.size());
            assertEquals(Long.valueOf(8), contents(path, md.version).get(40041));
        } finally {
            spark.sparkContext().removeSparkListener(counter);
        }
    }

    @Test
    public void compactAfterDeltasCompactsAsItsOwnCommit() throws Exception {
        String path = new File(tmp.getRoot(), "auto-compact").getAbsolutePath();
        SfcLayerWrite.run(spark, frame(box(0, 0, N - 1, N - 1, 1), false), path, SaveMode.ErrorIfExists, options());
        TreeMap<Integer, Long> model = new TreeMap<>();
        put(model, box(0, 0, N - 1, N - 1, 1));
        LayerMetadata last = null;
        for (int i = 0; i < 3; i++) {
            List<Row> rows = List.of(tile(3 * i, 2 * i, 100 + i));
            last = append(path, rows, true, "compactAfterDeltas", "3");
            put(model, rows);
        }
        assertEquals("the append's own version", 3, last.deltas.size());
        LayerMetadata newest = Layer.open(conf(), path).metadata();
        assertEquals(last.version + 1, newest.version);
        assertEquals("compact", newest.operation);
        assertEquals(Boolean.TRUE, operation(path, newest.version).get("auto"));
        assertTrue(newest.deltas.isEmpty());
        assertEquals(model, contents(path, newest.version));
    }

    @Test
    public void deltaAppendsRacingACompactionNeverFail() throws Exception {
        String path = new File(tmp.getRoot(), "race").getAbsolutePath();
        SfcLayerWrite.run(spark, frame(box(0, 0, N - 1, N - 1, 1), false), path, SaveMode.ErrorIfExists, options());
        TreeMap<Integer, Long> model = new TreeMap<>();
        put(model, box(0, 0, N - 1, N - 1, 1));
        for (int i = 0; i < 3; i++) {
            List<Row> rows = box(i, i, i + 1, i + 1, 50 + i);
            append(path, rows, true, "appendMode", "delta");
            put(model, rows);
        }
        ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(1);
        try {
            java.util.concurrent.Future<?> compaction = pool.submit(() -> {
                try {
                    return SfcLayerUpdate.compact(spark, path);
                } catch (SfcLayerException.ConcurrentUpdate e) {
                    return null; // it may yield to the appends
                }
            });
            for (int i = 0; i < 6; i++) {
                List<Row> rows = box(10 + 3 * i, 20, 11 + 3 * i, 21, 60 + i);
                append(path, rows, true, "appendMode", "delta"); // never ConcurrentUpdate
                put(model, rows);
            }
            compaction.get();
        } finally {
            pool.shutdown();
        }
        LayerMetadata newest = Layer.open(conf(), path).metadata();
        assertEquals("every append's tiles, the compaction's or not", model, contents(path, newest.version));
    }

    @Test
    public void aCopyOnWriteUpdateConflictsWithANewerDeltaAppendMeetingItsRanges() throws Exception {
        LayerMetadata delta = new LayerMetadata();
        delta.version = 4;
        delta.operation = "append";
        delta.deltaAppend = true;
        delta.changedRanges = List.of(new long[] {100, 200});
        LayerMetadata mine = new LayerMetadata();
        mine.operation = "delete";
        mine.readVersion = 3;
        mine.changedRanges = List.of(new long[] {150, 160});
        try {
            io.sfclayer.commit.Conflicts.check("l", mine, List.of(delta));
            fail("a delete must not commit over a put it never saw");
        } catch (SfcLayerException.ConcurrentUpdate expected) {
            assertTrue(expected.getMessage().contains("version 4"));
        }
        // a delta append over the delete, a compaction and an append meeting its ranges: rebases
        LayerMetadata mineDelta = new LayerMetadata();
        mineDelta.operation = "append";
        mineDelta.deltaAppend = true;
        mineDelta.readVersion = 3;
        mineDelta.changedRanges = List.of(new long[] {150, 160});
        LayerMetadata del = new LayerMetadata();
        del.version = 5;
        del.operation = "delete";
        del.removedFiles = List.of("d/a");
        del.changedRanges = List.of(new long[] {0, 1000});
        io.sfclayer.commit.Conflicts.check("l", mineDelta, List.of(delta, del));
        LayerMetadata over = new LayerMetadata();
        over.version = 6;
        over.operation = "overwrite";
        try {
            io.sfclayer.commit.Conflicts.check("l", mineDelta, List.of(over));
            fail("an overwrite replaced the layer");
        } catch (SfcLayerException.ConcurrentUpdate expected) {
            assertTrue(expected.getMessage().contains("replaced the whole layer"));
        }
    }
}
