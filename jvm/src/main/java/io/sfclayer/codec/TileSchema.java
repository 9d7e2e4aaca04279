package io.sfclayer.codec;

import io.sfclayer.SfcLayerException;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;

import java.io.Serializable;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.Locale;
import java.util.Set;

/**
 * The schema of one tile record: the key columns {@code col}, {@code row} and (for space-time
 * layers) {@code time}, followed by the layer's value columns.
 *
 * <p>A stored value (one MapFile entry) is the Avro binary encoding of an array of these records
 * ({@link #groupSchemaJson()}); each record alone is decodable with {@link #avroSchemaJson()}.
 * The Avro schema is derived from the Spark schema of the value columns, which is the source of
 * truth (store {@code valueSchema().json()} and rebuild with {@link #fromJson}).
 *
 * <p>Type mapping (Spark → Avro): boolean → boolean; tinyint/smallint/int → int; bigint → long;
 * float → float; double → double; string → string; binary → bytes; date → int/date;
 * timestamp → long/timestamp-micros; timestamp_ntz → long/local-timestamp-micros;
 * decimal(p,s) → bytes/decimal(p,s); array&lt;T&gt; → array; map&lt;string,T&gt; → map;
 * struct → nested record named {@code Tile_<path>}. Nullable fields, elements and map values are
 * {@code ["null", T]} unions (null first); nullable record fields have {@code "default": null}.
 */
public final class TileSchema implements Serializable {
    private static final long serialVersionUID = 1L;

    /** Names a value column may not have (compared case-insensitively): the key and metadata columns. */
    public static final Set<String> RESERVED_NAMES = Collections.unmodifiableSet(
            new LinkedHashSet<>(java.util.Arrays.asList("col", "row", "time", "_sfc_index", "_file")));

    static final String SUPPORTED = "boolean, tinyint, smallint, int, bigint, float, double, string, "
            + "binary, date, timestamp, timestamp_ntz, decimal(p,s) with 0 <= s <= p, array<T>, "
            + "map<string,T>, struct<...> (with at least one field)";

    // Codec kinds. Dates are encoded as INT and both timestamp flavours as LONG.
    static final int K_BOOLEAN = 0, K_BYTE = 1, K_SHORT = 2, K_INT = 3, K_LONG = 4, K_FLOAT = 5,
            K_DOUBLE = 6, K_STRING = 7, K_BINARY = 8, K_DECIMAL = 9, K_ARRAY = 10, K_MAP = 11,
            K_STRUCT = 12;

    /**
     * One node of the compiled codec tree: a value column, struct field, array element or map
     * value. Immutable; shared by every writer and cursor of the schema.
     */
    static final class Node {
        final int kind;
        /** Encoded as a ["null", T] union. */
        final boolean nullable;
        /** Dotted path for error messages, e.g. {@code meta.bands.element}. */
        final String path;
        /** Decimal precision and scale. */
        final int precision, scale;
        /** Array element or map value. */
        final Node element;
        /** Struct fields. */
        final Node[] fields;
        /**
         * For primitive kinds: the element width in an UnsafeArrayData (1, 2, 4 or 8), so arrays
         * of them decode into an UnsafeArrayData without boxing; 0 for variable-length kinds.
         */
        final int primSize;

        Node(int kind, boolean nullable, String path, int precision, int scale, Node element, Node[] fields) {
            this.kind = kind;
            this.nullable = nullable;
            this.path = path;
            this.precision = precision;
            this.scale = scale;
            this.element = element;
            this.fields = fields;
            switch (kind) {
                case K_BOOLEAN: case K_BYTE: primSize = 1; break;
                case K_SHORT: primSize = 2; break;
                case K_INT: case K_FLOAT: primSize = 4; break;
                case K_LONG: case K_DOUBLE: primSize = 8; break;
                default: primSize = 0;
            }
        }
    }

    private final StructType valueSchema;
    private final boolean spaceTime;
    private final String avroSchemaJson;
    private final String groupSchemaJson;
    private transient volatile Node[] nodes;

    private TileSchema(StructType valueSchema, boolean spaceTime) {
        this.valueSchema = valueSchema;
        this.spaceTime = spaceTime;
        this.nodes = compile(valueSchema);
        this.avroSchemaJson = buildAvroJson(valueSchema, spaceTime);
        this.groupSchemaJson = "{\"type\":\"array\",\"items\":" + avroSchemaJson + "}";
    }

    /**
     * The schema of a layer whose value columns are {@code valueSchema} (only the value columns:
     * not col, row or time).
     *
     * @throws SfcLayerException.InvalidInput naming the column for an unsupported type, a reserved
     *         or invalid column name, or duplicate names
     */
    public static TileSchema fromSpark(StructType valueSchema, boolean spaceTime) {
        if (valueSchema == null) {
            throw new SfcLayerException.InvalidInput("value schema is null");
        }
        return new TileSchema(valueSchema, spaceTime);
    }

    /**
     * Rebuilds a schema from {@code StructType.json()} of the value columns (as stored in a
     * layer's metadata).
     *
     * @throws SfcLayerException.CorruptLayer if the JSON is not a Spark struct type
     */
    public static TileSchema fromJson(String sparkValueSchemaJson, boolean spaceTime) {
        if (sparkValueSchemaJson == null) {
            return parse(null, spaceTime);
        }
        // every open and commit parses its version's schema; Spark's JSON parser (json4s) made that 7 % of a small
        // driver-side append's CPU. A TileSchema is immutable: one per schema text is shared.
        String key = (spaceTime ? "t" : "s") + sparkValueSchemaJson;
        synchronized (PARSED) {
            TileSchema hit = PARSED.get(key);
            if (hit != null) {
                return hit;
            }
        }
        TileSchema parsed = parse(sparkValueSchemaJson, spaceTime);
        synchronized (PARSED) {
            PARSED.put(key, parsed);
        }
        return parsed;
    }

    /** Schemas parsed, by their text: the most recently used {@value #PARSED_KEPT}. */
    private static final int PARSED_KEPT = 64;
    private static final java.util.Map<String, TileSchema> PARSED = new java.util.LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(java.util.Map.Entry<String, TileSchema> eldest) {
            return size() > PARSED_KEPT;
        }
    };

    private static TileSchema parse(String sparkValueSchemaJson, boolean spaceTime) {
        DataType dt;
        try {
            dt = DataType.fromJson(sparkValueSchemaJson);
        } catch (Exception e) { // json4s also throws Jackson's checked exceptions
            throw new SfcLayerException.CorruptLayer("invalid value schema JSON: " + SfcLayerException.reason(e), e);
        }
        if (!(dt instanceof StructType)) {
            throw new SfcLayerException.CorruptLayer(
                    "invalid value schema JSON: expected a struct type, got " + dt.simpleString());
        }
        return fromSpark((StructType) dt, spaceTime);
    }

    /** The Avro schema (JSON) of one tile record: record {@code io.sfclayer.Tile}. */
    public String avroSchemaJson() {
        return avroSchemaJson;
    }

    /** The Avro schema (JSON) of a stored value: {@code {"type":"array","items":<record>}}. */
    public String groupSchemaJson() {
        return groupSchemaJson;
    }

    /** The Spark schema of the value columns. */
    public StructType valueSchema() {
        return valueSchema;
    }

    /** Whether records carry a {@code time} key. */
    public boolean spaceTime() {
        return spaceTime;
    }

    /** Number of value columns. */
    public int numValues() {
        return valueSchema.fields().length;
    }

    /** The compiled codec tree of the value columns, in schema order. */
    Node[] nodes() {
        Node[] n = nodes;
        if (n == null) {
            n = compile(valueSchema);
            nodes = n;
        }
        return n;
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) return true;
        if (!(o instanceof TileSchema)) return false;
        TileSchema t = (TileSchema) o;
        return spaceTime == t.spaceTime && valueSchema.equals(t.valueSchema);
    }

    @Override
    public int hashCode() {
        return valueSchema.hashCode() * 31 + (spaceTime ? 1 : 0);
    }

    @Override
    public String toString() {
        return "TileSchema(" + (spaceTime ? "col, row, time; " : "col, row; ") + valueSchema.simpleString() + ")";
    }

    // ---------------------------------------------------------------- validation and compiling

    private static Node[] compile(StructType valueSchema) {
        StructField[] fs = valueSchema.fields();
        Node[] out = new Node[fs.length];
        Set<String> seen = new HashSet<>();
        for (int i = 0; i < fs.length; i++) {
            String name = fs[i].name();
            String lower = name.toLowerCase(Locale.ROOT);
            if (RESERVED_NAMES.contains(lower)) {
                throw new SfcLayerException.InvalidInput("value column '" + name + "' has a reserved name; "
                        + "value columns may not be named " + String.join(", ", RESERVED_NAMES)
                        + " (in any case)");
            }
            checkName(name, name);
            if (!seen.add(lower)) {
                throw new SfcLayerException.InvalidInput("value column '" + name + "' appears more than once "
                        + "(column names are compared case-insensitively)");
            }
            out[i] = compile(name, name, fs[i].dataType(), fs[i].nullable());
        }
        return out;
    }

    private static void checkName(String column, String name) {
        boolean ok = !name.isEmpty();
        for (int i = 0; ok && i < name.length(); i++) {
            char c = name.charAt(i);
            ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || (i > 0 && c >= '0' && c <= '9');
        }
        if (!ok) {
            String rule = "not a valid Avro name (letters, digits and _, not starting with a digit); rename it";
            throw new SfcLayerException.InvalidInput(column.equals(name)
                    ? "value column '" + column + "' has a name that is " + rule
                    : "value column '" + column + "' has a struct field '" + name + "' whose name is " + rule);
        }
    }

    private static SfcLayerException.InvalidInput unsupported(String column, String path, DataType whole,
                                                             DataType bad, String why) {
        StringBuilder sb = new StringBuilder("value column '").append(column).append("' has unsupported type ")
                .append(whole.simpleString());
        if (bad != whole) {
            sb.append(" (").append(bad.simpleString()).append(" at ").append(path).append(")");
        }
        if (why != null) sb.append(": ").append(why);
        sb.append("; supported: ").append(SUPPORTED);
        return new SfcLayerException.InvalidInput(sb.toString());
    }

    private static Node compile(String column, String path, DataType t, boolean nullable) {
        return compile(column, path, t, nullable, null);
    }

    private static Node compile(String column, String path, DataType t, boolean nullable, DataType whole) {
        if (whole == null) whole = t;
        if (t instanceof BooleanType) return new Node(K_BOOLEAN, nullable, path, 0, 0, null, null);
        if (t instanceof ByteType) return new Node(K_BYTE, nullable, path, 0, 0, null, null);
        if (t instanceof ShortType) return new Node(K_SHORT, nullable, path, 0, 0, null, null);
        if (t instanceof IntegerType || t instanceof DateType) return new Node(K_INT, nullable, path, 0, 0, null, null);
        if (t instanceof LongType || t instanceof TimestampType || t instanceof TimestampNTZType) {
            return new Node(K_LONG, nullable, path, 0, 0, null, null);
        }
        if (t instanceof FloatType) return new Node(K_FLOAT, nullable, path, 0, 0, null, null);
        if (t instanceof DoubleType) return new Node(K_DOUBLE, nullable, path, 0, 0, null, null);
        if (t instanceof StringType) return new Node(K_STRING, nullable, path, 0, 0, null, null);
        if (t instanceof BinaryType) return new Node(K_BINARY, nullable, path, 0, 0, null, null);
        if (t instanceof DecimalType) {
            DecimalType d = (DecimalType) t;
            if (d.precision() < 1 || d.scale() < 0 || d.scale() > d.precision()) {
                throw unsupported(column, path, whole, t, "Avro decimals need 0 <= scale <= precision");
            }
            return new Node(K_DECIMAL, nullable, path, d.precision(), d.scale(), null, null);
        }
        if (t instanceof ArrayType) {
            ArrayType a = (ArrayType) t;
            Node e = compile(column, path + ".element", a.elementType(), a.containsNull(), whole);
            return new Node(K_ARRAY, nullable, path, 0, 0, e, null);
        }
        if (t instanceof MapType) {
            MapType m = (MapType) t;
            if (!(m.keyType() instanceof StringType)) {
                throw unsupported(column, path, whole, t, "map keys must be strings");
            }
            Node v = compile(column, path + ".value", m.valueType(), m.valueContainsNull(), whole);
            return new Node(K_MAP, nullable, path, 0, 0, v, null);
        }
        if (t instanceof StructType) {
            StructField[] fs = ((StructType) t).fields();
            if (fs.length == 0) {
                throw unsupported(column, path, whole, t, "structs need at least one field");
            }
            Node[] nodes = new Node[fs.length];
            Set<String> seen = new HashSet<>();
            for (int i = 0; i < fs.length; i++) {
                checkName(column, fs[i].name());
                if (!seen.add(fs[i].name())) {
                    throw new SfcLayerException.InvalidInput("value column '" + column + "' has a struct with "
                            + "two fields named '" + fs[i].name() + "' (at " + path + ")");
                }
                nodes[i] = compile(column, path + "." + fs[i].name(), fs[i].dataType(), fs[i].nullable(), whole);
            }
            return new Node(K_STRUCT, nullable, path, 0, 0, null, nodes);
        }
        throw unsupported(column, path, whole, t, null);
    }

    // ---------------------------------------------------------------- Avro schema JSON

    private static String buildAvroJson(StructType valueSchema, boolean spaceTime) {
        StringBuilder sb = new StringBuilder(256);
        Set<String> recordNames = new HashSet<>();
        recordNames.add("Tile");
        sb.append("{\"type\":\"record\",\"name\":\"Tile\",\"namespace\":\"io.sfclayer\",\"fields\":[")
                .append("{\"name\":\"col\",\"type\":\"int\"},{\"name\":\"row\",\"type\":\"int\"}");
        if (spaceTime) {
            sb.append(",{\"name\":\"time\",\"type\":{\"type\":\"long\",\"logicalType\":\"timestamp-micros\"}}");
        }
        for (StructField f : valueSchema.fields()) {
            sb.append(',');
            appendField(sb, f, f.name(), recordNames);
        }
        return sb.append("]}").toString();
    }

    private static void appendField(StringBuilder sb, StructField f, String path, Set<String> recordNames) {
        // Names were validated as Avro names: no JSON escaping needed.
        sb.append("{\"name\":\"").append(f.name()).append("\",\"type\":");
        appendType(sb, f.dataType(), f.nullable(), path, recordNames);
        if (f.nullable()) sb.append(",\"default\":null");
        sb.append('}');
    }

    private static void appendType(StringBuilder sb, DataType t, boolean nullable, String path, Set<String> recordNames) {
        if (nullable) sb.append("[\"null\",");
        if (t instanceof BooleanType) sb.append("\"boolean\"");
        else if (t instanceof ByteType || t instanceof ShortType || t instanceof IntegerType) sb.append("\"int\"");
        else if (t instanceof LongType) sb.append("\"long\"");
        else if (t instanceof FloatType) sb.append("\"float\"");
        else if (t instanceof DoubleType) sb.append("\"double\"");
        else if (t instanceof StringType) sb.append("\"string\"");
        else if (t instanceof BinaryType) sb.append("\"bytes\"");
        else if (t instanceof DateType) sb.append("{\"type\":\"int\",\"logicalType\":\"date\"}");
        else if (t instanceof TimestampType) sb.append("{\"type\":\"long\",\"logicalType\":\"timestamp-micros\"}");
        else if (t instanceof TimestampNTZType) {
            sb.append("{\"type\":\"long\",\"logicalType\":\"local-timestamp-micros\"}");
        } else if (t instanceof DecimalType) {
            DecimalType d = (DecimalType) t;
            sb.append("{\"type\":\"bytes\",\"logicalType\":\"decimal\",\"precision\":").append(d.precision())
                    .append(",\"scale\":").append(d.scale()).append('}');
        } else if (t instanceof ArrayType) {
            ArrayType a = (ArrayType) t;
            sb.append("{\"type\":\"array\",\"items\":");
            appendType(sb, a.elementType(), a.containsNull(), path + "_element", recordNames);
            sb.append('}');
        } else if (t instanceof MapType) {
            MapType m = (MapType) t;
            sb.append("{\"type\":\"map\",\"values\":");
            appendType(sb, m.valueType(), m.valueContainsNull(), path + "_value", recordNames);
            sb.append('}');
        } else if (t instanceof StructType) {
            String base = "Tile_" + path;
            String name = base;
            for (int i = 2; !recordNames.add(name); i++) name = base + "_" + i;
            sb.append("{\"type\":\"record\",\"name\":\"").append(name).append("\",\"fields\":[");
            StructField[] fs = ((StructType) t).fields();
            for (int i = 0; i < fs.length; i++) {
                if (i > 0) sb.append(',');
                appendField(sb, fs[i], path + "_" + fs[i].name(), recordNames);
            }
            sb.append("]}");
        } else {
            throw new IllegalStateException("unvalidated type " + t.simpleString()); // compile() rejects these first
        }
        if (nullable) sb.append(']');
    }
}
