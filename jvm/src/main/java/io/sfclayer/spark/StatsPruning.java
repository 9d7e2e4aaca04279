package io.sfclayer.spark;

import io.sfclayer.curve.QueryBox;
import io.sfclayer.format.FileStats;
import org.apache.spark.sql.catalyst.util.DateTimeUtils;
import org.apache.spark.sql.sources.And;
import org.apache.spark.sql.sources.EqualNullSafe;
import org.apache.spark.sql.sources.EqualTo;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.sources.GreaterThan;
import org.apache.spark.sql.sources.GreaterThanOrEqual;
import org.apache.spark.sql.sources.In;
import org.apache.spark.sql.sources.IsNotNull;
import org.apache.spark.sql.sources.IsNull;
import org.apache.spark.sql.sources.LessThan;
import org.apache.spark.sql.sources.LessThanOrEqual;
import org.apache.spark.sql.sources.Not;
import org.apache.spark.sql.sources.Or;
import org.apache.spark.unsafe.types.UTF8String;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;

/**
 * Decides from a file's statistics ({@link FileStats}) whether it can hold a row a query wants, on
 * the driver, before any file is opened (seed 003's data skipping). Conservative: anything it does not
 * understand (a column without statistics, a literal of another type, NOT of a comparison) might
 * match. Spark still evaluates every filter on the rows read, so this only removes whole files.
 */
final class StatsPruning {
    private StatsPruning() {
    }

    /** Whether a file with {@code stats} and {@code records} tiles might hold a row meeting every filter. */
    static boolean mightMatch(FileStats stats, long records, Filter[] filters, QueryBox[] boxes) {
        if (stats == null) {
            return true;
        }
        if (boxes != null && !boxesMeet(stats, boxes)) {
            return false;
        }
        for (Filter f : filters) {
            if (!might(stats, records, f)) {
                return false;
            }
        }
        return true;
    }

    /** Whether any query box meets the file's key ranges. */
    private static boolean boxesMeet(FileStats stats, QueryBox[] boxes) {
        long[] c = range(stats.column("col"));
        long[] r = range(stats.column("row"));
        long[] t = range(stats.column("time"));
        if (c == null || r == null) {
            return true;
        }
        for (QueryBox b : boxes) {
            if (b.colMax >= c[0] && b.colMin <= c[1] && b.rowMax >= r[0] && b.rowMin <= r[1]
                && (t == null || (b.timeMax >= t[0] && b.timeMin <= t[1]))) {
                return true;
            }
        }
        return false;
    }

    private static long[] range(FileStats.Column c) {
        if (c == null || c.min == null || !(c.min instanceof BigDecimal)) {
            return null;
        }
        try {
            return new long[] {((BigDecimal) c.min).longValueExact(), ((BigDecimal) c.max).longValueExact()};
        } catch (ArithmeticException e) {
            return null;
        }
    }

    private static boolean might(FileStats s, long records, Filter f) {
        if (f instanceof And) {
            return might(s, records, ((And) f).left()) && might(s, records, ((And) f).right());
        }
        if (f instanceof Or) {
            return might(s, records, ((Or) f).left()) || might(s, records, ((Or) f).right());
        }
        if (f instanceof Not && ((Not) f).child() instanceof IsNull) {
            return might(s, records, new IsNotNull(((IsNull) ((Not) f).child()).attribute()));
        }
        if (f instanceof IsNull) {
            FileStats.Column c = s.column(((IsNull) f).attribute());
            return c == null || c.nulls > 0;
        }
        if (f instanceof IsNotNull) {
            FileStats.Column c = s.column(((IsNotNull) f).attribute());
            return c == null || c.nulls < records;
        }
        if (f instanceof EqualTo) {
            return compare(s, records, ((EqualTo) f).attribute(), ((EqualTo) f).value(), 0, true);
        }
        if (f instanceof EqualNullSafe) {
            EqualNullSafe e = (EqualNullSafe) f;
            if (e.value() == null) {
                FileStats.Column c = s.column(e.attribute());
                return c == null || c.nulls > 0;
            }
            return compare(s, records, e.attribute(), e.value(), 0, true);
        }
        if (f instanceof GreaterThan) {
            return compare(s, records, ((GreaterThan) f).attribute(), ((GreaterThan) f).value(), 1, false);
        }
        if (f instanceof GreaterThanOrEqual) {
            return compare(s, records, ((GreaterThanOrEqual) f).attribute(), ((GreaterThanOrEqual) f).value(), 1, true);
        }
        if (f instanceof LessThan) {
            return compare(s, records, ((LessThan) f).attribute(), ((LessThan) f).value(), -1, false);
        }
        if (f instanceof LessThanOrEqual) {
            return compare(s, records, ((LessThanOrEqual) f).attribute(), ((LessThanOrEqual) f).value(), -1, true);
        }
        if (f instanceof In) {
            In in = (In) f;
            for (Object v : in.values()) {
                if (v != null && compare(s, records, in.attribute(), v, 0, true)) {
                    return true;
                }
            }
            // an IN list with no value the statistics admit, or only nulls (never true)
            return !known(s, in.attribute());
        }
        return true;
    }

    /** Whether statistics exist for {@code column} with a usable min/max or with every value null. */
    private static boolean known(FileStats s, String column) {
        FileStats.Column c = s.column(column);
        return c != null && !c.unknown;
    }

    /**
     * Whether some value v of the column can satisfy {@code v <op> literal}: sign 0 is equality, 1 is
     * greater than (or equal, with {@code orEqual}), -1 is less than.
     */
    @SuppressWarnings({"unchecked", "rawtypes"})
    private static boolean compare(FileStats s, long records, String column, Object literal, int sign,
                                   boolean orEqual) {
        FileStats.Column c = s.column(column);
        if (c == null || c.unknown) {
            return true;
        }
        if (literal == null) {
            return false; // a comparison with null is never true
        }
        if (c.min == null) {
            // statistics known and no min: every value is null (or the file is empty), no comparison holds
            return !(c.nulls >= records);
        }
        Comparable lit = normalise(literal);
        if (lit == null || lit.getClass() != c.min.getClass()) {
            return true;
        }
        int vsMin = lit.compareTo(c.min);
        int vsMax = lit.compareTo(c.max);
        if (sign == 0) {
            return vsMin >= 0 && vsMax <= 0;
        }
        if (sign > 0) {
            // some v > lit exists iff max > lit
            return orEqual ? vsMax <= 0 : vsMax < 0;
        }
        return orEqual ? vsMin >= 0 : vsMin > 0;
    }

    /** A filter literal in the statistics' comparable form, or null when it has none. */
    static Comparable<?> normalise(Object v) {
        if (v instanceof String) {
            return UTF8String.fromBytes(((String) v).getBytes(StandardCharsets.UTF_8));
        }
        if (v instanceof UTF8String) {
            return (UTF8String) v;
        }
        if (v instanceof Double || v instanceof Float) {
            double d = ((Number) v).doubleValue();
            return Double.isFinite(d) ? new BigDecimal(d) : null;
        }
        if (v instanceof BigDecimal) {
            return (BigDecimal) v;
        }
        if (v instanceof Byte || v instanceof Short || v instanceof Integer || v instanceof Long) {
            return BigDecimal.valueOf(((Number) v).longValue());
        }
        if (v instanceof java.sql.Date) {
            return BigDecimal.valueOf(DateTimeUtils.fromJavaDate((java.sql.Date) v));
        }
        if (v instanceof LocalDate) {
            return BigDecimal.valueOf(DateTimeUtils.localDateToDays((LocalDate) v));
        }
        if (v instanceof java.sql.Timestamp) {
            return BigDecimal.valueOf(DateTimeUtils.fromJavaTimestamp((java.sql.Timestamp) v));
        }
        if (v instanceof Instant) {
            return BigDecimal.valueOf(DateTimeUtils.instantToMicros((Instant) v));
        }
        if (v instanceof LocalDateTime) {
            return BigDecimal.valueOf(DateTimeUtils.localDateTimeToMicros((LocalDateTime) v));
        }
        return null;
    }
}
