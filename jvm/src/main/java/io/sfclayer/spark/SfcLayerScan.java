package io.sfclayer.spark;

import io.sfclayer.SfcLayerException;
import io.sfclayer.curve.IndexRange;
import io.sfclayer.curve.KeyIndex;
import io.sfclayer.curve.QueryBox;
import io.sfclayer.format.DataFile;
import io.sfclayer.format.DataFileListing;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.layer.Deltas;
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
    /** What the scan reads: a selected base file each, with the deltas meeting its ranges (format 7). */
    private List<Part> parts;
    /** Delta files read by some part (format 7). */
    private int deltasRead;
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

    /**
     * One partition's worth of reading: a base file selected by name with the query's ranges clipped
     * to what it covers, and the delta files (format 7) meeting those ranges, merged with it. {@code base}
     * is null for deltas alone: a base file statistics ruled out, or ranges before the first base file.
     */
    static final class Part {
        /** The base file, or null. */
        final DataFileListing.Selection base;
        /** The base file's entry in the version document (null: none, or version 1). */
        final DataFile file;
        final List<IndexRange> ranges;
        /** Positions in the version's deltas ({@link Deltas}), in list order; empty: none. */
        final int[] deltas;

        Part(DataFileListing.Selection base, DataFile file, List<IndexRange> ranges, int[] deltas) {
            this.base = base;
            this.file = file;
            this.ranges = ranges;
            this.deltas = deltas;
        }
    }

    private static final int[] NO_DELTAS = new int[0];

    /** Decomposes the boxes and selects the files, once. */
    private synchronized void plan() {
        if (parts != null) {
            return;
        }
        ranges = ranges(layer.metadata().keyIndex, boxes, maxRanges);
        if (ranges.isEmpty()) {
            parts = List.of();
            planning.filesPrunedByName = layer.metadata().fileCount + layer.deltas().size();
            return;
        }
        List<DataFileListing.Selection> byName;
        DataFileListing listing;
        try {
            listing = layer.listing();
            byName = listing.select(ranges);
            planning.filesPrunedByName = listing.size() - byName.size();
        } catch (IOException e) {
            throw new SfcLayerException.StorageError("cannot list the data files of layer " + layer.path() + ": " + e, e);
        }
        QueryBox[] bx = boxes.toArray(new QueryBox[0]);
        Deltas deltas = layer.deltas();
        DeltaPruning pruning = deltas.isEmpty() ? null : new DeltaPruning(deltas, listing, bx);
        parts = new ArrayList<>(byName.size() + 1);
        if (pruning != null) {
            // ranges before the first base file: only deltas can hold them
            List<IndexRange> head = Deltas.before(ranges, listing.size() == 0 ? Long.MAX_VALUE : listing.start(0));
            int[] ds = pruning.kept(deltas.meeting(QueryPlan.pairs(head)));
            if (ds.length > 0) {
                parts.add(new Part(null, null, head, ds));
            }
        }
        for (DataFileListing.Selection s : byName) {
            DataFile f;
            try {
                f = layer.fileStarting(s.firstIndex);
            } catch (IOException e) {
                throw new SfcLayerException.StorageError("cannot read the manifests of layer " + layer.path() + ": " + e, e);
            }
            int[] ds = pruning == null ? NO_DELTAS : pruning.kept(deltas.meeting(QueryPlan.pairs(s.ranges)));
            // FORMAT.md section 11: base files are a version's oldest, so statistics may always rule one out:
            // each of its tiles fails the filter whether or not a delta replaced it, and the deltas meeting
            // its ranges are still read (below)
            if (f != null && !StatsPruning.mightMatch(f.stats, f.records, filters, bx)) {
                planning.filesPrunedByStats++;
                if (ds.length > 0) {
                    parts.add(new Part(null, null, s.ranges, ds));
                }
                continue;
            }
            parts.add(new Part(s, f, s.ranges, ds));
        }
        if (pruning != null) {
            java.util.BitSet read = new java.util.BitSet();
            for (Part p : parts) {
                for (int d : p.deltas) {
                    read.set(d);
                }
            }
            deltasRead = read.cardinality();
            planning.filesPrunedByStats += pruning.pruned();
            planning.filesPrunedByName += deltas.size() - deltasRead - pruning.pruned();
        }
    }

    /**
     * Which deltas statistics rule out: a delta whose {@code stats} exclude every tile the query wants,
     * and whose span meets no older file, base or delta (so no older tile of a key it holds can be read
     * in its place; a newer delta replaces its tiles anyway). Decided once per delta.
     */
    private final class DeltaPruning {
        private final Deltas deltas;
        private final DataFileListing listing;
        private final QueryBox[] boxes;
        /** Per delta: 0 undecided, 1 kept, 2 pruned. */
        private final byte[] decided;
        private int pruned;

        DeltaPruning(Deltas deltas, DataFileListing listing, QueryBox[] boxes) {
            this.deltas = deltas;
            this.listing = listing;
            this.boxes = boxes;
            this.decided = new byte[deltas.size()];
        }

        int[] kept(int[] ds) {
            int k = 0;
            int[] out = new int[ds.length];
            for (int d : ds) {
                if (decided[d] == 0) {
                    DataFile f = deltas.get(d).file;
                    boolean prune = !StatsPruning.mightMatch(f.stats, f.records, filters, boxes)
                        && !deltas.meetsOlder(f.firstIndex, f.lastIndex, d) && !baseMeets(f.firstIndex, f.lastIndex);
                    decided[d] = (byte) (prune ? 2 : 1);
                    if (prune) {
                        pruned++;
                    }
                }
                if (decided[d] == 1) {
                    out[k++] = d;
                }
            }
            return k == out.length ? out : java.util.Arrays.copyOf(out, k);
        }

        /** Whether a base file's span meets {@code [lo, hi]}. */
        private boolean baseMeets(long lo, long hi) {
            int i = listing.fileFor(hi);
            if (i < 0) {
                return false;
            }
            long start = listing.start(i);
            if (start >= lo) {
                return true;
            }
            try {
                DataFile f = layer.fileStarting(start);
                return f == null || f.lastIndex >= lo;
            } catch (IOException e) {
                throw new SfcLayerException.StorageError("cannot read the manifests of layer " + layer.path() + ": " + e, e);
            }
        }

        int pruned() {
            return pruned;
        }
    }

    /** After planning: what the scan reads, a partition's worth each (before small ones are grouped). */
    List<Part> parts() {
        plan();
        return parts;
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
            + " files=" + baseParts() + "/" + md.fileCount
            + (layer.deltas().isEmpty() ? "" : " deltas=" + deltasRead + "/" + layer.deltas().size())
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
            batch = new SfcLayerBatch(layer, readSchema, boxes, parts, onCorrupt);
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

    /** Parts that read a base file. */
    private int baseParts() {
        int n = 0;
        for (Part p : parts) {
            if (p.base != null) {
                n++;
            }
        }
        return n;
    }

    /** A guess from the layer's totals, in proportion to the files selected. */
    @Override
    public Statistics estimateStatistics() {
        plan();
        LayerMetadata md = layer.metadata();
        double share = md.fileCount == 0 ? (parts.isEmpty() ? 0 : 1) : Math.min(1.0, (double) baseParts() / md.fileCount);
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
