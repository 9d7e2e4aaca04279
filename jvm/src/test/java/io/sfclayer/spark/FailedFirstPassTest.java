package io.sfclayer.spark;

import io.sfclayer.commit.VersionLog;
import io.sfclayer.format.LayerMetadata;
import org.apache.hadoop.fs.Path;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerJobStart;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

import java.io.File;
import java.io.IOException;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

/**
 * A copy-on-write append whose first job fails in a task (issue 35's "everything before the publish
 * decision discards"): the first pass that measures the new records for auto's delta rule, or the job
 * that collects a small append to the driver. Spark reports it as a SparkException, which Java sees as
 * checked and which the append's cleanup did not catch: the write's {@code data-<writeId>} directory
 * and its {@code _pending} marker stayed until vacuum's 24 h retention. Now the layer is exactly as
 * before: the same entries on disk, the same newest document, the same tiles.
 */
public class FailedFirstPassTest {
    private static SparkSession spark;
    /** The descriptions of the jobs started, in order (which job failed). */
    private static final List<String> JOBS = new CopyOnWriteArrayList<>();

    @Rule
    public TemporaryFolder tmp = new TemporaryFolder();

    @BeforeClass
    public static void start() {
        spark = SparkSession.builder().master("local[2]").appName("failed-first-pass")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .getOrCreate();
        spark.udf().register("failing_at_5", (org.apache.spark.sql.api.java.UDF1<Long, Long>) id -> {
            if (id == 5) {
                throw new IllegalStateException("injected task failure");
            }
            return id + 7;
        }, org.apache.spark.sql.types.DataTypes.LongType);
        spark.sparkContext().addSparkListener(new SparkListener() {
            @Override
            public void onJobStart(SparkListenerJobStart start) {
                JOBS.add(String.valueOf(start.properties().getProperty("spark.job.description")));
            }
        });
    }

    @AfterClass
    public static void stop() {
        spark.stop();
    }

    @Test
    public void aTaskFailureInTheFirstPassLeavesNothing() throws IOException {
        // smallAppendBytes=0: the shuffled path, whose first pass measures the records (the base is far
        // larger than Spark's estimate of the input, so auto needs their ranges to choose)
        failingAppend("0", "the new keys' index ranges");
    }

    @Test
    public void aTaskFailureCollectingASmallAppendLeavesNothing() throws IOException {
        failingAppend("1m", "small: collected");
    }

    private void failingAppend(String smallAppendBytes, String failingJob) throws IOException {
        File dir = tmp.newFolder("layer");
        String path = dir.getAbsolutePath();
        spark.range(1024).selectExpr("int(id % 32) AS col", "int(id DIV 32) AS row", "id AS v").write()
            .format(SfcLayerSource.class.getName()).mode("overwrite").option("bounds", "0,0,31,31").save(path);
        LayerMetadata before = new VersionLog(spark.sparkContext().hadoopConfiguration(), new Path(path)).current();
        Set<String> entries = entries(dir);
        long fingerprint = fingerprint(path);

        // one row of the input fails its task (a UDF throwing: the job aborts with a checked SparkException;
        // raise_error's SparkRuntimeException would reach the driver unchecked), in the first job computing it
        Dataset<Row> input = spark.range(16).selectExpr("int(id) AS col", "0 AS row", "failing_at_5(id) AS v");
        JOBS.clear();
        try {
            input.write().format(SfcLayerSource.class.getName()).mode("append").option("bounds", "0,0,31,31")
                .option("smallAppendBytes", smallAppendBytes).save(path);
            fail("the append succeeded although a task of its input failed");
        } catch (Exception e) {
            assertTrue("a SparkException, not a RuntimeException: " + e, e instanceof org.apache.spark.SparkException);
            assertTrue("the task's failure: " + e, String.valueOf(e).contains("injected task failure"));
        }
        assertTrue("the failed job is the append's first (" + failingJob + "): " + JOBS,
            !JOBS.isEmpty() && JOBS.get(JOBS.size() - 1).contains(failingJob));
        assertEquals("no data-<writeId> directory nor _pending marker is left", entries, entries(dir));
        LayerMetadata after = new VersionLog(spark.sparkContext().hadoopConfiguration(), new Path(path)).current();
        assertEquals(before.version, after.version);
        assertEquals(before.digest, after.digest);
        assertEquals(fingerprint, fingerprint(path));
    }

    /** Every file and directory under {@code dir}, relative. */
    private static Set<String> entries(File dir) throws IOException {
        Set<String> out = new TreeSet<>();
        try (java.util.stream.Stream<java.nio.file.Path> s = java.nio.file.Files.walk(dir.toPath())) {
            s.forEach(p -> out.add(dir.toPath().relativize(p).toString()));
        }
        return out;
    }

    private static long fingerprint(String path) {
        Row r = spark.read().format(SfcLayerSource.class.getName()).load(path).selectExpr("count(*)", "sum(v)").first();
        return r.getLong(0) * 1_000_000_000L + r.getLong(1);
    }
}
