package io.sfclayer.spark;

import io.sfclayer.SfcLayerException;
import io.sfclayer.curve.IndexRange;
import io.sfclayer.curve.KeyIndex;
import io.sfclayer.curve.QueryBox;
import io.sfclayer.format.DataFile;
import io.sfclayer.format.DataFileListing;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.layer.Layer;
import io.sfclayer.layer.QueryPlan;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.Statistics;
import org.apache.spark.sql.connector.read.SupportsReportStatistics;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructType;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.OptionalLong;
import java.util.stream.Collectors;

/**
 * A planned layer scan (the design's "Bounding Box Queries", driver side): the key boxes decompose
 * into SFC ranges with the layer's key index, and the data files are pruned by the first index in
 * their names against those ranges. No data file is opened here; the version's listing is made once
 * (and only when some range remains). Partitioning is the batch's ({@link SfcLayerBatch}).
 */
final class SfcLayerScan implements Scan, SupportsReportStatistics {
    /** Boxes EXPLAIN spells out before summarising the rest. */
    private static final int BOXES_SHOWN = 4;

    private final Layer layer;
    private final StructType readSchema;
    private final List<QueryBox> boxes;
    private final Filter[] pushed;
    private final String bbox;
    private final int maxRanges;
    private final OnCorrupt onCorrupt;
    /** Every filter of the query: the file statistics prune by them (seed 003). */
    private final Filter[] filters;
    private List<IndexRange> ranges;
    private List<DataFileListing.Selection> selected;
    /** The selected files' entries in the version document (null where it has none: version 1). */
    private List<DataFile> selectedFiles;
    /** Files pruned by name and by statistics: the scan's driver metrics. */
    private final SfcLayerMetrics.Planning planning = new SfcLayerMetrics.Planning();
    private SfcLayerBatch batch;

    /**
     * @param bbox the bbox option as given (its box is among {@code boxes} already), or null
     */
    SfcLayerScan(Layer layer, StructType readSchema, List<QueryBox> boxes, Filter[] pushed, String bbox,
                 int maxRanges, OnCorrupt onCorrupt, Filter[] filters) {
        this.onCorrupt = onCorrupt;
        this.filters = filters;
        this.layer = layer;
        this.readSchema = readSchema;
        this.boxes = boxes;
        this.pushed = pushed;
        this.bbox = bbox;
        this.maxRanges = maxRanges;
    }

    /**
     * The SFC ranges of the union of {@code boxes}: sorted, disjoint, at most {@code maxRanges} when it
     * is positive (each box decomposes with its share of the cap, then the union is capped again).
     */
    static List<IndexRange> ranges(KeyIndex keyIndex, List<QueryBox> boxes, int maxRanges) {
        return QueryPlan.ranges(keyIndex, boxes, maxRanges);
    }

    /** Decomposes the boxes and selects the files, once. */
    private synchronized void plan() {
        if (selected != null) {
            return;
        }
        ranges = ranges(layer.metadata().keyIndex, boxes, maxRanges);
        if (ranges.isEmpty()) {
            selected = List.of();
            selectedFiles = List.of();
            planning.filesPrunedByName = layer.metadata().fileCount;
            return;
        }
        List<DataFileListing.Selection> byName;
        try {
            DataFileListing listing = layer.listing();
            byName = listing.select(ranges);
            planning.filesPrunedByName = listing.size() - byName.size();
        } catch (IOException e) {
            throw new SfcLayerException.StorageError("cannot list the data files of layer " + layer.path() + ": " + e, e);
        }
        QueryBox[] bx = boxes.toArray(new QueryBox[0]);
        selected = new ArrayList<>(byName.size());
        selectedFiles = new ArrayList<>(byName.size());
        for (DataFileListing.Selection s : byName) {
            DataFile f;
            try {
                f = layer.fileStarting(s.firstIndex);
            } catch (IOException e) {
                throw new SfcLayerException.StorageError("cannot read the manifests of layer " + layer.path() + ": " + e, e);
            }
            if (f != null && !StatsPruning.mightMatch(f.stats, f.records, filters, bx)) {
                planning.filesPrunedByStats++;
                continue;
            }
            selected.add(s);
            selectedFiles.add(f);
        }
    }

    /** After planning: the selected files with their clipped ranges, and their document entries (or null). */
    List<DataFileListing.Selection> selected() {
        plan();
        return selected;
    }

    List<DataFile> selectedFiles() {
        plan();
        return selectedFiles;
    }

    OnCorrupt onCorrupt() {
        return onCorrupt;
    }

    Layer layer() {
        return layer;
    }

    StructType schema() {
        return readSchema;
    }

    List<QueryBox> boxes() {
        return boxes;
    }

    @Override
    public StructType readSchema() {
        return readSchema;
    }

    @Override
    public String description() {
        plan();
        LayerMetadata md = layer.metadata();
        String shown = boxes.stream().limit(BOXES_SHOWN).map(QueryBox::toString)
            .collect(Collectors.joining("; "));
        if (boxes.size() > BOXES_SHOWN) {
            shown += "; ... " + (boxes.size() - BOXES_SHOWN) + " more";
        }
        return "sfclayer " + layer.path() + " v" + md.version + " [" + md.keyIndex.kind() + "]"
            + " boxes=[" + shown + "]" + (boxes.isEmpty() ? " (nothing can match)" : "")
            + " ranges=" + ranges.size()
            + " files=" + selected.size() + "/" + md.fileCount
            + " pushed=" + Arrays.toString(pushed)
            + (bbox == null ? "" : " bbox=[" + bbox.trim() + "]")
            + " filesPruned=[by name " + planning.filesPrunedByName + ", by statistics " + planning.filesPrunedByStats
            + "]";
    }

    /** One batch per scan, as when the scan was its own batch (Spark compares batches by identity). */
    @Override
    public synchronized Batch toBatch() {
        if (batch == null) {
            plan();
            batch = new SfcLayerBatch(layer, readSchema, boxes, selected, onCorrupt);
        }
        return batch;
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

    /** After planning: the files it pruned (the driver metrics). */
    SfcLayerMetrics.Planning planning() {
        plan();
        return planning;
    }

    /** A guess from the layer's totals, in proportion to the files selected. */
    @Override
    public Statistics estimateStatistics() {
        plan();
        LayerMetadata md = layer.metadata();
        double share = md.fileCount == 0 ? 0 : (double) selected.size() / md.fileCount;
        long bytes = (long) Math.ceil(md.dataBytes * share);
        long rows = (long) Math.ceil(md.recordCount * share);
        return new Statistics() {
            @Override
            public OptionalLong sizeInBytes() {
                return OptionalLong.of(bytes);
            }

            @Override
            public OptionalLong numRows() {
                return OptionalLong.of(rows);
            }
        };
    }
}
