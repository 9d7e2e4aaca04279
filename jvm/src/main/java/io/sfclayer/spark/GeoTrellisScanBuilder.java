package io.sfclayer.spark;

import io.sfclayer.curve.QueryBox;
import io.sfclayer.geotrellis.GtLayer;
import io.sfclayer.layer.QueryPlan;
import io.sfclayer.layer.TileGrid;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownFilters;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import java.util.List;

/**
 * Filters on keys, times and envelopes (and the {@code bbox} option) become key boxes, as for sfclayer
 * layers ({@link FilterTranslator}); the scan answers them exactly (refinement by key), so they are not
 * evaluated again by Spark.
 */
final class GeoTrellisScanBuilder implements ScanBuilder, SupportsPushDownFilters, SupportsPushDownRequiredColumns {
    private final GeoTrellisTable table;
    private final GtLayer layer;
    private final FilterTranslator translator;
    private final List<QueryBox> bbox;
    private StructType readSchema;
    private FilterTranslator.Result pushed;

    GeoTrellisScanBuilder(GeoTrellisTable table, GtLayer layer, CaseInsensitiveStringMap options) {
        this.table = table;
        this.layer = layer;
        TileGrid grid = GeoTrellisTable.grid(layer);
        this.translator = new FilterTranslator(GeoTrellisTable.bounds(layer), layer.spaceTime, grid);
        String b = options.get(ReadOptions.BBOX);
        this.bbox = b == null ? null : QueryPlan.bbox(b, grid, new org.apache.hadoop.fs.Path(layer.dataPath));
        this.readSchema = GeoTrellisTable.schemaOf(layer.spaceTime);
    }

    @Override
    public Filter[] pushFilters(Filter[] filters) {
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

    @Override
    public Scan build() {
        if (pushed == null) pushed = translator.translateAll(new Filter[0], bbox);
        return new GeoTrellisScan(table, layer, readSchema, pushed.boxes);
    }
}
