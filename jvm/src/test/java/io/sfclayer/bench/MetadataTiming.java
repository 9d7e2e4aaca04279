package io.sfclayer.bench;

import io.sfclayer.commit.VersionLog;
import io.sfclayer.curve.IndexRange;
import io.sfclayer.curve.QueryBox;
import io.sfclayer.format.DataFile;
import io.sfclayer.format.DataFileListing;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.format.Manifest;
import io.sfclayer.layer.Layer;
import io.sfclayer.layer.QueryPlan;
import io.sfclayer.lookup.ValueReader;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;

import java.io.File;
import java.util.List;

/**
 * bench/metadata.py's JVM side (issue 20): builds a {@link SyntheticLayer} of N file entries, then,
 * after a warm-up on another layer (JIT, classes), measures (median of 7, every cache of what was read
 * emptied before each) the first open of the layer for look-ups with its first get, the planning of a 1-tile box, the driver heap they hold, and a one-tile append's
 * metadata bytes and time. Prints one JSON object.
 *
 * <pre>java -cp ... io.sfclayer.bench.MetadataTiming ENTRIES WORKDIR</pre>
 */
public final class MetadataTiming {
    private MetadataTiming() {
    }

    public static void main(String[] args) throws Exception {
        long entries = Long.parseLong(args[0]);
        File work = new File(args[1]);
        Configuration conf = new Configuration();
        long t0 = System.nanoTime();
        SyntheticLayer layer = SyntheticLayer.build(conf, new Path(new File(work, "layer-" + entries).getPath()),
            entries, 4);
        double buildS = (System.nanoTime() - t0) / 1e9;
        Configuration warmConf = new Configuration(conf);
        warmConf.setInt(io.sfclayer.format.ManifestTree.INLINE_FILES, 4); // the warm-up runs the manifest code too
        SyntheticLayer warm = SyntheticLayer.build(warmConf, new Path(new File(work, "warm-" + entries).getPath()),
            200, 4);
        for (int i = 0; i < 20; i++) {
            measure(conf, warm, i % 2, false);
        }
        // the median of 7 first opens: before each, every cache of what was read is emptied
        double[][] runs = new double[7][];
        Object[] held = new Object[1];
        long heap = 0;
        for (int i = 0; i < runs.length; i++) {
            held[0] = null;
            forgetAll();
            gc();
            long heap0 = used();
            runs[i] = measure(conf, layer, 0, true, held);
            if (i == runs.length - 1) {
                gc();
                heap = used() - heap0;
            } else {
                ((ValueReader) ((Object[]) held[0])[0]).close();
            }
        }
        double[] m = {median(runs, 0), median(runs, 1), runs[0][2], median(runs, 3), median(runs, 4)};
        String path = layer.path.toString();
        long v1Bytes = new File(path, "_sfclayer/v00000001.json").length();
        File manifests = new File(path, "_sfclayer/manifests");
        long before = dirBytes(manifests);
        LayerMetadata v2 = layer.appendTile(conf, 2, 77);
        double appendMs = layer.lastCommitNanos / 1e6;
        long appendBytes = dirBytes(manifests) - before
            + new File(path, "_sfclayer/" + VersionLog.versionFileName(v2.version)).length();
        String spark = "";
        if (args.length > 2 && args[2].equals("--spark")) {
            double[] a = sparkAppends(conf, layer, warm);
            spark = ", \"sparkAppendMs\": " + a[0] + ", \"sparkAppendBytes\": " + (long) a[1]
                + ", \"sparkAppendManifestsRead\": " + (long) a[2] + ", \"sparkAppendFilesMerged\": " + (long) a[3];
        }
        System.out.println("{\"entries\": " + entries + ", \"fileCount\": " + v2.fileCount
            + ", \"formatVersion\": " + v2.formatVersion + ", \"buildS\": " + buildS
            + ", \"documentBytes\": " + v1Bytes + ", \"openGetMs\": " + m[0] + ", \"planMs\": " + m[1]
            + ", \"openGetCpuMs\": " + m[3] + ", \"planCpuMs\": " + m[4]
            + ", \"planManifestsRead\": " + (long) m[2] + ", \"heapBytes\": " + heap
            + ", \"appendMs\": " + appendMs + ", \"appendBytes\": " + appendBytes + spark + "}");
        if (held[0] == null) {
            throw new IllegalStateException("nothing held");
        }
    }

    /**
     * One-tile appends through Spark ({@code write.format("sfclayer").mode("append")}, one row: the
     * small-append path, its records merged on the driver), after one on the warm-up layer: the median
     * wall time of 3 (real tiles 0, 1 and 3 each replaced, every cache of what was read emptied before
     * each), and the most metadata bytes written, manifests read and data files merged by one of them.
     */
    private static double[] sparkAppends(Configuration conf, SyntheticLayer layer, SyntheticLayer warm)
            throws Exception {
        org.apache.spark.sql.SparkSession spark = org.apache.spark.sql.SparkSession.builder().master("local[2]")
            .appName("sfclayer-bench-metadata").config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "2").getOrCreate();
        spark.sparkContext().setLogLevel("ERROR");
        try {
            sparkAppend(spark, conf, warm, 0, 5);
            double[] ms = new double[3];
            double bytes = 0, reads = 0, merged = 0;
            int[] tiles = {0, 1, 3};
            for (int i = 0; i < tiles.length; i++) {
                double[] r = sparkAppend(spark, conf, layer, tiles[i], 1000 + i);
                ms[i] = r[0];
                bytes = Math.max(bytes, r[1]);
                reads = Math.max(reads, r[2]);
                merged = Math.max(merged, r[3]);
            }
            java.util.Arrays.sort(ms);
            return new double[] {ms[1], bytes, reads, merged};
        } finally {
            spark.stop();
        }
    }

    /** {wall ms, metadata bytes written, manifests read, data files merged} of one Spark append of real tile j. */
    private static double[] sparkAppend(org.apache.spark.sql.SparkSession spark, Configuration conf,
                                        SyntheticLayer layer, int j, long v) throws Exception {
        int[] k = layer.keys.get(j);
        org.apache.spark.sql.types.StructType schema = new org.apache.spark.sql.types.StructType()
            .add("col", org.apache.spark.sql.types.DataTypes.IntegerType, false)
            .add("row", org.apache.spark.sql.types.DataTypes.IntegerType, false)
            .add("v", org.apache.spark.sql.types.DataTypes.LongType, false);
        org.apache.spark.sql.Dataset<org.apache.spark.sql.Row> df = spark.createDataFrame(
            List.of(org.apache.spark.sql.RowFactory.create(k[0], k[1], v)), schema);
        String path = layer.path.toString();
        VersionLog log = new VersionLog(conf, layer.path);
        long version0 = log.current().version;
        File manifests = new File(path, "_sfclayer/manifests");
        long before = dirBytes(manifests);
        forgetAll();
        long reads0 = Manifest.readsTotal();
        long t0 = System.nanoTime();
        df.write().format("sfclayer").mode("append").save(path);
        double ms = (System.nanoTime() - t0) / 1e6;
        long reads = Manifest.readsTotal() - reads0;
        LayerMetadata md = log.current();
        if (md.version != version0 + 1) {
            throw new IllegalStateException("the append committed version " + md.version + " on " + version0);
        }
        long bytes = dirBytes(manifests) - before + new File(path, "_sfclayer/" + VersionLog.versionFileName(md.version))
            .length();
        try (ValueReader reader = ValueReader.open(conf, path, 16)) {
            if (reader.get(k[0], k[1]) == null) {
                throw new IllegalStateException("the appended tile does not read back");
            }
        }
        Object removed = md.metrics == null ? null : md.metrics.get("filesRemoved");
        return new double[] {ms, bytes, reads, removed instanceof Number ? ((Number) removed).doubleValue() : -1};
    }

    private static double[] measure(Configuration conf, SyntheticLayer layer, int key, boolean cold) throws Exception {
        return measure(conf, layer, key, cold, new Object[1]);
    }

    /** {open + first get ms, plan ms, manifests the plan read}; {@code held} keeps the reader and plan alive. */
    private static double[] measure(Configuration conf, SyntheticLayer layer, int key, boolean cold, Object[] held)
            throws Exception {
        int[] k = layer.keys.get(key);
        java.lang.management.ThreadMXBean cpu = java.lang.management.ManagementFactory.getThreadMXBean();
        long c0 = cpu.getCurrentThreadCpuTime();
        long t0 = System.nanoTime();
        ValueReader reader = ValueReader.open(conf, layer.path.toString(), 1024);
        if (reader.get(k[0], k[1]) == null) {
            throw new IllegalStateException("no tile");
        }
        double openMs = (System.nanoTime() - t0) / 1e6;
        double openCpuMs = (cpu.getCurrentThreadCpuTime() - c0) / 1e6;
        int[] b = layer.keys.get(key + 1);
        if (cold) {
            forgetAll(); // the plan reads its document and manifests itself
        }
        c0 = cpu.getCurrentThreadCpuTime();
        t0 = System.nanoTime();
        Layer opened = Layer.open(conf, layer.path.toString());
        List<IndexRange> ranges = QueryPlan.ranges(opened.metadata().keyIndex,
            List.of(QueryBox.of(b[0], b[1], b[0], b[1])), 0);
        DataFileListing listing = opened.listing();
        List<DataFileListing.Selection> selected = listing.select(ranges);
        int withStats = 0;
        for (DataFileListing.Selection s : selected) {
            DataFile f = opened.fileStarting(s.firstIndex);
            withStats += f != null ? 1 : 0;
        }
        double planMs = (System.nanoTime() - t0) / 1e6;
        double planCpuMs = (cpu.getCurrentThreadCpuTime() - c0) / 1e6;
        if (selected.size() != 1 || withStats != 1) {
            throw new IllegalStateException("a 1-tile box selected " + selected.size() + " files");
        }
        long reads = opened.manifests() == null ? 0 : opened.manifests().store().reads;
        held[0] = new Object[] {reader, opened, listing, selected};
        if (!cold) {
            reader.close();
        }
        return new double[] {openMs, planMs, reads, openCpuMs, planCpuMs};
    }

    private static double median(double[][] runs, int k) {
        double[] v = new double[runs.length];
        for (int i = 0; i < v.length; i++) {
            v[i] = runs[i][k];
        }
        java.util.Arrays.sort(v);
        return v[v.length / 2];
    }

    /** Empties the JVM-wide caches of documents, listings, manifests and data file indexes (a first open). */
    private static void forgetAll() throws ReflectiveOperationException {
        Manifest.forgetCached();
        clear(VersionLog.class, "DOCUMENTS");
        clear(Layer.class, "LISTINGS");
        java.lang.reflect.Method m = Class.forName("io.sfclayer.lookup.IndexCache").getDeclaredMethod("clear");
        m.setAccessible(true);
        m.invoke(null);
    }

    private static void clear(Class<?> owner, String field) throws ReflectiveOperationException {
        java.lang.reflect.Field f = owner.getDeclaredField(field);
        f.setAccessible(true);
        ((java.util.Map<?, ?>) f.get(null)).clear();
    }

    private static void gc() throws InterruptedException {
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(50);
        }
    }

    private static long used() {
        Runtime rt = Runtime.getRuntime();
        return rt.totalMemory() - rt.freeMemory();
    }

    private static long dirBytes(File dir) {
        File[] fs = dir.listFiles((d, n) -> n.endsWith(".json"));
        long n = 0;
        for (File f : fs == null ? new File[0] : fs) {
            n += f.length();
        }
        return n;
    }
}
