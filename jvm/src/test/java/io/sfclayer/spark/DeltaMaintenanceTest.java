package io.sfclayer.spark;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.sfclayer.SfcLayerException;
import io.sfclayer.commit.VersionLog;
import io.sfclayer.format.DeltaFile;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.layer.Layer;
import io.sfclayer.layer.LayerVerifier;
import io.sfclayer.layer.Vacuum;
import io.sfclayer.lookup.ValueReader;
import io.sfclayer.testing.DeltaVersions;
import org.apache.hadoop.fs.Path;
import org.junit.Test;

import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.util.List;
import java.util.Map;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

/**
 * verify, damage, vacuum and restore of format 7 versions (delta files, docs/FORMAT.md section 11):
 * deltas are checked as base files, named when damaged, and kept as the files of the versions that
 * list them ({@link DeltaLayersBase} builds the layers).
 */
public class DeltaMaintenanceTest extends DeltaLayersBase {
    @Test
    public void verifyChecksTheDeltasAndFindsThemClean() throws IOException {
        LayerMetadata md = Layer.open(conf(), layer).metadata();
        @SuppressWarnings("unchecked")
        Map<String, Object> report = new ObjectMapper().readValue(LayerVerifier.run(conf(), layer, null), Map.class);
        assertEquals(report.toString(), List.of(), report.get("problems"));
        assertEquals(report.toString(), List.of(), report.get("files"));
        assertEquals((int) md.fileCount + md.deltas.size(), report.get("filesChecked"));
        assertEquals(md.deltas.size(), report.get("deltasChecked"));
    }

    /** A copy of the spatial layer, for tests that damage or vacuum it. */
    @Test
    public void aDamagedDeltaFailsReadsNamingIt() throws IOException {
        String path = copy("damaged");
        LayerMetadata md = Layer.open(conf(), path).metadata();
        DeltaFile newest = md.deltas.get(md.deltas.size() - 1);
        File data = new File(new File(new File(path, newest.file.dir), newest.file.name), "data");
        try (RandomAccessFile f = new RandomAccessFile(data, "rw")) {
            long at = f.length() - 6; // in the last record's group
            f.seek(at);
            int b = f.read();
            f.seek(at);
            f.write(b ^ 0x5a);
        }
        long[] key = md.keyIndex.decode(newest.file.lastIndex);
        try (ValueReader r = ValueReader.open(conf(), path, 16)) {
            SfcLayerException.CorruptLayer e = assertThrows(SfcLayerException.CorruptLayer.class,
                () -> r.getOrNull((int) key[0], (int) key[1], 0));
            assertTrue(e.getMessage(), e.getMessage().contains(newest.file.name) && e.getMessage().contains(newest.file.dir));
        }
        Exception e = assertThrows(Exception.class, () -> read(path, md.version).collectAsList());
        assertTrue(messages(e), messages(e).contains("CorruptLayer") || messages(e).contains("SFCLAYER_CORRUPT"));
        assertTrue(messages(e), messages(e).contains(newest.file.dir + "/" + newest.file.name));
        @SuppressWarnings("unchecked")
        Map<String, Object> report = new ObjectMapper().readValue(LayerVerifier.run(conf(), path, null), Map.class);
        @SuppressWarnings("unchecked")
        List<Map<String, Object>> files = (List<Map<String, Object>>) report.get("files");
        assertEquals(report.toString(), 1, files.size());
        assertEquals(newest.file.name, files.get(0).get("name"));
        assertEquals(newest.file.dir, files.get(0).get("dir"));
        assertEquals(Boolean.TRUE, files.get(0).get("delta"));
        assertEquals(md.version, ((Number) files.get(0).get("addedIn")).longValue());
        // the version before it never lists that file: it reads whole
        assertEquals(MODELS.get(2), collect(read(path, 3), false));
    }

    @Test
    public void vacuumKeepsTheDeltasTheRetainedVersionsList() throws IOException {
        String path = copy("vacuumed");
        Map<String, Object> out = Vacuum.run(conf(), path, 0, false, false);
        assertEquals(out.toString(), List.of(4L), new VersionLog(conf(), new Path(path)).versions());
        assertEquals(MODELS.get(3), collect(read(path, 4), false));
        try (ValueReader r = ValueReader.open(conf(), path, 16)) {
            assertEquals(MODELS.get(3).size(), r.count(r.boxQuery("")));
        }
        @SuppressWarnings("unchecked")
        Map<String, Object> report = new ObjectMapper().readValue(LayerVerifier.run(conf(), path, null), Map.class);
        assertEquals(report.toString(), List.of(), report.get("problems"));
        assertEquals(report.toString(), List.of(), report.get("files"));
    }

    @Test
    public void restoreKeepsTheRestoredVersionsDeltas() throws IOException {
        String path = copy("restored");
        LayerMetadata v3 = Layer.open(conf(), path, 3, -1).metadata();
        LayerMetadata restored = io.sfclayer.layer.LayerRestore.restore(conf(), path, 3, -1);
        assertEquals(5, restored.version);
        LayerMetadata md = Layer.open(conf(), path).metadata();
        assertEquals(v3.deltas.toString(), md.deltas.toString()); // the same files, each with its addedIn
        assertEquals(MODELS.get(2), collect(read(path, 5), false));
        // vacuum keeps what version 5 lists (version 3's deltas), and removes version 4's own delta
        Vacuum.run(conf(), path, 0, false, false);
        assertEquals(List.of(5L), new VersionLog(conf(), new Path(path)).versions());
        DeltaFile dropped = Layer.open(conf(), layer).metadata().deltas.stream().filter(d -> d.addedIn == 4)
            .findFirst().orElseThrow();
        assertFalse(new File(new File(path, dropped.file.dir), dropped.file.name).exists());
        assertEquals(MODELS.get(2), collect(read(path, 5), false));
        try (ValueReader r = ValueReader.open(conf(), path, 16)) {
            assertEquals(MODELS.get(2).size(), r.count(r.boxQuery("")));
        }
        // a restore of a version whose delta is gone is refused, changing nothing
        String gone = copy("restoreGone");
        DeltaFile first = v3.deltas.get(0);
        java.nio.file.Path dataFile = new File(new File(new File(gone, first.file.dir), first.file.name), "data").toPath();
        java.nio.file.Files.delete(dataFile);
        SfcLayerException.LayerNotFound e = assertThrows(SfcLayerException.LayerNotFound.class,
            () -> io.sfclayer.layer.LayerRestore.restore(conf(), gone, 3, -1));
        assertTrue(e.getMessage(), e.getMessage().contains(first.file.name));
        assertEquals(List.of(1L, 2L, 3L, 4L), new VersionLog(conf(), new Path(gone)).versions());
    }

    /** A version vacuumed from the middle of the log (an older one kept) is refused as vacuumed, not as unknown. */
    @Test
    public void aRestoreOfAVersionRemovedFromTheMiddleSaysItWasVacuumed() throws IOException {
        String path = copy("middleGone");
        new VersionLog(conf(), new Path(path)).deleteVersion(2); // what vacuum does with a version it drops
        SfcLayerException.LayerNotFound e = assertThrows(SfcLayerException.LayerNotFound.class,
            () -> io.sfclayer.layer.LayerRestore.restore(conf(), path, 2, -1));
        assertTrue(e.getMessage(), e.getMessage().contains("version 2") && e.getMessage().contains("removed by vacuum"));
        SfcLayerException.LayerNotFound none = assertThrows(SfcLayerException.LayerNotFound.class,
            () -> io.sfclayer.layer.LayerRestore.restore(conf(), path, 9, -1));
        assertTrue(none.getMessage(), none.getMessage().contains("there is no such version"));
        assertEquals(List.of(1L, 3L, 4L), new VersionLog(conf(), new Path(path)).versions());
    }

    @Test
    public void deltaVersionsRefuseALayerOfAnotherKind() throws IOException {
        assertNotNull(st);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
            () -> DeltaVersions.add(conf(), layer, st));
        assertTrue(e.getMessage(), e.getMessage().contains("key index"));
        assertFalse(new VersionLog(conf(), new Path(layer)).versions().contains(5L));
    }
}
