package io.sfclayer.spark;

import io.sfclayer.curve.IndexRange;
import io.sfclayer.curve.QueryBox;
import io.sfclayer.curve.RangeMerge;
import io.sfclayer.geotrellis.GtLayer;
import io.sfclayer.geotrellis.GtLayerFiles;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.StructType;

import java.util.ArrayList;
import java.util.List;

/**
 * A scan of a GeoTrellis layer: the boxes' index ranges in GeoTrellis' own key index, the MapFiles they
 * meet chosen by name ({@code part-r-<p>-<first index>}; the others are pruned, never opened), one task
 * per file seeking through its share of the ranges ({@link io.sfclayer.geotrellis.GtFileScan}).
 */
final class GeoTrellisScan implements Scan, Batch {
    private final GeoTrellisTable table;
    private final GtLayer layer;
    private final StructType readSchema;
    private final List<QueryBox> boxes;
    private final SfcLayerMetrics.Planning planning = new SfcLayerMetrics.Planning();
    private List<IndexRange> ranges;
    private InputPartition[] partitions;
    private int fileCount;

    GeoTrellisScan(GeoTrellisTable table, GtLayer layer, StructType readSchema, List<QueryBox> boxes) {
        this.table = table;
        this.layer = layer;
        this.readSchema = readSchema;
        this.boxes = boxes;
    }

    /** The ranges of the union of the boxes (times: sfclayer's microseconds to GeoTrellis' milliseconds). */
    static List<IndexRange> ranges(GtLayer layer, List<QueryBox> boxes) {
        List<IndexRange> all = new ArrayList<>();
        for (QueryBox b : boxes) {
            long t0 = b.timeMin == Long.MIN_VALUE ? Long.MIN_VALUE : Math.floorDiv(b.timeMin, 1000L);
            long t1 = b.timeMax == Long.MAX_VALUE ? Long.MAX_VALUE : Math.floorDiv(b.timeMax, 1000L);
            all.addAll(layer.keyIndex.ranges(b.colMin, b.rowMin, b.colMax, b.rowMax, t0, t1));
        }
        return RangeMerge.merge(all);
    }

    private synchronized void plan() {
        if (partitions != null) return;
        ranges = ranges(layer, boxes);
        Configuration conf = HadoopConfs.forOptions(SparkSession.active(), table.options());
        GtLayerFiles files = GtLayerFiles.list(layer, conf);
        fileCount = files.size();
        List<List<IndexRange>> split = ranges.isEmpty() ? null : files.split(ranges);
        List<InputPartition> out = new ArrayList<>();
        for (int i = 0; i < files.size(); i++) {
            List<IndexRange> mine = split == null ? null : split.get(i);
            if (mine == null) {
                planning.filesPrunedByName++;
                continue;
            }
            long[] r = new long[2 * mine.size()];
            for (int k = 0; k < mine.size(); k++) {
                r[2 * k] = mine.get(k).lo;
                r[2 * k + 1] = mine.get(k).hi;
            }
            out.add(new GeoTrellisPartition(files.path(i), r));
        }
        partitions = out.toArray(new InputPartition[0]);
    }

    @Override
    public StructType readSchema() {
        return readSchema;
    }

    @Override
    public String description() {
        plan();
        return "sfclayer GeoTrellis " + layer.id() + " in " + layer.catalog + " [" + layer.keyIndex.kind() + "]"
            + " boxes=" + boxes + " ranges=" + ranges.size() + " files=" + partitions.length + "/" + fileCount;
    }

    @Override
    public Batch toBatch() {
        return this;
    }

    @Override
    public InputPartition[] planInputPartitions() {
        plan();
        return partitions;
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
        Configuration conf = HadoopConfs.forOptions(SparkSession.active(), table.options());
        return new GeoTrellisReaderFactory(new SerializableConf(conf), layer, readSchema,
            boxes.toArray(new QueryBox[0]), GeoTrellisTable.grid(layer));
    }

    @Override
    public CustomMetric[] supportedCustomMetrics() {
        return SfcLayerMetrics.supported();
    }

    @Override
    public CustomTaskMetric[] reportDriverMetrics() {
        plan();
        return planning.report();
    }
}
