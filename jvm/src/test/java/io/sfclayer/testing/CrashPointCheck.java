package io.sfclayer.testing;

import io.sfclayer.commit.VersionLog;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.layer.LayerVerifier;
import io.sfclayer.layer.Vacuum;
import io.sfclayer.spark.SfcLayerSource;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.DataFrameWriter;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * What a crash point must leave (issue 35), for CrashPointsTest (every point on local files) and
 * StoreCrashPoints (a sample on HDFS and S3) alike: the layer exactly as before (its newest document the
 * pristine one, byte for byte) or as after (a version the successful run made, with the same
 * {@link #signature}: operation, files, records and deltas), every version in its log verifying clean
 * (nothing a version references was deleted or damaged); and, checked fully, its content that state's
 * (fingerprint), and a next write and a vacuum that work and leave it clean, the next write's tiles read
 * back. Also the tiles both write ({@link #write}) and the states a successful run leaves ({@link #states}).
 */
public final class CrashPointCheck {
    private final SparkSession spark;
    private final Configuration conf;

    public CrashPointCheck(SparkSession spark) {
        this.spark = spark;
        this.conf = spark.sparkContext().hadoopConfiguration();
    }

    /** An operation on the layer at a path. */
    public interface Operation {
        void run(String path) throws Exception;
    }

    /** An operation and the layer it starts from: a plain one, or one with delta versions. */
    public static final class Case {
        public final boolean deltas;
        public final Operation op;

        public Case(boolean deltas, Operation op) {
            this.deltas = deltas;
            this.op = op;
        }

        /** The pristine layer of its kind: {@code withDeltas} or {@code plain}. */
        public Pristine from(Pristine plain, Pristine withDeltas) {
            return deltas ? withDeltas : plain;
        }
    }

    /** A layer every run of an operation starts from (a fresh copy of it): its newest version, digest, fingerprint. */
    public static final class Pristine {
        public final String path;
        public final long version;
        public final String digest;
        public final long fingerprint;

        Pristine(String path, LayerMetadata md, long fingerprint) {
            this.path = path;
            this.version = md.version;
            this.digest = md.digest;
            this.fingerprint = fingerprint;
        }
    }

    /** A state a failed run may leave: a version the successful run made, its signature and fingerprint. */
    public static final class State {
        public final long version;
        public final String signature;
        public final long fingerprint;

        State(long version, String signature, long fingerprint) {
            this.version = version;
            this.signature = signature;
            this.fingerprint = fingerprint;
        }

        @Override
        public String toString() {
            return "version " + version + ": " + signature;
        }
    }

    public Pristine pristine(String path) throws IOException {
        return new Pristine(path, log(path).current(), fingerprint(path));
    }

    public VersionLog log(String path) throws IOException {
        return new VersionLog(conf, new Path(path));
    }

    /** What a version document says of its content, without its writeId and stamp: equal for the same change. */
    public static String signature(LayerMetadata md) {
        long deltaRecords = md.deltas.stream().mapToLong(d -> d.file.records).sum();
        return md.operation + (md.deltaAppend ? " (delta)" : "") + (md.autoCompact ? " (auto)" : "") + ", "
            + md.fileCount + " files of " + md.recordCount + " records, " + md.deltas.size() + " deltas of "
            + deltaRecords + " records";
    }

    /** Tiles [c0, c0 + side) x [r0, r0 + side), v = col * 100 + row + add. */
    public Dataset<Row> frame(int c0, int r0, int side, int add) {
        return spark.range((long) side * side).selectExpr("int(id % " + side + ") + " + c0 + " AS col",
            "int(id DIV " + side + ") + " + r0 + " AS row",
            "(int(id % " + side + ") + " + c0 + ") * 100 + int(id DIV " + side + ") + " + r0 + " + " + add + " AS v");
    }

    /**
     * Writes {@link #frame} to {@code path} (bounds 0..15, 64 KiB blocks): an append with more than two
     * partitions by the shuffle (smallAppendBytes 0), else as a small one; {@code appendMode} null for
     * copy-on-write, "delta" for delta files (no automatic compaction).
     */
    public void write(int c0, int r0, int side, int add, String path, String mode, int partitions, String appendMode) {
        DataFrameWriter<Row> w = frame(c0, r0, side, add).write().format(SfcLayerSource.class.getName()).mode(mode)
            .option("bounds", "0,0,15,15").option("partitions", String.valueOf(partitions)).option("blockSize", "64k")
            .option("appendMode", appendMode == null ? "rewrite" : appendMode)
            .option("smallAppendBytes", mode.equals("append") && partitions > 2 ? "0" : "1m");
        if (appendMode != null) {
            w = w.option("compactAfterDeltas", "0");
        }
        w.save(path);
    }

    /** count * 10^9 + sum(v) of the newest version: reads every tile. */
    public long fingerprint(String path) {
        return fingerprint(spark.read().format(SfcLayerSource.class.getName()).load(path));
    }

    public long fingerprint(String path, long version) {
        return fingerprint(spark.read().format(SfcLayerSource.class.getName())
            .option("versionAsOf", String.valueOf(version)).load(path));
    }

    private static long fingerprint(Dataset<Row> df) {
        Row r = df.selectExpr("count(*)", "sum(v)").first();
        return r.getLong(0) * 1_000_000_000L + (r.isNullAt(1) ? 0 : r.getLong(1));
    }

    /**
     * The states a successful run left at {@code path}: each version newer than {@code fromVersion} (an
     * append that compacts makes two; the first alone is a state a failure may leave too).
     */
    public List<State> states(String path, long fromVersion) throws IOException {
        List<State> out = new ArrayList<>();
        for (LayerMetadata md : log(path).history()) {
            if (md.version > fromVersion) {
                out.add(new State(md.version, signature(md), fingerprint(path, md.version)));
            }
        }
        return out;
    }

    public void assertAllVersionsVerify(String path, String where) throws IOException {
        for (long v : log(path).versions()) {
            String report = LayerVerifier.run(conf, path, v);
            if (!report.contains("\"problems\":[]")) {
                throw new AssertionError(where + ": version " + v + " does not verify clean: " + report);
            }
        }
    }

    /** The layer at {@code path} after a failed run, checked as the class says ({@code full}: every check). */
    public void check(String path, Pristine from, List<State> done, String where, boolean full) throws Exception {
        LayerMetadata newest = log(path).current();
        long expected;
        if (newest.version == from.version) {
            if (!from.digest.equals(newest.digest)) {
                throw new AssertionError(where + ": newest version " + newest.version + " is the pristine one, but"
                    + " not byte for byte");
            }
            expected = from.fingerprint;
        } else {
            State s = done.stream().filter(d -> d.version == newest.version).findFirst().orElse(null);
            if (s == null) {
                throw new AssertionError(where + ": newest version " + newest.version + " (" + signature(newest)
                    + ") is neither as before (" + from.version + ") nor as after (" + done + ")");
            }
            if (!s.signature.equals(signature(newest))) {
                throw new AssertionError(where + ": version " + newest.version + " is " + signature(newest)
                    + ", the successful run's " + s.signature);
            }
            expected = s.fingerprint;
        }
        assertAllVersionsVerify(path, where);
        if (!full) {
            return;
        }
        long fp = fingerprint(path);
        if (fp != expected) {
            throw new AssertionError(where + ": version " + newest.version + " reads as " + fp + ", not as the"
                + " state it claims (" + expected + ")");
        }
        write(12, 12, 2, 1, path, "append", 2, null);
        Vacuum.run(conf, path, 0, false, false);
        assertAllVersionsVerify(path, where + ", after a next write and a vacuum");
        if (fingerprint(path) != fp + nextWriteDelta()) {
            throw new AssertionError(where + ": the next write's tiles are not all there");
        }
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
