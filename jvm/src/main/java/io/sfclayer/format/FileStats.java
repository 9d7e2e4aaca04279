package io.sfclayer.format;

import io.sfclayer.SfcLayerException;
import io.sfclayer.codec.TileCursor;
import io.sfclayer.codec.TileSchema;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.unsafe.types.UTF8String;

import java.io.Serializable;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One data file's column statistics (seed 003, Hudi's column-stats index): min/max of {@code col},
 * {@code row}, {@code time}, and min/max/null count of each numeric, date/timestamp and string value
 * column. Stored as the optional {@code stats} field of the file's entry in the version document
 * (docs/FORMAT.md); collected while the file is written, so no extra pass.
 *
 * <p>Numbers, dates (days) and timestamps (microseconds) compare as {@link BigDecimal}, strings as
 * {@link UTF8String} (unsigned UTF-8 bytes, Spark's order). A column whose min/max is unknown (a NaN
 * seen, a string too long to keep) has no min/max; a reader never prunes on what is not there.
 */
public final class FileStats implements Serializable {
    private static final long serialVersionUID = 1L;
    /** Strings longer than this (UTF-8 bytes) make the column's min/max unknown for the file. */
    public static final int MAX_STRING_BYTES = 256;

    /** One column's statistics; min and max are both null when unknown or when every value is null. */
    public static final class Column implements Serializable {
        private static final long serialVersionUID = 1L;
        public Comparable<?> min;
        public Comparable<?> max;
        public long nulls;
        /** Some value could not be ranked (NaN, an over-long string): min/max are not kept. */
        public boolean unknown;

        @SuppressWarnings({"unchecked", "rawtypes"})
        void add(Comparable v) {
            if (v == null) {
                nulls++;
                return;
            }
            if (unknown) {
                return;
            }
            if (min == null || v.compareTo(min) < 0) {
                min = v;
            }
            if (max == null || v.compareTo(max) > 0) {
                max = v;
            }
        }

        void merge(Column o) {
            nulls += o.nulls;
            if (o.unknown) {
                markUnknown();
            }
            if (!unknown && o.min != null) {
                add(o.min);
                add(o.max);
            }
        }

        void markUnknown() {
            unknown = true;
            min = null;
            max = null;
        }
    }

    private final Map<String, Column> columns = new LinkedHashMap<>();

    public Map<String, Column> columns() {
        return Collections.unmodifiableMap(columns);
    }

    /** The statistics of {@code name}, or null if the file has none for it. */
    public Column column(String name) {
        return columns.get(name);
    }

    Column columnFor(String name) {
        return columns.computeIfAbsent(name, k -> new Column());
    }

    public void merge(FileStats o) {
        for (Map.Entry<String, Column> e : o.columns.entrySet()) {
            columnFor(e.getKey()).merge(e.getValue());
        }
    }

    public boolean isEmpty() {
        return columns.isEmpty();
    }

    public void clear() {
        columns.clear();
    }

    /** Whether a value column of this Spark type gets statistics. */
    public static boolean tracked(DataType t) {
        return t == DataTypes.ByteType || t == DataTypes.ShortType || t == DataTypes.IntegerType
            || t == DataTypes.LongType || t == DataTypes.FloatType || t == DataTypes.DoubleType
            || t == DataTypes.DateType || t == DataTypes.TimestampType || t == DataTypes.TimestampNTZType
            || t == DataTypes.StringType;
    }

    /**
     * The comparable form of a decoded value (as {@link TileCursor#readValues} gives it), null for
     * null, or {@link #UNRANKABLE} for a value that cannot be ranked.
     */
    public static Comparable<?> rank(Object v) {
        if (v == null) {
            return null;
        }
        if (v instanceof UTF8String) {
            UTF8String s = (UTF8String) v;
            return s.numBytes() > MAX_STRING_BYTES ? UNRANKABLE : s.clone();
        }
        if (v instanceof Double || v instanceof Float) {
            double d = ((Number) v).doubleValue();
            return Double.isFinite(d) ? new BigDecimal(d) : UNRANKABLE;
        }
        if (v instanceof Number) {
            return BigDecimal.valueOf(((Number) v).longValue());
        }
        return UNRANKABLE;
    }

    /** Marks a value that makes a column's min/max unknown. */
    public static final String UNRANKABLE = "\u0000unrankable";

    /** Adds one value of {@code name} (in {@link #rank} form). */
    @SuppressWarnings("rawtypes")
    public void add(String name, Comparable ranked) {
        Column c = columnFor(name);
        if (ranked == UNRANKABLE) {
            c.markUnknown();
        } else {
            c.add(ranked);
        }
    }

    public Map<String, Object> toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        for (Map.Entry<String, Column> e : columns.entrySet()) {
            Column c = e.getValue();
            Map<String, Object> cm = new LinkedHashMap<>();
            cm.put("min", toJsonValue(c.min));
            cm.put("max", toJsonValue(c.max));
            cm.put("nulls", c.nulls);
            if (c.unknown) {
                cm.put("unknown", true);
            }
            m.put(e.getKey(), cm);
        }
        return m;
    }

    private static Object toJsonValue(Comparable<?> v) {
        if (v == null) {
            return null;
        }
        if (v instanceof UTF8String) {
            return v.toString();
        }
        BigDecimal d = (BigDecimal) v;
        if (d.scale() <= 0) {
            try {
                return d.longValueExact();
            } catch (ArithmeticException e) {
                return d;
            }
        }
        return d.doubleValue();
    }

    /** Parses a {@code stats} object; {@code source} names the file in errors. */
    public static FileStats fromJson(Map<String, Object> m, String source) {
        FileStats s = new FileStats();
        for (Map.Entry<String, Object> e : m.entrySet()) {
            if (!(e.getValue() instanceof Map)) {
                throw new SfcLayerException.CorruptLayer("files entry " + source + ": stats of '" + e.getKey()
                    + "' is not an object");
            }
            @SuppressWarnings("unchecked")
            Map<String, Object> cm = (Map<String, Object>) e.getValue();
            Column c = new Column();
            c.min = fromJsonValue(cm.get("min"));
            c.max = fromJsonValue(cm.get("max"));
            Object nulls = cm.get("nulls");
            c.nulls = nulls instanceof Number ? ((Number) nulls).longValue() : 0;
            c.unknown = Boolean.TRUE.equals(cm.get("unknown")) || (c.min == null) != (c.max == null)
                || (c.min != null && c.min.getClass() != c.max.getClass());
            if (c.unknown) {
                c.min = null;
                c.max = null;
            }
            s.columns.put(e.getKey(), c);
        }
        return s;
    }

    private static Comparable<?> fromJsonValue(Object v) {
        if (v == null) {
            return null;
        }
        if (v instanceof String) {
            return UTF8String.fromBytes(((String) v).getBytes(StandardCharsets.UTF_8));
        }
        if (v instanceof BigDecimal) {
            return (BigDecimal) v;
        }
        if (v instanceof Double || v instanceof Float) {
            double d = ((Number) v).doubleValue();
            return Double.isFinite(d) ? new BigDecimal(d) : null;
        }
        if (v instanceof Number) {
            return v instanceof java.math.BigInteger ? new BigDecimal((java.math.BigInteger) v)
                : BigDecimal.valueOf(((Number) v).longValue());
        }
        return null;
    }

    /** Builds the statistics of groups as they are written: keys and the tracked value columns. */
    public static final class Collector {
        private final TileCursor cursor;
        private final boolean spaceTime;
        private final String[] names;
        private final int[] targets;
        private final Object[] values;

        public Collector(TileSchema schema) {
            this.cursor = new TileCursor(schema);
            this.spaceTime = schema.spaceTime();
            StructField[] fields = schema.valueSchema().fields();
            this.targets = new int[fields.length];
            java.util.List<String> tracked = new java.util.ArrayList<>();
            for (int j = 0; j < fields.length; j++) {
                if (tracked(fields[j].dataType())) {
                    targets[j] = tracked.size();
                    tracked.add(fields[j].name());
                } else {
                    targets[j] = -1;
                }
            }
            this.names = tracked.toArray(new String[0]);
            this.values = new Object[names.length];
        }

        /** Adds every record of an uncompressed group to {@code into}. */
        public void addGroup(byte[] group, int off, int len, FileStats into) {
            cursor.reset(group, off, len);
            Column col = into.columnFor("col");
            Column row = into.columnFor("row");
            Column time = spaceTime ? into.columnFor("time") : null;
            Column[] cols = new Column[names.length];
            for (int i = 0; i < names.length; i++) {
                cols[i] = into.columnFor(names[i]);
            }
            // keys as longs, ranked once per group (a BigDecimal per key and record cost a write ~3%)
            long cMin = Long.MAX_VALUE, cMax = Long.MIN_VALUE, rMin = Long.MAX_VALUE, rMax = Long.MIN_VALUE;
            long tMin = Long.MAX_VALUE, tMax = Long.MIN_VALUE;
            boolean any = false;
            while (cursor.next()) {
                any = true;
                cMin = Math.min(cMin, cursor.col());
                cMax = Math.max(cMax, cursor.col());
                rMin = Math.min(rMin, cursor.row());
                rMax = Math.max(rMax, cursor.row());
                if (time != null) {
                    tMin = Math.min(tMin, cursor.timeMicros());
                    tMax = Math.max(tMax, cursor.timeMicros());
                }
                if (names.length > 0) {
                    cursor.readValues(values, targets);
                    for (int i = 0; i < names.length; i++) {
                        Comparable<?> r = rank(values[i]);
                        if (r == UNRANKABLE) {
                            cols[i].markUnknown();
                        } else {
                            cols[i].add(r);
                        }
                    }
                }
            }
            if (any) {
                col.add(BigDecimal.valueOf(cMin));
                col.add(BigDecimal.valueOf(cMax));
                row.add(BigDecimal.valueOf(rMin));
                row.add(BigDecimal.valueOf(rMax));
                if (time != null) {
                    time.add(BigDecimal.valueOf(tMin));
                    time.add(BigDecimal.valueOf(tMax));
                }
            }
        }
    }
}
