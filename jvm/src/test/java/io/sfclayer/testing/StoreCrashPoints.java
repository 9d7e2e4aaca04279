package io.sfclayer.testing;

import io.sfclayer.layer.LayerRestore;
import io.sfclayer.layer.Vacuum;
import io.sfclayer.spark.SfcLayerCommands;
import io.sfclayer.spark.SfcLayerUpdate;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FileUtil;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * Crash points on any store (issue 35): CrashPointsTest's method (fail one filesystem call of an operation
 * with an IOException, an Error, or every call from it on, {@link CrashPointFs#runFailing}) and its checks
 * ({@link CrashPointCheck}, every one at every point: the layer as before or as a successful run left it,
 * operation, files, records and deltas alike, every version verifying clean, its content that state's, and
 * a next write and a vacuum working) on a layer under {@code root} on HDFS or S3, for a seeded sample of
 * (operation, call, mode) points. Operations run on a plain layer or on one with a delta version (a
 * delete and a compaction then fold it). Each point copies a pristine layer on the store, so the whole
 * matrix is CrashPointsTest's on local files and a sample is what a CI run affords here. {@link
 * CrashPointFs} wraps the store's own filesystem for the run (tests/test_crash_points_stores.py).
 */
public final class StoreCrashPoints {
    private final SparkSession spark;
    private final Configuration conf;
    private final CrashPointCheck checks;
    private final String root;

    private final Map<String, CrashPointCheck.Case> operations = new LinkedHashMap<>();

    private StoreCrashPoints(SparkSession spark, String root) {
        this.spark = spark;
        this.conf = spark.sparkContext().hadoopConfiguration();
        this.checks = new CrashPointCheck(spark);
        this.root = root;
        put("append (small, on the driver)", false, p -> checks.write(0, 8, 2, 7, p, "append", 2, null));
        put("append (shuffled)", false, p -> checks.write(4, 4, 4, 9, p, "append", 3, null));
        put("append as deltas", false, p -> checks.write(2, 2, 3, 11, p, "append", 2, "delta"));
        put("delete", false, p -> SfcLayerCommands.deleteVersion(spark, p, "0,0,3,3", null, null));
        put("compact", false, p -> SfcLayerUpdate.compact(spark, p));
        put("vacuum", false, p -> Vacuum.run(conf, p, 0, false, false));
        put("restore", false, p -> LayerRestore.restore(conf, p, 1, -1));
        put("delete over a layer with deltas", true, p -> SfcLayerCommands.deleteVersion(spark, p, "2,2,3,3", null, null));
        put("compact with deltas", true, p -> SfcLayerUpdate.compact(spark, p));
    }

    private void put(String name, boolean deltas, CrashPointCheck.Operation op) {
        operations.put(name, new CrashPointCheck.Case(deltas, op));
    }

    /**
     * Runs {@code points} crash points chosen by {@code seed} on layers under {@code root} (a URI of the
     * store). Returns a one-line summary; throws AssertionError naming the seed and every broken point.
     */
    public static String run(SparkSession spark, String root, long seed, int points) throws Exception {
        return new StoreCrashPoints(spark, root).run(seed, points);
    }

    private String run(long seed, int points) throws Exception {
        String plainPath = root + "/pristine";
        checks.write(0, 0, 8, 0, plainPath, "error", 2, null);
        checks.write(8, 0, 4, 3, plainPath, "append", 2, null);
        checks.write(0, 0, 4, 5, plainPath, "append", 2, null); // a rewritten file: vacuum has one to remove
        CrashPointCheck.Pristine plain = checks.pristine(plainPath);
        String deltaPath = copy(plainPath, "pristine-deltas");
        checks.write(2, 2, 4, 11, deltaPath, "append", 2, "delta"); // a delta over base files
        CrashPointCheck.Pristine withDeltas = checks.pristine(deltaPath);
        String scheme = new Path(root).toUri().getScheme();
        String[] keys = {"fs." + scheme + ".impl", "fs." + scheme + ".impl.disable.cache", CrashPointFs.INNER};
        String[] saved = new String[keys.length];
        for (int i = 0; i < keys.length; i++) {
            saved[i] = conf.get(keys[i]);
        }
        Class<?> inner = FileSystem.getFileSystemClass(scheme, conf);
        conf.set(keys[2], inner.getName());
        conf.set(keys[0], CrashPointFs.class.getName());
        conf.set(keys[1], "true");
        Random r = new Random(seed);
        List<String> names = new ArrayList<>(operations.keySet());
        Map<String, List<CrashPointCheck.State>> after = new HashMap<>();
        Map<String, Integer> calls = new LinkedHashMap<>();
        List<String> failures = new ArrayList<>();
        List<String> ran = new ArrayList<>();
        long started = System.nanoTime();
        try {
            for (int point = 0; point < points; point++) {
                String name = names.get(r.nextInt(names.size()));
                CrashPointCheck.Case c = operations.get(name);
                CrashPointCheck.Pristine from = c.from(plain, withDeltas);
                if (!after.containsKey(name)) {
                    String path = copy(from.path, "after-" + name.replaceAll("\\W", ""));
                    calls.put(name, CrashPointFs.record(scope(path), () -> c.op.run(path)).size());
                    after.put(name, checks.states(path, from.version));
                    remove(path);
                }
                int at = 1 + r.nextInt(calls.get(name));
                CrashPointFs.Mode mode = CrashPointFs.Mode.values()[r.nextInt(CrashPointFs.Mode.values().length)];
                String path = copy(from.path, "point-" + point);
                String call = CrashPointFs.runFailing(scope(path), at, mode, () -> c.op.run(path));
                String where = name + ", call " + at + " of " + calls.get(name) + ", " + mode + " [" + call + "]";
                ran.add(where);
                try {
                    checks.check(path, from, after.get(name), where, true);
                } catch (AssertionError | Exception t) {
                    failures.add(where + ": " + t);
                }
                remove(path);
            }
        } finally {
            CrashPointFs.disarm();
            for (int i = 0; i < keys.length; i++) {
                if (saved[i] == null) {
                    conf.unset(keys[i]);
                } else {
                    conf.set(keys[i], saved[i]);
                }
            }
        }
        String summary = points + " crash points on " + scheme + " (seed " + seed + ") in "
            + (System.nanoTime() - started) / 1_000_000_000L + " s; calls per operation " + calls + "; ran " + ran;
        if (!failures.isEmpty()) {
            throw new AssertionError("seed " + seed + ": " + failures.size() + " of " + points
                + " crash points broke the layer:\n" + String.join("\n", failures) + "\n(" + summary + ")");
        }
        return summary;
    }

    /** What {@link CrashPointFs} counts calls under: the path without its scheme and authority. */
    private static String scope(String path) {
        return new Path(path).toUri().getPath();
    }

    private String copy(String from, String name) throws IOException {
        String to = root + "/" + name;
        Path src = new Path(from);
        FileSystem fs = src.getFileSystem(conf);
        if (!FileUtil.copy(fs, src, fs, new Path(to), false, conf)) {
            throw new IOException("cannot copy " + from + " to " + to);
        }
        return to;
    }

    private void remove(String path) throws IOException {
        Path p = new Path(path);
        p.getFileSystem(conf).delete(p, true);
    }
}
