package io.sfclayer.spark;

import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.SparkSession;

import scala.jdk.javaapi.CollectionConverters;

import java.util.HashMap;
import java.util.Map;

/**
 * The Hadoop configuration of a read, write or look-up, made as Spark's own file sources make it:
 * {@code sessionState().newHadoopConfWithOptions(options)}. So settings given at run time with
 * {@code spark.conf.set("spark.hadoop.fs....", ...)} and per-read or per-write Hadoop options
 * ({@code option("fs.defaultFS", ...)}, see {@link ReadOptions#isHadoopSetting}) reach the file system,
 * not only those the SparkContext started with.
 */
public final class HadoopConfs {
    private HadoopConfs() { }

    private static final String SPARK_HADOOP = "spark.hadoop.";

    /**
     * A new configuration for {@code options} (sfclayer's own options land in it too, harmlessly).
     * Session settings {@code spark.hadoop.X} set at run time count as {@code X} (Spark copies them
     * only when the SparkContext starts); per-operation options win over session settings.
     */
    public static Configuration forOptions(SparkSession spark, Map<String, String> options) {
        Map<String, String> merged = new HashMap<>();
        org.apache.spark.SparkConf startup = spark.sparkContext().getConf();
        for (Map.Entry<String, String> e : CollectionConverters.asJava(spark.sessionState().conf().getAllConfs())
                .entrySet()) {
            // only what changed since the SparkContext started: its own spark.hadoop.* settings are in
            // hadoopConfiguration() already, possibly changed there since (which must then win)
            if (e.getKey().startsWith(SPARK_HADOOP) && e.getValue() != null
                    && !e.getValue().equals(startup.get(e.getKey(), null))) {
                merged.put(e.getKey().substring(SPARK_HADOOP.length()), e.getValue());
            }
        }
        merged.putAll(options);
        return spark.sessionState().newHadoopConfWithOptions(
            scala.collection.immutable.Map.from(CollectionConverters.asScala(merged)));
    }

    /** For callers without a session at hand (e.g. the Python look-up client): the active one. */
    public static Configuration forOptions(Map<String, String> options) {
        return forOptions(SparkSession.active(), options);
    }
}
