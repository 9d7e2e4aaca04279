package io.sfclayer.spark;

import io.sfclayer.format.LayerMetadata;
import io.sfclayer.layer.Vacuum;
import io.sfclayer.testing.CrashPointCheck;
import io.sfclayer.testing.CrashPointFs;
import org.apache.hadoop.conf.Configuration;
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
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

/**
 * Every filesystem call of an operation a crash point (issues 35 and 38): each operation (a small
 * append, a shuffled append, a delete, a compaction, a vacuum, a restore of version 1, a repair
 * rewriting a file; and on a layer with two delta versions (docs/FORMAT.md section 11): a delta append
 * on the driver and a shuffled one, a delta append that then compacts as a commit of its own
 * (compactAfterDeltas), a delete and a compaction folding the deltas) is run once recording its calls on
 * the layer ({@link CrashPointFs} as the local filesystem of a Spark local session), then once per call
 * and failure mode with that call failing (an IOException, a java.lang.Error, or an IOException from
 * that call on: a crash), each time on a fresh copy of the same layer. After each run the layer must be
 * exactly as before (its newest document byte for byte) or as after: a version the successful run made,
 * with the same operation, files, records and deltas (for the append that compacts, its own version or
 * the compaction's: a compaction that fails gives up), every version in its log verifies clean (nothing a
 * version references was deleted or damaged), and a next write and a vacuum work and leave it verifying
 * clean, the layer reading as the state it is in ({@link CrashPointCheck}, which StoreCrashPoints shares).
 * The counts of crash points per operation are printed.
 * Every sixth point also reads the content and runs the next write and vacuum (the others check the
 * first properties); an IOException and an Error at every call of the operations without deltas, and
 * each call of the delta ones in one of the two modes (alternating): 505 runs in 255 s on two cores at
 * load 16 (the delta operations 177 of them, 87 s).
 * {@code -Dsfclayer.crashpoints.all=true} (make crash-points) takes both modes at every call, adds the
 * crash mode and checks all at every point: 1023 runs in 1133 s at load 15.
 */
public class CrashPointsTest {
    @ClassRule
    public static TemporaryFolder tmp = new TemporaryFolder();

    private static SparkSession spark;
    /** The checks of a layer after a crash point, and the tiles written. */
    private static CrashPointCheck checks;
    /** Versions 1..3: a write, a small append, an append rewriting a file. */
    private static CrashPointCheck.Pristine plain;
    /** {@link #plain} and two delta versions (4 on the driver, 5 shuffled, overlapping each other and base files). */
    private static CrashPointCheck.Pristine withDeltas;
    /** The name of the plain layer's first data file (the file the repair rewrites). */
    private static String repairName;
    /** Every how many points the next write and vacuum are checked too (all with sfclayer.crashpoints.all). */
    private static final int EVERY = 6;
    private static final boolean ALL = Boolean.getBoolean("sfclayer.crashpoints.all");
    /** An IOException and an Error at each call in every run; a crash (every call failing from it on) in the full one. */
    private static final List<CrashPointFs.Mode> MODES = ALL ? List.of(CrashPointFs.Mode.values())
        : List.of(CrashPointFs.Mode.IO_EXCEPTION, CrashPointFs.Mode.ERROR);
    private static final StructType SCHEMA = new StructType().add("col", DataTypes.IntegerType, false)
        .add("row", DataTypes.IntegerType, false).add("v", DataTypes.IntegerType, false);

    @BeforeClass
    public static void start() throws IOException {
        spark = SparkSession.builder().master("local[2]").appName("crash-points")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.hadoop.fs.file.impl", CrashPointFs.class.getName())
            .config("spark.hadoop.fs.file.impl.disable.cache", "true")
            .getOrCreate();
        checks = new CrashPointCheck(spark);
        String path = new File(tmp.getRoot(), "pristine").getAbsolutePath();
        write(0, 0, 8, 0, path, "error", 2);
        write(8, 0, 4, 3, path, "append", 2); // version 2: a small file (compact has files to merge)
        write(0, 0, 4, 5, path, "append", 2); // version 3 rewrites a file: vacuum then has one to remove
        plain = checks.pristine(path);
        repairName = io.sfclayer.layer.Layer.open(conf(), path).files().get(0).name;
        String deltas = copy(plain, "pristine-deltas");
        deltaOnDriver(2, 2, 4, 11, deltas, "0"); // version 4: a delta over two base files
        deltaShuffled(3, 0, 4, 13, deltas, "0"); // version 5: a delta meeting version 4's and base files
        withDeltas = checks.pristine(deltas);
        assertEquals(2, checks.log(deltas).current().deltas.size());
    }

    @AfterClass
    public static void stop() {
        CrashPointFs.disarm();
        spark.stop();
    }

    private static Configuration conf() {
        return spark.sparkContext().hadoopConfiguration();
    }

    /** {@link CrashPointCheck#write}, copy-on-write. */
    private static void write(int c0, int r0, int side, int add, String path, String mode, int partitions) {
        checks.write(c0, r0, side, add, path, mode, partitions, null);
    }

    /** The same tiles as {@link CrashPointCheck#frame}, held by the driver (a local relation: appended without a Spark job). */
    private static Dataset<Row> localFrame(int c0, int r0, int side, int add) {
        List<Row> rows = new ArrayList<>();
        for (int c = c0; c < c0 + side; c++) {
            for (int r = r0; r < r0 + side; r++) {
                rows.add(RowFactory.create(c, r, c * 100 + r + add));
            }
        }
        return spark.createDataFrame(rows, SCHEMA);
    }

    private static Map<String, String> deltaOptions(String compactAfterDeltas) {
        return Map.of("bounds", "0,0,15,15", "blockSize", "64k", "appendMode", "delta",
            "compactAfterDeltas", compactAfterDeltas);
    }

    /** A delta append of a local DataFrame: written and committed on the driver (LocalAppend). */
    private static void deltaOnDriver(int c0, int r0, int side, int add, String path, String compactAfterDeltas) {
        SfcLayerWrite.run(spark, localFrame(c0, r0, side, add), path, SaveMode.Append, deltaOptions(compactAfterDeltas));
    }

    /** A delta append by a Spark job (one shuffle, tasks writing delta files). */
    private static void deltaShuffled(int c0, int r0, int side, int add, String path, String compactAfterDeltas) {
        Map<String, String> o = new HashMap<>(deltaOptions(compactAfterDeltas));
        o.put("smallAppendBytes", "0");
        o.put("partitions", "3");
        SfcLayerWrite.run(spark, checks.frame(c0, r0, side, add), path, SaveMode.Append, o);
    }

    private static final Map<String, CrashPointCheck.Case> OPERATIONS = new LinkedHashMap<>();

    static {
        put("append (small, on the driver)", false, p -> write(0, 8, 2, 7, p, "append", 2));
        put("append (shuffled)", false, p -> write(4, 4, 4, 9, p, "append", 3));
        put("delete", false, p -> SfcLayerCommands.deleteVersion(spark, p, "0,0,3,3", null, null));
        put("compact", false, p -> SfcLayerUpdate.compact(spark, p));
        put("vacuum", false, p -> Vacuum.run(conf(), p, 0, false, false));
        put("restore", false, p -> io.sfclayer.layer.LayerRestore.restore(conf(), p, 1, -1));
        // repair's path (read a named file, rewrite it without its damaged records, commit) on a whole file
        put("repair", false, p -> SfcLayerUpdate.repair(spark, p, plain.version, List.of(repairName), Map.of()));
        // delta files (docs/FORMAT.md section 11): each on the layer with two delta versions
        put("append as delta (on the driver)", true, p -> deltaOnDriver(1, 1, 3, 17, p, "0"));
        put("append as delta (shuffled)", true, p -> deltaShuffled(5, 5, 4, 19, p, "0"));
        // a third delta version: the append commits, then compacts as a commit of its own (two versions)
        put("append that triggers automatic compaction", true, p -> deltaOnDriver(6, 0, 2, 23, p, "3"));
        put("delete over a layer with deltas", true, p -> SfcLayerCommands.deleteVersion(spark, p, "2,2,3,3", null, null));
        put("compact with deltas", true, p -> SfcLayerUpdate.compact(spark, p));
    }

    private static void put(String name, boolean deltas, CrashPointCheck.Operation op) {
        OPERATIONS.put(name, new CrashPointCheck.Case(deltas, op));
    }

    /** A fresh copy of a pristine layer (files keep their times). */
    private static String copy(CrashPointCheck.Pristine from, String name) throws IOException {
        return copy(new File(from.path), name);
    }

    private static String copy(File source, String name) throws IOException {
        File dir = new File(tmp.getRoot(), name);
        java.nio.file.Path from = source.toPath();
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

    /** The calls {@link #after} recorded last. */
    private static List<String> lastRecorded = List.of();

    /**
     * Regression: an append whose automatic compaction fails in a Spark task (its job aborted: a
     * SparkException, which Java sees as checked and UpdateJob rethrows unwrapped) returns its own
     * version; the compaction gives up (docs/FORMAT.md section 11: it never fails the append that started
     * it). The failure escaped the append before, so a caller saw a committed append fail (the race
     * model's find: delta appends "failed by an injected fault yet committed").
     */
    @Test
    public void anAppendWhoseCompactionFailsInATaskReturnsItsVersion() throws Exception {
        CrashPointCheck.Case c = OPERATIONS.get("append that triggers automatic compaction");
        List<CrashPointCheck.State> done = after("compaction-task", c.from(plain, withDeltas), c.op, new int[1]);
        int at = 0;
        for (int i = 0; i < lastRecorded.size() && at == 0; i++) {
            if (lastRecorded.get(i).startsWith("create ") && lastRecorded.get(i).contains("/attempt-")) {
                at = i + 1; // the compaction's first file written by a task (the append writes on the driver)
            }
        }
        assertTrue("the compaction writes in a task: " + lastRecorded, at > 0);
        String path = copy(c.from(plain, withDeltas), "compaction-task-fails");
        CrashPointFs.arm(path, at, CrashPointFs.Mode.IO_EXCEPTION);
        try {
            c.op.run(path);
        } catch (Exception e) {
            throw new AssertionError("the append committed, yet failed with its compaction's failure: " + e, e);
        } finally {
            CrashPointFs.disarm();
        }
        LayerMetadata newest = checks.log(path).current();
        assertEquals("the append's version, the compaction gave up", done.get(0).version, newest.version);
        assertEquals(done.get(0).signature, CrashPointCheck.signature(newest));
        assertEquals(done.get(0).fingerprint, checks.fingerprint(path));
        checks.assertAllVersionsVerify(path, "after a compaction failed in a task");
    }

    /**
     * What the operation leaves when it succeeds: each version it made (an append that compacts makes
     * two; the first alone is a state a failure may leave too: its compaction gives up), and its number
     * of filesystem calls.
     */
    private static List<CrashPointCheck.State> after(String name, CrashPointCheck.Pristine from,
                                                     CrashPointCheck.Operation op, int[] calls) throws Exception {
        String path = copy(from, "after-" + name.replaceAll("\\W", ""));
        lastRecorded = CrashPointFs.record(path, () -> op.run(path));
        calls[0] = lastRecorded.size();
        if (Boolean.getBoolean("sfclayer.crashpoints.countOnly")) {
            System.out.println(name + " calls: " + lastRecorded);
        }
        List<CrashPointCheck.State> out = checks.states(path, from.version);
        remove(path);
        return out;
    }

    @Test
    public void everyCallOfEveryOperationIsACrashPoint() throws Exception {
        Map<String, String> counts = new LinkedHashMap<>();
        List<String> failures = new ArrayList<>();
        long started = System.nanoTime();
        int points = 0;
        for (Map.Entry<String, CrashPointCheck.Case> e : OPERATIONS.entrySet()) {
            String name = e.getKey();
            CrashPointCheck.Pristine from = e.getValue().from(plain, withDeltas);
            CrashPointCheck.Operation op = e.getValue().op;
            int[] n = {0};
            List<CrashPointCheck.State> done = after(name, from, op, n);
            int calls = n[0];
            long opStarted = System.nanoTime();
            if (Boolean.getBoolean("sfclayer.crashpoints.countOnly")) {
                counts.put(name, calls + " calls");
                continue;
            }
            int runs = 0;
            for (CrashPointFs.Mode mode : MODES) {
                for (int at = 1; at <= calls; at++) {
                    if (!ALL && e.getValue().deltas && (at + mode.ordinal()) % 2 != 0) {
                        continue; // the default run's share of the delta operations: each call in one mode
                    }
                    runs++;
                    points++;
                    String where = name + ", call " + at + " of " + calls + ", " + mode;
                    String path = copy(from, "point-" + points);
                    String call = CrashPointFs.runFailing(path, at, mode, () -> op.run(path));
                    try {
                        checks.check(path, from, done, where + " [" + call + "]", ALL || points % EVERY == 0);
                    } catch (AssertionError | Exception t) {
                        failures.add(where + " [" + call + "]: " + t);
                    }
                    remove(path);
                }
            }
            counts.put(name, calls + " calls, " + runs + " runs (" + (System.nanoTime() - opStarted) / 1_000_000_000L
                + " s)");
        }
        System.out.println("crash points (local files, one JVM, failure modes " + MODES + "): " + counts + " = "
            + points + " runs in " + (System.nanoTime() - started) / 1_000_000_000L + " s");
        if (!failures.isEmpty()) {
            fail(failures.size() + " of " + points + " crash points broke the layer:\n" + String.join("\n", failures));
        }
    }
}
