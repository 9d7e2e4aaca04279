package io.sfclayer.spark;

import io.sfclayer.curve.QueryBox;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.layer.BoxQuery;
import io.sfclayer.layer.Layer;
import io.sfclayer.layer.QueryPlan;
import io.sfclayer.layer.TileGrid;
import org.apache.spark.sql.connector.expressions.aggregate.Aggregation;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.SupportsPushDownAggregates;
import org.apache.spark.sql.connector.read.SupportsPushDownFilters;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import java.util.List;

/**
 * Builds a layer scan: takes Spark's filters ({@link FilterTranslator} turns those on keys and
 * envelopes into key boxes), the {@code bbox} option and the columns the query needs.
 *
 * <p>Read options: {@code bbox} ("xmin,ymin,xmax,ymax" in map units: the tiles whose closed envelope
 * intersects it, as {@code xmax >= xmin' AND xmin <= xmax' AND ymax >= ymin' AND ymin <= ymax'}; only
 * for layers with an extent) and {@code maxRanges} (the most SFC ranges a query's boxes decompose
 * into, {@value BoxQuery#DEFAULT_MAX_RANGES} by default, 0 for no cap: a cap makes the ranges a superset,
 * which costs reading more records, never a wrong answer), and {@code onCorrupt} ({@link OnCorrupt}).
 */
public final class SfcLayerScanBuilder implements SupportsPushDownFilters, SupportsPushDownRequiredColumns,
        SupportsPushDownAggregates {
    public static final String OPTION_BBOX = "bbox";
    public static final String OPTION_MAX_RANGES = "maxRanges";

    private final Layer layer;
    private final FilterTranslator translator;
    private final String bboxOption;
    private final List<QueryBox> bbox;
    private final int maxRanges;
    private final OnCorrupt onCorrupt;
    private StructType readSchema;
    private FilterTranslator.Result pushed;
    /** Every filter Spark offered: those on value columns prune files by their statistics. */
    private Filter[] filters = new Filter[0];
    /** Whether a count(*) was pushed down. */
    private boolean count;

    SfcLayerScanBuilder(Layer layer, StructType schema, CaseInsensitiveStringMap options) {
        this.layer = layer;
        this.readSchema = schema;
        LayerMetadata md = layer.metadata();
        TileGrid grid = TileGrid.of(md);
        this.translator = new FilterTranslator(md.keyIndex.bounds(), md.isSpaceTime(), grid);
        this.bboxOption = options.get(OPTION_BBOX);
        this.bbox = parseBbox(bboxOption, grid, layer);
        this.maxRanges = BoxQuery.parseMaxRanges(options.get(OPTION_MAX_RANGES));
        this.onCorrupt = OnCorrupt.parse(options.get(OnCorrupt.OPTION));
    }

    /** The bbox option as a key box (an empty list when no tile meets it), or null without the option. */
    static List<QueryBox> parseBbox(String value, TileGrid grid, Layer layer) {
        return value == null ? null : QueryPlan.bbox(value, grid, layer.path());
    }

    @Override
    public Filter[] pushFilters(Filter[] filters) {
        this.filters = filters;
        pushed = translator.translateAll(filters, bbox);
        return pushed.postScan;
    }

    @Override
    public Filter[] pushedFilters() {
        return pushed == null ? new Filter[0] : pushed.pushed;
    }

    @Override
    public void pruneColumns(StructType requiredSchema) {
        readSchema = requiredSchema;
    }

    /** count(*) (or count of a key column): answered from file statistics where they allow. */
    @Override
    public boolean pushAggregation(Aggregation aggregation) {
        if (pushed == null) {
            pushed = translator.translateAll(new Filter[0], bbox);
        }
        if (!SfcLayerCountScan.isCount(aggregation) || pushed.postScan.length > 0) {
            return false;
        }
        count = true;
        return true;
    }

    /** Complete (no final aggregate in Spark) when the document alone answers: a count of the whole layer. */
    @Override
    public boolean supportCompletePushDown(Aggregation aggregation) {
        if (pushed == null) {
            pushed = translator.translateAll(new Filter[0], bbox);
        }
        return SfcLayerCountScan.isCount(aggregation) && pushed.postScan.length == 0
            && SfcLayerCountScan.isWholeLayer(layer.metadata(), pushed.boxes);
    }

    @Override
    public Scan build() {
        if (pushed == null) {
            pushed = translator.translateAll(new Filter[0], bbox);
        }
        SfcLayerScan scan = new SfcLayerScan(layer, readSchema, pushed.boxes, pushed.pushed, bboxOption, maxRanges,
            onCorrupt, filters);
        return count ? new SfcLayerCountScan(scan) : scan;
    }
}
