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
import io.sfclayer.layer.GeometryCover;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Literal;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.connector.read.SupportsPushDownV2Filters;
import org.apache.spark.sql.internal.connector.PredicateUtils;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import scala.Option;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * Builds a layer scan: takes Spark's filters ({@link FilterTranslator} turns those on keys and
 * envelopes into key boxes), the {@code bbox} option and the columns the query needs.
 *
 * <p>Read options: {@code bbox} ("xmin,ymin,xmax,ymax" in map units: the tiles whose closed envelope
 * intersects it, as {@code xmax >= xmin' AND xmin <= xmax' AND ymax >= ymin' AND ymin <= ymax'}; only
 * for layers with an extent) and {@code maxRanges} (the most SFC ranges a query's boxes decompose
 * into, {@value BoxQuery#DEFAULT_MAX_RANGES} by default, 0 for no cap: a cap makes the ranges a superset,
 * which costs reading more records, never a wrong answer), {@code geometry} (WKT, or WKB as hexadecimal,
 * in the layer's CRS: the tiles whose closed envelope meets it, read through the geometry's own tile
 * cover, {@link GeometryCover}) and {@code onCorrupt} ({@link OnCorrupt}).
 *
 * <p>Spark offers its filters as V2 predicates: the {@code sfclayer} catalog's geometry function
 * ({@link IntersectsFunction}, {@code WHERE sfclayer.system.intersects(xmin, ymin, xmax, ymax, 'POLYGON
 * ((...))')}) arrives as one, and is answered by the same cover; the others are turned back into V1
 * filters for {@link FilterTranslator} and the file statistics, as before.
 */
public final class SfcLayerScanBuilder implements SupportsPushDownV2Filters, SupportsPushDownRequiredColumns,
        SupportsPushDownAggregates {

    private final Layer layer;
    private final FilterTranslator translator;
    private final String bboxOption;
    private final List<QueryBox> bbox;
    private final TileGrid grid;
    /** The geometry option's cover, or null without the option. */
    private final List<QueryBox> geometry;
    /** Covers of the geometry predicates Spark pushed (each answered exactly by the scan). */
    private final List<List<QueryBox>> geometryPredicates = new ArrayList<>();
    private Predicate[] pushedPredicates = new Predicate[0];
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
        this.grid = grid;
        this.translator = new FilterTranslator(md.keyIndex.bounds(), md.isSpaceTime(), grid);
        this.bboxOption = options.get(ReadOptions.BBOX);
        this.bbox = parseBbox(bboxOption, grid, layer);
        String g = options.get(ReadOptions.GEOMETRY);
        this.geometry = g == null ? null : GeometryCover.boxes(g, grid, layer.path());
        this.maxRanges = BoxQuery.parseMaxRanges(options.get(ReadOptions.MAX_RANGES));
        this.onCorrupt = OnCorrupt.parse(options.get(ReadOptions.ON_CORRUPT));
    }

    /** The bbox option as a key box (an empty list when no tile meets it), or null without the option. */
    static List<QueryBox> parseBbox(String value, TileGrid grid, Layer layer) {
        return value == null ? null : QueryPlan.bbox(value, grid, layer.path());
    }

    /**
     * Geometry predicates become covers; the rest go back to V1 filters ({@link FilterTranslator}); a
     * predicate with no V1 form is left to Spark.
     */
    @Override
    public Predicate[] pushPredicates(Predicate[] predicates) {
        List<Predicate> post = new ArrayList<>();
        List<Predicate> done = new ArrayList<>();
        List<Filter> v1 = new ArrayList<>();
        Map<Filter, Predicate> source = new IdentityHashMap<>();
        geometryPredicates.clear();
        for (Predicate p : predicates) {
            String wkt = IntersectsFunction.geometryOf(p, grid != null);
            if (wkt != null) {
                geometryPredicates.add(GeometryCover.boxes(GeometryCover.parse(wkt), grid));
                done.add(p);
                continue;
            }
            Option<Filter> f = plain(p) ? PredicateUtils.toV1(p) : Option.empty();
            if (f.isDefined()) {
                v1.add(f.get());
                source.put(f.get(), p);
            } else {
                post.add(p);
            }
        }
        this.filters = v1.toArray(new Filter[0]);
        pushed = translator.translateAll(filters, bbox);
        for (Filter f : pushed.pushed) {
            done.add(source.get(f));
        }
        for (Filter f : pushed.postScan) {
            post.add(source.get(f));
        }
        pushedPredicates = done.toArray(new Predicate[0]);
        return post.toArray(new Predicate[0]);
    }

    /**
     * Whether a predicate is one a V1 filter says exactly: AND/OR/NOT of comparisons between a column and
     * constants. Spark's V2 predicates also carry expressions ({@code v % 2 = 0}), which V1 filters
     * never did; those stay with Spark whole (PredicateUtils.toV1 is not trusted to refuse them: an
     * OR holding one lost rows, tests/test_read.py).
     */
    static boolean plain(Expression e) {
        if (e instanceof NamedReference || e instanceof Literal) {
            return true;
        }
        if (!(e instanceof Predicate)) {
            return false;
        }
        for (Expression c : e.children()) {
            if (!plain(c)) {
                return false;
            }
        }
        return true;
    }

    @Override
    public Predicate[] pushedPredicates() {
        return pushedPredicates;
    }

    /** The scan's boxes: the filters' and bbox's, within the geometry option's and predicates' covers. */
    private List<QueryBox> boxes() {
        List<QueryBox> boxes = pushed.boxes;
        if (geometry != null) {
            boxes = GeometryCover.intersect(boxes, geometry);
        }
        for (List<QueryBox> cover : geometryPredicates) {
            boxes = GeometryCover.intersect(boxes, cover);
        }
        return boxes;
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
        return SfcLayerCountScan.isCount(aggregation) && pushed.postScan.length == 0 && !onCorrupt.any()
            && layer.deltas().isEmpty() && SfcLayerCountScan.isWholeLayer(layer.metadata(), boxes());
    }

    @Override
    public Scan build() {
        if (pushed == null) {
            pushed = translator.translateAll(new Filter[0], bbox);
        }
        SfcLayerScan scan = new SfcLayerScan(layer, readSchema, boxes(), pushed.pushed, bboxOption, maxRanges,
            onCorrupt, filters);
        return count ? new SfcLayerCountScan(scan) : scan;
    }
}
