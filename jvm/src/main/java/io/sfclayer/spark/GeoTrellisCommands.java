package io.sfclayer.spark;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.sfclayer.geotrellis.GtLayer;
import io.sfclayer.geotrellis.GtTile;
import io.sfclayer.geotrellis.GtValueReader;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.SparkSession;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What {@code sfclayer.geotrellis} calls through py4j: a catalog's layers, a layer's attributes (JSON),
 * a look-up reader, and tiles packed as bytes ({@link #pack}) so that py4j moves one byte array.
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
        GtLayer l = GtLayer.open(catalog, name, zoom, conf(spark));
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
        return json(m);
    }

    /** A look-up handle: each of its calls is one py4j round trip answering packed bytes. */
    public static Lookup openReader(SparkSession spark, String catalog, String name, int zoom, int cacheSize) {
        return new Lookup(new GtValueReader(GtLayer.open(catalog, name, zoom, conf(spark)), conf(spark), cacheSize));
    }

    /** {@link GtValueReader}'s answers as {@link #pack}ed bytes (what the Python Layer calls). */
    public static final class Lookup implements java.io.Closeable {
        private final GtValueReader reader;

        Lookup(GtValueReader reader) {
            this.reader = reader;
        }

        public byte[] get(int col, int row, long millis) {
            GtTile t = reader.get(col, row, millis);
            List<GtTile> one = new ArrayList<>(1);
            if (t != null) one.add(t);
            return pack(one);
        }

        /** Keys packed as {@code (int col, int row, long millis)} big-endian. */
        public byte[] getMany(byte[] keys) {
            ByteBuffer b = ByteBuffer.wrap(keys);
            int n = keys.length / 16;
            List<GtTile> out = new ArrayList<>(n);
            for (int i = 0; i < n; i++) out.add(reader.get(b.getInt(), b.getInt(), b.getLong()));
            return pack(out);
        }

        public byte[] query(int c0, int r0, int c1, int r1, long t0, long t1, long limit) {
            return pack(reader.query(c0, r0, c1, r1, t0, t1, limit));
        }

        public long count(int c0, int r0, int c1, int r1, long t0, long t1) {
            return reader.count(c0, r0, c1, r1, t0, t1);
        }

        public long index(int col, int row, long millis) {
            return reader.index(col, row, millis);
        }

        @Override
        public void close() {
            reader.close();
        }
    }

    /**
     * Tiles back to back, big-endian: {@code int present} (0 for a missing tile, which ends there), then
     * {@code int col, int row, long millis, int width, int height, int bands, int dtypeLength, dtype (ASCII),
     * byte hasNodata, double nodata, int pixelBytes, pixels}.
     */
    static byte[] pack(List<GtTile> tiles) {
        int size = 0;
        for (GtTile t : tiles) size += t == null ? 4 : 4 + 4 + 4 + 8 + 12 + 4 + t.dtype.length() + 1 + 8 + 4 + t.pixels.length;
        ByteBuffer b = ByteBuffer.allocate(size);
        for (GtTile t : tiles) {
            if (t == null) {
                b.putInt(0);
                continue;
            }
            b.putInt(1).putInt(t.col).putInt(t.row).putLong(t.millis).putInt(t.width).putInt(t.height).putInt(t.bands);
            byte[] d = t.dtype.getBytes(StandardCharsets.US_ASCII);
            b.putInt(d.length).put(d);
            b.put((byte) (t.nodata == null ? 0 : 1)).putDouble(t.nodata == null ? 0 : t.nodata);
            b.putInt(t.pixels.length).put(t.pixels);
        }
        return b.array();
    }
}
