package io.sfclayer.spark;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.sfclayer.SfcLayerException;
import io.sfclayer.commit.VersionLog;
import io.sfclayer.curve.QueryBox;
import io.sfclayer.curve.TimeText;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.layer.Layer;
import io.sfclayer.layer.TileGrid;
import io.sfclayer.layer.Vacuum;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;

import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Layer maintenance as plain calls with string arguments and JSON answers (what the Python package
 * and the CLI call through py4j): history, delete, compact, repair, vacuum.
 */
public final class SfcLayerCommands {
    private static final ObjectMapper JSON = new ObjectMapper();

    private SfcLayerCommands() {
    }

    private static Configuration conf(SparkSession spark) {
        return HadoopConfs.forOptions(spark, java.util.Map.of()); // run-time spark.hadoop.* settings count
    }

    private static String json(Object o) {
        try {
            return JSON.writeValueAsString(o);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** One line of history: a version's number, commit time, operation and counts (and its batch, if it names one). */
    static Map<String, Object> summary(LayerMetadata md) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("version", md.version);
        // microseconds at most: what every reader (Python's one ISO-8601 rule) takes
        m.put("createdAt", java.time.Instant.parse(md.createdAt).truncatedTo(java.time.temporal.ChronoUnit.MICROS).toString());
        m.put("operation", md.operation);
        m.put("readVersion", md.readVersion < 0 ? null : md.readVersion);
        m.put("recordCount", md.recordCount);
        m.put("fileCount", md.fileCount);
        m.put("dataBytes", md.dataBytes);
        // the base totals above leave deltas out (FORMAT.md section 11): their own count beside them, records
        // an upper bound of the tiles they add (a key may be in several deltas and in a base file)
        m.put("deltaFiles", md.deltas.size());
        m.put("deltaRecords", md.deltas.stream().mapToLong(d -> d.file.records).sum());
        m.put("metrics", md.metrics);
        m.put("writeId", md.writeId); // what a CommitStateUnknown names: the write is committed if a version has it
        if (md.txn != null) { // the batch an idempotent write (a streaming query's, foreachBatch's) committed
            Map<String, Object> t = new LinkedHashMap<>();
            t.put("appId", md.txn.appId);
            t.put("txnVersion", md.txn.version);
            m.put("transaction", t);
        }
        return m;
    }

    /** The newest pyramid document in {@code dir} as JSON ({@link io.sfclayer.layer.PyramidDocuments#newest}). */
    public static String pyramidDocument(SparkSession spark, String dir) throws IOException {
        return json(io.sfclayer.layer.PyramidDocuments.newest(conf(spark), dir));
    }

    /** Publishes pyramid document {@code number} unless taken ({@link io.sfclayer.layer.PyramidDocuments#publish}). */
    public static boolean publishPyramidDocument(SparkSession spark, String dir, long number, String text)
            throws IOException {
        return io.sfclayer.layer.PyramidDocuments.publish(conf(spark), dir, number, text);
    }

    /** Every retained version, oldest first, as a JSON array of {@link #summary}s. */
    public static String history(SparkSession spark, String path) throws IOException {
        List<Map<String, Object>> out = new ArrayList<>();
        for (LayerMetadata md : versions(spark, path)) {
            out.add(summary(md));
        }
        return json(out);
    }

    /** Every retained version, oldest first (history's, in Python, the CLI and SQL). */
    public static List<LayerMetadata> versions(SparkSession spark, String path) throws IOException {
        VersionLog log = new VersionLog(conf(spark), new Path(path));
        List<LayerMetadata> versions = log.history();
        if (versions.isEmpty()) {
            log.current(); // LayerNotFound naming the path
        }
        return versions;
    }

    /**
     * Deletes the tiles in the box given by {@code keys} ("colMin,rowMin,colMax,rowMax"), {@code bbox}
     * ("xmin,ymin,xmax,ymax" in map units) and {@code time} ("start,end" epoch micros), each optional
     * (null) but not all; they intersect, as in a read. Returns the new version's summary.
     */
    public static String delete(SparkSession spark, String path, String keys, String bbox, String time)
            throws IOException {
        return json(summary(deleteVersion(spark, path, keys, bbox, time)));
    }

    /** {@link #delete}'s work: the new version, or the newest one unchanged when no box meets the layer. */
    public static LayerMetadata deleteVersion(SparkSession spark, String path, String keys, String bbox, String time)
            throws IOException {
        if (keys == null && bbox == null && time == null) {
            throw new SfcLayerException.InvalidArgument("delete: no box is given (give keys, bbox or time; to delete"
                + " every tile, overwrite the layer)");
        }
        Layer layer = Layer.open(conf(spark), path);
        LayerMetadata md = layer.metadata();
        QueryBox box = QueryBox.of(md.keyIndex.bounds());
        if (md.isSpaceTime()) {
            box = QueryBox.of(box.colMin, box.rowMin, box.colMax, box.rowMax, md.keyIndex.timeBounds().minMicros,
                md.keyIndex.timeBounds().maxMicros);
        }
        List<QueryBox> boxes = new ArrayList<>(List.of(box));
        if (keys != null) {
            String[] p = keys.split(",");
            if (p.length != 4) {
                throw new SfcLayerException.InvalidArgument("delete keys: '" + keys
                    + "' must be four numbers (colMin,rowMin,colMax,rowMax)");
            }
            boxes = intersect(boxes, QueryBox.of(Integer.parseInt(p[0].trim()), Integer.parseInt(p[1].trim()),
                Integer.parseInt(p[2].trim()), Integer.parseInt(p[3].trim()), Long.MIN_VALUE, Long.MAX_VALUE));
        }
        if (bbox != null) {
            List<QueryBox> b = SfcLayerScanBuilder.parseBbox(bbox, TileGrid.of(md), layer);
            if (b.isEmpty()) {
                boxes = List.of();
            } else {
                QueryBox k = b.get(0);
                boxes = intersect(boxes, QueryBox.of(k.colMin, k.rowMin, k.colMax, k.rowMax, Long.MIN_VALUE, Long.MAX_VALUE));
            }
        }
        if (time != null) {
            if (!md.isSpaceTime()) {
                throw new SfcLayerException.InvalidArgument("delete time: '" + time + "' is given for a spatial layer ("
                    + path + ": its keys have no time)");
            }
            String[] p = time.split(",");
            long t0 = TimeText.parseInstantMicros("time", p[0].trim());
            long t1 = TimeText.parseInstantMicros("time", p[1].trim());
            boxes = intersect(boxes, QueryBox.of(Integer.MIN_VALUE, Integer.MIN_VALUE, Integer.MAX_VALUE,
                Integer.MAX_VALUE, t0, t1));
        }
        if (boxes.isEmpty()) {
            return md;
        }
        return SfcLayerUpdate.delete(spark, path, boxes);
    }

    /**
     * Deletes the tiles in several key boxes, {@code "colMin,rowMin,colMax,rowMax;colMin,..."}, as one
     * new version (a pyramid's incremental rebuild removes scattered parent tiles this way). Returns
     * the new version's summary, or the newest one's when no box meets the key bounds.
     */
    public static String deleteKeys(SparkSession spark, String path, String keys) throws IOException {
        LayerMetadata md = Layer.open(conf(spark), path).metadata();
        QueryBox all = QueryBox.of(md.keyIndex.bounds());
        if (md.isSpaceTime()) {
            all = QueryBox.of(all.colMin, all.rowMin, all.colMax, all.rowMax, md.keyIndex.timeBounds().minMicros,
                md.keyIndex.timeBounds().maxMicros);
        }
        List<QueryBox> boxes = new ArrayList<>();
        for (String box : keys.split(";")) {
            String[] p = box.split(",");
            if (p.length != 4) {
                throw new SfcLayerException.InvalidArgument("deleteKeys: box '" + box
                    + "' must be colMin,rowMin,colMax,rowMax");
            }
            boxes.addAll(intersect(List.of(all), QueryBox.of(Integer.parseInt(p[0].trim()),
                Integer.parseInt(p[1].trim()), Integer.parseInt(p[2].trim()), Integer.parseInt(p[3].trim()),
                Long.MIN_VALUE, Long.MAX_VALUE)));
        }
        if (boxes.isEmpty()) {
            return json(summary(md));
        }
        return json(summary(SfcLayerUpdate.delete(spark, path, boxes)));
    }

    private static List<QueryBox> intersect(List<QueryBox> boxes, QueryBox with) {
        List<QueryBox> out = new ArrayList<>();
        for (QueryBox b : boxes) {
            QueryBox i = b.intersect(with);
            if (i != null) {
                out.add(i);
            }
        }
        return out;
    }

    /**
     * Repairs version {@code version} as an update based on it ({@link SfcLayerUpdate#repair}):
     * {@code damagedNames} is a JSON array of the damaged data files' names, {@code dropped} the JSON
     * recorded in the history entry. Returns the new version's summary.
     */
    public static String repair(SparkSession spark, String path, long version, String damagedNames, String dropped)
            throws IOException {
        List<String> names = new ArrayList<>();
        for (Object n : JSON.readValue(damagedNames, List.class)) {
            names.add(String.valueOf(n));
        }
        return json(summary(SfcLayerUpdate.repair(spark, path, version, names, JSON.readValue(dropped, Object.class))));
    }

    /**
     * Restores {@code version} (when ≥ 1), or else the newest version committed at or before {@code asOf}
     * (epoch microseconds or ISO-8601 text), as a new version ({@link io.sfclayer.layer.LayerRestore});
     * returns its summary, or the newest version's when it already is the one asked for.
     */
    public static String restore(SparkSession spark, String path, long version, String asOf) throws IOException {
        return json(summary(restoreVersion(spark, path, version, asOf)));
    }

    /** {@link #restore}'s work: the new version (or the newest, unchanged). */
    public static LayerMetadata restoreVersion(SparkSession spark, String path, long version, String asOf)
            throws IOException {
        if ((version >= 1) == (asOf != null)) {
            throw new SfcLayerException.InvalidArgument("restore of " + path + ": give exactly one of a version (1, 2,"
                + " ...) and a time (as_of)");
        }
        long asOfMillis = asOf == null ? -1 : Math.floorDiv(TimeText.parseInstantMicros("as_of", asOf.trim()), 1000L);
        return io.sfclayer.layer.LayerRestore.restore(conf(spark), path, version >= 1 ? version : -1, asOfMillis);
    }

    /** Compacts runs of small files; returns the newest version's summary. */
    public static String compact(SparkSession spark, String path) throws IOException {
        return json(summary(SfcLayerUpdate.compact(spark, path)));
    }

    /** See {@link Vacuum#run}; returns its report as JSON. */
    public static String vacuum(SparkSession spark, String path, long retainMillis, boolean dryRun,
                                boolean enforceRetention) throws IOException {
        return json(Vacuum.run(conf(spark), path, retainMillis, dryRun, enforceRetention));
    }
}
