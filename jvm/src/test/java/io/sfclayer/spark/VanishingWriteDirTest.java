package io.sfclayer.spark;

import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.Progressable;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

import java.io.IOException;

import static org.junit.Assert.assertEquals;

/**
 * A vacuum with no retention removes a write's data directory, new and still empty, between its creation
 * and its pending marker's (the race model, issue 35: a delete failed with Hadoop's "chmod: cannot access
 * data-...: No such file or directory"). The write must create both again and commit.
 */
public class VanishingWriteDirTest {
    private static SparkSession spark;

    @Rule
    public TemporaryFolder tmp = new TemporaryFolder();

    /** Local files where the first creation of a pending marker finds its directory removed meanwhile. */
    public static class VanishingFs extends LocalFileSystem {
        static volatile boolean armed;

        @Override
        public FSDataOutputStream create(Path f, FsPermission permission, boolean overwrite, int bufferSize,
                                         short replication, long blockSize, Progressable progress) throws IOException {
            if (armed && f.getName().equals(io.sfclayer.layer.Vacuum.PENDING)) {
                armed = false;
                mkdirs(f.getParent());
                delete(f.getParent(), false); // the vacuum's removal of an empty directory without a marker
                throw new IOException("chmod: cannot access '" + f.getParent() + "': No such file or directory");
            }
            return super.create(f, permission, overwrite, bufferSize, replication, blockSize, progress);
        }
    }

    @BeforeClass
    public static void start() {
        spark = SparkSession.builder().master("local[2]").appName("vanishing-write-dir")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.hadoop.fs.file.impl", VanishingFs.class.getName())
            .config("spark.hadoop.fs.file.impl.disable.cache", "true")
            .getOrCreate();
    }

    @AfterClass
    public static void stop() {
        VanishingFs.armed = false;
        spark.stop();
    }

    @Test
    public void aWriteWhoseNewDirectoryIsVacuumedBeforeItsMarkerCommits() throws IOException {
        String path = "file://" + tmp.newFolder("layer").getAbsolutePath();
        spark.range(16).selectExpr("int(id % 4) AS col", "int(id DIV 4) AS row", "id AS v").write()
            .format(SfcLayerSource.class.getName()).mode("overwrite").option("bounds", "0,0,15,15").save(path);
        VanishingFs.armed = true;
        spark.range(4).selectExpr("int(id) + 8 AS col", "0 AS row", "id + 100 AS v").write()
            .format(SfcLayerSource.class.getName()).mode("append").option("bounds", "0,0,15,15").save(path);
        assertEquals(false, VanishingFs.armed); // the fault happened
        Row r = spark.read().format(SfcLayerSource.class.getName()).load(path).selectExpr("count(*)", "sum(v)").first();
        assertEquals(20L, r.getLong(0));
        assertEquals(120L + 406L, r.getLong(1));
    }
}
