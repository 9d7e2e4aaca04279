package io.sfclayer.format;

import io.sfclayer.SfcLayerException;
import io.sfclayer.commit.VersionLog;
import io.sfclayer.curve.IndexRange;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.TreeMap;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

/**
 * Format 6 manifests (docs/FORMAT.md, section 10) through the commit log: versions of many files list
 * manifests; look-ups and planning read only the manifests on their way; an update writes only the
 * manifests on the paths it changed; a damaged manifest is named, never read as files.
 */
public class ManifestTreeTest {
    @Rule
    public TemporaryFolder tmp = new TemporaryFolder();

    private static DataFile file(String dir, long first, long last) {
        return new DataFile(dir, "part-r-00000-" + first, first, last, 2, 1, 100, 7L, null);
    }

    private Configuration conf(int inline, int leaf, int fanout) {
        Configuration c = new Configuration();
        c.setInt(ManifestTree.INLINE_FILES, inline);
        c.setInt(ManifestTree.LEAF_FILES, leaf);
        c.setInt(ManifestTree.FANOUT, fanout);
        return c;
    }

    private static LayerMetadata shape(String op, long readVersion, String writeId) {
        LayerMetadata md = new LayerMetadata();
        md.keyIndex = io.sfclayer.curve.KeyIndex.z(new io.sfclayer.curve.KeyBounds(0, 0, 1 << 14, 1 << 14));
        md.valueSchemaJson = "{\"type\":\"struct\",\"fields\":[]}";
        md.tileSchemaJson = "{\"type\":\"record\",\"name\":\"Tile\",\"fields\":[]}";
        md.blockSize = 1 << 20;
        md.indexInterval = 4;
        md.operation = op;
        md.readVersion = readVersion;
        md.writeId = writeId;
        md.dataDir = "data-" + writeId;
        md.createdAt = "2026-01-01T00:00:00Z";
        return md;
    }

    /** Files [10 i, 10 i + 5] for i in 0..n-1. */
    private static List<DataFile> files(int n) {
        List<DataFile> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(file("d", 10L * i, 10L * i + 5));
        }
        return out;
    }

    /** Commits {@code base} minus {@code removed} plus {@code added} as an append on {@code base}. */
    private static LayerMetadata update(VersionLog log, LayerMetadata base, List<DataFile> removed, List<DataFile> added,
                                        String writeId) throws IOException {
        LayerMetadata md = base.copy();
        md.operation = "append";
        md.readVersion = base.version;
        md.writeId = writeId;
        md.dataDir = "data-" + writeId;
        md.removedFiles = new ArrayList<>();
        for (DataFile f : removed) {
            md.removedFiles.add(f.id());
        }
        if (md.manifests == null) {
            List<DataFile> all = new ArrayList<>(base.files);
            all.removeIf(f -> md.removedFiles.contains(f.id()));
            all.addAll(added);
            md.setFiles(all);
        }
        return log.commit(md, added);
    }

    @Test
    public void smallLayersStayInlineAndLargeOnesListManifests() throws IOException {
        Configuration c = conf(16, 4, 3);
        VersionLog log = new VersionLog(c, new Path(tmp.getRoot().getPath(), "L"));
        LayerMetadata md = shape("write", -1, "w1");
        md.compression = "zstd-raster";
        md.setFiles(files(16));
        LayerMetadata v1 = log.commit(md, md.files);
        assertNull(v1.manifests);
        assertEquals(4, log.read(1).formatVersion); // zstd-raster, inline
        // past the inline limit the next update upgrades the layer to format 6, keeping its compression
        LayerMetadata v2 = update(log, log.read(1), List.of(), List.of(file("e", 1000, 1001)), "w2");
        LayerMetadata read = log.read(v2.version);
        assertEquals(ManifestRef.MANIFEST_FORMAT_VERSION, read.formatVersion);
        assertEquals("zstd-raster", read.compression);
        assertTrue(read.files.isEmpty());
        assertEquals(17, read.fileCount);
        assertEquals(34, read.recordCount);
        String text = new String(log.read(v2.version).toJsonBytes(), StandardCharsets.UTF_8);
        assertTrue(text, text.contains("\"manifests\"") && !text.contains("\"files\""));
        List<DataFile> all = new ManifestFiles(new Manifest.Store(c, log.layerPath()), read.manifests).all();
        List<DataFile> expected = files(16);
        expected.add(file("e", 1000, 1001));
        assertEquals(ids(expected), ids(all));
    }

    @Test
    public void aFormat2LayerStaysInlineUntilAnUpdateInFormat3UpgradesIt() throws IOException {
        Configuration c = conf(16, 4, 3);
        VersionLog log = new VersionLog(c, new Path(tmp.getRoot().getPath(), "L"));
        LayerMetadata md = shape("write", -1, "w1");
        md.formatVersion = 2; // files without checksums, as an old writer (or formatVersion=2) wrote them
        List<DataFile> old = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            old.add(new DataFile("d", "part-r-00000-" + 10L * i, 10L * i, 10L * i + 5, 2, 1, 100));
        }
        md.setFiles(old);
        log.commit(md, old);
        LayerMetadata v1 = log.read(1);
        assertEquals(2, v1.formatVersion);
        assertNull(v1.manifests); // a format 2 document cannot list manifests
        LayerMetadata up = v1.copy();
        up.formatVersion = LayerMetadata.FORMAT_VERSION;
        log.commit(withUpdate(up, v1, "w2"), List.of(file("e", 1000, 1001)));
        LayerMetadata v2 = log.read(2);
        assertEquals(ManifestRef.MANIFEST_FORMAT_VERSION, v2.formatVersion);
        List<DataFile> all = new ManifestFiles(new Manifest.Store(c, log.layerPath()), v2.manifests).all();
        assertEquals(21, all.size());
        assertNull(all.get(0).indexCrc32c); // kept files are still read as the format that wrote them
        assertEquals(0, DataFileEntry.of(all.get(0), v2.formatVersion, "L").formatVersion);
    }

    private static LayerMetadata withUpdate(LayerMetadata md, LayerMetadata base, String writeId) {
        md.operation = "append";
        md.readVersion = base.version;
        md.writeId = writeId;
        md.dataDir = "data-" + writeId;
        md.removedFiles = new ArrayList<>();
        List<DataFile> all = new ArrayList<>(base.files);
        all.add(file("e", 1000, 1001));
        md.setFiles(all);
        return md;
    }

    @Test
    public void lookUpsAndPlanningReadOnlyTheManifestsOnTheirWay() throws IOException {
        Configuration c = conf(0, 8, 4);
        VersionLog log = new VersionLog(c, new Path(tmp.getRoot().getPath(), "L"));
        LayerMetadata md = shape("write", -1, "w1");
        md.setFiles(files(2000)); // 250 leaves, 63 + 16 + 4 inner manifests: 4 levels under the document
        log.commit(md, md.files);
        Manifest.forgetCached();
        LayerMetadata v1 = log.read(1);
        assertEquals(4, v1.manifests.size());
        ManifestFiles mf = new ManifestFiles(new Manifest.Store(c, log.layerPath()), v1.manifests);
        int p = mf.position(12_345);
        assertEquals(1234, p);
        assertEquals(12_340, mf.at(p).firstIndex);
        assertEquals(4, mf.store().reads); // one manifest per level
        assertEquals(-1, mf.position(-5));
        assertNull(mf.starting(12_341));
        Manifest.forgetCached();
        ManifestFiles cold = new ManifestFiles(new Manifest.Store(c, log.layerPath()), v1.manifests);
        List<Long> met = new ArrayList<>();
        cold.meeting(List.of(new IndexRange(15_003, 15_021)), (pos, f, to) -> met.add(f.firstIndex));
        assertEquals(List.of(15_000L, 15_010L, 15_020L), met);
        assertTrue("read " + cold.store().reads, cold.store().reads <= 8);
        // the file covering a gap up to the next file's first index is selected too (the layer's rule)
        List<Long> gap = new ArrayList<>();
        cold.meeting(List.of(new IndexRange(19_997, 19_998)), (pos, f, to) -> gap.add(to));
        assertEquals(List.of(Long.MAX_VALUE), gap);
    }

    @Test
    public void updatesWriteOnlyTheChangedPathsAndMatchAModel() throws IOException {
        Configuration c = conf(0, 3, 3);
        VersionLog log = new VersionLog(c, new Path(tmp.getRoot().getPath(), "L"));
        LayerMetadata md = shape("write", -1, "w0");
        md.setFiles(files(200));
        log.commit(md, md.files);
        TreeMap<Long, DataFile> model = new TreeMap<>();
        for (DataFile f : files(200)) {
            model.put(f.firstIndex, f);
        }
        Random rng = new Random(7);
        List<List<String>> versions = new ArrayList<>();
        versions.add(ids(new ArrayList<>(model.values())));
        for (int step = 1; step <= 30; step++) {
            LayerMetadata base = log.read(step);
            List<DataFile> removed = new ArrayList<>();
            List<DataFile> added = new ArrayList<>();
            for (int k = rng.nextInt(4); k > 0 && !model.isEmpty(); k--) {
                Long key = new ArrayList<>(model.keySet()).get(rng.nextInt(model.size()));
                removed.add(model.remove(key));
            }
            for (int k = rng.nextInt(4); k > 0; k--) {
                long first = 10L * rng.nextInt(400) + 6 + rng.nextInt(3);
                if (model.floorKey(first) != null && model.floorEntry(first).getValue().lastIndex >= first
                        || model.ceilingKey(first) != null && model.ceilingKey(first) <= first + 1) {
                    continue;
                }
                DataFile f = file("s" + step, first, first + 1);
                model.put(first, f);
                added.add(f);
            }
            if (removed.isEmpty() && added.isEmpty()) {
                added.add(file("s" + step, 10_000L + step * 10, 10_000L + step * 10 + 1));
                model.put(added.get(0).firstIndex, added.get(0));
            }
            update(log, base, removed, added, "w" + step);
            LayerMetadata v = log.read(step + 1);
            assertEquals(model.size(), v.fileCount);
            versions.add(ids(new ArrayList<>(model.values())));
        }
        // every version still reads as it was (manifests are shared, never changed)
        Manifest.forgetCached();
        for (int v = 1; v <= versions.size(); v++) {
            LayerMetadata md2 = log.read(v);
            assertEquals("version " + v, versions.get(v - 1),
                ids(new ManifestFiles(new Manifest.Store(c, log.layerPath()), md2.manifests).all()));
        }
    }

    @Test
    public void aOneFileAppendWritesOneManifestPerLevel() throws IOException {
        Configuration c = conf(0, 32, 128);
        VersionLog log = new VersionLog(c, new Path(tmp.getRoot().getPath(), "L"));
        LayerMetadata md = shape("write", -1, "w0");
        md.setFiles(files(20_000)); // 625 leaves, 5 inner manifests, a document of 5 references
        log.commit(md, md.files);
        long before = manifestBytes(log);
        int manifestsBefore = manifestCount(log);
        DataFile old = file("d", 70_000, 70_005);
        update(log, log.read(1), List.of(old), List.of(file("a", 70_000, 70_004)), "w1");
        assertEquals(2, manifestCount(log) - manifestsBefore); // the leaf and its parent
        long written = manifestBytes(log) - before
            + Files.size(new java.io.File(tmp.getRoot(), "L/_sfclayer/v00000002.json").toPath());
        assertTrue("wrote " + written + " bytes of metadata", written <= 64 << 10);
    }

    @Test
    public void deletesMergeSmallManifestsAndLowerTheTree() throws IOException {
        Configuration c = conf(0, 8, 4);
        VersionLog log = new VersionLog(c, new Path(tmp.getRoot().getPath(), "L"));
        LayerMetadata md = shape("write", -1, "w0");
        md.setFiles(files(400)); // 50 leaves, 13 + 4 inner manifests
        log.commit(md, md.files);
        List<DataFile> left = files(400);
        Random rng = new Random(3);
        for (int step = 1; left.size() > 6; step++) {
            List<DataFile> removed = new ArrayList<>();
            for (int k = 0; k < 60 && left.size() > 6; k++) {
                removed.add(left.remove(rng.nextInt(left.size())));
            }
            update(log, log.read(step), removed, List.of(), "d" + step);
        }
        LayerMetadata last = log.read(log.versions().get(log.versions().size() - 1));
        ManifestFiles mf = new ManifestFiles(new Manifest.Store(c, log.layerPath()), last.manifests);
        assertEquals(ids(left), ids(mf.all()));
        List<ManifestRef> all = mf.manifests(new ArrayList<>());
        assertTrue("6 files in " + all.size() + " manifests: " + all, all.size() <= 6); // 67 at the start
        assertTrue("top level " + last.manifests, last.manifests.size() > 1 || last.manifests.get(0).level == 0);
        assertTrue("depth " + last.manifests.get(0).level, last.manifests.get(0).level <= 1);
    }

    @Test
    public void evenSplitsOfMillionsOfFilesDoNotOverflow() {
        // 10^6 files in 31,250 leaves: p * n passes 2^31 (the bench's 10^6-entry build failed so)
        int n = 1_000_000, parts = 31_250;
        assertEquals(0, ManifestTree.cut(0, n, parts));
        assertEquals(68_704, ManifestTree.cut(2_147, n, parts));
        assertEquals(n, ManifestTree.cut(parts, n, parts));
        for (int p = 0; p < parts; p++) {
            assertEquals(32, ManifestTree.cut(p + 1, n, parts) - ManifestTree.cut(p, n, parts));
        }
    }

    @Test
    public void aDamagedOrMissingManifestIsNamed() throws IOException {
        Configuration c = conf(0, 4, 4);
        VersionLog log = new VersionLog(c, new Path(tmp.getRoot().getPath(), "L"));
        LayerMetadata md = shape("write", -1, "w0");
        md.setFiles(files(40));
        log.commit(md, md.files);
        LayerMetadata v1 = log.read(1);
        ManifestRef leafParent = v1.manifests.get(0);
        java.nio.file.Path p = new java.io.File(tmp.getRoot(), "L/_sfclayer/manifests/" + leafParent.path).toPath();
        byte[] bytes = Files.readAllBytes(p);
        String text = new String(bytes, StandardCharsets.UTF_8).replaceFirst("\"level\":1", "\"level\":0");
        Files.write(p, text.getBytes(StandardCharsets.UTF_8));
        Files.deleteIfExists(p.resolveSibling("." + leafParent.path + ".crc")); // the manifest's own checksum must find it
        Manifest.forgetCached();
        ManifestFiles mf = new ManifestFiles(new Manifest.Store(c, log.layerPath()), v1.manifests);
        SfcLayerException e = assertThrows(SfcLayerException.CorruptLayer.class, () -> mf.position(5));
        assertTrue(e.getMessage(), e.getMessage().contains(leafParent.path) && e.getMessage().contains("damaged"));
        Files.delete(p);
        e = assertThrows(SfcLayerException.CorruptLayer.class, () -> mf.all());
        assertTrue(e.getMessage(), e.getMessage().contains(leafParent.path) && e.getMessage().contains("missing"));
    }

    private static List<String> ids(List<DataFile> files) {
        List<String> out = new ArrayList<>();
        for (DataFile f : files) {
            out.add(f.id());
        }
        return out;
    }

    private long manifestBytes(VersionLog log) throws IOException {
        long n = 0;
        for (java.io.File f : new java.io.File(tmp.getRoot(), "L/_sfclayer/manifests").listFiles()) {
            n += f.length();
        }
        return n;
    }

    private int manifestCount(VersionLog log) {
        return new java.io.File(tmp.getRoot(), "L/_sfclayer/manifests").listFiles((d, n) -> n.endsWith(".json")).length;
    }
}
