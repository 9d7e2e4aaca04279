package io.sfclayer.spark;

import io.sfclayer.lookup.LookupSessions;
import org.apache.spark.sql.SparkSession;

import java.io.IOException;
import java.util.Map;

/**
 * {@code sfclayer.open}'s one py4j call: a {@link LookupSessions} reader opened with the session's Hadoop
 * configuration, made as Spark's file sources make it ({@link HadoopConfs}), so run-time
 * {@code spark.hadoop.*} settings reach the file system. The look-up core itself knows no Spark.
 */
public final class SparkLookups {
    private SparkLookups() {
    }

    /** {@link LookupSessions#open} with {@code spark}'s Hadoop configuration; the same JSON answer. */
    public static String open(SparkSession spark, String path, int cacheSize, long cacheBytes, boolean indexInDriver,
                              long version, long asOfMillis) throws IOException {
        return LookupSessions.open(HadoopConfs.forOptions(spark, Map.of()), path, cacheSize, cacheBytes,
            indexInDriver, version, asOfMillis);
    }
}
