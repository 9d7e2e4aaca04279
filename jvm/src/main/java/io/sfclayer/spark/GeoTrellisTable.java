package io.sfclayer.spark;

import io.sfclayer.SfcLayerException;
import io.sfclayer.curve.KeyBounds;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.geotrellis.GtLayer;
import io.sfclayer.layer.TileGrid;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * A GeoTrellis layer read in place: {@code format("sfclayer").option("geotrellisLayer", "name/zoom")
 * .load(catalog)} (or the same options in SQL). Its rows are sfclayer's raster convention ({@code col,
 * row, [time,] pixels, width, height, bands, dtype, nodata, mask} and the envelope columns in the layout's
 * map units), so everything that reads sfclayer raster layers reads them. Read-only.
 */
public final class GeoTrellisTable implements SupportsRead {
    private final Map<String, String> options;
    private GtLayer layer;

    GeoTrellisTable(Map<String, String> options) {
        this.options = options;
    }

    /** The option's value when {@code options} name a GeoTrellis layer (also as a catalog's {@code option.} key), else null. */
    static String layerOption(Map<String, String> options) {
        for (Map.Entry<String, String> e : options.entrySet()) {
            String k = e.getKey().toLowerCase(Locale.ROOT);
            if (k.equals(ReadOptions.GEOTRELLIS_LAYER.toLowerCase(Locale.ROOT))
                    || k.equals(TableCatalog.OPTION_PREFIX + ReadOptions.GEOTRELLIS_LAYER.toLowerCase(Locale.ROOT))) {
                return e.getValue();
            }
        }
        return null;
    }

    Map<String, String> options() {
        return options;
    }

    synchronized GtLayer layer() {
        if (layer == null) {
            String id = layerOption(options);
            String catalog = new CaseInsensitiveStringMap(options).get(ReadOptions.PATH);
            if (catalog == null) {
                throw new SfcLayerException.InvalidArgument("option " + ReadOptions.GEOTRELLIS_LAYER
                    + ": no catalog path: use load(catalog)");
            }
            int slash = id == null ? -1 : id.lastIndexOf('/');
            int zoom;
            try {
                zoom = Integer.parseInt(id.substring(slash + 1).trim());
            } catch (RuntimeException e) {
                zoom = -1;
            }
            if (slash <= 0 || zoom < 0) {
                throw new SfcLayerException.InvalidArgument("option " + ReadOptions.GEOTRELLIS_LAYER + ": '" + id
                    + "' is not name/zoom (e.g. 'dem/5')");
            }
            layer = GtLayer.open(catalog, id.substring(0, slash), zoom,
                HadoopConfs.forOptions(SparkSession.active(), options));
        }
        return layer;
    }

    /** The grid of the layer's layout: tile (col, row) covers what GeoTrellis' LayoutDefinition says. */
    static TileGrid grid(GtLayer l) {
        double[] e = l.layoutExtent;
        return new TileGrid(new LayerMetadata.Extent(e[0], e[1], e[2], e[3]),
            new KeyBounds(0, 0, l.layoutCols - 1, l.layoutRows - 1));
    }

    static KeyBounds bounds(GtLayer l) {
        return new KeyBounds(l.colMin, l.rowMin, l.colMax, l.rowMax);
    }

    @Override
    public String name() {
        return "sfclayer:geotrellis:" + options.getOrDefault(ReadOptions.PATH, "?") + "#" + layerOption(options);
    }

    @Override
    public StructType schema() {
        return schemaOf(layer().spaceTime);
    }

    static StructType schemaOf(boolean spaceTime) {
        List<StructField> f = new ArrayList<>();
        f.add(DataTypes.createStructField("col", DataTypes.IntegerType, false));
        f.add(DataTypes.createStructField("row", DataTypes.IntegerType, false));
        if (spaceTime) f.add(DataTypes.createStructField("time", DataTypes.TimestampType, false));
        f.add(DataTypes.createStructField("pixels", DataTypes.BinaryType, false));
        f.add(DataTypes.createStructField("width", DataTypes.IntegerType, false));
        f.add(DataTypes.createStructField("height", DataTypes.IntegerType, false));
        f.add(DataTypes.createStructField("bands", DataTypes.IntegerType, false));
        f.add(DataTypes.createStructField("dtype", DataTypes.StringType, false));
        f.add(DataTypes.createStructField("nodata", DataTypes.DoubleType, true));
        f.add(DataTypes.createStructField("mask", DataTypes.BinaryType, true));
        for (String e : TileGrid.COLUMNS) f.add(DataTypes.createStructField(e, DataTypes.DoubleType, false));
        return new StructType(f.toArray(new StructField[0]));
    }

    @Override
    public Set<TableCapability> capabilities() {
        return EnumSet.of(TableCapability.BATCH_READ);
    }

    @Override
    public Map<String, String> properties() {
        return Map.of(TableCatalog.PROP_PROVIDER, SfcLayerSource.SHORT_NAME, TableCatalog.PROP_EXTERNAL, "true");
    }

    /** sfclayer read options with no meaning for a GeoTrellis layer: refused, not ignored. */
    private static final java.util.List<String> NOT_FOR_GEOTRELLIS = java.util.List.of(
        ReadOptions.GEOMETRY, ReadOptions.MAX_RANGES, ReadOptions.VERSION_AS_OF,
        ReadOptions.TIMESTAMP_AS_OF, ReadOptions.ON_CORRUPT);

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap scanOptions) {
        ReadOptions.check(scanOptions);
        for (String o : NOT_FOR_GEOTRELLIS) {
            if (scanOptions.containsKey(o)) {
                throw new SfcLayerException.InvalidArgument("option " + o + ": not for GeoTrellis layers (option "
                    + ReadOptions.GEOTRELLIS_LAYER + "; they take bbox and filters on col, row, time and the envelope columns)");
            }
        }
        return new GeoTrellisScanBuilder(this, layer(), scanOptions);
    }
}
