package io.sfclayer.spark;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.sfclayer.geotrellis.GtLayer;
import io.sfclayer.geotrellis.GtValueReader;
import io.sfclayer.lookup.GtLookupSessions;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.SparkSession;

import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What {@code sfclayer.geotrellis} calls through py4j: a catalog's layers, a layer's attributes (JSON),
 * and look-up handles on the driver's look-up socket (tiles never cross py4j).
 */
public final class GeoTrellisCommands {
    private static final ObjectMapper JSON = new ObjectMapper();

    private GeoTrellisCommands() {
    }

    private static Configuration conf(SparkSession spark) {
        return HadoopConfs.forOptions(spark, Map.of());
    }

    private static String json(Object o) {
        try {
            return JSON.writeValueAsString(o);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** {@code [[name, zoom], ...]}, sorted by name then zoom. */
    public static String layers(SparkSession spark, String catalog) {
        List<Object[]> out = new ArrayList<>();
        for (String[] id : GtLayer.list(catalog, conf(spark))) out.add(new Object[] {id[0], Integer.parseInt(id[1])});
        return json(out);
    }

    /** A layer's attributes as sfclayer reads them, with GeoTrellis' own metadata object. */
    public static String info(SparkSession spark, String catalog, String name, int zoom) throws IOException {
        return json(infoOf(GtLayer.open(catalog, name, zoom, conf(spark))));
    }

    /** {@link #info}'s answer as a map (also part of {@link #openLookup}'s). */
    public static Map<String, Object> infoOf(GtLayer l) throws IOException {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("name", l.name);
        m.put("zoom", l.zoom);
        m.put("catalog", l.catalog);
        m.put("dataPath", l.dataPath);
        m.put("spaceTime", l.spaceTime);
        m.put("multiband", l.multiband);
        m.put("cellType", l.cellType);
        m.put("crs", l.crs);
        m.put("keyIndex", l.keyIndex.kind());
        m.put("layoutExtent", l.layoutExtent);
        m.put("layoutCols", l.layoutCols);
        m.put("layoutRows", l.layoutRows);
        m.put("tileCols", l.tileCols);
        m.put("tileRows", l.tileRows);
        m.put("bounds", new int[] {l.colMin, l.rowMin, l.colMax, l.rowMax});
        m.put("timeBounds", l.spaceTime ? new long[] {l.timeMin, l.timeMax} : null);
        m.put("metadata", JSON.readTree(l.metadataJson));
        return m;
    }

    /**
     * Opens a layer for look-ups on the driver's shared look-up socket ({@link GtLookupSessions}): the whole
     * cold open is this one py4j call, reading the attributes once (look-ups, queries and counts then go
     * through the socket).
     *
     * @return JSON: {@code handle, host, port, token} (hex) and {@code info}, {@link #info}'s answer
     */
    public static String openLookup(SparkSession spark, String catalog, String name, int zoom, int cacheSize)
            throws IOException {
        Configuration conf = conf(spark);
        GtLayer layer = GtLayer.open(catalog, name, zoom, conf);
        Map<String, Object> info = infoOf(layer);
        return GtLookupSessions.open(new GtValueReader(layer, conf, cacheSize), Map.of("info", info));
    }

    /** Closes a handle {@link #openLookup} gave (its files, its registration); nothing if closed already. */
    public static void closeLookup(SparkSession spark, long handle) {
        GtLookupSessions.close(handle);
    }

    /** GeoTrellis' index of a key (times in ms) in a handle's layer. */
    public static long index(SparkSession spark, long handle, int col, int row, long millis) {
        return GtLookupSessions.reader(handle).index(col, row, millis);
    }
}
