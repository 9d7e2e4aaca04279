package io.sfclayer.testing;

import io.sfclayer.commit.VersionLog;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.layer.LayerRestore;
import io.sfclayer.layer.LayerVerifier;
import io.sfclayer.layer.Vacuum;
import io.sfclayer.spark.SfcLayerCommands;
import io.sfclayer.spark.SfcLayerSource;
import io.sfclayer.spark.SfcLayerUpdate;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FileUtil;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.Row;
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
 * with an IOException, an Error, or every call from it on, then require the layer as before or as after,
 * every version verifying clean, and a next write and a vacuum to work) on a layer under {@code root} on
 * HDFS or S3, for a seeded sample of (operation, call, mode) points: each point copies a pristine layer on
 * the store, so the whole matrix is CrashPointsTest's on local files and a sample is what a CI run affords
 * here. {@link CrashPointFs} wraps the store's own filesystem for the run (tests/test_crash_points_stores.py).
 */
public final class StoreCrashPoints {
    private final SparkSession spark;
    private final Configuration conf;
    private final String root;
    private long baseVersion;
    private String baseDigest;

    private interface Operation {
        void run(String path) throws Exception;
    }

    private final Map<String, Operation> operations = new LinkedHashMap<>();

    private StoreCrashPoints(SparkSession spark, String root) {
        this.spark = spark;
        this.conf = spark.sparkContext().hadoopConfiguration();
        this.root = root;
        operations.put("append (small, on the driver)", p -> write(0, 8, 2, 7, p, "append", 2, null));
        operations.put("append (shuffled)", p -> write(4, 4, 4, 9, p, "append", 3, null));
        operations.put("append as deltas", p -> write(2, 2, 3, 11, p, "append", 2, "delta"));
        operations.put("delete", p -> SfcLayerCommands.deleteVersion(spark, p, "0,0,3,3", null, null));
        operations.put("compact", p -> SfcLayerUpdate.compact(spark, p));
        operations.put("vacuum", p -> Vacuum.run(conf, p, 0, false, false));
        operations.put("restore", p -> LayerRestore.restore(conf, p, 1, -1));
    }

    /**
     * Runs {@code points} crash points chosen by {@code seed} on layers under {@code root} (a URI of the
     * store). Returns a one-line summary; throws AssertionError naming the seed and every broken point.
     */
    public static String run(SparkSession spark, String root, long seed, int points) throws Exception {
        return new StoreCrashPoints(spark, root).run(seed, points);
    }

    private String run(long seed, int points) throws Exception {
        String pristine = root + "/pristine";
        write(0, 0, 8, 0, pristine, "error", 2, null);
        write(8, 0, 4, 3, pristine, "append", 2, null);
        write(0, 0, 4, 5, pristine, "append", 2, null); // a rewritten file: vacuum has one to remove
        LayerMetadata base = new VersionLog(conf, new Path(pristine)).current();
        baseVersion = base.version;
        baseDigest = base.digest;
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
        Map<String, long[]> after = new HashMap<>();
        List<String> failures = new ArrayList<>();
        List<String> ran = new ArrayList<>();
        long started = System.nanoTime();
        try {
            for (int point = 0; point < points; point++) {
                String name = names.get(r.nextInt(names.size()));
                Operation op = operations.get(name);
                long[] done = after.get(name);
                if (done == null) {
                    done = after(pristine, name, op);
                    after.put(name, done);
                }
                int calls = (int) done[2];
                int at = 1 + r.nextInt(calls);
                CrashPointFs.Mode mode = CrashPointFs.Mode.values()[r.nextInt(CrashPointFs.Mode.values().length)];
                String path = copy(pristine, "point-" + point);
                String where = name + ", call " + at + " of " + calls + ", " + mode;
                CrashPointFs.arm(new Path(path).toUri().getPath(), at, mode);
                String call;
                try {
                    op.run(path);
                } catch (Exception | Error t) {
                    // the injected failure, as the operation reports it: checked below by its effects
                } finally {
                    List<String> rec = CrashPointFs.recorded();
                    call = rec.size() >= at ? rec.get(at - 1) : "(fewer calls: " + rec.size() + ")";
                    CrashPointFs.disarm();
                }
                ran.add(where + " [" + call + "]");
                try {
                    check(path, done, where + " [" + call + "]");
                } catch (AssertionError | Exception t) {
                    failures.add(where + " [" + call + "]: " + t);
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
        Map<String, Long> counts = new LinkedHashMap<>();
        after.forEach((k, v) -> counts.put(k, v[2]));
        String summary = points + " crash points on " + scheme + " (seed " + seed + ") in "
            + (System.nanoTime() - started) / 1_000_000_000L + " s; calls per operation " + counts + "; ran " + ran;
        if (!failures.isEmpty()) {
            throw new AssertionError("seed " + seed + ": " + failures.size() + " of " + points
                + " crash points broke the layer:\n" + String.join("\n", failures) + "\n(" + summary + ")");
        }
        return summary;
    }

    /** Tiles [c0, c0 + side) x [r0, r0 + side), v = col * 100 + row + add. */
    private void write(int c0, int r0, int side, int add, String path, String mode, int partitions, String appendMode) {
        org.apache.spark.sql.DataFrameWriter<Row> w = spark.range((long) side * side)
            .selectExpr("int(id % " + side + ") + " + c0 + " AS col", "int(id DIV " + side + ") + " + r0 + " AS row",
                "(int(id % " + side + ") + " + c0 + ") * 100 + int(id DIV " + side + ") + " + r0 + " + " + add + " AS v")
            .write().format(SfcLayerSource.class.getName()).mode(mode).option("bounds", "0,0,15,15")
            .option("partitions", String.valueOf(partitions)).option("blockSize", "64k")
            .option("smallAppendBytes", mode.equals("append") && partitions > 2 ? "0" : "1m");
        if (appendMode != null) {
            w = w.option("appendMode", appendMode).option("compactAfterDeltas", "0");
        }
        w.save(path);
    }

    /** count * 10^9 + sum(v) of the newest version: reads every tile. */
    private long fingerprint(String path) {
        Row r = spark.read().format(SfcLayerSource.class.getName()).load(path).selectExpr("count(*)", "sum(v)").first();
        return r.getLong(0) * 1_000_000_000L + (r.isNullAt(1) ? 0 : r.getLong(1));
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

    /** What the operation leaves when it succeeds: its newest version, its record count and its calls. */
    private long[] after(String pristine, String name, Operation op) throws Exception {
        String path = copy(pristine, "after-" + name.replaceAll("\\W", ""));
        CrashPointFs.arm(new Path(path).toUri().getPath(), 0, CrashPointFs.Mode.IO_EXCEPTION);
        try {
            op.run(path);
        } finally {
            CrashPointFs.disarm();
        }
        int calls = CrashPointFs.recorded().size();
        LayerMetadata md = new VersionLog(conf, new Path(path)).current();
        remove(path);
        return new long[] {md.version, md.recordCount, calls};
    }

    private void assertAllVersionsVerify(String path, String where) throws IOException {
        for (long v : new VersionLog(conf, new Path(path)).versions()) {
            String report = LayerVerifier.run(conf, path, v);
            if (!report.contains("\"problems\":[]")) {
                throw new AssertionError(where + ": version " + v + " does not verify clean: " + report);
            }
        }
    }

    /** As CrashPointsTest's check, with the next write and vacuum at every point. */
    private void check(String path, long[] done, String where) throws Exception {
        LayerMetadata newest = new VersionLog(conf, new Path(path)).current();
        boolean before = newest.version == baseVersion && newest.digest.equals(baseDigest);
        boolean afterOp = newest.version == done[0] && newest.recordCount == done[1]
            && (done[0] == baseVersion ? newest.digest.equals(baseDigest) : !newest.digest.equals(baseDigest));
        if (!before && !afterOp) {
            throw new AssertionError(where + ": newest version " + newest.version + " (" + newest.recordCount
                + " records) is neither as before (" + baseVersion + ") nor as after (" + done[0] + ", " + done[1]
                + " records)");
        }
        assertAllVersionsVerify(path, where);
        long fp = fingerprint(path);
        write(12, 12, 2, 1, path, "append", 2, null);
        Vacuum.run(conf, path, 0, false, false);
        assertAllVersionsVerify(path, where + ", after a next write and a vacuum");
        long sum = 0;
        for (int c = 12; c < 14; c++) {
            for (int r = 12; r < 14; r++) {
                sum += c * 100L + r + 1;
            }
        }
        if (fingerprint(path) != fp + 4 * 1_000_000_000L + sum) {
            throw new AssertionError(where + ": the next write's tiles are not all there");
        }
    }
}
