package io.sfclayer.spark;

import io.sfclayer.SfcLayerException;
import org.apache.spark.sql.SparkSession;

import java.io.Serializable;
import java.util.Locale;

/**
 * The read option {@code onCorrupt} = {@code fail} | {@code skip}: what a scan does with damaged
 * records and unreadable files. Without the option, Spark's own switches decide, so users keep the
 * ones they know: {@code spark.sql.files.ignoreCorruptFiles} for damage, and
 * {@code spark.sql.files.ignoreMissingFiles} for a listed data file that is gone.
 */
final class OnCorrupt implements Serializable {
    private static final long serialVersionUID = 1L;
    static final String IGNORE_CORRUPT = "spark.sql.files.ignoreCorruptFiles";
    static final String IGNORE_MISSING = "spark.sql.files.ignoreMissingFiles";

    final boolean skipCorrupt;
    final boolean skipMissing;

    private OnCorrupt(boolean skipCorrupt, boolean skipMissing) {
        this.skipCorrupt = skipCorrupt;
        this.skipMissing = skipMissing;
    }

    static OnCorrupt parse(String value) {
        if (value == null) {
            SparkSession spark = SparkSession.active();
            return new OnCorrupt(flag(spark, IGNORE_CORRUPT), flag(spark, IGNORE_MISSING));
        }
        switch (value.trim().toLowerCase(Locale.ROOT)) {
            case "fail": return new OnCorrupt(false, false);
            case "skip": return new OnCorrupt(true, true);
            default:
                throw new SfcLayerException.InvalidArgument("option onCorrupt: '" + value
                    + "' must be fail (a damaged record fails the read) or skip (damaged records are left out, counted"
                    + " and logged)");
        }
    }

    private static boolean flag(SparkSession spark, String key) {
        return Boolean.parseBoolean(spark.conf().get(key, "false").trim());
    }

    boolean any() {
        return skipCorrupt || skipMissing;
    }
}
