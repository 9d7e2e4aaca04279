package io.sfclayer.bench;

import io.sfclayer.curve.IndexRange;
import io.sfclayer.curve.QueryBox;
import io.sfclayer.format.DataFile;
import io.sfclayer.format.DataFileListing;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.format.Manifest;
import io.sfclayer.format.VersionLog;
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
        System.out.println("{\"entries\": " + entries + ", \"fileCount\": " + v2.fileCount
            + ", \"formatVersion\": " + v2.formatVersion + ", \"buildS\": " + buildS
            + ", \"documentBytes\": " + v1Bytes + ", \"openGetMs\": " + m[0] + ", \"planMs\": " + m[1]
            + ", \"openGetCpuMs\": " + m[3] + ", \"planCpuMs\": " + m[4]
            + ", \"planManifestsRead\": " + (long) m[2] + ", \"heapBytes\": " + heap
            + ", \"appendMs\": " + appendMs + ", \"appendBytes\": " + appendBytes + "}");
        if (held[0] == null) {
            throw new IllegalStateException("nothing held");
        }
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
