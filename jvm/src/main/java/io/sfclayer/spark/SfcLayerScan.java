package io.sfclayer.spark;

import io.sfclayer.SfcLayerException;
import io.sfclayer.curve.IndexRange;
import io.sfclayer.curve.KeyIndex;
import io.sfclayer.curve.QueryBox;
import io.sfclayer.curve.RangeMerge;
import io.sfclayer.format.DataFileListing;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.layer.Layer;
import io.sfclayer.layer.TileGrid;
import org.apache.hadoop.fs.BlockLocation;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
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
 * A planned layer scan (the design's "Bounding Box Queries", driver side), and its batch: the key
 * boxes decompose into SFC ranges with the layer's key index, and the data files are pruned by the
 * first index in their names against those ranges. No data file is opened here; the version's
 * listing is made once (and only when some range remains). One input partition per selected file,
 * holding that file's clipped ranges.
 */
final class SfcLayerScan implements Scan, Batch, SupportsReportStatistics {
    /** Boxes EXPLAIN spells out before summarising the rest. */
    private static final int BOXES_SHOWN = 4;

    private final Layer layer;
    private final StructType readSchema;
    private final List<QueryBox> boxes;
    private final Filter[] pushed;
    private final String bbox;
    private final int maxRanges;
    private final OnCorrupt onCorrupt;
    private List<IndexRange> ranges;
    private List<DataFileListing.Selection> selected;

    /**
     * @param bbox the bbox option as given (its box is among {@code boxes} already), or null
     */
    SfcLayerScan(Layer layer, StructType readSchema, List<QueryBox> boxes, Filter[] pushed, String bbox,
                 int maxRanges, OnCorrupt onCorrupt) {
        this.onCorrupt = onCorrupt;
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
        if (boxes.isEmpty()) {
            return List.of();
        }
        if (boxes.size() == 1) {
            return keyIndex.ranges(boxes.get(0), maxRanges);
        }
        int share = maxRanges <= 0 ? 0 : Math.max(16, (maxRanges + boxes.size() - 1) / boxes.size());
        List<IndexRange> all = new ArrayList<>();
        for (QueryBox b : boxes) {
            all.addAll(keyIndex.ranges(b, share));
        }
        return RangeMerge.capRanges(all, maxRanges);
    }

    /** Decomposes the boxes and selects the files, once. */
    private synchronized void plan() {
        if (selected != null) {
            return;
        }
        ranges = ranges(layer.metadata().keyIndex, boxes, maxRanges);
        if (ranges.isEmpty()) {
            selected = List.of();
            return;
        }
        try {
            selected = layer.listing().select(ranges);
        } catch (IOException e) {
            throw new SfcLayerException("cannot list the data files of layer " + layer.path() + ": " + e, e);
        }
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
            + (bbox == null ? "" : " bbox=[" + bbox.trim() + "]");
    }

    @Override
    public Batch toBatch() {
        return this;
    }

    @Override
    public InputPartition[] planInputPartitions() {
        plan();
        InputPartition[] out = new InputPartition[selected.size()];
        FileSystem fs = localityFileSystem(selected.size());
        for (int i = 0; i < out.length; i++) {
            DataFileListing.Selection s = selected.get(i);
            long[] pairs = new long[2 * s.ranges.size()];
            for (int j = 0; j < s.ranges.size(); j++) {
                pairs[2 * j] = s.ranges.get(j).lo;
                pairs[2 * j + 1] = s.ranges.get(j).hi;
            }
            Path file = new Path(s.path);
            out[i] = new SfcLayerInputPartition(file.toString(), layer.entry(s.name), pairs,
                fs == null ? null : blockHosts(fs, file));
        }
        return out;
    }

    /** Asking for block hosts costs one NameNode call per file: done for moderate scans only. */
    static final int MAX_FILES_FOR_LOCALITY = 2000;

    /** The filesystem to ask for block hosts, or null when locality is moot (local files) or too costly. */
    private FileSystem localityFileSystem(int files) {
        if (files == 0 || files > MAX_FILES_FOR_LOCALITY) {
            return null;
        }
        try {
            FileSystem fs = layer.path().getFileSystem(layer.conf());
            return "file".equals(fs.getScheme()) ? null : fs;
        } catch (IOException | UnsupportedOperationException e) {
            return null;
        }
    }

    /** Hosts of the data file's (single) block; none if they cannot be had: locality is only a hint. */
    private static String[] blockHosts(FileSystem fs, Path mapFile) {
        try {
            BlockLocation[] blocks = fs.getFileBlockLocations(new Path(mapFile, "data"), 0, 1);
            return blocks.length == 0 ? null : blocks[0].getHosts();
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
        LayerMetadata md = layer.metadata();
        return new SfcLayerPartitionReaderFactory(new SerializableConf(layer.conf()), md.valueSchemaJson,
            md.isSpaceTime(), md.compression, TileGrid.of(md), readSchema, boxes.toArray(new QueryBox[0]), onCorrupt);
    }

    @Override
    public CustomMetric[] supportedCustomMetrics() {
        return SfcLayerMetrics.supported();
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
