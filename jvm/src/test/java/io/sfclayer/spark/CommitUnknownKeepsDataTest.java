package io.sfclayer.spark;

import io.sfclayer.SfcLayerException;
import io.sfclayer.commit.FaultyCommitFs;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.After;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

/**
 * Issue 27: a write whose commit has an unknown outcome never deletes its data (the version may
 * reference it). An object store whose conditional creates keep failing (FaultyCommitFs, scheme
 * objfs) makes the outcome of an append unknown; its data directory must stay.
 */
public class CommitUnknownKeepsDataTest {
    @Rule
    public TemporaryFolder tmp = new TemporaryFolder();

    @After
    public void tearDown() {
        FaultyCommitFs.reset();
    }

    private static Dataset<Row> tiles(SparkSession spark, int mult) {
        return spark.range(16).selectExpr("int(id % 4) AS col", "int(id DIV 4) AS row", "id * " + mult + " AS v");
    }

    private static List<File> dataDirs(File layer) {
        File[] found = layer.listFiles((d, n) -> n.startsWith("data-"));
        return found == null ? List.of() : Arrays.asList(found);
    }

    private static long partFiles(File dir) throws IOException {
        try (Stream<java.nio.file.Path> s = Files.walk(dir.toPath())) {
            return s.filter(p -> p.getFileName().toString().startsWith("part-")).count();
        }
    }

    @Test
    public void anAppendWhoseCommitIsUnknownKeepsItsData() throws IOException {
        SparkSession spark = SparkSession.builder().master("local[1]").appName("commit-unknown")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.hadoop.fs.objfs.impl", FaultyCommitFs.ObjectStore.class.getName())
            .config("spark.hadoop.fs.objfs.impl.disable.cache", "true")
            .getOrCreate();
        try {
            File layer = new File(tmp.getRoot(), "layer");
            String path = "objfs://faulty" + layer.getAbsolutePath();
            tiles(spark, 1).write().format(SfcLayerSource.class.getName()).option("bounds", "0,0,3,3")
                .option("partitions", "2").save(path);
            List<File> before = dataDirs(layer);
            FaultyCommitFs.inject(FaultyCommitFs.Fault.CLOSE_BEFORE_ALWAYS);
            SfcLayerException.CommitStateUnknown e = assertThrows(SfcLayerException.CommitStateUnknown.class,
                () -> tiles(spark, 3).write().format(SfcLayerSource.class.getName()).mode("append").save(path));
            assertTrue(e.getMessage(), e.getMessage().contains("v00000002.json"));
            List<File> added = dataDirs(layer).stream().filter(d -> !before.contains(d)).collect(Collectors.toList());
            assertEquals("the append's data directory is kept", 1, added.size());
            assertTrue("with its files", partFiles(added.get(0)) > 0);
        } finally {
            spark.stop();
        }
    }
}
