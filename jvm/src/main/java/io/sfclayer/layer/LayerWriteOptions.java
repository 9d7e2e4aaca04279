package io.sfclayer.layer;

import io.sfclayer.SfcLayerException;
import io.sfclayer.codec.TileSchema;
import io.sfclayer.curve.KeyBounds;
import io.sfclayer.curve.KeyIndex;
import io.sfclayer.curve.TimeBounds;
import io.sfclayer.curve.TimeText;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.format.ValueCompression;

import java.io.Serializable;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The options of a layer write, parsed and checked before any work starts (README, "Writing").
 *
 * <p>Over 500 lines on purpose: it is the one table of write options (issue 15), each option with its
 * parsing and its message, and a table split in two would invite a second one.
 */
public final class LayerWriteOptions implements Serializable {
    private static final long serialVersionUID = 1L;

    /** Option names as users write them; matched case-insensitively, as Spark's options are. */
    public static final String[] KNOWN = {
        "path", "keyIndex", "bounds", "timeBounds", "timeResolution", "blockSize", "partitions",
        "compression", "extent", "crs", "indexInterval", "onExisting", "raster",
        "maxGroupBytes", "formatVersion", "repair", "bloomFilter", "bloomFpp", "singleWriter", "smallAppendBytes",
        "txnAppId", "txnVersion", "appendMode", "deltaRewriteRatio", "compactAfterDeltas",
    };
    /** Appends whose input Spark estimates at most this size skip the shuffle (bench/updates.py). */
    public static final long DEFAULT_SMALL_APPEND_BYTES = 16L << 20;
    public static final int DEFAULT_INDEX_INTERVAL = 4;
    public static final long DEFAULT_TIME_RESOLUTION_MICROS = 86_400_000_000L;

    public String keyIndex = "z";
    public KeyBounds bounds;
    public Long timeMin;
    public Long timeMax;
    public long timeResolutionMicros = DEFAULT_TIME_RESOLUTION_MICROS;
    public boolean timeResolutionGiven;
    /** 0 means the target filesystem's default block size. */
    public long blockSize;
    /** 0 means as many as the input has. */
    public int partitions;
    public ValueCompression compression = ValueCompression.NONE;
    public LayerMetadata.Extent extent;
    public String crs;
    public int indexInterval = DEFAULT_INDEX_INTERVAL;
        /** The on-disk format to write: the current one, or 2 (no checksums: compatibility tests, benchmarks). */
    public int formatVersion = LayerMetadata.FORMAT_VERSION;
    /** Set by {@code LayerRepair}: what the repair dropped, recorded in the version document. */
    public Object repair;
    /** What an append does with keys the layer already holds. */
    public MergeWriter.OnExisting onExisting = MergeWriter.OnExisting.REPLACE;
    /** A raster layer's description (docs/FORMAT.md, "Raster layers"): a JSON object, kept verbatim. */
    public Map<String, Object> raster;
    /** The largest group of tiles sharing one SFC index, in bytes (see GroupWriter). */
    public long maxGroupBytes = GroupWriter.DEFAULT_MAX_GROUP_BYTES;
    /** An append of at most this many input bytes (Spark's estimate) is sorted on the driver, not shuffled; 0: never. */
    public long smallAppendBytes = DEFAULT_SMALL_APPEND_BYTES;
    /** Options txnAppId and txnVersion: a batch written at most once (docs/FORMAT.md, "Application transactions"). */
    public io.sfclayer.format.Transactions.Txn txn;
    /** Options appendMode, deltaRewriteRatio, compactAfterDeltas: when an append writes delta files (section 11). */
    public DeltaPolicy deltas = DeltaPolicy.DEFAULT;
    /** The options the caller gave, by their names in {@link #KNOWN}, with the values as given. */
    public final Map<String, String> given = new LinkedHashMap<>();

    /**
     * Options that shape a layer (its key index, grid, georeferencing, file layout and encoding): an
     * append keeps the layer's, so it accepts them only with the layer's own values.
     */
    public static final String[] LAYER_SHAPING = {
        "keyIndex", "bounds", "timeBounds", "timeResolution", "blockSize", "compression", "extent", "crs",
        "indexInterval", "raster", "formatVersion",
    };
    /**
     * Whether each data file gets a bloom filter over its indexes (format.BloomFilter), so look-up
     * misses skip the file. On by default: measured in bench/bloom.py, a cold miss (a new reader) got
     * 3× faster at the median (bench/RESULTS.md, "Bloom filters"); issue 16's rule makes filters the
     * default from 2× on. The filters cost about 0.1% of the data's bytes.
     */
    public static final boolean DEFAULT_BLOOM_FILTER = true;
    public static final double DEFAULT_BLOOM_FPP = 0.01;
    /** The bloomFilter option, or null when not given (a first write takes the default, an append the layer's). */
    public Boolean bloomFilter;
    /**
     * The singleWriter option: the user declares that no other writer writes the layer at the same
     * time, which allows commits on a store without atomic create-if-absent (format.CommitPublisher).
     */
    public boolean singleWriter;
    /** The bloomFpp option, or null when not given. */
    public Double bloomFpp;

    /** Prefixes of Hadoop settings: options of reads and writes that go to their Hadoop configuration. */
    public static final String[] HADOOP_PREFIXES = {"fs.", "dfs.", "hadoop.", "io."};

    /** Whether an option is a Hadoop setting (see {@link #HADOOP_PREFIXES}) rather than an sfclayer option. */
    public static boolean isHadoopSetting(String name) {
        String k = name.toLowerCase(Locale.ROOT);
        for (String p : HADOOP_PREFIXES) {
            if (k.startsWith(p)) return true;
        }
        return false;
    }

    public static LayerWriteOptions parse(Map<String, String> options) {
        Map<String, String> lower = new LinkedHashMap<>();
        Map<String, String> known = new LinkedHashMap<>();
        for (String k : KNOWN) {
            known.put(k.toLowerCase(Locale.ROOT), k);
        }
        for (Map.Entry<String, String> e : options.entrySet()) {
            String k = e.getKey().toLowerCase(Locale.ROOT);
            if (isHadoopSetting(k)) {
                continue; // for the write's Hadoop configuration (spark.HadoopConfs), not for us
            }
            if (!known.containsKey(k)) {
                throw new SfcLayerException.InvalidArgument("unknown sfclayer write option '" + e.getKey()
                    + "'; known options: " + String.join(", ", KNOWN) + ", and Hadoop settings ("
                    + String.join("*, ", HADOOP_PREFIXES) + "*)");
            }
            lower.put(k, e.getValue());
        }
        LayerWriteOptions o = new LayerWriteOptions();
        for (Map.Entry<String, String> e : lower.entrySet()) {
            o.given.put(known.get(e.getKey()), e.getValue());
        }
        String v;
        if ((v = lower.get("keyindex")) != null) {
            o.keyIndex = v.trim().toLowerCase(Locale.ROOT).replace("-", "").replace("_", "");
            if (o.keyIndex.equals("zorder")) o.keyIndex = "z";
            if (!o.keyIndex.equals("z") && !o.keyIndex.equals("hilbert") && !o.keyIndex.equals("rowmajor")) {
                throw new SfcLayerException.InvalidArgument("option keyIndex: unknown key index '" + v
                    + "' (choose z, hilbert or rowmajor; z becomes Z3 for space-time layers)");
            }
        }
        if ((v = lower.get("bounds")) != null) {
            long[] b = longs("bounds", v, 4, "colMin,rowMin,colMax,rowMax");
            for (long x : b) {
                if (x < Integer.MIN_VALUE || x > Integer.MAX_VALUE) {
                    throw new SfcLayerException.InvalidArgument("option bounds: " + x + " is not a 32-bit int in '" + v + "'");
                }
            }
            if (b[0] > b[2] || b[1] > b[3]) {
                throw new SfcLayerException.InvalidArgument("option bounds: '" + v
                    + "' must be colMin,rowMin,colMax,rowMax with colMin <= colMax and rowMin <= rowMax");
            }
            o.bounds = new KeyBounds((int) b[0], (int) b[1], (int) b[2], (int) b[3]);
        }
        if ((v = lower.get("timebounds")) != null) {
            String[] parts = v.split(",");
            if (parts.length != 2) {
                throw new SfcLayerException.InvalidArgument("option timeBounds: '" + v
                    + "' must be two instants, start,end (e.g. 2020-01-01,2020-12-31T00:00:00Z)");
            }
            o.timeMin = TimeText.parseInstantMicros("timeBounds", parts[0].trim());
            o.timeMax = TimeText.parseInstantMicros("timeBounds", parts[1].trim());
            if (o.timeMin > o.timeMax) {
                throw new SfcLayerException.InvalidArgument("option timeBounds: start is after end in '" + v + "'");
            }
        }
        if ((v = lower.get("timeresolution")) != null) {
            o.timeResolutionMicros = TimeText.parseDurationMicros("timeResolution", v);
            o.timeResolutionGiven = true;
        }
        if ((v = lower.get("blocksize")) != null) {
            o.blockSize = parseBytes("blockSize", v);
            if (o.blockSize < 65536) {
                throw new SfcLayerException.InvalidArgument("option blockSize: '" + v + "' is below the minimum (at least 64k)");
            }
            if (o.blockSize % 512 != 0) {
                throw new SfcLayerException.InvalidArgument("option blockSize: '" + v
                    + "' is not a multiple of 512 bytes (HDFS checksum chunks: 64k, 1m, 128m, ...)");
            }
        }
        if ((v = lower.get("partitions")) != null) {
            o.partitions = (int) positive("partitions", v, Integer.MAX_VALUE);
        }
        if ((v = lower.get("compression")) != null) {
            o.compression = ValueCompression.parse(v);
        }
        if ((v = lower.get("extent")) != null) {
            double[] e = parseBox("extent", v);
            try {
                o.extent = new LayerMetadata.Extent(e[0], e[1], e[2], e[3]);
            } catch (SfcLayerException e2) {
                throw new SfcLayerException.InvalidArgument("option extent: " + SfcLayerException.reason(e2));
            }
        }
        if ((v = lower.get("crs")) != null) {
            o.crs = v.trim();
        }
        if ((v = lower.get("indexinterval")) != null) {
            o.indexInterval = (int) positive("indexInterval", v, 1 << 20);
        }
        if ((v = lower.get("maxgroupbytes")) != null) {
            o.maxGroupBytes = parseBytes("maxGroupBytes", v);
            if (o.maxGroupBytes < 1 || o.maxGroupBytes > GroupWriter.MAX_GROUP_BYTES_LIMIT) {
                throw new SfcLayerException.InvalidArgument("option maxGroupBytes: '" + v + "' is outside 1 byte..1g");
            }
        }
        if ((v = lower.get("smallappendbytes")) != null) {
            o.smallAppendBytes = v.trim().equals("0") ? 0 : parseBytes("smallAppendBytes", v);
        }
        String appId = lower.get("txnappid");
        String txnVersion = lower.get("txnversion");
        if ((appId == null) != (txnVersion == null)) {
            throw new SfcLayerException.InvalidArgument("options txnAppId and txnVersion go together (an idempotent"
                + " write names its application and its batch number); only " + (appId == null ? "txnVersion" : "txnAppId")
                + " was given");
        }
        if (appId != null) {
            long n;
            try {
                n = Long.parseLong(txnVersion.trim());
            } catch (NumberFormatException e) {
                throw new SfcLayerException.InvalidArgument("option txnVersion: '" + txnVersion
                    + "' is not a batch number (0, 1, 2, ...)");
            }
            o.txn = new io.sfclayer.format.Transactions.Txn(appId.trim(), n);
        }
        DeltaPolicy.Mode appendMode = DeltaPolicy.DEFAULT.mode();
        double ratio = DeltaPolicy.DEFAULT_RATIO;
        int compactAfter = DeltaPolicy.DEFAULT_COMPACT_AFTER_DELTAS;
        if ((v = lower.get("appendmode")) != null) {
            appendMode = DeltaPolicy.parseMode(v);
        }
        if ((v = lower.get("deltarewriteratio")) != null) {
            try {
                ratio = Double.parseDouble(v.trim());
            } catch (NumberFormatException e) {
                ratio = Double.NaN;
            }
            if (!(ratio >= 0 && ratio <= 1e9)) {
                throw new SfcLayerException.InvalidArgument("option deltaRewriteRatio: '" + v
                    + "' is not a ratio in 0..1e9 (e.g. 4)");
            }
        }
        if ((v = lower.get("compactafterdeltas")) != null) {
            compactAfter = v.trim().equals("0") ? 0 : (int) positive("compactAfterDeltas", v, 1 << 20);
        }
        o.deltas = new DeltaPolicy(appendMode, ratio, compactAfter, Long.MAX_VALUE);
        if ((v = lower.get("onexisting")) != null) {
            o.onExisting = MergeWriter.OnExisting.parse(v);
        }
        if ((v = lower.get("formatversion")) != null) {
            String t = v.trim();
            if (!t.equals("2") && !t.equals(Integer.toString(LayerMetadata.FORMAT_VERSION))) {
                throw new SfcLayerException.InvalidArgument("option formatVersion: '" + v + "' is not 2 or "
                    + LayerMetadata.FORMAT_VERSION + " (the formats this sfclayer writes)");
            }
            o.formatVersion = Integer.parseInt(t);
        }
        if ((v = lower.get("repair")) != null) {
            try {
                o.repair = new com.fasterxml.jackson.databind.ObjectMapper().readValue(v, Object.class);
            } catch (java.io.IOException e) {
                throw new SfcLayerException.InvalidArgument("option repair: not JSON: " + e.getMessage());
            }
        }
        if ((v = lower.get("raster")) != null) {
            o.raster = jsonObject("raster", v);
        }
        if ((v = lower.get("bloomfilter")) != null) {
            String t = v.trim().toLowerCase(Locale.ROOT);
            if (!t.equals("true") && !t.equals("false")) {
                throw new SfcLayerException.InvalidArgument("option bloomFilter: '" + v + "' is not true or false");
            }
            o.bloomFilter = t.equals("true");
        }
        if ((v = lower.get("singlewriter")) != null) {
            String t = v.trim().toLowerCase(Locale.ROOT);
            if (!t.equals("true") && !t.equals("false")) {
                throw new SfcLayerException.InvalidArgument("option singleWriter: '" + v + "' is not true or false");
            }
            o.singleWriter = t.equals("true");
        }
        if ((v = lower.get("bloomfpp")) != null) {
            double p;
            try {
                p = Double.parseDouble(v.trim());
            } catch (NumberFormatException e) {
                p = Double.NaN;
            }
            if (!(p >= 1e-9 && p <= 0.5)) {
                throw new SfcLayerException.InvalidArgument("option bloomFpp: '" + v
                    + "' is not a false-positive probability in 1e-9..0.5 (e.g. 0.01)");
            }
            o.bloomFpp = p;
        }
        return o;
    }

    /**
     * The compression of a new layer (a write or overwrite) of {@code schema}: the option, or when not
     * given {@link ValueCompression#defaultFor} the schema (none when the formatVersion option asks for
     * a format without that default).
     *
     * @throws SfcLayerException.InvalidArgument for a compression the asked formatVersion lacks
     */
    public ValueCompression compressionFor(TileSchema schema) {
        boolean versionGiven = given.containsKey("formatVersion");
        if (!given.containsKey("compression")) {
            ValueCompression d = ValueCompression.defaultFor(schema);
            return versionGiven && d.formatVersion() > formatVersion ? ValueCompression.NONE : d;
        }
        if (versionGiven && compression.formatVersion() > formatVersion) {
            throw new SfcLayerException.InvalidArgument("option compression: '" + compression.optionName()
                + "' needs format version " + compression.formatVersion() + " but option formatVersion asks for "
                + formatVersion + "; nothing was written");
        }
        return compression;
    }

    /**
     * Checks the layer-shaping options given to an append (see {@link #LAYER_SHAPING}) against the layer
     * it appends to: each must equal the layer's, else an InvalidArgument naming the option, the value
     * given and the layer's. Called before any work starts, so nothing is written.
     */
    public void checkAppendTo(LayerMetadata md, String layer) {
        for (String name : LAYER_SHAPING) {
            String v = given.get(name);
            if (v == null) {
                continue;
            }
            if (name.equals("formatVersion")) {
                if (formatVersion != LayerMetadata.FORMAT_VERSION) {
                    throw new SfcLayerException.InvalidArgument("option formatVersion: '" + v + "' is for new layers"
                        + " and overwrites; an append to layer " + layer + " writes format " + LayerMetadata.FORMAT_VERSION
                        + "; nothing was written");
                }
                continue;
            }
            String theirs = layerValueIfDifferent(name, md);
            if (theirs != null) {
                throw new SfcLayerException.InvalidArgument("option " + name + ": '" + v + "' differs from the value of"
                    + " layer " + layer + ", " + theirs + "; an append keeps the layer's " + name + " (give the layer's"
                    + " value or none; mode overwrite rewrites the layer with a new one); nothing was written");
            }
        }
    }

    /** The layer's value of a layer-shaping option, as a user would write it, if it differs from this one's; else null. */
    private String layerValueIfDifferent(String name, LayerMetadata md) {
        KeyIndex ki = md.keyIndex;
        TimeBounds tb = ki.timeBounds();
        switch (name) {
            case "keyIndex": {
                String kind = ki.kind().equals("z3") ? "z" : ki.kind();
                return kind.equals(keyIndex) ? null : "'" + ki.kind() + "'";
            }
            case "bounds": {
                KeyBounds b = ki.bounds();
                return b.equals(bounds) ? null : "'" + b.colMin + "," + b.rowMin + "," + b.colMax + "," + b.rowMax + "'";
            }
            case "timeBounds":
                if (tb == null) {
                    return "none (a spatial layer)";
                }
                return tb.minMicros == timeMin && tb.maxMicros == timeMax ? null
                    : "'" + TimeBounds.formatMicros(tb.minMicros) + ","
                        + TimeBounds.formatMicros(tb.maxMicros) + "'";
            case "timeResolution":
                if (tb == null) {
                    return "none (a spatial layer)";
                }
                return tb.resolutionMicros == timeResolutionMicros ? null
                    : "'" + java.time.Duration.ofNanos(tb.resolutionMicros * 1000) + "'";
            case "blockSize":
                return md.blockSize == blockSize ? null : "'" + md.blockSize + "' bytes";
            case "compression":
                return ValueCompression.parse(md.compression) == compression ? null : "'" + md.compression + "'";
            case "extent": {
                LayerMetadata.Extent e = md.extent;
                if (e == null) {
                    return "none";
                }
                boolean same = e.xmin == extent.xmin && e.ymin == extent.ymin && e.xmax == extent.xmax
                    && e.ymax == extent.ymax;
                return same ? null : "'" + e.xmin + "," + e.ymin + "," + e.xmax + "," + e.ymax + "'";
            }
            case "crs":
                return crs.equals(md.crs) ? null : md.crs == null ? "none" : "'" + md.crs + "'";
            case "indexInterval":
                return md.indexInterval == indexInterval ? null : "'" + md.indexInterval + "'";
            case "raster": {
                Object r = md.extras.get("raster");
                return raster.equals(r) ? null : r == null ? "none" : "'" + jsonText(r) + "'";
            }
            default:
                throw new IllegalArgumentException(name);
        }
    }

    private static String jsonText(Object o) {
        try {
            return new com.fasterxml.jackson.databind.ObjectMapper().writeValueAsString(o);
        } catch (java.io.IOException e) {
            return String.valueOf(o);
        }
    }

    /** The bloom filters' false-positive probability a new layer is written with (bloomFpp alone turns them on); 0 for none. */
    public double bloomFppForNewLayer() {
        boolean on = bloomFilter != null ? bloomFilter : bloomFpp != null || DEFAULT_BLOOM_FILTER;
        return on ? (bloomFpp != null ? bloomFpp : DEFAULT_BLOOM_FPP) : 0;
    }

    /**
     * An append writes its files as the layer's version document records (every update does): options
     * that ask for something else are refused, naming the layer's choice.
     */
    public void checkBloomAgainst(double layerFpp, String layer) {
        boolean layerOn = layerFpp > 0;
        if (bloomFilter != null && bloomFilter != layerOn) {
            throw new SfcLayerException.InvalidArgument("option bloomFilter: '" + bloomFilter + "' differs from layer "
                + layer + ", written " + (layerOn ? "with bloom filters (fpp " + layerFpp + ")" : "without bloom filters")
                + "; appends keep the layer's choice (overwrite the layer to change it)");
        }
        if (bloomFpp != null && bloomFpp != layerFpp) {
            throw new SfcLayerException.InvalidArgument("option bloomFpp: '" + bloomFpp + "' differs from layer " + layer
                + (layerOn ? "'s " + layerFpp : ", written without bloom filters")
                + "; appends keep the layer's choice (overwrite the layer to change it)");
        }
    }

    /** The option's value if it is one JSON object, else an error naming the option. */
    @SuppressWarnings("unchecked")
    private static Map<String, Object> jsonObject(String name, String v) {
        try {
            Object parsed = new com.fasterxml.jackson.databind.ObjectMapper().readValue(v, Object.class);
            if (parsed instanceof Map) {
                return (Map<String, Object>) parsed;
            }
        } catch (java.io.IOException e) {
            // reported below
        }
        throw new SfcLayerException.InvalidArgument("option " + name + ": '" + v + "' is not a JSON object");
    }

    private static long positive(String name, String v, long max) {
        try {
            long x = Long.parseLong(v.trim());
            if (x < 1 || x > max) {
                throw new NumberFormatException();
            }
            return x;
        } catch (NumberFormatException e) {
            throw new SfcLayerException.InvalidArgument("option " + name + ": '" + v + "' is not an integer in 1.." + max);
        }
    }

    private static long[] longs(String name, String v, int n, String form) {
        String[] parts = v.split(",");
        if (parts.length != n) {
            throw new SfcLayerException.InvalidArgument("option " + name + ": '" + v + "' must be " + form);
        }
        long[] out = new long[n];
        for (int i = 0; i < n; i++) {
            try {
                out[i] = Long.parseLong(parts[i].trim());
            } catch (NumberFormatException e) {
                throw new SfcLayerException.InvalidArgument("option " + name + ": '" + parts[i].trim()
                    + "' is not an integer in '" + v + "' (expected " + form + ")");
            }
        }
        return out;
    }

    /**
     * A map box "xmin,ymin,xmax,ymax" (the extent write option, the bbox read option): four finite
     * numbers with xmin <= xmax and ymin <= ymax, else an error naming the option.
     */
    public static double[] parseBox(String name, String v) {
        String[] parts = v.split(",");
        if (parts.length != 4) {
            throw new SfcLayerException.InvalidArgument("option " + name + ": '" + v
                + "' must be four numbers xmin,ymin,xmax,ymax in map units");
        }
        double[] out = new double[4];
        for (int i = 0; i < 4; i++) {
            try {
                out[i] = Double.parseDouble(parts[i].trim());
            } catch (NumberFormatException e) {
                out[i] = Double.NaN;
            }
            if (!Double.isFinite(out[i])) {
                throw new SfcLayerException.InvalidArgument("option " + name + ": '" + parts[i].trim()
                    + "' is not a finite number in '" + v + "'");
            }
        }
        if (out[0] > out[2] || out[1] > out[3]) {
            throw new SfcLayerException.InvalidArgument("option " + name + ": '" + v
                + "' must have xmin <= xmax and ymin <= ymax");
        }
        return out;
    }

    private static final Pattern BYTES = Pattern.compile("(\\d+)\\s*([kmgt]?)i?b?", Pattern.CASE_INSENSITIVE);

    /** "1048576", "64m", "128 MiB", "1g". */
    public static long parseBytes(String name, String v) {
        Matcher m = BYTES.matcher(v.trim());
        if (!m.matches()) {
            throw new SfcLayerException.InvalidArgument("option " + name + ": '" + v
                + "' is not a size (bytes, or a number with k, m or g, e.g. 64m)");
        }
        long n = Long.parseLong(m.group(1));
        switch (m.group(2).toLowerCase(Locale.ROOT)) {
            case "k": return n << 10;
            case "m": return n << 20;
            case "g": return n << 30;
            case "t": return n << 40;
            default: return n;
        }
    }
}
