package io.sfclayer.spark;

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
import org.junit.rules.TemporaryFolder;

import java.io.File;
import java.io.IOException;
import java.sql.Timestamp;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;

/**
 * The layers the delta read tests read (format 7, docs/FORMAT.md section 11), built by hand with
 * {@link DeltaVersions} from layers written by the real write path, with a dict model of each version
 * in which later tiles replace earlier ones of the same key: a spatial layer (version 1 the base, 2..4
 * a delta version each, bloom filters on some) and a space-time one (z3, several keys per index, zstd).
 */
public abstract class DeltaLayersBase {
    @ClassRule
    public static final TemporaryFolder TMP = new TemporaryFolder();
    static SparkSession spark;
    static final int N = 64;
    static final String BOUNDS = "0,0," + (N - 1) + "," + (N - 1);
    /** The spatial layer: version 1 the base, 2..4 each one more delta version. */
    static String layer;
    /** Each version's tiles: "col,row" -> v. */
    static final List<Map<String, Long>> MODELS = new ArrayList<>();
    /** The space-time layer (z3, several keys per index, zstd): version 1 the base, 2..3 deltas. */
    static String st;
    static final List<Map<String, Long>> ST_MODELS = new ArrayList<>();
    static final long DAY = 86_400_000_000L;
    static final long T0 = 1_577_836_800_000_000L; // 2020-01-01

    @BeforeClass
    public static void build() throws IOException {
        MODELS.clear();
        ST_MODELS.clear();
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

    static Configuration conf() {
        return spark.sparkContext().hadoopConfiguration();
    }

    static Map<String, Long> randomTiles(Random rnd, int n, long add) {
        Map<String, Long> out = new TreeMap<>();
        while (out.size() < n) {
            int c = rnd.nextInt(N), r = rnd.nextInt(N);
            out.put(c + "," + r, c * 1000L + r + add);
        }
        return out;
    }

    static void writeSpatial(String path, Map<String, Long> tiles, int partitions, boolean bloom) {
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

    static void writeSpaceTime(String path, Map<String, Long> tiles) {
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

    static Dataset<Row> read(String path, long version) {
        return spark.read().format(SfcLayerSource.class.getName()).option("versionAsOf", String.valueOf(version))
            .load(path);
    }

    /** The model's tiles in a box (and passing {@code keep}). */
    static Map<String, Long> inBox(Map<String, Long> model, int c0, int r0, int c1, int r1,
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

    static Map<String, Long> collect(Dataset<Row> d, boolean spaceTime) {
        Map<String, Long> out = new TreeMap<>();
        for (Row r : d.collectAsList()) {
            String key = r.getInt(r.fieldIndex("col")) + "," + r.getInt(r.fieldIndex("row"))
                + (spaceTime ? "," + micros(r.getTimestamp(r.fieldIndex("time"))) : "");
            Long before = out.put(key, r.getLong(r.fieldIndex("v")));
            assertNull("key " + key + " read twice", before);
        }
        return out;
    }

    static long micros(Timestamp t) {
        return t.getTime() / 1000 * 1_000_000L + (t.getNanos() / 1000) % 1_000_000;
    }


    static int[] missingKey() {
        for (int c = 0; c < N; c++) {
            for (int r = 0; r < N; r++) {
                if (!MODELS.get(MODELS.size() - 1).containsKey(c + "," + r)) {
                    return new int[] {c, r};
                }
            }
        }
        throw new AssertionError("every key is held");
    }

    static String copy(String name) throws IOException {
        File to = new File(TMP.getRoot(), name);
        java.nio.file.Path from = new File(layer).toPath();
        try (java.util.stream.Stream<java.nio.file.Path> all = java.nio.file.Files.walk(from)) {
            for (java.nio.file.Path p : (Iterable<java.nio.file.Path>) all::iterator) {
                java.nio.file.Files.copy(p, to.toPath().resolve(from.relativize(p).toString()));
            }
        }
        return to.getAbsolutePath();
    }

    static String messages(Throwable e) {
        StringBuilder b = new StringBuilder();
        for (Throwable t = e; t != null; t = t.getCause()) {
            b.append(t.getClass().getName()).append(": ").append(t.getMessage()).append("\n");
        }
        return b.toString();
    }

    static GenericRecord decode(Schema schema, byte[] record) {
        try {
            return new GenericDatumReader<GenericRecord>(schema).read(null,
                DecoderFactory.get().binaryDecoder(record, null));
        } catch (IOException e) {
            throw new AssertionError("record does not decode", e);
        }
    }

}
