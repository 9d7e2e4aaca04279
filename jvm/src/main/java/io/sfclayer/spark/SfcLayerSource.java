package io.sfclayer.spark;

import io.sfclayer.SfcLayerException;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SQLContext;
import org.apache.spark.sql.SaveMode;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.BaseRelation;
import org.apache.spark.sql.sources.CreatableRelationProvider;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import java.util.HashMap;
import java.util.Map;

/**
 * {@code format("sfclayer")}: reads through DataSource V2 ({@link SfcLayerTable}), writes through the
 * V1 {@link CreatableRelationProvider} fallback (see {@link SfcLayerWrite} for why).
 */
public final class SfcLayerSource implements TableProvider, DataSourceRegister, CreatableRelationProvider {
    public static final String SHORT_NAME = "sfclayer";

    @Override
    public String shortName() {
        return SHORT_NAME;
    }

    /**
     * True so that Spark hands {@link #getTable} the options without first inferring a schema:
     * a write to a new path must not try to read a layer that is not there yet. The table takes
     * its schema from the layer's metadata whatever schema Spark passes.
     */
    @Override
    public boolean supportsExternalMetadata() {
        return true;
    }

    /**
     * The table {@link #inferSchema} opened: Spark asks this same provider instance for the table right
     * after, with the same options, and opening the layer again would list its log a second time.
     */
    private SfcLayerTable inferred;

    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        ReadOptions.check(options); // reads only (writes pass their schema): fail at load(), before any job
        if (GeoTrellisTable.layerOption(options.asCaseSensitiveMap()) != null) {
            return new GeoTrellisTable(options.asCaseSensitiveMap()).schema();
        }
        SfcLayerTable table = new SfcLayerTable(options.asCaseSensitiveMap());
        StructType schema = table.schema();
        inferred = table;
        return schema;
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        if (GeoTrellisTable.layerOption(properties) != null) {
            return new GeoTrellisTable(properties); // a GeoTrellis catalog's layer, read in place
        }
        SfcLayerTable table = inferred;
        inferred = null;
        if (table != null && table.options().equals(properties)) {
            return table;
        }
        return new SfcLayerTable(properties, schema);
    }

    @Override
    public BaseRelation createRelation(SQLContext sqlContext, SaveMode mode,
                                       scala.collection.immutable.Map<String, String> parameters, Dataset<Row> data) {
        Map<String, String> options = new HashMap<>(scala.jdk.javaapi.CollectionConverters.asJava(parameters));
        String path = options.get(ReadOptions.PATH);
        if (GeoTrellisTable.layerOption(options) != null) {
            throw new SfcLayerException.InvalidArgument("option " + ReadOptions.GEOTRELLIS_LAYER + ": GeoTrellis layers are"
                + " read in place, not written; convert one with sfclayer.geotrellis.convert");
        }
        if (path == null) {
            throw new SfcLayerException.InvalidArgument("no layer path: use save(path) or option('path', ...)");
        }
        SfcLayerWrite.run(sqlContext.sparkSession(), data, path, mode, options);
        StructType schema = data.schema();
        return new BaseRelation() {
            @Override
            public SQLContext sqlContext() {
                return sqlContext;
            }

            @Override
            public StructType schema() {
                return schema;
            }
        };
    }
}
