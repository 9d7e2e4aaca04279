package io.sfclayer.spark;

import io.sfclayer.format.DataFile;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.layer.Layer;
import org.apache.commons.io.FileUtils;
import org.apache.spark.sql.SaveMode;
import org.apache.spark.sql.SparkSession;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.ClassRule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

import java.io.File;
import java.util.List;
import java.util.Map;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

/**
 * A delete whose version lists a data file that is gone (lost, not vacuumed) fails naming the layer, the
 * file and its index span, and advises verify and repair of the layer. The delete's probe (which files
 * hold a tile it deletes) read each file with an entry guessed from its path, which took
 * {@code <layer>/<dataDir>} for the layer: the race model (issue 35, RacesTest seed 759317643) logged
 * "layer .../data-X: data file ... (SFC indexes 0..?) ... Run `sfclayer verify .../data-X`".
 */
public class DeleteOverAMissingFileTest {
    @ClassRule
    public static TemporaryFolder tmp = new TemporaryFolder();

    private static SparkSession spark;

    @BeforeClass
    public static void start() {
        spark = SparkSession.builder().master("local[2]").appName("delete-missing")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .getOrCreate();
    }

    @AfterClass
    public static void stop() {
        spark.stop();
    }

    @Test
    public void aDeleteOverALostFileNamesTheLayerTheFileAndItsSpan() throws Exception {
        String path = new File(tmp.getRoot(), "layer").getAbsolutePath();
        SfcLayerWrite.run(spark, spark.range(256).selectExpr("int(id % 16) AS col", "int(id DIV 16) AS row",
            "id AS v"), path, SaveMode.ErrorIfExists, Map.of("bounds", "0,0,15,15", "partitions", "2"));
        Layer layer = Layer.open(HadoopConfs.forOptions(spark, Map.of()), path);
        LayerMetadata md = layer.metadata();
        DataFile lost = md.files.get(0);
        FileUtils.deleteDirectory(new File(new File(path, lost.dir), lost.name));
        long[] key = md.keyIndex.decode(lost.firstIndex); // a tile of the lost file: the delete must probe it
        String box = key[0] + "," + key[1] + "," + key[0] + "," + key[1];

        Exception e = assertThrows(Exception.class, () -> SfcLayerCommands.deleteVersion(spark, path, box, null, null));
        String m = DeltaLayersBase.messages(e);
        String dataDir = lost.dir.split("/")[0];
        assertTrue(m, m.contains("SFCLAYER_CORRUPT_LAYER"));
        assertTrue(m, m.contains(lost.dir + "/" + lost.name + " (SFC indexes " + lost.firstIndex + ".." + lost.lastIndex
            + ") is unreadable: the listed data file is missing"));
        String root = layer.path().toString();
        assertTrue(m, m.contains("layer " + root + ": data file"));
        assertTrue(m, m.contains("`sfclayer verify " + root + "`"));
        assertFalse(m, m.contains(dataDir + ": data file") || m.contains(dataDir + "`"));
        assertEquals(List.of(md.version), new io.sfclayer.commit.VersionLog(HadoopConfs.forOptions(spark, Map.of()),
            layer.path()).versions()); // nothing published
    }
}
