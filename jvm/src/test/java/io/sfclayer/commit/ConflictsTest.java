package io.sfclayer.commit;

import io.sfclayer.SfcLayerException;
import io.sfclayer.format.DataFile;
import io.sfclayer.format.LayerMetadata;
import org.junit.Test;

import java.util.List;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

/** The commit rules: which concurrent versions a write may rebase over, and what a rebase keeps. */
public class ConflictsTest {
    private static DataFile file(String dir, long first, long last) {
        return new DataFile(dir, "part-r-00000-" + first, first, last, 1, 1, 100);
    }

    private static LayerMetadata version(long v, String op, List<long[]> changed, List<String> removed) {
        LayerMetadata md = new LayerMetadata();
        md.version = v;
        md.operation = op;
        md.readVersion = v - 1;
        md.changedRanges = changed;
        md.removedFiles = removed;
        md.createdAt = "2026-01-01T00:00:00Z";
        return md;
    }

    @Test
    public void disjointChangesRebase() {
        // version 1 holds d/..-0 (0..63) and d/..-192 (192..255); this append rewrote the first, the
        // concurrent version 2 the second: this write rebases onto version 2 and keeps both rewrites
        LayerMetadata mine = version(2, "append", List.of(new long[] {0, 63}), List.of("d/part-r-00000-0"));
        mine.writeId = "w";
        mine.dataDir = "data-w";
        LayerMetadata theirs = full(version(2, "append", List.of(new long[] {192, 255}),
            List.of("d/part-r-00000-192")));
        theirs.setFiles(List.of(file("d", 0, 63), file("t", 192, 255)));
        Conflicts.check("L", mine, List.of(theirs));
        LayerMetadata r = Conflicts.rebase(mine, List.of(file("data-w", 0, 63)), theirs);
        assertEquals(List.of("data-w/part-r-00000-0", "t/part-r-00000-192"),
            r.files.stream().map(DataFile::id).collect(java.util.stream.Collectors.toList()));
        assertEquals("w", r.writeId);
        assertEquals("data-w", r.dataDir);
        assertEquals(1, r.readVersion);
        assertEquals(List.of("d/part-r-00000-0"), r.removedFiles);
        assertEquals(2, r.fileCount);
        assertEquals(2, r.recordCount);
    }

    @Test
    public void aRestoreConflictsWithEverything() {
        // a restore reverts every change since the version it restores, listing none of them: a write
        // that read before it must not rebase over it, and it must not publish over a newer version
        LayerMetadata restore = version(3, "restore", List.of(), List.of());
        LayerMetadata append = version(2, "append", List.of(new long[] {500, 600}), List.of());
        SfcLayerException e = assertThrows(SfcLayerException.ConcurrentUpdate.class,
            () -> Conflicts.check("L", append, List.of(restore)));
        assertTrue(e.getMessage(), e.getMessage().contains("version 3 (restore"));
        e = assertThrows(SfcLayerException.ConcurrentUpdate.class,
            () -> Conflicts.check("L", restore, List.of(version(4, "append", List.of(new long[] {500, 600}),
                List.of()))));
        assertTrue(e.getMessage(), e.getMessage().contains("restore conflicts with every concurrent change"));
    }

    private static LayerMetadata full(LayerMetadata md) {
        md.keyIndex = io.sfclayer.curve.KeyIndex.z(new io.sfclayer.curve.KeyBounds(0, 0, 15, 15));
        md.valueSchemaJson = "{\"type\":\"struct\",\"fields\":[]}";
        md.tileSchemaJson = "{\"type\":\"record\",\"name\":\"Tile\",\"fields\":[]}";
        md.writeId = "n";
        md.dataDir = "data-n";
        md.blockSize = 1 << 20;
        md.indexInterval = 4;
        return md;
    }

    @Test
    public void overlappingRangesSameFilesAndOverwritesConflict() {
        LayerMetadata mine = version(2, "append", List.of(new long[] {0, 63}), List.of("d/part-r-00000-0"));
        SfcLayerException e = assertThrows(SfcLayerException.ConcurrentUpdate.class, () -> Conflicts.check("L", mine,
            List.of(version(2, "delete", List.of(new long[] {60, 70}), List.of()))));
        assertTrue(e.getMessage(), e.getMessage().contains("[60, 70]") && e.getMessage().contains("version 2 (delete"));
        e = assertThrows(SfcLayerException.ConcurrentUpdate.class, () -> Conflicts.check("L", mine,
            List.of(version(2, "compact", List.of(), List.of("d/part-r-00000-0")))));
        assertTrue(e.getMessage(), e.getMessage().contains("d/part-r-00000-0"));
        assertThrows(SfcLayerException.ConcurrentUpdate.class, () -> Conflicts.check("L", mine,
            List.of(version(2, "overwrite", List.of(), List.of()))));
        LayerMetadata overwrite = version(2, "overwrite", List.of(), List.of());
        assertThrows(SfcLayerException.ConcurrentUpdate.class, () -> Conflicts.check("L", overwrite,
            List.of(version(2, "append", List.of(new long[] {500, 600}), List.of()))));
    }

    @Test
    public void rebaseKeepsTheNewestFilesAndFieldsAndAddsMine() {
        LayerMetadata newest = new LayerMetadata();
        newest.keyIndex = io.sfclayer.curve.KeyIndex.z(new io.sfclayer.curve.KeyBounds(0, 0, 15, 15));
        newest.valueSchemaJson = "{\"type\":\"struct\",\"fields\":[]}";
        newest.tileSchemaJson = "{\"type\":\"record\",\"name\":\"Tile\",\"fields\":[]}";
        newest.createdAt = "2026-01-01T00:00:00Z";
        newest.writeId = "n";
        newest.dataDir = "data-n";
        newest.blockSize = 1 << 20;
        newest.indexInterval = 4;
        newest.version = 3;
        newest.extras.put("raster", java.util.Map.of("bands", 3));
        newest.setFiles(List.of(file("a", 0, 63), file("b", 192, 255)));
        LayerMetadata mine = version(2, "append", List.of(new long[] {0, 63}), List.of("a/part-r-00000-0"));
        mine.writeId = "w";
        mine.dataDir = "data-w";
        LayerMetadata r = Conflicts.rebase(mine, List.of(file("c", 0, 70)), newest);
        assertEquals(List.of("c/part-r-00000-0", "b/part-r-00000-192"),
            r.files.stream().map(DataFile::id).collect(java.util.stream.Collectors.toList()));
        assertEquals("append", r.operation);
        assertEquals(java.util.Map.of("bands", 3), r.extras.get("raster"));
        assertEquals(2, r.fileCount);
        // the rebuilt document round-trips, extras included
        LayerMetadata back = LayerMetadata.fromJsonBytes(r.toJsonBytes(), "test");
        assertEquals(r.extras, back.extras);
        assertEquals(2, back.files.size());
    }
}
