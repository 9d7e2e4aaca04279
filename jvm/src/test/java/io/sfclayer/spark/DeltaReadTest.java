package io.sfclayer.spark;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.sfclayer.SfcLayerException;
import io.sfclayer.format.DeltaFile;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.format.VersionLog;
import io.sfclayer.layer.BoxQuery;
import io.sfclayer.layer.Layer;
import io.sfclayer.layer.LayerVerifier;
import io.sfclayer.layer.Vacuum;
import io.sfclayer.lookup.ValueReader;
import io.sfclayer.testing.DeltaVersions;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.DecoderFactory;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
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
import java.io.RandomAccessFile;
import java.sql.Timestamp;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

/**
 * Reads of format 7 versions (delta files, docs/FORMAT.md section 11), built by hand with
 * {@link DeltaVersions} from layers written by the real write path: box scans (Spark and the
 * driver's), look-ups, counts, time travel, statistics pruning, verify, damage and vacuum, each
 * against a dict model in which later tiles replace earlier ones of the same key.
 */
public class DeltaReadTest {
    @ClassRule
    public static final TemporaryFolder TMP = new TemporaryFolder();
    private static SparkSession spark;
    private static final int N = 64;
    private static final String BOUNDS = "0,0," + (N - 1) + "," + (N - 1);
    /** The spatial layer: version 1 the base, 2..4 each one more delta version. */
    private static String layer;
    /** Each version's tiles: "col,row" -> v. */
    private static final List<Map<String, Long>> MODELS = new ArrayList<>();
    /** The space-time layer (z3, several keys per index, zstd): version 1 the base, 2..3 deltas. */
    private static String st;
    private static final List<Map<String, Long>> ST_MODELS = new ArrayList<>();
    private static final long DAY = 86_400_000_000L;
    private static final long T0 = 1_577_836_800_000_000L; // 2020-01-01

    @BeforeClass
    public static void build() throws IOException {
        spark = SparkSession.builder().master("local[2]").appName("delta-read")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .getOrCreate();
        Random rnd = new Random(38);
        layer = TMP.newFolder("spatial").getAbsolutePath();
        // the base lacks the 4 x 4 block at the origin (z indexes 0..15): deltas there precede every base file
        Map<String, Long> base = new TreeMap<>();
        for (int c = 0; c < N; c++) {
            for (int r = 0; r < N; r++) {
                if ((c >= 4 || r >= 4) && (c * 7 + r * 3) % 5 != 0) {
                    base.put(c + "," + r, c * 1000L + r);
                }
            }
        }
        writeSpatial(layer, base, 4, true);
        MODELS.add(base);
        // deltas: replaced keys, new keys (some at the origin), one without bloom filters, a newest one of big values
        Map<String, Long> d1 = randomTiles(rnd, 300, 100_000);
        d1.put("0,0", 100_000L);
        d1.put("1,1", 100_011L);
        Map<String, Long> d2 = randomTiles(rnd, 300, 200_000);
        d2.put("1,1", 200_011L);
        Map<String, Long> d3 = new TreeMap<>();
        int k = 0;
        for (String key : d1.keySet()) {
            if (k++ % 2 == 0) {
                d3.put(key, d1.get(key) + 200_000); // newer values of half of the first delta's keys
            }
        }
        int at = 0;
        for (Map<String, Long> d : List.of(d1, d2, d3)) {
            String src = TMP.newFolder("delta" + at++).getAbsolutePath();
            writeSpatial(src, d, d == d3 ? 1 : 3, d != d1);
            long v = DeltaVersions.add(conf(), layer, src);
            Map<String, Long> m = new TreeMap<>(MODELS.get(MODELS.size() - 1));
            m.putAll(d);
            MODELS.add(m);
            assertEquals(MODELS.size(), v);
        }
        st = TMP.newFolder("spacetime").getAbsolutePath();
        Map<String, Long> stBase = new TreeMap<>();
        for (int c = 0; c < 16; c++) {
            for (int r = 0; r < 16; r++) {
                for (int t = 0; t < 3; t++) {
                    if ((c + r + t) % 4 != 0) {
                        stBase.put(c + "," + r + "," + (T0 + t * DAY), (long) (c * 1000 + r * 10 + t));
                    }
                }
            }
        }
        writeSpaceTime(st, stBase);
        ST_MODELS.add(stBase);
        for (int i = 1; i <= 2; i++) {
            Map<String, Long> d = new TreeMap<>();
            for (int c = 0; c < 16; c++) {
                for (int r = 0; r < 16; r++) {
                    if ((c * 3 + r + i) % 5 == 0) {
                        d.put(c + "," + r + "," + (T0 + i * DAY), 1_000_000L * i + c * 1000 + r); // may replace
                        d.put(c + "," + r + "," + (T0 + (2 + i) * DAY), 1_000_000L * i + c * 1000 + r + 7); // new times
                    }
                }
            }
            String src = TMP.newFolder("stdelta" + i).getAbsolutePath();
            writeSpaceTime(src, d);
            DeltaVersions.add(conf(), st, src);
            Map<String, Long> m = new TreeMap<>(ST_MODELS.get(ST_MODELS.size() - 1));
            m.putAll(d);
            ST_MODELS.add(m);
        }
    }

    @AfterClass
    public static void stop() {
        spark.stop();
    }

    private static Configuration conf() {
        return spark.sparkContext().hadoopConfiguration();
    }

    private static Map<String, Long> randomTiles(Random rnd, int n, long add) {
        Map<String, Long> out = new TreeMap<>();
        while (out.size() < n) {
            int c = rnd.nextInt(N), r = rnd.nextInt(N);
            out.put(c + "," + r, c * 1000L + r + add);
        }
        return out;
    }

    private static void writeSpatial(String path, Map<String, Long> tiles, int partitions, boolean bloom) {
        List<Row> rows = new ArrayList<>();
        for (Map.Entry<String, Long> e : tiles.entrySet()) {
            String[] p = e.getKey().split(",");
            rows.add(RowFactory.create(Integer.parseInt(p[0]), Integer.parseInt(p[1]), e.getValue()));
        }
        StructType schema = new StructType().add("col", DataTypes.IntegerType, false)
            .add("row", DataTypes.IntegerType, false).add("v", DataTypes.LongType, false);
        spark.createDataFrame(rows, schema).write().format(SfcLayerSource.class.getName()).mode("errorifexists")
            .option("bounds", BOUNDS).option("partitions", String.valueOf(partitions))
            .option("bloomFilter", String.valueOf(bloom)).save(path);
    }

    private static void writeSpaceTime(String path, Map<String, Long> tiles) {
        List<Row> rows = new ArrayList<>();
        for (Map.Entry<String, Long> e : tiles.entrySet()) {
            String[] p = e.getKey().split(",");
            Timestamp t = new Timestamp(Long.parseLong(p[2]) / 1000);
            rows.add(RowFactory.create(Integer.parseInt(p[0]), Integer.parseInt(p[1]), t, e.getValue()));
        }
        StructType schema = new StructType().add("col", DataTypes.IntegerType, false)
            .add("row", DataTypes.IntegerType, false).add("time", DataTypes.TimestampType, false)
            .add("v", DataTypes.LongType, false);
        // one time bin of a year: a key's every time shares its index (several keys per group)
        spark.createDataFrame(rows, schema).write().format(SfcLayerSource.class.getName()).mode("errorifexists")
            .option("bounds", "0,0,15,15").option("timeBounds", "2020-01-01,2020-12-31")
            .option("timeResolution", "366 days").option("compression", "zstd").option("partitions", "2")
            .save(path);
    }

    private static Dataset<Row> read(String path, long version) {
        return spark.read().format(SfcLayerSource.class.getName()).option("versionAsOf", String.valueOf(version))
            .load(path);
    }

    /** The model's tiles in a box (and passing {@code keep}). */
    private static Map<String, Long> inBox(Map<String, Long> model, int c0, int r0, int c1, int r1,
                                           java.util.function.LongPredicate keep) {
        Map<String, Long> out = new TreeMap<>();
        for (Map.Entry<String, Long> e : model.entrySet()) {
            String[] p = e.getKey().split(",");
            int c = Integer.parseInt(p[0]), r = Integer.parseInt(p[1]);
            if (c >= c0 && c <= c1 && r >= r0 && r <= r1 && keep.test(e.getValue())) {
                out.put(e.getKey(), e.getValue());
            }
        }
        return out;
    }

    private static Map<String, Long> collect(Dataset<Row> d, boolean spaceTime) {
        Map<String, Long> out = new TreeMap<>();
        for (Row r : d.collectAsList()) {
            String key = r.getInt(r.fieldIndex("col")) + "," + r.getInt(r.fieldIndex("row"))
                + (spaceTime ? "," + micros(r.getTimestamp(r.fieldIndex("time"))) : "");
            Long before = out.put(key, r.getLong(r.fieldIndex("v")));
            assertNull("key " + key + " read twice", before);
        }
        return out;
    }

    private static long micros(Timestamp t) {
        return t.getTime() / 1000 * 1_000_000L + (t.getNanos() / 1000) % 1_000_000;
    }

    @Test
    public void theVersionsListTheirDeltasInOrder() throws IOException {
        LayerMetadata md = Layer.open(conf(), layer).metadata();
        assertEquals(4, md.version);
        assertEquals(LayerMetadata.DELTA_FORMAT_VERSION, md.formatVersion);
        long prev = 0;
        java.util.Set<Long> added = new java.util.TreeSet<>();
        for (DeltaFile d : md.deltas) {
            assertTrue(d.addedIn >= prev);
            prev = d.addedIn;
            added.add(d.addedIn);
        }
        assertEquals(java.util.Set.of(2L, 3L, 4L), added);
        assertTrue("the test needs base files after the origin block, got first index "
            + Layer.open(conf(), layer).listing().start(0), Layer.open(conf(), layer).listing().start(0) >= 16);
        assertTrue(Layer.open(conf(), layer, 1, -1).metadata().deltas.isEmpty());
    }

    @Test
    public void boxScansOfEveryVersionMatchTheModel() {
        Random rnd = new Random(1);
        for (int v = 1; v <= MODELS.size(); v++) {
            Map<String, Long> model = MODELS.get(v - 1);
            assertEquals("version " + v + " whole", model, collect(read(layer, v), false));
            for (int i = 0; i < 6; i++) {
                int c0 = rnd.nextInt(N), r0 = rnd.nextInt(N);
                int c1 = Math.min(N - 1, c0 + rnd.nextInt(24)), r1 = Math.min(N - 1, r0 + rnd.nextInt(24));
                if (i == 0) {
                    c0 = 0;
                    r0 = 0; // the origin block: deltas before the first base file
                }
                Dataset<Row> d = read(layer, v).where("col between " + c0 + " and " + c1 + " and row between " + r0
                    + " and " + r1);
                assertEquals("version " + v + " box " + c0 + "," + r0 + "," + c1 + "," + r1,
                    inBox(model, c0, r0, c1, r1, x -> true), collect(d, false));
            }
        }
    }

    @Test
    public void valueFiltersNeverSeeAStaleTile() {
        Map<String, Long> model = MODELS.get(MODELS.size() - 1);
        // base files' statistics rule out v >= 300000, and deltas' v < 100000: both must still be read
        // where a newer or older tile of the same key lies in another file
        assertEquals(inBox(model, 0, 0, N - 1, N - 1, x -> x >= 300_000),
            collect(read(layer, 4).where("v >= 300000"), false));
        assertEquals(inBox(model, 0, 0, N - 1, N - 1, x -> x < 100_000),
            collect(read(layer, 4).where("v < 100000"), false));
        assertEquals(inBox(model, 0, 0, 20, 40, x -> x >= 200_000 && x < 300_000),
            collect(read(layer, 4).where("v >= 200000 and v < 300000 and col <= 20 and row <= 40"), false));
        // a version without deltas still prunes base files by their statistics
        String plan = read(layer, 1).where("v >= 300000").queryExecution().executedPlan().toString();
        assertTrue(plan, plan.contains("by statistics 4]") || plan.contains("files=0/"));
    }

    @Test
    public void countsMergeTheDeltas() throws IOException {
        for (int v = 1; v <= MODELS.size(); v++) {
            assertEquals("version " + v, MODELS.get(v - 1).size(), read(layer, v).count());
            assertEquals("version " + v, inBox(MODELS.get(v - 1), 0, 0, 9, 30, x -> true).size(),
                read(layer, v).where("col <= 9 and row <= 30").count());
            try (ValueReader r = ValueReader.open(conf(), layer, 16, v, -1)) {
                assertEquals(MODELS.get(v - 1).size(), r.count(r.boxQuery("")));
                assertEquals(inBox(MODELS.get(v - 1), 3, 2, 40, 17, x -> true).size(),
                    r.count(r.boxQuery("keys=3,2,40,17")));
            }
        }
    }

    @Test
    public void lookUpsAnswerTheNewestTile() throws IOException {
        for (int v = 1; v <= MODELS.size(); v++) {
            Map<String, Long> model = MODELS.get(v - 1);
            try (ValueReader r = ValueReader.open(conf(), layer, 16, v, -1)) {
                Schema schema = new Schema.Parser().parse(r.tileSchemaJson());
                int[] cols = new int[N * N], rows = new int[N * N];
                int i = 0;
                for (int c = 0; c < N; c++) {
                    for (int row = 0; row < N; row++) {
                        byte[] rec = r.getOrNull(c, row, 0);
                        Long want = model.get(c + "," + row);
                        assertEquals("version " + v + " key " + c + "," + row, want,
                            rec == null ? null : (Long) decode(schema, rec).get("v"));
                        cols[i] = c;
                        rows[i++] = row;
                    }
                }
                int[] found = {0};
                r.getMany(cols, rows, new long[cols.length], (j, rec) -> {
                    Long want = model.get(cols[j] + "," + rows[j]);
                    assertEquals(want, rec == null ? null : (Long) decode(schema, rec).get("v"));
                    found[0]++;
                });
                assertEquals(cols.length, found[0]);
                int[] missing = missingKey();
                assertThrows(SfcLayerException.KeyNotFound.class, () -> r.get(missing[0], missing[1]));
                if (v == MODELS.size()) {
                    assertTrue("bloom filters skip files", r.bloomSkips() > 0);
                }
            }
        }
    }

    /** A key no version holds (the newest holds every key any version did: nothing is deleted). */
    private static int[] missingKey() {
        for (int c = 0; c < N; c++) {
            for (int r = 0; r < N; r++) {
                if (!MODELS.get(MODELS.size() - 1).containsKey(c + "," + r)) {
                    return new int[] {c, r};
                }
            }
        }
        throw new AssertionError("every key is held");
    }

    @Test
    public void driverBoxQueriesMatchTheModel() throws IOException {
        Random rnd = new Random(2);
        for (int v = 1; v <= MODELS.size(); v++) {
            try (ValueReader r = ValueReader.open(conf(), layer, 2, v, -1)) { // a cache smaller than a merge's files
                Schema schema = new Schema.Parser().parse(r.tileSchemaJson());
                for (int i = 0; i < 5; i++) {
                    int c0 = i == 0 ? 0 : rnd.nextInt(N), r0 = i == 0 ? 0 : rnd.nextInt(N);
                    int c1 = i == 4 ? N - 1 : Math.min(N - 1, c0 + rnd.nextInt(30));
                    int r1 = i == 4 ? N - 1 : Math.min(N - 1, r0 + rnd.nextInt(30));
                    if (i == 4) {
                        c0 = 0;
                        r0 = 0;
                    }
                    Map<String, Long> got = new TreeMap<>();
                    long n = r.query(r.boxQuery("keys=" + c0 + "," + r0 + "," + c1 + "," + r1), batch -> {
                        for (byte[] rec : batch) {
                            GenericRecord g = decode(schema, rec);
                            assertNull(got.put(g.get("col") + "," + g.get("row"), (Long) g.get("v")));
                        }
                    });
                    assertEquals(got.size(), n);
                    assertEquals("version " + v + " box " + c0 + "," + r0 + "," + c1 + "," + r1,
                        inBox(MODELS.get(v - 1), c0, r0, c1, r1, x -> true), got);
                }
                long[] limited = {0};
                assertEquals(7, r.query(r.boxQuery("limit=7"), batch -> limited[0] += batch.size()));
                assertEquals(7, limited[0]);
            }
        }
    }

    @Test
    public void spaceTimeLayersMergeByTheWholeKey() throws IOException {
        for (int v = 1; v <= ST_MODELS.size(); v++) {
            Map<String, Long> model = ST_MODELS.get(v - 1);
            assertEquals("version " + v, model, collect(read(st, v), true));
            assertEquals(inBox(model, 2, 3, 9, 12, x -> true),
                collect(read(st, v).where("col between 2 and 9 and row between 3 and 12"), true));
            assertEquals(model.size(), read(st, v).count());
            try (ValueReader r = ValueReader.open(conf(), st, 16, v, -1)) {
                Schema schema = new Schema.Parser().parse(r.tileSchemaJson());
                for (int c = 0; c < 16; c++) {
                    for (int row = 0; row < 16; row++) {
                        for (int t = 0; t < 5; t++) {
                            long time = T0 + t * DAY;
                            byte[] rec = r.getOrNull(c, row, time);
                            assertEquals("version " + v + " key " + c + "," + row + "," + t,
                                model.get(c + "," + row + "," + time),
                                rec == null ? null : (Long) decode(schema, rec).get("v"));
                        }
                    }
                }
                assertEquals(model.size(), r.count(r.boxQuery("")));
            }
        }
    }

    @Test
    public void verifyChecksTheDeltasAndFindsThemClean() throws IOException {
        LayerMetadata md = Layer.open(conf(), layer).metadata();
        @SuppressWarnings("unchecked")
        Map<String, Object> report = new ObjectMapper().readValue(LayerVerifier.run(conf(), layer, null), Map.class);
        assertEquals(report.toString(), List.of(), report.get("problems"));
        assertEquals(report.toString(), List.of(), report.get("files"));
        assertEquals((int) md.fileCount + md.deltas.size(), report.get("filesChecked"));
        assertEquals(md.deltas.size(), report.get("deltasChecked"));
    }

    /** A copy of the spatial layer, for tests that damage or vacuum it. */
    private static String copy(String name) throws IOException {
        File to = new File(TMP.getRoot(), name);
        java.nio.file.Path from = new File(layer).toPath();
        try (java.util.stream.Stream<java.nio.file.Path> all = java.nio.file.Files.walk(from)) {
            for (java.nio.file.Path p : (Iterable<java.nio.file.Path>) all::iterator) {
                java.nio.file.Files.copy(p, to.toPath().resolve(from.relativize(p).toString()));
            }
        }
        return to.getAbsolutePath();
    }

    @Test
    public void aDamagedDeltaFailsReadsNamingIt() throws IOException {
        String path = copy("damaged");
        LayerMetadata md = Layer.open(conf(), path).metadata();
        DeltaFile newest = md.deltas.get(md.deltas.size() - 1);
        File data = new File(new File(new File(path, newest.file.dir), newest.file.name), "data");
        try (RandomAccessFile f = new RandomAccessFile(data, "rw")) {
            long at = f.length() - 6; // in the last record's group
            f.seek(at);
            int b = f.read();
            f.seek(at);
            f.write(b ^ 0x5a);
        }
        long[] key = md.keyIndex.decode(newest.file.lastIndex);
        try (ValueReader r = ValueReader.open(conf(), path, 16)) {
            SfcLayerException.CorruptLayer e = assertThrows(SfcLayerException.CorruptLayer.class,
                () -> r.getOrNull((int) key[0], (int) key[1], 0));
            assertTrue(e.getMessage(), e.getMessage().contains(newest.file.name) && e.getMessage().contains(newest.file.dir));
        }
        Exception e = assertThrows(Exception.class, () -> read(path, md.version).collectAsList());
        assertTrue(messages(e), messages(e).contains("CorruptLayer") || messages(e).contains("SFCLAYER_CORRUPT"));
        assertTrue(messages(e), messages(e).contains(newest.file.dir + "/" + newest.file.name));
        @SuppressWarnings("unchecked")
        Map<String, Object> report = new ObjectMapper().readValue(LayerVerifier.run(conf(), path, null), Map.class);
        @SuppressWarnings("unchecked")
        List<Map<String, Object>> files = (List<Map<String, Object>>) report.get("files");
        assertEquals(report.toString(), 1, files.size());
        assertEquals(newest.file.name, files.get(0).get("name"));
        assertEquals(newest.file.dir, files.get(0).get("dir"));
        assertEquals(Boolean.TRUE, files.get(0).get("delta"));
        // the version before it never lists that file: it reads whole
        assertEquals(MODELS.get(2), collect(read(path, 3), false));
    }

    private static String messages(Throwable e) {
        StringBuilder b = new StringBuilder();
        for (Throwable t = e; t != null; t = t.getCause()) {
            b.append(t.getClass().getName()).append(": ").append(t.getMessage()).append("\n");
        }
        return b.toString();
    }

    @Test
    public void vacuumKeepsTheDeltasTheRetainedVersionsList() throws IOException {
        String path = copy("vacuumed");
        Map<String, Object> out = Vacuum.run(conf(), path, 0, false, false);
        assertEquals(out.toString(), List.of(4L), new VersionLog(conf(), new Path(path)).versions());
        assertEquals(MODELS.get(3), collect(read(path, 4), false));
        try (ValueReader r = ValueReader.open(conf(), path, 16)) {
            assertEquals(MODELS.get(3).size(), r.count(r.boxQuery("")));
        }
        @SuppressWarnings("unchecked")
        Map<String, Object> report = new ObjectMapper().readValue(LayerVerifier.run(conf(), path, null), Map.class);
        assertEquals(report.toString(), List.of(), report.get("problems"));
        assertEquals(report.toString(), List.of(), report.get("files"));
    }

    private static GenericRecord decode(Schema schema, byte[] record) {
        try {
            return new GenericDatumReader<GenericRecord>(schema).read(null,
                DecoderFactory.get().binaryDecoder(record, null));
        } catch (IOException e) {
            throw new AssertionError("record does not decode", e);
        }
    }

    @Test
    public void deltaVersionsRefuseALayerOfAnotherKind() throws IOException {
        assertNotNull(st);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
            () -> DeltaVersions.add(conf(), layer, st));
        assertTrue(e.getMessage(), e.getMessage().contains("key index"));
        assertFalse(new VersionLog(conf(), new Path(layer)).versions().contains(5L));
    }
}
