package io.sfclayer.spark;

import io.sfclayer.SfcLayerException;
import io.sfclayer.curve.QueryBox;
import io.sfclayer.curve.TimeText;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.layer.Layer;
import io.sfclayer.layer.TileGrid;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.catalog.MetadataColumn;
import org.apache.spark.sql.connector.catalog.SupportsDelete;
import org.apache.spark.sql.connector.catalog.SupportsMetadataColumns;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A layer as a Spark table. Opens the layer lazily: Spark also builds a table on the write path,
 * only to ask its capabilities, when there may be no layer yet. No {@code BATCH_WRITE}, on purpose
 * (writes take the V1 fallback, see {@link SfcLayerWrite}); {@code STREAMING_WRITE} for streaming
 * queries ({@link SfcLayerStreamingWrite}).
 */
public final class SfcLayerTable implements SupportsRead, SupportsMetadataColumns, SupportsDelete,
        org.apache.spark.sql.connector.catalog.SupportsWrite,
        org.apache.spark.sql.connector.read.streaming.ReportsSinkMetrics {
    public static final String INDEX_COLUMN = "_sfc_index";
    public static final String FILE_COLUMN = "_file";

    private final Map<String, String> options;
    private Layer layer;

    SfcLayerTable(Map<String, String> options) {
        this(options, null);
    }

    /**
     * {@code given}: the schema Spark passed (a streaming write's input), which the table shows while there
     * is no layer yet (the query's first batch creates it); null: none.
     */
    SfcLayerTable(Map<String, String> options, StructType given) {
        this.options = options;
        this.given = given;
    }

    private final StructType given;

    Map<String, String> options() {
        return options;
    }

    String path() {
        String path = options.get(ReadOptions.PATH);
        if (path == null) {
            path = new CaseInsensitiveStringMap(options).get(ReadOptions.PATH);
        }
        if (path == null) {
            throw new SfcLayerException.InvalidArgument("no layer path: use load(path) or option('path', ...)");
        }
        return path;
    }

    /** The pinned layer version this table reads (opened on first use). */
    synchronized Layer layer() {
        if (layer == null) {
            try {
                layer = Layer.open(HadoopConfs.forOptions(SparkSession.active(), options), path(),
                    versionAsOf(options), timestampAsOfMillis(options));
            } catch (IOException e) {
                throw new SfcLayerException.StorageError("cannot open layer " + path() + ": " + e, e);
            }
        }
        return layer;
    }

    /** Read option {@code versionAsOf}: the version to read (as Delta names it); -1 when absent. */
    static long versionAsOf(Map<String, String> options) {
        String v = new CaseInsensitiveStringMap(options).get(ReadOptions.VERSION_AS_OF);
        if (v == null) {
            return -1;
        }
        try {
            long n = Long.parseLong(v.trim());
            if (n >= 1) {
                return n;
            }
        } catch (NumberFormatException e) {
            // below
        }
        throw new SfcLayerException.InvalidArgument("option versionAsOf: '" + v + "' is not a version number (1, 2, ...)");
    }

    /** Read option {@code timestampAsOf}: read the newest version committed at or before it; -1 when absent. */
    static long timestampAsOfMillis(Map<String, String> options) {
        CaseInsensitiveStringMap o = new CaseInsensitiveStringMap(options);
        String v = o.get(ReadOptions.TIMESTAMP_AS_OF);
        if (v == null) {
            return -1;
        }
        if (o.get(ReadOptions.VERSION_AS_OF) != null) {
            throw new SfcLayerException.InvalidArgument("give option versionAsOf or timestampAsOf, not both");
        }
        return Math.floorDiv(TimeText.parseInstantMicros(ReadOptions.TIMESTAMP_AS_OF, v.trim()), 1000L);
    }


    @Override
    public String name() {
        return "sfclayer:" + options.getOrDefault(ReadOptions.PATH, "?");
    }

    /** What DESCRIBE and SHOW CREATE TABLE print: an external table of this source at its path. */
    @Override
    public Map<String, String> properties() {
        return Map.of(TableCatalog.PROP_PROVIDER, SfcLayerSource.SHORT_NAME,
            TableCatalog.PROP_LOCATION, path(),
            TableCatalog.PROP_EXTERNAL, "true");
    }

    @Override
    public StructType schema() {
        if (given != null) {
            try {
                return schemaOf(layer().metadata());
            } catch (SfcLayerException.LayerNotFound e) {
                return given; // a streaming write's target before its first batch
            }
        }
        return schemaOf(layer().metadata());
    }

    /** Keys, then values, then (for layers with an extent) each tile's envelope in map units. */
    public static StructType schemaOf(LayerMetadata md) {
        List<StructField> fields = new ArrayList<>();
        fields.add(DataTypes.createStructField("col", DataTypes.IntegerType, false));
        fields.add(DataTypes.createStructField("row", DataTypes.IntegerType, false));
        if (md.isSpaceTime()) {
            fields.add(DataTypes.createStructField("time", DataTypes.TimestampType, false));
        }
        StructType values = (StructType) DataType.fromJson(md.valueSchemaJson);
        for (StructField f : values.fields()) {
            fields.add(f);
        }
        if (md.extent != null) {
            for (String e : TileGrid.COLUMNS) {
                fields.add(DataTypes.createStructField(e, DataTypes.DoubleType, false));
            }
        }
        return new StructType(fields.toArray(new StructField[0]));
    }

    @Override
    public Set<TableCapability> capabilities() {
        return EnumSet.of(TableCapability.BATCH_READ, TableCapability.STREAMING_WRITE);
    }

    /** A streaming query's write ({@code writeStream}); batch writes take the V1 fallback. */
    @Override
    public org.apache.spark.sql.connector.write.WriteBuilder newWriteBuilder(
            org.apache.spark.sql.connector.write.LogicalWriteInfo info) {
        return new SfcLayerStreamWrite(this, info);
    }

    /** What the last micro-batch's commit did (a streaming query's progress shows it under sink.metrics). */
    private volatile Map<String, String> sinkMetrics = Map.of();

    void sinkMetrics(Map<String, String> m) {
        sinkMetrics = Map.copyOf(m);
    }

    @Override
    public Map<String, String> metrics() {
        return sinkMetrics;
    }

    /**
     * Scan options may ask for another version than the table's ({@code SELECT ... FROM t WITH
     * ('versionAsOf' = '3')}); that version must have the table's schema.
     */
    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap scanOptions) {
        ReadOptions.check(scanOptions);
        Layer pinned = layer();
        Map<String, String> o = scanOptions.asCaseSensitiveMap();
        long version = versionAsOf(o);
        long asOf = timestampAsOfMillis(o);
        if ((version >= 0 && version != pinned.metadata().version) || asOf >= 0) {
            try {
                pinned = Layer.open(HadoopConfs.forOptions(SparkSession.active(), options), path(), version, asOf);
            } catch (IOException e) {
                throw new SfcLayerException("cannot open layer " + path() + ": " + e, e);
            }
            if (!schemaOf(pinned.metadata()).equals(schema())) {
                throw new SfcLayerException.InvalidArgument("version " + pinned.metadata().version + " of layer "
                    + path() + " has another schema than the table's (" + schemaOf(pinned.metadata()).simpleString()
                    + "); read it with spark.read.format(\"sfclayer\").option(\"versionAsOf\", ...)");
            }
        }
        return new SfcLayerScanBuilder(pinned, schemaOf(pinned.metadata()), scanOptions);
    }

    /** SQL DELETE: only conditions that translate exactly into key boxes (keys, times, envelopes). */
    @Override
    public boolean canDeleteWhere(Filter[] filters) {
        deleteBoxes(filters);
        return true;
    }

    private List<QueryBox> deleteBoxes(Filter[] filters) {
        LayerMetadata md = layer().metadata();
        FilterTranslator.Result r = new FilterTranslator(md.keyIndex.bounds(), md.isSpaceTime(), TileGrid.of(md))
            .translateAll(filters, null);
        if (r.postScan.length > 0) {
            throw new SfcLayerException.InvalidArgument("DELETE FROM layer " + path() + ": the condition "
                + Arrays.toString(r.postScan) + " is not a box of keys (col, row" + (md.isSpaceTime() ? ", time" : "")
                + (md.extent != null ? ", or the envelope columns" : "") + "), so sfclayer cannot delete by it");
        }
        return r.boxes;
    }

    @Override
    public void deleteWhere(Filter[] filters) {
        List<QueryBox> boxes = deleteBoxes(filters);
        if (boxes.isEmpty()) {
            return;
        }
        try {
            SfcLayerUpdate.delete(SparkSession.active(), path(), boxes);
        } catch (IOException e) {
            throw new SfcLayerException("cannot delete from layer " + path() + ": " + e, e);
        }
        synchronized (this) {
            layer = null; // the table shows the new version from now on
        }
    }

    @Override
    public MetadataColumn[] metadataColumns() {
        return new MetadataColumn[] {
            metadataColumn(INDEX_COLUMN, DataTypes.LongType, "the tile's space-filling-curve index"),
            metadataColumn(FILE_COLUMN, DataTypes.StringType, "the data file (MapFile) holding the tile"),
        };
    }

    private static MetadataColumn metadataColumn(String name, DataType type, String comment) {
        return new MetadataColumn() {
            @Override
            public String name() {
                return name;
            }

            @Override
            public DataType dataType() {
                return type;
            }

            @Override
            public boolean isNullable() {
                return false;
            }

            @Override
            public String comment() {
                return comment;
            }
        };
    }
}
