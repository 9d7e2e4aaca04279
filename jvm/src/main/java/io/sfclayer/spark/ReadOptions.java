package io.sfclayer.spark;

import io.sfclayer.SfcLayerException;
import io.sfclayer.layer.LayerWriteOptions;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The one table of read options: every option a read accepts is a line here (name and meaning), and
 * a read with any other option fails naming the valid ones, as writes do ({@code LayerWriteOptions}).
 * Names match case-insensitively, as Spark's options do. Hadoop settings ({@code fs.*}, {@code dfs.*},
 * {@code hadoop.*}, {@code io.*}) are not sfclayer options: they go to the read's Hadoop configuration
 * ({@link HadoopConfs}).
 */
public final class ReadOptions {
    private ReadOptions() { }

    // The names, for the classes that read them (the scan builders, the tables, the source, the catalog).
    public static final String PATH = "path";
    public static final String BBOX = "bbox";
    public static final String GEOMETRY = "geometry";
    public static final String MAX_RANGES = "maxRanges";
    public static final String VERSION_AS_OF = "versionAsOf";
    public static final String TIMESTAMP_AS_OF = "timestampAsOf";
    public static final String GEOTRELLIS_LAYER = "geotrellisLayer";
    public static final String ON_CORRUPT = "onCorrupt";

    /** Option name as users write it, and what it means (README "Reading"). */
    public static final Map<String, String> KNOWN;

    static {
        Map<String, String> m = new LinkedHashMap<>();
        m.put(PATH, "the layer's directory (load(path))");
        m.put(BBOX, "xmin,ymin,xmax,ymax in map units: tiles whose envelope meets it");
        m.put(GEOMETRY, "WKT or hex WKB in the layer's CRS: tiles whose envelope meets it,"
            + " read through its tile cover");
        m.put(MAX_RANGES, "most SFC ranges a query decomposes into (0: exact)");
        m.put(VERSION_AS_OF, "the layer version to read (1, 2, ...)");
        m.put(TIMESTAMP_AS_OF, "read the newest version committed at or before this instant");
        m.put(GEOTRELLIS_LAYER, "name/zoom of a GeoTrellis layer in the catalog at path, read in place");
        m.put(ON_CORRUPT, "fail | skip: what a damaged record or file does (default: spark.sql.files."
            + "ignoreCorruptFiles / ignoreMissingFiles)");
        KNOWN = Collections.unmodifiableMap(m);
    }

    /** Hadoop settings, shared with writes: {@link LayerWriteOptions#isHadoopSetting}. */
    public static boolean isHadoopSetting(String name) {
        return LayerWriteOptions.isHadoopSetting(name);
    }

    /** Properties Spark's catalog adds to a table's options (CREATE TABLE): not the user's options. */
    private static final Set<String> SPARK_TABLE_PROPERTIES = Set.of(TableCatalog.PROP_LOCATION,
        TableCatalog.PROP_IS_MANAGED_LOCATION, TableCatalog.PROP_EXTERNAL, TableCatalog.PROP_TABLE_TYPE,
        TableCatalog.PROP_COMMENT, TableCatalog.PROP_COLLATION, TableCatalog.PROP_PROVIDER, TableCatalog.PROP_OWNER);

    /** @throws SfcLayerException.InvalidArgument naming the first unknown option and listing the valid ones */
    public static void check(Map<String, String> options) {
        if (options instanceof CaseInsensitiveStringMap) {
            options = ((CaseInsensitiveStringMap) options).asCaseSensitiveMap(); // names as the user wrote them
        }
        for (String given : options.keySet()) {
            String name = given.regionMatches(true, 0, TableCatalog.OPTION_PREFIX, 0, TableCatalog.OPTION_PREFIX.length())
                ? given.substring(TableCatalog.OPTION_PREFIX.length()) : given; // CREATE TABLE ... OPTIONS (...)
            if (isHadoopSetting(name) || SPARK_TABLE_PROPERTIES.contains(name.toLowerCase(Locale.ROOT))) continue;
            boolean known = false;
            for (String k : KNOWN.keySet()) known |= k.equalsIgnoreCase(name);
            if (!known) {
                throw new SfcLayerException.InvalidArgument("unknown sfclayer read option '" + name + "'; valid options: "
                    + String.join(", ", KNOWN.keySet()) + ", and Hadoop settings (" + String.join("*, ", LayerWriteOptions.HADOOP_PREFIXES)
                    + "*)");
            }
        }
    }
}
