package io.sfclayer.spark;

import io.sfclayer.commit.VersionLog;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.layer.LayerVerifier;
import io.sfclayer.layer.Vacuum;
import io.sfclayer.testing.CrashPointFs;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.ClassRule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

/**
 * Every filesystem call of an operation a crash point (issue 35): each operation (a small append, a
 * shuffled append, a delete, a compaction, a vacuum, a restore of version 1, a repair rewriting a file) is run once recording its calls on the layer
 * ({@link CrashPointFs} as the local filesystem of a Spark local session), then once per call and
 * failure mode with that call failing (an IOException, a java.lang.Error, or an IOException from that
 * call on: a crash), each time on a fresh copy of the same layer. After each run the layer must be
 * exactly as before or exactly as after the operation (its newest version and content), every version
 * in its log verifies clean (nothing a version references was deleted or damaged), and a next write and
 * a vacuum work and leave it verifying clean. The counts of crash points per operation are printed.
 * Every sixth point also runs the next write and vacuum (the others check the first two properties),
 * an IOException and an Error at every call: 260 runs, 105 s on two cores at load 11-15 (211 s at load 21).
 * {@code -Dsfclayer.crashpoints.all=true} (make crash-points) adds the crash mode and checks all at every point.
 */
public class CrashPointsTest {
    @ClassRule
    public static TemporaryFolder tmp = new TemporaryFolder();

    private static SparkSession spark;
    private static File pristine;
    /** The pristine layer's newest version and its (count, sum) fingerprint. */
    private static long baseVersion;
    private static String baseDigest;
    /** The name of the pristine layer's first data file (the file the repair rewrites). */
    private static String repairName;
    /** Every how many points the next write and vacuum are checked too (all with sfclayer.crashpoints.all). */
    private static final int EVERY = 6;
    private static final boolean ALL = Boolean.getBoolean("sfclayer.crashpoints.all");
    /** An IOException and an Error at each call in every run; a crash (every call failing from it on) in the full one. */
    private static final List<CrashPointFs.Mode> MODES = ALL ? List.of(CrashPointFs.Mode.values())
        : List.of(CrashPointFs.Mode.IO_EXCEPTION, CrashPointFs.Mode.ERROR);

    @BeforeClass
    public static void start() throws IOException {
        spark = SparkSession.builder().master("local[2]").appName("crash-points")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.hadoop.fs.file.impl", CrashPointFs.class.getName())
            .config("spark.hadoop.fs.file.impl.disable.cache", "true")
            .getOrCreate();
        pristine = new File(tmp.getRoot(), "pristine");
        String path = pristine.getAbsolutePath();
        write(0, 0, 8, 0, path, "error", 2);
        write(8, 0, 4, 3, path, "append", 2); // version 2: a small file (compact has files to merge)
        write(0, 0, 4, 5, path, "append", 2); // version 3 rewrites a file: vacuum then has one to remove
        baseVersion = log(path).current().version;
        baseDigest = log(path).current().digest;
        repairName = io.sfclayer.layer.Layer.open(conf(), path).files().get(0).name;
    }

    @AfterClass
    public static void stop() {
        CrashPointFs.disarm();
        spark.stop();
    }

    private static Configuration conf() {
        return spark.sparkContext().hadoopConfiguration();
    }

    private static VersionLog log(String path) throws IOException {
        return new VersionLog(conf(), new Path(path));
    }

    /** Tiles [c0, c0 + side) x [r0, r0 + side), v = col * 100 + row + add. */
    private static void write(int c0, int r0, int side, int add, String path, String mode, int partitions) {
        spark.range((long) side * side).selectExpr("int(id % " + side + ") + " + c0 + " AS col",
                "int(id DIV " + side + ") + " + r0 + " AS row",
                "(int(id % " + side + ") + " + c0 + ") * 100 + int(id DIV " + side + ") + " + r0 + " + " + add + " AS v")
            .write().format(SfcLayerSource.class.getName()).mode(mode).option("bounds", "0,0,15,15")
            .option("partitions", String.valueOf(partitions)).option("blockSize", "64k")
            .option("smallAppendBytes", mode.equals("append") && partitions > 2 ? "0" : "1m").save(path);
    }

    /** count * 10^9 + sum(v) of the newest version: reads every tile. */
    private static long fingerprint(String path) {
        Row r = spark.read().format(SfcLayerSource.class.getName()).load(path).selectExpr("count(*)", "sum(v)").first();
        return r.getLong(0) * 1_000_000_000L + (r.isNullAt(1) ? 0 : r.getLong(1));
    }

    /** An operation on the layer at a path. */
    private interface Operation {
        void run(String path) throws Exception;
    }

    private static final Map<String, Operation> OPERATIONS = new LinkedHashMap<>();

    static {
        OPERATIONS.put("append (small, on the driver)", p -> write(0, 8, 2, 7, p, "append", 2));
        OPERATIONS.put("append (shuffled)", p -> write(4, 4, 4, 9, p, "append", 3));
        OPERATIONS.put("delete", p -> SfcLayerCommands.deleteVersion(spark, p, "0,0,3,3", null, null));
        OPERATIONS.put("compact", p -> SfcLayerUpdate.compact(spark, p));
        OPERATIONS.put("vacuum", p -> Vacuum.run(conf(), p, 0, false, false));
        OPERATIONS.put("restore", p -> io.sfclayer.layer.LayerRestore.restore(conf(), p, 1, -1));
        // repair's path (read a named file, rewrite it without its damaged records, commit) on a whole file
        OPERATIONS.put("repair", p -> SfcLayerUpdate.repair(spark, p, baseVersion, List.of(repairName), Map.of()));
    }

    /** A fresh copy of the pristine layer (files keep their times). */
    private static String copy(String name) throws IOException {
        File dir = new File(tmp.getRoot(), name);
        java.nio.file.Path from = pristine.toPath();
        try (Stream<java.nio.file.Path> s = Files.walk(from)) {
            for (java.nio.file.Path p : (Iterable<java.nio.file.Path>) s::iterator) {
                Files.copy(p, dir.toPath().resolve(from.relativize(p).toString()), StandardCopyOption.COPY_ATTRIBUTES);
            }
        }
        return dir.getAbsolutePath();
    }

    private static void remove(String path) throws IOException {
        try (Stream<java.nio.file.Path> s = Files.walk(new File(path).toPath())) {
            s.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    /** What the operation leaves when it succeeds: its newest version and fingerprint. */
    private static long[] after(String name, Operation op) throws Exception {
        String path = copy("after-" + name.replaceAll("\\W", ""));
        CrashPointFs.arm(path, 0, CrashPointFs.Mode.IO_EXCEPTION);
        op.run(path);
        int calls = CrashPointFs.recorded().size();
        if (Boolean.getBoolean("sfclayer.crashpoints.countOnly")) {
            System.out.println(name + " calls: " + CrashPointFs.recorded());
        }
        CrashPointFs.disarm();
        LayerMetadata md = log(path).current();
        long[] out = {md.version, md.recordCount, calls};
        remove(path);
        return out;
    }

    private static void assertAllVersionsVerify(String path, String where) throws IOException {
        for (long v : log(path).versions()) {
            String report = LayerVerifier.run(conf(), path, v);
            assertTrue(where + ": version " + v + " verifies clean: " + report, report.contains("\"problems\":[]"));
        }
    }

    @Test
    public void everyCallOfEveryOperationIsACrashPoint() throws Exception {
        Map<String, String> counts = new LinkedHashMap<>();
        List<String> failures = new ArrayList<>();
        long started = System.nanoTime();
        int points = 0;
        for (Map.Entry<String, Operation> e : OPERATIONS.entrySet()) {
            String name = e.getKey();
            long[] done = after(name, e.getValue());
            int calls = (int) done[2];
            counts.put(name, calls + " calls");
            if (Boolean.getBoolean("sfclayer.crashpoints.countOnly")) {
                continue;
            }
            for (CrashPointFs.Mode mode : MODES) {
                for (int at = 1; at <= calls; at++) {
                    points++;
                    String where = name + ", call " + at + " of " + calls + ", " + mode;
                    String path = copy("point-" + points);
                    CrashPointFs.arm(path, at, mode);
                    String call = null;
                    try {
                        e.getValue().run(path);
                    } catch (Exception | Error t) {
                        // the injected failure, as the operation reports it: checked below by its effects
                    } finally {
                        List<String> rec = CrashPointFs.recorded();
                        call = rec.size() >= at ? rec.get(at - 1) : "(fewer calls: " + rec.size() + ")";
                        CrashPointFs.disarm();
                    }
                    try {
                        check(path, done, where + " [" + call + "]", ALL || points % EVERY == 0);
                    } catch (AssertionError | Exception t) {
                        failures.add(where + " [" + call + "]: " + t);
                    }
                    remove(path);
                }
            }
        }
        System.out.println("crash points (local files, one JVM): " + counts + " x " + MODES.size()
            + " failure modes = " + points + " runs in " + (System.nanoTime() - started) / 1_000_000_000L + " s");
        if (!failures.isEmpty()) {
            fail(failures.size() + " of " + points + " crash points broke the layer:\n" + String.join("\n", failures));
        }
    }

    /**
     * The layer at {@code path} after a failed run: as before (its newest document the pristine one,
     * byte for byte) or as after (the next version, by this operation, with the totals a successful run
     * gives), every version in its log verifying clean (every file it lists whole: nothing it references
     * was deleted or damaged); with {@code writeNext}, a next write and a vacuum work and leave it clean,
     * the next write's tiles read back.
     */
    private static void check(String path, long[] done, String where, boolean writeNext) throws Exception {
        LayerMetadata newest = log(path).current();
        boolean before = newest.version == baseVersion && newest.digest.equals(baseDigest);
        boolean afterOp = newest.version == done[0] && newest.recordCount == done[1]
            && (done[0] == baseVersion ? newest.digest.equals(baseDigest) : !newest.digest.equals(baseDigest));
        assertTrue(where + ": newest version " + newest.version + " (" + newest.recordCount + " records) is neither"
            + " as before (" + baseVersion + ") nor as after (" + done[0] + ", " + done[1] + " records)",
            before || afterOp);
        assertAllVersionsVerify(path, where);
        if (!writeNext) {
            return;
        }
        long fp = fingerprint(path);
        write(12, 12, 2, 1, path, "append", 2);
        Vacuum.run(conf(), path, 0, false, false);
        assertAllVersionsVerify(path, where + ", after a next write and a vacuum");
        assertEquals(where + ": the next write's tiles are there", fp + nextWriteDelta(), fingerprint(path));
    }

    /** What the next write (tiles (12..13, 12..13), v = col * 100 + row + 1) adds to a fingerprint. */
    private static long nextWriteDelta() {
        long sum = 0;
        for (int c = 12; c < 14; c++) {
            for (int r = 12; r < 14; r++) {
                sum += c * 100L + r + 1;
            }
        }
        return 4 * 1_000_000_000L + sum;
    }
}
