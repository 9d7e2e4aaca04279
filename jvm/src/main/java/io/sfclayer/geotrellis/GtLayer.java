package io.sfclayer.geotrellis;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sfclayer.SfcLayerException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;

/**
 * One layer of a GeoTrellis Hadoop catalog, from its attribute file
 * {@code <catalog>/_attributes/<name>___<zoom>___metadata.json} ({@code [LayerId, {header, metadata,
 * keyIndex, schema}]}, GeoTrellis' HadoopAttributeStore): where its MapFiles are, its key index, the Avro
 * writer schema of its values, its cell type and layout. Serializable: executors get it with their task.
 */
public final class GtLayer implements Serializable {
    private static final long serialVersionUID = 1L;
    static final String SEP = "___";
    private static final ObjectMapper JSON = new ObjectMapper();

    public final String catalog, name;
    public final int zoom;
    /** The directory of the layer's {@code part-r-*} MapFiles. */
    public final String dataPath;
    public final boolean spaceTime;
    public final boolean multiband;
    public final GtKeyIndex keyIndex;
    /** The Avro writer schema of the values (a KeyValueRecord), as stored. */
    public final String schemaJson;
    public final String cellType;
    /** The proj4 string of the layer's CRS (GeoTrellis' {@code crs}), or null. */
    public final String crs;
    /** The layout: its extent (xmin, ymin, xmax, ymax) and tile grid. */
    public final double[] layoutExtent;
    public final int layoutCols, layoutRows, tileCols, tileRows;
    /** The data's key bounds (metadata.bounds; times in ms). */
    public final int colMin, rowMin, colMax, rowMax;
    public final long timeMin, timeMax;
    /** The attribute document as stored (metadata part), for callers that map it further. */
    public final String metadataJson;

    private GtLayer(String catalog, String name, int zoom, String dataPath, JsonNode blob, String where) {
        this.catalog = catalog;
        this.name = name;
        this.zoom = zoom;
        this.dataPath = dataPath;
        JsonNode header = need(blob, "header", where);
        String keyClass = GtKeyIndex.text(header, "keyClass", where);
        String valueClass = GtKeyIndex.text(header, "valueClass", where);
        this.spaceTime = keyClass.endsWith("SpaceTimeKey");
        if (!spaceTime && !keyClass.endsWith("SpatialKey")) {
            throw new SfcLayerException.UnsupportedFormat(where + ": key class " + keyClass
                + " is not SpatialKey or SpaceTimeKey");
        }
        this.multiband = valueClass.endsWith("MultibandTile");
        if (!multiband && !valueClass.endsWith("Tile")) {
            throw new SfcLayerException.UnsupportedFormat(where + ": value class " + valueClass
                + " is not a Tile or MultibandTile (sfclayer reads raster layers)");
        }
        JsonNode layerType = header.get("layerType");
        if (layerType != null && layerType.isTextual() && !layerType.asText().toLowerCase().contains("avro")) {
            throw new SfcLayerException.UnsupportedFormat(where + ": layer type " + layerType.asText()
                + " (sfclayer reads Avro layers, not COG layers)");
        }
        this.keyIndex = GtKeyIndex.fromJson(need(blob, "keyIndex", where), spaceTime, where);
        this.schemaJson = need(blob, "schema", where).toString();
        JsonNode md = need(blob, "metadata", where);
        this.metadataJson = md.toString();
        this.cellType = GtKeyIndex.text(md, "cellType", where);
        JsonNode crsNode = md.get("crs");
        this.crs = crsNode == null || crsNode.isNull() ? null : crsNode.asText();
        JsonNode ld = need(md, "layoutDefinition", where);
        this.layoutExtent = extent(need(ld, "extent", where), where);
        JsonNode tl = need(ld, "tileLayout", where);
        this.layoutCols = GtKeyIndex.integer(tl, "layoutCols", where);
        this.layoutRows = GtKeyIndex.integer(tl, "layoutRows", where);
        this.tileCols = GtKeyIndex.integer(tl, "tileCols", where);
        this.tileRows = GtKeyIndex.integer(tl, "tileRows", where);
        JsonNode b = need(md, "bounds", where);
        JsonNode min = need(b, "minKey", where), max = need(b, "maxKey", where);
        this.colMin = GtKeyIndex.integer(min, "col", where);
        this.rowMin = GtKeyIndex.integer(min, "row", where);
        this.colMax = GtKeyIndex.integer(max, "col", where);
        this.rowMax = GtKeyIndex.integer(max, "row", where);
        this.timeMin = spaceTime ? GtKeyIndex.instant(min, where) : 0;
        this.timeMax = spaceTime ? GtKeyIndex.instant(max, where) : 0;
    }

    /** The layer's tile width in map units (GeoTrellis' LayoutDefinition.cellwidth × tileCols). */
    public double tileWidth() {
        return (layoutExtent[2] - layoutExtent[0]) / layoutCols;
    }

    public double tileHeight() {
        return (layoutExtent[3] - layoutExtent[1]) / layoutRows;
    }

    /** {@code name/zoom}. */
    public String id() {
        return name + "/" + zoom;
    }

    /** The {@code (name, zoom)} of every layer with a metadata attribute in the catalog, sorted. */
    public static List<String[]> list(String catalog, Configuration conf) {
        Path dir = new Path(catalog, "_attributes");
        TreeSet<String> ids = new TreeSet<>();
        try {
            FileSystem fs = dir.getFileSystem(conf);
            FileStatus[] files;
            try {
                files = fs.listStatus(dir);
            } catch (FileNotFoundException e) {
                throw new SfcLayerException.LayerNotFound("no GeoTrellis catalog at " + catalog
                    + ": it has no _attributes directory");
            }
            for (FileStatus st : files) {
                String n = st.getPath().getName();
                String suffix = SEP + "metadata.json";
                if (!n.endsWith(suffix)) continue;
                String[] parts = n.substring(0, n.length() - suffix.length()).split(SEP, -1);
                if (parts.length != 2) continue;
                try {
                    Integer.parseInt(parts[1]);
                } catch (NumberFormatException e) {
                    continue;
                }
                ids.add(parts[0] + SEP + String.format("%011d", Integer.parseInt(parts[1])));
            }
        } catch (IOException e) {
            throw new SfcLayerException.StorageError("listing the GeoTrellis catalog " + dir + ": " + e, e);
        }
        List<String[]> out = new ArrayList<>();
        for (String id : ids) {
            String[] p = id.split(SEP);
            out.add(new String[] {p[0], String.valueOf(Integer.parseInt(p[1]))});
        }
        return out;
    }

    /**
     * Reads a layer's attributes. The data directory is {@code <catalog>/<name>/<zoom>} when it exists
     * (a catalog copied or moved keeps working: the header's absolute path names where it was written),
     * else the header's {@code path}.
     *
     * @throws SfcLayerException.LayerNotFound when the catalog has no such layer
     */
    public static GtLayer open(String catalog, String name, int zoom, Configuration conf) {
        Path file = new Path(new Path(catalog, "_attributes"), name + SEP + zoom + SEP + "metadata.json");
        String where = "GeoTrellis layer " + name + "/" + zoom + " (" + file + ")";
        JsonNode doc;
        FileSystem fs;
        try {
            fs = file.getFileSystem(conf);
            try (InputStream in = fs.open(file)) {
                doc = JSON.readTree(in);
            } catch (FileNotFoundException e) {
                throw new SfcLayerException.LayerNotFound("no GeoTrellis layer " + name + "/" + zoom + " in "
                    + catalog + " (no " + file.getName() + " in _attributes)");
            }
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new SfcLayerException.CorruptLayer(where + ": not JSON: " + e.getOriginalMessage(), e);
        } catch (IOException e) {
            throw new SfcLayerException.StorageError("reading " + file + ": " + e, e);
        }
        if (doc == null || !doc.isArray() || doc.size() != 2 || !doc.get(1).isObject()) {
            throw new SfcLayerException.CorruptLayer(where + ": not [LayerId, {header, metadata, keyIndex, schema}]");
        }
        JsonNode blob = doc.get(1);
        String dataPath = new Path(new Path(catalog, name), String.valueOf(zoom)).toString();
        try {
            if (!fs.exists(new Path(dataPath))) {
                JsonNode header = need(blob, "header", where);
                JsonNode p = header.get("path");
                if (p != null && p.isTextual()) dataPath = p.asText();
            }
        } catch (IOException e) {
            throw new SfcLayerException.StorageError("checking " + dataPath + ": " + e, e);
        }
        return new GtLayer(catalog, name, zoom, dataPath, blob, where);
    }

    private static JsonNode need(JsonNode o, String field, String where) {
        JsonNode v = o.get(field);
        if (v == null || v.isNull()) throw new SfcLayerException.CorruptLayer(where + ": no " + field);
        return v;
    }

    private static double[] extent(JsonNode e, String where) {
        double[] out = new double[4];
        String[] names = {"xmin", "ymin", "xmax", "ymax"};
        for (int i = 0; i < 4; i++) {
            JsonNode v = e.get(names[i]);
            if (v == null || !v.isNumber()) throw new SfcLayerException.CorruptLayer(where + ": extent without " + names[i]);
            out[i] = v.asDouble();
        }
        return out;
    }

    @Override
    public String toString() {
        return "GeoTrellis layer " + id() + " at " + dataPath + " (" + keyIndex + ", " + cellType
            + (multiband ? ", multiband" : "") + ")";
    }
}
