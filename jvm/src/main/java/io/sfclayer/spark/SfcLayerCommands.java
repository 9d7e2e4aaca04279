package io.sfclayer.spark;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.sfclayer.SfcLayerException;
import io.sfclayer.curve.QueryBox;
import io.sfclayer.curve.TimeText;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.format.VersionLog;
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

    /** One line of history: a version's number, commit time, operation and counts. */
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
        m.put("metrics", md.metrics);
        m.put("writeId", md.writeId); // what a CommitStateUnknown names: the write is committed if a version has it
        return m;
    }

    /** Every retained version, oldest first, as a JSON array of {@link #summary}s. */
    /**
     * Write a small UTF-8 file (a pyramid document), replacing it whole: written beside it under a name of its
     * own (two writers never share a temporary file), then renamed over it, so readers see the old text or the
     * new one. Classic (py4j) and Spark Connect (the relation plugin) sessions both write through here.
     */
    public static void writeText(SparkSession spark, String path, String text) throws IOException {
        Configuration conf = conf(spark);
        Path p = new Path(path);
        org.apache.hadoop.fs.FileSystem fs = p.getFileSystem(conf);
        Path tmp = new Path(p.getParent(), "." + p.getName() + "." + java.util.UUID.randomUUID().toString()
            .replace("-", "") + ".tmp");
        try {
            try (org.apache.hadoop.fs.FSDataOutputStream out = fs.create(tmp, false)) {
                out.write(text.getBytes(java.nio.charset.StandardCharsets.UTF_8));
            }
            org.apache.hadoop.fs.FileContext.getFileContext(p.toUri(), conf)
                .rename(tmp, p, org.apache.hadoop.fs.Options.Rename.OVERWRITE);
        } finally {
            if (fs.exists(tmp)) {
                fs.delete(tmp, false);
            }
        }
    }

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
