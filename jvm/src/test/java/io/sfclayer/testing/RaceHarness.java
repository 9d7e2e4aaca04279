package io.sfclayer.testing;

import io.sfclayer.SfcLayerException;
import io.sfclayer.commit.VersionLog;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.layer.LayerVerifier;
import io.sfclayer.layer.Vacuum;
import io.sfclayer.spark.HadoopConfs;
import io.sfclayer.spark.SfcLayerCommands;
import io.sfclayer.spark.SfcLayerUpdate;
import io.sfclayer.spark.SfcLayerWrite;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SaveMode;
import org.apache.spark.sql.SparkSession;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * (Over 500 lines: a run, its operations, their read-back and the reader the checker uses share one
 * layer, one schedule and one history; read together.)
 * A Jepsen-style race run (issue 35): several threads of one JVM run random operations (copy-on-write
 * and delta appends, each on the driver or shuffled, deletes, compactions, zero-retention vacuums,
 * restores, repairs rewriting a whole file) on one 16 x 16
 * layer (a share through Spark, the rest Spark-free on the driver below the DataFrame), with random delays
 * at filesystem calls ({@link DelayFs}), each
 * operation's outcome recorded; then {@link RaceChecker} replays the committed history on a dict model
 * and checks every version the run read and every version left in the log. The seed fixes each
 * thread's operations and the delays' distribution (the schedule is the machine's): a failure prints
 * it, and {@code run} with it replays the same operations. Any filesystem Spark reaches (local files,
 * HDFS, S3A). Test sources only: the JUnit test and tests/test_races.py call {@link #run}.
 */
public final class RaceHarness {
    private static final String FORMAT = "io.sfclayer.spark.SfcLayerSource";

    private final SparkSession spark;
    private final String path;
    private final long seed;
    private final List<RaceOp> history = Collections.synchronizedList(new ArrayList<>());
    private final AtomicInteger ids = new AtomicInteger();
    /** The CPU time of the worker threads (not Spark's executor threads): what bounds a run's operations on few cores. */
    private final java.util.concurrent.atomic.AtomicLong workerCpuNanos = new java.util.concurrent.atomic.AtomicLong();
    /** Where the run's time went: milliseconds and counts per phase (an operation's kind, its read-back, the check). */
    private final Map<String, long[]> timing = new java.util.concurrent.ConcurrentSkipListMap<>();

    private void time(String phase, long startNanos) {
        long ms = (System.nanoTime() - startNanos) / 1_000_000;
        timing.compute(phase, (k, t) -> t == null ? new long[] {ms, 1} : new long[] {t[0] + ms, t[1] + 1});
    }

    /** The time per phase: {@code phase total ms / count}. */
    private String timings() {
        StringBuilder sb = new StringBuilder();
        timing.forEach((k, t) -> sb.append(sb.length() == 0 ? "" : ", ").append(k).append(' ').append(t[0])
            .append(" ms/").append(t[1]));
        return sb.toString();
    }

    private RaceHarness(SparkSession spark, String path, long seed) {
        this.spark = spark;
        this.path = path;
        this.seed = seed;
    }

    /**
     * Runs {@code threads} threads of up to {@code opsPerThread} operations each within {@code budgetMillis},
     * delaying a fraction {@code delayProbability} of the filesystem calls on the layer by up to
     * {@code delayMaxMillis} ms (no delaying filesystem at all when 0), then checks. Returns a one-line
     * summary; throws AssertionError naming the seed and every violation.
     */
    public static String run(SparkSession spark, String path, long seed, int threads, int opsPerThread,
                             long budgetMillis, double delayProbability, int delayMaxMillis) throws Exception {
        return run(spark, path, seed, threads, opsPerThread, budgetMillis, delayProbability, delayMaxMillis, 0);
    }

    /** {@link #run}, with a fraction {@code failProbability} of the layer's filesystem calls failing too. */
    public static String run(SparkSession spark, String path, long seed, int threads, int opsPerThread,
                             long budgetMillis, double delayProbability, int delayMaxMillis, double failProbability)
            throws Exception {
        RaceHarness h = new RaceHarness(spark, path, seed);
        h.create();
        long started = System.currentTimeMillis(); // the budget counts from the layer's creation (Spark's first job)
        Configuration sc = spark.sparkContext().hadoopConfiguration();
        String scheme = new Path(path).toUri().getScheme() == null ? "file" : new Path(path).toUri().getScheme();
        String[] keys = {"fs." + scheme + ".impl", "fs." + scheme + ".impl.disable.cache", DelayFs.INNER};
        String[] saved = new String[keys.length];
        for (int i = 0; i < keys.length; i++) {
            saved[i] = sc.get(keys[i]);
        }
        if (delayProbability > 0 || failProbability > 0) {
            Class<?> inner = FileSystem.getFileSystemClass(scheme, sc);
            sc.set(keys[2], inner.getName());
            sc.set(keys[0], DelayFs.class.getName());
            sc.set(keys[1], "true");
            DelayFs.arm(new Path(path).toUri().getPath(), seed, delayProbability, delayMaxMillis, failProbability);
        }
        long deadline = started + budgetMillis;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                final int thread = t;
                done.add(pool.submit(() -> {
                    h.worker(thread, new Random(seed * 1_000_003L + thread), opsPerThread, deadline);
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get();
            }
        } finally {
            pool.shutdownNow();
            pool.awaitTermination(60, TimeUnit.SECONDS);
            DelayFs.disarm();
            for (int i = 0; i < keys.length; i++) {
                if (saved[i] == null) {
                    sc.unset(keys[i]);
                } else {
                    sc.set(keys[i], saved[i]);
                }
            }
        }
        long[] delays = DelayFs.counts();
        long ran = System.currentTimeMillis() - started;
        if (Boolean.getBoolean("sfclayer.races.verbose")) {
            h.history.forEach(o -> System.out.println("  " + o));
        }
        long t2 = System.nanoTime();
        String stats = RaceChecker.check(h.history, h.reader(), seed);
        h.time("check", t2);
        return "race seed " + seed + " on " + scheme + ": " + h.history.size() + " operations by " + threads
            + " threads in " + ran / 1000 + " s (" + (delayProbability > 0 ? delays[1] + " of " + delays[0]
            + " filesystem calls delayed" : "no injected delays") + (failProbability > 0 ? ", " + delays[2]
            + " failed" : "") + "; the workers' CPU " + h.workerCpuNanos.get() / 1_000_000 + " ms, "
            + h.workerCpuNanos.get() / 1000 / Math.max(1, h.history.size()) / 1000.0 + " ms an operation; deltas "
            + h.deltas.get() + " most " + h.mostDeltas.get() + " files " + h.files.get() + "); " + stats
            + "; time: " + h.timings();
    }

    /** A worker's copy of the session's Hadoop conf (as a write makes one: a copy per operation was 6 % of a run). */
    private final ThreadLocal<Configuration> workerConf = new ThreadLocal<>();

    private Configuration conf() {
        Configuration c = workerConf.get();
        return c != null ? c : HadoopConfs.forOptions(spark, Map.of());
    }

    /** Version 1: the 8 x 8 tiles at (0, 0), by operation 0. */
    private void create() throws IOException {
        RaceOp op = new RaceOp(ids.getAndIncrement(), -1, RaceOp.Kind.APPEND, new int[] {0, 0, 7, 7}, -1);
        LayerMetadata md = SfcLayerWrite.run(spark, tiles(op), path, SaveMode.ErrorIfExists, options("1m"));
        committed(op, md);
        history.add(op);
    }

    /** An APPEND's options: copy-on-write (the layer's deltas folded into the files it rewrites). */
    private Map<String, String> options(String small) {
        return Map.of("bounds", "0,0,15,15", "partitions", "2", "blockSize", "64k", "smallAppendBytes", small,
            "appendMode", "rewrite");
    }

    /**
     * A DELTA_APPEND's options: delta files, and a compaction of its own after {@value #COMPACT_AFTER_DELTAS}
     * delta versions (the checker takes such a version for a change of nothing).
     */
    private Map<String, String> deltaOptions(String small) {
        return Map.of("bounds", "0,0,15,15", "partitions", "2", "blockSize", "64k", "smallAppendBytes", small,
            "appendMode", "delta", "compactAfterDeltas", String.valueOf(COMPACT_AFTER_DELTAS));
    }

    /** Delta versions after which a delta append compacts (option compactAfterDeltas). */
    static final int COMPACT_AFTER_DELTAS = 3;

    /** A DELTA_APPEND's tiles held by the driver (a local relation: written and committed without a Spark job). */
    private Dataset<Row> localTiles(RaceOp op) {
        int[] b = op.box;
        List<Row> rows = new ArrayList<>();
        for (int c = b[0]; c <= b[2]; c++) {
            for (int r = b[1]; r <= b[3]; r++) {
                rows.add(org.apache.spark.sql.RowFactory.create(c, r, RaceOp.value(op.id, c, r)));
            }
        }
        return spark.createDataFrame(rows, new org.apache.spark.sql.types.StructType()
            .add("col", org.apache.spark.sql.types.DataTypes.IntegerType, false)
            .add("row", org.apache.spark.sql.types.DataTypes.IntegerType, false)
            .add("v", org.apache.spark.sql.types.DataTypes.LongType, false));
    }

    private Dataset<Row> tiles(RaceOp op) {
        int[] b = op.box;
        int w = b[2] - b[0] + 1;
        int n = w * (b[3] - b[1] + 1);
        String col = "int(id % " + w + ") + " + b[0];
        String row = "int(id DIV " + w + ") + " + b[1];
        return spark.range(n).selectExpr(col + " AS col", row + " AS row",
            op.id + " * 100000L + (" + col + ") * 100L + " + row + " AS v");
    }

    /**
     * This run's versions committed: their delta files' sum and most, and their base files' sum (what a read-back and
     * a commit carry). Per run: tests/test_races.py runs on HDFS and S3 in one JVM.
     */
    private final java.util.concurrent.atomic.AtomicLong deltas = new java.util.concurrent.atomic.AtomicLong();
    private final java.util.concurrent.atomic.AtomicLong mostDeltas = new java.util.concurrent.atomic.AtomicLong();
    private final java.util.concurrent.atomic.AtomicLong files = new java.util.concurrent.atomic.AtomicLong();

    private void committed(RaceOp op, LayerMetadata md) {
        deltas.addAndGet(md.deltas.size());
        mostDeltas.accumulateAndGet(md.deltas.size(), Math::max);
        files.addAndGet(md.files == null ? 0 : md.files.size());
        op.endMillis = System.currentTimeMillis();
        op.outcome = RaceOp.Outcome.COMMITTED;
        op.version = md.version;
        op.writeId = md.writeId;
        op.createdAtMillis = java.time.Instant.parse(md.createdAt).toEpochMilli();
    }

    private void worker(int thread, Random r, int ops, long deadline) {
        workerConf.set(HadoopConfs.forOptions(spark, Map.of())); // the run's (DelayFs armed); its pool thread ends with it
        java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
        long cpu0 = mx.getCurrentThreadCpuTime();
        for (int i = 0; i < ops && (i == 0 || System.currentTimeMillis() < deadline); i++) { // one at least
            step(thread, r, null);
        }
        workerCpuNanos.addAndGet(mx.getCurrentThreadCpuTime() - cpu0);
    }

    /**
     * The fraction of operations run through Spark (the DataFrame writes, shuffled or not, deletes, compactions
     * and repairs, each a Spark job or Spark's planning: 50-250 ms); the others run Spark-free on the driver
     * ({@link #executeDirect}: a few ms), so that a run holds thousands of operations.
     */
    static final double SPARK_SHARE = Double.parseDouble(System.getProperty("sfclayer.races.sparkShare", "0.05"));
    /**
     * The fraction of Spark-free operations whose filesystem calls may fail, each at the run's fault rate divided by
     * this (the same faults in all; a Spark operation's calls may always fail): a fault at 1 % of every operation's
     * calls failed 47 of 48 copy-on-write appends (hundreds of calls each, folding the deltas), so the deltas
     * piled up (85 a version) and every read-back and commit carried them.
     */
    static final double FAULTY_SHARE = Double.parseDouble(System.getProperty("sfclayer.races.faultyShare", "0.25"));
    /** The fraction of Spark-free operations whose filesystem calls are delayed (a Spark operation's always are). */
    static final double DELAYED_SHARE = Double.parseDouble(System.getProperty("sfclayer.races.delayedShare", "0.1"));

    /** One random operation, recorded; {@code log} (the killed writer's) gets a line at its start and end. */
    private RaceOp step(int thread, Random r, java.io.PrintStream log) {
        boolean viaSpark = r.nextDouble() < SPARK_SHARE;
        RaceOp.Kind kind;
        if (viaSpark) {
            // every kind through Spark, weighted toward those without a Spark job of their own (driver-side delta
            // appends, restores, vacuums, deletes) (copy-on-write appends, repairs and shuffled writes each run a
            // job: 5-10 times the cost)
            int pick = r.nextInt(26);
            kind = pick < 3 ? RaceOp.Kind.APPEND : pick < 11 ? RaceOp.Kind.DELTA_APPEND
                : pick < 15 ? RaceOp.Kind.DELETE : pick < 17 ? RaceOp.Kind.COMPACT : pick < 20 ? RaceOp.Kind.VACUUM
                : pick < 24 ? RaceOp.Kind.RESTORE : RaceOp.Kind.REPAIR;
        } else {
            // the kinds whose production code runs on the driver below the DataFrame: copy-on-write appends
            // (merging on the driver, folding the deltas), delta appends, restores, vacuums
            // (weighted by cost: single-threaded, a delta append takes ~10 ms, a vacuum ~25, a copy-on-write
            // append ~40, a restore ~80)
            int pick = r.nextInt(20);
            kind = pick < 5 ? RaceOp.Kind.APPEND : pick < 15 ? RaceOp.Kind.DELTA_APPEND
                : pick < 17 ? RaceOp.Kind.RESTORE : RaceOp.Kind.VACUUM;
        }
        int[] box = null;
        long target = -1;
        if (kind == RaceOp.Kind.APPEND || kind == RaceOp.Kind.DELTA_APPEND || kind == RaceOp.Kind.DELETE) {
            int c0 = r.nextInt(16), r0 = r.nextInt(16);
            box = new int[] {c0, r0, Math.min(15, c0 + r.nextInt(4)), Math.min(15, r0 + r.nextInt(4))};
        } else if (kind == RaceOp.Kind.RESTORE) {
            long newest = 1;
            synchronized (history) {
                for (RaceOp o : history) {
                    newest = Math.max(newest, o.version);
                }
            }
            // half among the newest few versions (most of the older ones are vacuumed in a long run: refused)
            target = r.nextBoolean() ? Math.max(1, newest - r.nextInt(6)) : 1 + (long) r.nextInt((int) newest);
        }
        RaceOp op = new RaceOp(ids.getAndIncrement(), thread, kind, box, target);
        history.add(op);
        boolean shuffled = r.nextInt(4) == 0; // a quarter through a shuffle (a Spark job), the rest on the driver
        boolean delayed = viaSpark || r.nextDouble() < DELAYED_SHARE;
        boolean faulty = viaSpark || r.nextDouble() < FAULTY_SHARE;
        if (log != null) {
            log.println(KillLog.started(op));
            log.flush();
        }
        long t0 = System.nanoTime();
        DelayFs.UNDELAYED.set(!delayed);
        DelayFs.FAIL_FACTOR.set(faulty ? 1 / FAULTY_SHARE : 0.0);
        try {
            LayerMetadata md = viaSpark ? execute(op, shuffled) : executeDirect(op);
            time(op.kind + (viaSpark ? op.writes() ? shuffled ? " shuffled" : " local" : " spark" : " direct"), t0);
            if (md == null) { // vacuum: no version
                op.endMillis = System.currentTimeMillis();
                op.outcome = RaceOp.Outcome.COMMITTED;
            } else {
                committed(op, md);
                if (log == null) {
                    long t1 = System.nanoTime();
                    observe(op);
                    time("read back", t1);
                }
            }
        } catch (Throwable t) {
            classify(op, t);
        } finally {
            DelayFs.UNDELAYED.remove();
            DelayFs.FAIL_FACTOR.remove();
        }
        if (log != null) {
            log.println(KillLog.ended(op));
            log.flush();
        }
        return op;
    }

    /**
     * The writer a kill test runs in a process of its own ({@code KillTest}): creates the layer at
     * {@code args[0]}, then runs random operations one after the other (seed {@code args[1]}), a line on
     * stdout at each one's start and end ({@link KillLog}), until it is killed.
     */
    public static void main(String[] args) throws Exception {
        SparkSession spark = SparkSession.builder().master("local[2]").appName("race-writer")
            .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2").getOrCreate();
        long seed = Long.parseLong(args[1]);
        RaceHarness h = new RaceHarness(spark, args[0], seed);
        h.create();
        System.out.println(KillLog.started(h.history.get(0)));
        System.out.println(KillLog.ended(h.history.get(0)));
        System.out.flush();
        Random r = new Random(seed);
        while (true) {
            h.step(0, r, System.out);
        }
    }

    /**
     * After a writer was killed: its history from its lines (an operation started and never ended has an
     * unknown outcome) and a next append here, the whole history checked (RaceChecker), then a vacuum
     * and the check again (what is left).
     */
    public static String checkAfterKill(SparkSession spark, String path, long seed, List<String> lines)
            throws Exception {
        RaceHarness h = new RaceHarness(spark, path, seed);
        h.history.addAll(KillLog.parse(lines));
        h.ids.set(h.history.stream().mapToInt(o -> o.id).max().orElse(0) + 1);
        RaceOp next = new RaceOp(h.ids.getAndIncrement(), 9, RaceOp.Kind.APPEND, new int[] {12, 12, 15, 15}, -1);
        h.history.add(next);
        try {
            h.committed(next, h.execute(next, false));
            // read back: once the vacuum below removed the killed operation's version document, this read is what
            // places it (RaceChecker.byNextRead); without it a killed delta append that had published was taken for
            // an automatic compaction and the next version for wrong (KillTest seed 569272864)
            h.observe(next);
        } catch (Throwable t) {
            classify(next, t); // FAILED unless a conflict: the checker says so
        }
        String before = RaceChecker.check(h.history, h.reader(), seed); // every version the writer left
        RaceOp vacuum = new RaceOp(h.ids.getAndIncrement(), 9, RaceOp.Kind.VACUUM, null, -1);
        h.history.add(vacuum);
        try {
            h.execute(vacuum, false);
            vacuum.endMillis = System.currentTimeMillis();
            vacuum.outcome = RaceOp.Outcome.COMMITTED;
        } catch (Throwable t) {
            classify(vacuum, t);
        }
        return before + "; after a vacuum: " + RaceChecker.check(h.history, h.reader(), seed);
    }

    /**
     * A Spark-free operation: the production code below the DataFrame and the Spark commands, on the driver
     * ({@link io.sfclayer.spark.DriverAppend}: the append a DataFrame of local rows makes; a restore and a vacuum
     * are metadata and file work only). A delta append here does not compact after it (the Spark operations'
     * do, and copy-on-write appends fold the deltas).
     */
    private LayerMetadata executeDirect(RaceOp op) throws IOException {
        switch (op.kind) {
            case APPEND:
                return io.sfclayer.spark.DriverAppend.run(spark, path, tileList(op), options("1m"));
            case DELTA_APPEND: {
                Map<String, String> o = new java.util.HashMap<>(deltaOptions("1m"));
                o.put("compactAfterDeltas", "0");
                return io.sfclayer.spark.DriverAppend.run(spark, path, tileList(op), o);
            }
            case RESTORE:
                return io.sfclayer.layer.LayerRestore.restore(conf(), path, op.target, -1);
            case VACUUM:
                Vacuum.run(conf(), path, 0, false, false);
                return null;
            default:
                throw new IllegalArgumentException(op.kind + " runs through Spark");
        }
    }

    /** An append's tiles as {col, row, v}. */
    private static List<long[]> tileList(RaceOp op) {
        int[] b = op.box;
        List<long[]> out = new ArrayList<>();
        for (int c = b[0]; c <= b[2]; c++) {
            for (int r = b[1]; r <= b[3]; r++) {
                out.add(new long[] {c, r, RaceOp.value(op.id, c, r)});
            }
        }
        return out;
    }

    private LayerMetadata execute(RaceOp op, boolean shuffled) throws IOException {
        int[] b = op.box;
        switch (op.kind) {
            case APPEND:
                return SfcLayerWrite.run(spark, tiles(op), path, SaveMode.Append, options(shuffled ? "0" : "1m"));
            case DELETE:
                return SfcLayerCommands.deleteVersion(spark, path, b[0] + "," + b[1] + "," + b[2] + "," + b[3], null,
                    null);
            case DELTA_APPEND:
                return SfcLayerWrite.run(spark, shuffled ? tiles(op) : localTiles(op), path, SaveMode.Append,
                    deltaOptions(shuffled ? "0" : "1m"));
            case REPAIR: {
                // repair's path on a whole file: one base file of the newest version rewritten, nothing dropped
                io.sfclayer.layer.Layer newest = io.sfclayer.layer.Layer.open(conf(), path);
                List<io.sfclayer.format.DataFile> files = newest.files();
                if (files.isEmpty()) {
                    return newest.metadata(); // nothing to rewrite: the newest version, unchanged
                }
                String name = files.get(Math.floorMod(op.id * 31, files.size())).name;
                return SfcLayerUpdate.repair(spark, path, newest.metadata().version, List.of(name), Map.of());
            }
            case COMPACT:
                return SfcLayerUpdate.compact(spark, path);
            case RESTORE:
                return SfcLayerCommands.restoreVersion(spark, path, op.target, null);
            default:
                Vacuum.run(conf(), path, 0, false, false);
                return null;
        }
    }

    /**
     * Reads the version an operation committed right away (an injected fault in the read: not observed): the
     * 16 x 16 layer read on the driver ({@link #lookUpAll}), no Spark job; the checker compares
     * it with the model, and reads every version left in the log through Spark at the end.
     */
    private void observe(RaceOp op) {
        DelayFs.UNTOUCHED.set(true); // a check, not an operation under test: no delay, no fault (each skipped it)
        try {
            op.observed = lookUpAll(op.version, op.id % LOOKUP_EVERY == 0);
        } catch (Throwable t) {
            if (!injected(t)) {
                op.error = "reading committed version " + op.version + " failed: " + t;
                op.outcome = RaceOp.Outcome.FAILED;
            }
        } finally {
            DelayFs.UNTOUCHED.remove();
        }
    }

    /**
     * Version v read on the driver, key → v, with the look-up reader ({@code io.sfclayer.lookup.ValueReader}, what
     * {@code sfclayer.open} and the tile server read with): the whole layer as one box query (each file's ranges
     * walked once, deltas merged, as a Spark scan reads them); for one commit in {@value #LOOKUP_EVERY} also each of
     * the 256 keys looked up one by one, which must agree with the box (a different path: the file a key's index
     * names, its bloom filter, then the deltas). Null when vacuum removed the version (LayerNotFound saying so).
     * (The box alone costs a fifth of the 256 look-ups: most of a Spark-free operation's read-back.)
     */
    private Map<Integer, Long> lookUpAll(long v, boolean keyByKey) throws IOException {
        io.sfclayer.lookup.ValueReader reader;
        try {
            reader = io.sfclayer.lookup.ValueReader.open(conf(), path, 64, v, -1);
        } catch (RuntimeException e) {
            if (vacuumed(e)) {
                return null;
            }
            throw e;
        }
        try (reader) {
            org.apache.avro.Schema schema = SCHEMAS.computeIfAbsent(reader.tileSchemaJson(),
                json -> new org.apache.avro.Schema.Parser().parse(json));
            org.apache.avro.generic.GenericDatumReader<org.apache.avro.generic.GenericRecord> avro =
                new org.apache.avro.generic.GenericDatumReader<>(schema);
            TreeMap<Integer, Long> box = new TreeMap<>();
            List<String> twice = new ArrayList<>();
            reader.query(reader.boxQuery(""), records -> {
                for (byte[] record : records) {
                    org.apache.avro.generic.GenericRecord g = avro.read(null,
                        org.apache.avro.io.DecoderFactory.get().binaryDecoder(record, null));
                    int c = (Integer) g.get("col"), r = (Integer) g.get("row");
                    if (box.put(RaceOp.key(c, r), (Long) g.get("v")) != null) {
                        twice.add("(" + c + ", " + r + ")");
                    }
                }
            });
            if (!twice.isEmpty()) {
                throw new AssertionError("the box query of version " + v + " returned tiles twice: " + twice);
            }
            if (!keyByKey) {
                return box;
            }
            TreeMap<Integer, Long> out = new TreeMap<>();
            for (int c = 0; c < 16; c++) {
                for (int r = 0; r < 16; r++) {
                    byte[] record = reader.getOrNull(c, r, 0L);
                    if (record != null) {
                        org.apache.avro.generic.GenericRecord g = avro.read(null,
                            org.apache.avro.io.DecoderFactory.get().binaryDecoder(record, null));
                        out.put(RaceOp.key(c, r), (Long) g.get("v"));
                    }
                }
            }
            if (!out.equals(box)) {
                throw new AssertionError("version " + v + ": the 256 look-ups " + out + " disagree with the box query "
                    + box);
            }
            return out;
        } catch (RuntimeException e) {
            if (vacuumed(e)) {
                return null;
            }
            throw e;
        }
    }

    /** Tile schemas parsed, by their JSON (one per run: a parse per read-back was a tenth of its time). */
    private static final Map<String, org.apache.avro.Schema> SCHEMAS = new java.util.concurrent.ConcurrentHashMap<>();

    /** One commit in this many is read back key by key too ({@link #lookUpAll}). */
    static final int LOOKUP_EVERY = 4;

    private static boolean injected(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (String.valueOf(c.getMessage()).contains(DelayFs.FAULT)) {
                return true;
            }
            for (Throwable s : c.getSuppressed()) {
                if (injected(s)) {
                    return true;
                }
            }
        }
        return false;
    }

    private static void classify(RaceOp op, Throwable t) {
        if (op.endMillis == 0) {
            op.endMillis = System.currentTimeMillis();
        }
        for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (c instanceof SfcLayerException.ConcurrentUpdate) {
                op.outcome = RaceOp.Outcome.CONFLICT;
            } else if (c instanceof SfcLayerException.CommitStateUnknown) {
                op.outcome = RaceOp.Outcome.UNKNOWN;
                java.util.regex.Matcher m = java.util.regex.Pattern.compile("write (\\S+) to layer")
                    .matcher(String.valueOf(c.getMessage()));
                op.writeId = m.find() ? m.group(1) : null;
            } else if (c instanceof SfcLayerException.LayerNotFound
                && (op.kind == RaceOp.Kind.RESTORE || op.kind == RaceOp.Kind.REPAIR)
                && String.valueOf(c.getMessage()).contains("vacuum")) {
                op.outcome = RaceOp.Outcome.REFUSED;
            } else {
                continue;
            }
            op.error = c.getClass().getSimpleName() + ": " + c.getMessage();
            return;
        }
        if (injected(t)) {
            op.outcome = RaceOp.Outcome.FAULTED;
            op.error = String.valueOf(t).replace('\n', ' ');
            return;
        }
        op.outcome = RaceOp.Outcome.FAILED;
        java.io.StringWriter w = new java.io.StringWriter();
        t.printStackTrace(new java.io.PrintWriter(w));
        String s = w.toString();
        op.error = s.length() > 3000 ? s.substring(0, 3000) : s;
    }

    private Dataset<Row> version(long v) {
        return spark.read().format(FORMAT).option("versionAsOf", String.valueOf(v)).load(path);
    }

    /** The full scan of version v, key → v; null when vacuum removed that version (LayerNotFound saying so). */
    private Map<Integer, Long> scan(long v) {
        try {
            return rows(version(v));
        } catch (RuntimeException e) {
            if (vacuumed(e)) {
                return null;
            }
            throw e;
        }
    }

    private static boolean vacuumed(Throwable e) {
        for (Throwable c = e; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (c instanceof SfcLayerException.LayerNotFound) {
                return true;
            }
        }
        return false;
    }

    private static Map<Integer, Long> rows(Dataset<Row> df) {
        TreeMap<Integer, Long> out = new TreeMap<>();
        for (Row row : df.select("col", "row", "v").collectAsList()) {
            Long prev = out.put(RaceOp.key(row.getInt(0), row.getInt(1)), row.getLong(2));
            if (prev != null) {
                throw new AssertionError("tile (" + row.getInt(0) + ", " + row.getInt(1) + ") read twice");
            }
        }
        return out;
    }

    /** What the checker reads from storage after the run (each read timed). */
    private RaceChecker.Reader reader() {
        return new RaceChecker.Reader() {
            @Override
            public List<LayerMetadata> history() throws IOException {
                return new VersionLog(conf(), new Path(path)).history();
            }

            @Override
            public Map<Integer, Long> scan(long v) {
                long t = System.nanoTime();
                try {
                    return rows(version(v));
                } finally {
                    time("check scan", t);
                }
            }

            @Override
            public long count(long v) {
                long t = System.nanoTime();
                try {
                    return version(v).count();
                } finally {
                    time("check count", t);
                }
            }

            @Override
            public Long lookup(long v, int col, int row) {
                long t = System.nanoTime();
                try {
                    List<Row> rs = version(v).where("col = " + col + " AND row = " + row).select("v").collectAsList();
                    if (rs.size() > 1) {
                        throw new AssertionError("look-up of (" + col + ", " + row + ") in version " + v + " found "
                            + rs.size() + " tiles");
                    }
                    return rs.isEmpty() ? null : rs.get(0).getLong(0);
                } finally {
                    time("check lookup", t);
                }
            }

            @Override
            public Map<Integer, Long> asOf(long millis) {
                long t = System.nanoTime();
                try {
                    return rows(spark.read().format(FORMAT).option("timestampAsOf",
                        java.time.Instant.ofEpochMilli(millis).toString()).load(path));
                } finally {
                    time("check asOf", t);
                }
            }

            @Override
            public String verify(long v) throws IOException {
                long t = System.nanoTime();
                try {
                    return LayerVerifier.run(conf(), path, v);
                } finally {
                    time("check verify", t);
                }
            }
        };
    }
}
