package io.sfclayer.lookup;

import io.sfclayer.bench.SyntheticLayer;
import io.sfclayer.commit.VersionLog;
import io.sfclayer.curve.IndexRange;
import io.sfclayer.curve.QueryBox;
import io.sfclayer.format.DataFileListing;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.format.Manifest;
import io.sfclayer.format.ManifestRef;
import io.sfclayer.layer.Layer;
import io.sfclayer.layer.QueryPlan;
import io.sfclayer.layer.Vacuum;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

import java.io.File;
import java.util.List;
import java.util.Map;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

/**
 * A layer of 10^5 file entries (synthetic but for the real one-tile files it touches, {@link
 * SyntheticLayer}): opened for a look-up, a 1-tile box planned, a tile appended and the layer
 * vacuumed, each reading and writing only the manifests on its way (docs/FORMAT.md, section 10).
 */
public class ManifestScaleTest {
    @Rule
    public TemporaryFolder tmp = new TemporaryFolder();

    @Test
    public void aLayerOf100000FilesOpensPlansAppendsAndVacuums() throws Exception {
        Configuration conf = new Configuration();
        Path path = new Path(tmp.getRoot().getPath(), "big");
        SyntheticLayer layer = SyntheticLayer.build(conf, path, 100_000, 4, false); // no statistics: quicker
        Manifest.forgetCached();
        LayerMetadata v1 = new VersionLog(conf, path).current();
        assertEquals(ManifestRef.MANIFEST_FORMAT_VERSION, v1.formatVersion);
        assertEquals(100_004, v1.fileCount);
        assertTrue(new File(tmp.getRoot(), "big/_sfclayer/v00000001.json").length() < 64 << 10);

        int[] key = layer.keys.get(2);
        try (ValueReader r = ValueReader.open(conf, path.toString(), 16)) {
            assertEquals(SyntheticLayer.value(key[0], key[1]), ValueReaderTest.valueOf(r.get(key[0], key[1])));
        }
        // planning a 1-tile box selects the tile's file, reading one manifest per level
        Manifest.forgetCached();
        Layer opened = Layer.open(conf, path.toString());
        List<IndexRange> ranges = QueryPlan.ranges(v1.keyIndex, List.of(QueryBox.of(key[0], key[1], key[0], key[1])), 0);
        List<DataFileListing.Selection> selected = opened.listing().select(ranges);
        assertEquals(1, selected.size());
        assertEquals(layer.realFiles.get(2).name, selected.get(0).name);
        assertTrue("read " + opened.manifests().store().reads, opened.manifests().store().reads <= 4);
        // a one-tile append writes a few small manifests and a small document
        String oldId = layer.realFiles.get(2).id();
        long before = dirBytes(new File(tmp.getRoot(), "big/_sfclayer/manifests"));
        LayerMetadata v2 = layer.appendTile(conf, 2, 77);
        long written = dirBytes(new File(tmp.getRoot(), "big/_sfclayer/manifests")) - before
            + new File(tmp.getRoot(), "big/_sfclayer/v00000002.json").length();
        assertTrue("wrote " + written, written <= 64 << 10);
        assertEquals(v1.fileCount, v2.fileCount);
        try (ValueReader r = ValueReader.open(conf, path.toString(), 16)) {
            assertEquals(77, ValueReaderTest.valueOf(r.get(key[0], key[1])));
        }
        try (ValueReader r = ValueReader.open(conf, path.toString(), 16, 1, -1)) {
            assertEquals(SyntheticLayer.value(key[0], key[1]), ValueReaderTest.valueOf(r.get(key[0], key[1])));
        }
        // vacuum: version 1, its replaced file and the manifests only it listed go; version 2 reads on
        int manifests = new File(tmp.getRoot(), "big/_sfclayer/manifests").list((d, n) -> n.endsWith(".json")).length;
        Map<String, Object> out = Vacuum.run(conf, path.toString(), 0, false, false);
        assertEquals(List.of(1L), out.get("versionsRemoved"));
        assertEquals(List.of(oldId), out.get("filesRemoved"));
        int left = new File(tmp.getRoot(), "big/_sfclayer/manifests").list((d, n) -> n.endsWith(".json")).length;
        assertTrue(manifests + " -> " + left, left < manifests && left > manifests - 8);
        Manifest.forgetCached();
        try (ValueReader r = ValueReader.open(conf, path.toString(), 16)) {
            assertEquals(77, ValueReaderTest.valueOf(r.get(key[0], key[1])));
            int[] other = layer.keys.get(3);
            assertEquals(SyntheticLayer.value(other[0], other[1]), ValueReaderTest.valueOf(r.get(other[0], other[1])));
        }
        assertFalse(Layer.open(conf, path.toString()).files().isEmpty());
    }

    private static long dirBytes(File dir) {
        long n = 0;
        for (File f : dir.listFiles((d, name) -> name.endsWith(".json"))) {
            n += f.length();
        }
        return n;
    }
}
