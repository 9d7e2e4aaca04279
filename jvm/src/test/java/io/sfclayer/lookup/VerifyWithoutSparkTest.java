package io.sfclayer.lookup;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sfclayer.layer.Layer;
import io.sfclayer.layer.LayerVerifier;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

import java.io.IOException;
import java.io.RandomAccessFile;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

/**
 * {@code sfclayer verify}'s checks run without a SparkSession (issue 26: the core is Spark-free; the
 * Spark job, {@code io.sfclayer.spark.VerifyJob}, only spreads the same per-file checks).
 */
public class VerifyWithoutSparkTest {
    @Rule
    public final TemporaryFolder tmp = new TemporaryFolder();

    @Test
    public void anIntactLayerVerifiesCleanAndAFlippedByteIsReported() throws IOException {
        Configuration conf = new Configuration();
        String path = tmp.newFolder("layer").getAbsolutePath();
        TestLayers.write(conf, new Path(path), 32, 4096);
        int files = Layer.open(conf, path).listing().size();
        assertTrue("the test needs several files", files >= 2);

        JsonNode clean = new ObjectMapper().readTree(LayerVerifier.run(conf, path, null));
        assertEquals(clean.toString(), 0, clean.get("problems").size());
        assertEquals(files, clean.get("filesChecked").asInt());
        assertEquals(32 * 32, clean.get("tilesChecked").asLong());
        assertEquals(0, clean.get("damagedRecords").asLong());

        Path data = new Path(Layer.open(conf, path).listing().path(0), "data");
        try (RandomAccessFile f = new RandomAccessFile(data.toUri().getPath(), "rw")) {
            long at = f.length() - 20; // inside the last record
            f.seek(at);
            int b = f.read();
            f.seek(at);
            f.write(b ^ 0xff);
        }
        JsonNode damaged = new ObjectMapper().readTree(LayerVerifier.run(conf, path, null));
        assertEquals(damaged.toString(), 1, damaged.get("files").size());
        assertTrue(damaged.toString(), damaged.get("damagedRecords").asLong() >= 1);
    }

    @Test
    public void aFormat6LayerVerifiesThroughItsManifestsAndADamagedOneIsReported() throws IOException {
        Configuration conf = new Configuration();
        conf.setInt(io.sfclayer.format.ManifestTree.INLINE_FILES, 0);
        conf.setInt(io.sfclayer.format.ManifestTree.LEAF_FILES, 2);
        conf.setInt(io.sfclayer.format.ManifestTree.FANOUT, 2);
        String path = tmp.newFolder("layer6").getAbsolutePath();
        TestLayers.write(conf, new Path(path), 32, 4096);
        Layer layer = Layer.open(conf, path);
        assertEquals(6, layer.metadata().formatVersion);
        int files = layer.listing().size();
        JsonNode clean = new ObjectMapper().readTree(LayerVerifier.run(conf, path, null));
        assertEquals(clean.toString(), 0, clean.get("problems").size());
        assertEquals(files, clean.get("filesChecked").asInt());
        assertEquals(32 * 32, clean.get("tilesChecked").asLong());

        String name = layer.metadata().manifests.get(0).path;
        java.io.File manifest = new java.io.File(path, "_sfclayer/manifests/" + name);
        try (RandomAccessFile f = new RandomAccessFile(manifest, "rw")) {
            f.seek(20);
            int b = f.read();
            f.seek(20);
            f.write(b ^ 0x01);
        }
        io.sfclayer.format.Manifest.forgetCached();
        JsonNode damaged = new ObjectMapper().readTree(LayerVerifier.run(conf, path, null));
        assertEquals(damaged.toString(), 1, damaged.get("problems").size());
        assertTrue(damaged.toString(), damaged.get("problems").get(0).asText().contains(name));
    }
}
