package io.sfclayer.spark;

import io.sfclayer.layer.LayerVerifier;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;

import java.io.IOException;

/**
 * {@code sfclayer verify} as one distributed Spark job: {@link LayerVerifier}'s per-file checks, a task
 * per group of files, on the session's executors.
 */
public final class VerifyJob {
    private VerifyJob() {
    }

    /** The JSON report of version {@code version} (≤ 0: the newest) of the layer at {@code path} (for py4j). */
    public static String report(SparkSession spark, String path, long version) throws IOException {
        Configuration conf = spark.sparkContext().hadoopConfiguration();
        JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
        SerializableConf sconf = new SerializableConf(conf);
        return LayerVerifier.run(conf, path, version > 0 ? Long.valueOf(version) : null, (description, checks) -> {
            String previous = jsc.getLocalProperty("spark.job.description");
            jsc.setJobDescription(description);
            try {
                int slices = Math.min(checks.size(), Math.max(1, 4 * jsc.defaultParallelism()));
                return jsc.parallelize(checks, slices).map(c -> c.run(sconf.get())).collect();
            } finally {
                jsc.setJobDescription(previous);
            }
        });
    }
}
