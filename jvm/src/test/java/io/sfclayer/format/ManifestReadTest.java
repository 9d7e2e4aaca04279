package io.sfclayer.format;

import io.sfclayer.SfcLayerException;
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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

/**
 * Reading manifests (docs/FORMAT.md, section 10): a leaf's entries are parsed whole only when asked
 * for, yet read back exactly as written; every read is checked against its checksum and its
 * reference, so damaged or swapped bytes are never returned as files.
 */
public class ManifestReadTest {
    private static final com.fasterxml.jackson.core.type.TypeReference<Map<String, Object>> ENTRY =
        new com.fasterxml.jackson.core.type.TypeReference<Map<String, Object>>() { };

    @Rule
    public TemporaryFolder tmp = new TemporaryFolder();

    private static FileStats stats(long i) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("col", Map.of("min", i, "max", i + 3, "nulls", 0));
        m.put("dtype", Map.of("min", "uint8", "max", "uint8", "nulls", 0));
        m.put("v", Map.of("min", -1.5, "max", 2.5e10, "nulls", i));
        return FileStats.fromJson(m, "test");
    }

    private static List<DataFile> files(int n) {
        List<DataFile> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(new DataFile("d" + (i % 3), "part-r-0000" + (i % 10) + "-" + (100L * i), 100L * i, 100L * i + 50,
                10 + i, 2 + i, 1000 + i, i % 2 == 0 ? (long) i : null, stats(i), i % 5 == 0 ? 77L + i : null));
        }
        return out;
    }

    private Manifest.Store store() throws IOException {
        return new Manifest.Store(new Configuration(), new Path(tmp.getRoot().getPath(), "L"));
    }

    private java.nio.file.Path fileOf(Manifest.Store store, ManifestRef ref) {
        return new java.io.File(store.dir().toUri().getPath(), ref.path).toPath();
    }

    @Test
    public void aLeafReadsBackAsWrittenAndParsesOnlyTheFilesAskedFor() throws IOException {
        Manifest.Store store = store();
        List<DataFile> written = files(32);
        ManifestRef ref = store.write("w1", new Manifest(0, written, List.of()));
        Manifest.forgetCached();
        Manifest leaf = store.read(ref);
        assertEquals(0, leaf.parsedFiles());
        ManifestFiles mf = new ManifestFiles(store, List.of(ref));
        List<DataFile> met = new ArrayList<>();
        mf.meeting(List.of(new IndexRange(1_230, 1_240)), (pos, f, to) -> met.add(f));
        assertEquals(1, met.size());
        assertEquals(written.get(12).toJson().toString(), met.get(0).toJson().toString());
        assertEquals(1, leaf.parsedFiles()); // a plan of one file parsed one entry's statistics
        assertEquals(12, mf.position(1_299));
        assertEquals(1, leaf.parsedFiles());
        for (int i = 0; i < written.size(); i++) {
            assertEquals(written.get(i).toJson().toString(), leaf.files.get(i).toJson().toString());
        }
        assertEquals(32, leaf.parsedFiles());
        assertEquals(ref.toJson().toString(), leaf.refAs(ref.path, ref.checksum).toJson().toString());
    }

    @Test
    public void innerManifestsReadBackAsWritten() throws IOException {
        Manifest.Store store = store();
        List<ManifestRef> leaves = new ArrayList<>();
        List<DataFile> all = files(40);
        for (int i = 0; i < 40; i += 4) {
            leaves.add(store.write("w1", new Manifest(0, all.subList(i, i + 4), List.of())));
        }
        ManifestRef top = store.write("w1", new Manifest(1, List.of(), leaves));
        Manifest.forgetCached();
        Manifest node = store.read(top);
        assertEquals(leaves.size(), node.children.size());
        for (int i = 0; i < leaves.size(); i++) {
            assertEquals(leaves.get(i).toJson().toString(), node.children.get(i).toJson().toString());
        }
        ManifestFiles mf = new ManifestFiles(store, List.of(top));
        List<String> read = new ArrayList<>();
        for (DataFile f : mf.all()) {
            read.add(f.toJson().toString());
        }
        List<String> expected = new ArrayList<>();
        for (DataFile f : all) {
            expected.add(f.toJson().toString());
        }
        assertEquals(expected, read);
    }

    @Test
    public void damagedTruncatedOrSwappedManifestsAreCorruptLayers() throws IOException {
        Manifest.Store store = store();
        ManifestRef ref = store.write("w1", new Manifest(0, files(8), List.of()));
        ManifestRef other = store.write("w1", new Manifest(0, files(9), List.of()));
        java.nio.file.Path p = fileOf(store, ref);
        byte[] good = Files.readAllBytes(p);
        // one byte inside a statistics object no plan would parse: the checksum still finds it
        String text = new String(good, StandardCharsets.UTF_8);
        int at = text.indexOf("uint8", text.lastIndexOf("\"stats\""));
        byte[] flipped = good.clone();
        flipped[at] = 'U';
        Files.write(p, flipped);
        Manifest.forgetCached();
        SfcLayerException e = assertThrows(SfcLayerException.CorruptLayer.class, () -> store.read(ref));
        assertTrue(e.getMessage(), e.getMessage().contains(ref.path) && e.getMessage().contains("checksum mismatch"));
        Files.write(p, java.util.Arrays.copyOf(good, good.length - 3));
        e = assertThrows(SfcLayerException.CorruptLayer.class, () -> store.read(ref));
        assertTrue(e.getMessage(), e.getMessage().contains(ref.path) && e.getMessage().contains("trailer"));
        Files.write(p, Files.readAllBytes(fileOf(store, other)));
        e = assertThrows(SfcLayerException.CorruptLayer.class, () -> store.read(ref));
        assertTrue(e.getMessage(), e.getMessage().contains("is not the one its version lists"));
        Files.write(p, good);
        assertEquals(8, store.read(ref).size());
    }

    /** A manifest of {@code m} sealed with a valid checksum, and a reference to it with these totals. */
    private ManifestRef craft(Manifest.Store store, Map<String, Object> m, String name, int level, long first,
                              long last, long count, long records, long indexes, long bytes) throws IOException {
        byte[] sealed = LayerMetadata.sealedCompact(m);
        java.nio.file.Path p = new java.io.File(store.dir().toUri().getPath(), name).toPath();
        Files.createDirectories(p.getParent());
        Files.write(p, sealed);
        return new ManifestRef(name, level, first, last, count, records, indexes, bytes, LayerMetadata.trailer(sealed));
    }

    @Test
    public void aWriterBugInsideAnEntryIsACorruptLayerWhenTheEntryIsRead() throws IOException {
        Manifest.Store store = store();
        List<Object> entries = new ArrayList<>();
        for (DataFile f : files(3)) {
            entries.add(f.toJson());
        }
        @SuppressWarnings("unchecked")
        Map<String, Object> bad = (Map<String, Object>) entries.get(1);
        bad.put("stats", 5); // checks (the bytes are as written) but is no statistics object
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("format", Manifest.FORMAT);
        m.put("formatVersion", 6);
        m.put("level", 0);
        m.put("files", entries);
        ManifestRef ref = craft(store, m, "m-bad-00000000.json", 0, 0, 250, 3, 10 + 11 + 12, 2 + 3 + 4,
            1000 + 1001 + 1002);
        Manifest leaf = store.read(ref);
        assertEquals(200, leaf.files.get(2).firstIndex);
        SfcLayerException e = assertThrows(SfcLayerException.CorruptLayer.class, () -> leaf.files.get(1));
        assertTrue(e.getMessage(), e.getMessage().contains("stats"));
        // a missing field is found when the manifest is read, naming the entry
        bad.put("stats", stats(1).toJson());
        bad.remove("records");
        ManifestRef ref2 = craft(store, m, "m-bad-00000001.json", 0, 0, 250, 3, 10 + 12, 2 + 3 + 4, 1000 + 1001 + 1002);
        e = assertThrows(SfcLayerException.CorruptLayer.class, () -> store.read(ref2));
        assertTrue(e.getMessage(), e.getMessage().contains("records"));
        // totals that differ from the reference's
        bad.put("records", 99);
        ManifestRef ref3 = craft(store, m, "m-bad-00000002.json", 0, 0, 250, 3, 10 + 11 + 12, 2 + 3 + 4,
            1000 + 1001 + 1002);
        e = assertThrows(SfcLayerException.CorruptLayer.class, () -> store.read(ref3));
        assertTrue(e.getMessage(), e.getMessage().contains("its reference says"));
    }

    @Test
    public void badReferencesInAnInnerManifestAreCorruptLayers() throws IOException {
        Manifest.Store store = store();
        ManifestRef leaf = store.write("w1", new Manifest(0, files(4), List.of()));
        for (String[] change : new String[][] {{"path", "../../escape.json"}, {"checksum", "ABCDEF12"},
                {"fileCount", "x"}, {"level", "-1"}}) {
            Map<String, Object> entry = leaf.toJson();
            Object v = change[1].matches("-?[0-9]+") ? (Object) Long.parseLong(change[1]) : change[1];
            entry.put(change[0], v);
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("format", Manifest.FORMAT);
            m.put("formatVersion", 6);
            m.put("level", 1);
            m.put("manifests", List.of(entry));
            ManifestRef top = craft(store, m, "m-inner-" + change[0] + ".json", 1, leaf.firstIndex, leaf.lastIndex,
                leaf.fileCount, leaf.records, leaf.indexes, leaf.dataBytes);
            SfcLayerException e = assertThrows(change[0], SfcLayerException.CorruptLayer.class, () -> store.read(top));
            assertTrue(e.getMessage(), e.getMessage().contains("m-inner-" + change[0]));
        }
    }

    /** {@code text} (ending in a zeroed checksum trailer) with its trailer set: a validly checksummed document. */
    private static byte[] seal(String text) {
        byte[] b = text.getBytes(StandardCharsets.UTF_8);
        int at = LayerMetadata.trailerAt(b);
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        crc.update(b, 0, b.length);
        byte[] hex = RecordFrame.hex((int) crc.getValue()).getBytes(StandardCharsets.US_ASCII);
        System.arraycopy(hex, 0, b, at, 8);
        return b;
    }

    private List<String> readBack(Manifest.Store store, String name, byte[] sealed, List<DataFile> files)
            throws IOException {
        java.nio.file.Path p = new java.io.File(store.dir().toUri().getPath(), name).toPath();
        Files.createDirectories(p.getParent());
        Files.write(p, sealed);
        Manifest m = new Manifest(0, files, List.of());
        ManifestRef ref = m.refAs(name, LayerMetadata.trailer(sealed));
        Manifest.forgetCached();
        Manifest read = store.read(ref);
        List<String> out = new ArrayList<>();
        for (DataFile f : read.files) {
            out.add(f.toJson().toString());
        }
        return out;
    }

    @Test
    public void leavesWrittenOtherwiseReadTheSame() throws IOException {
        Manifest.Store store = store();
        List<DataFile> files = files(5);
        List<String> expected = new ArrayList<>();
        for (DataFile f : files) {
            expected.add(f.toJson().toString());
        }
        String compact = new String(new Manifest(0, files, List.of()).toJsonBytes("w1"), StandardCharsets.UTF_8)
            .replaceFirst("\"checksum\":\"[0-9a-f]{8}\"", "\"checksum\":\"00000000\"");
        assertTrue(ManifestLeafScan.of(seal(compact)) != null); // as written: the first pass reads it
        // pretty printed
        Map<String, Object> tree = LayerMetadata.json().readValue(compact, ENTRY);
        String pretty = LayerMetadata.json().writerWithDefaultPrettyPrinter().writeValueAsString(tree) + "\n";
        assertTrue(ManifestLeafScan.of(seal(pretty)) != null);
        assertEquals(expected, readBack(store, "m-pretty.json", seal(pretty), files));
        // an escaped key, an escaped quote and brackets inside a skipped string
        String escaped = compact.replaceFirst("\"name\"", "\"n\\\\u0061me\"")
            .replace("\"uint8\"", "\"ui\\\"}]nt8\"");
        assertEquals(null, ManifestLeafScan.of(seal(escaped))); // Jackson's parse instead
        List<String> withQuotes = new ArrayList<>();
        for (String e : expected) {
            withQuotes.add(e.replace("uint8", "ui\"}]nt8"));
        }
        assertEquals(withQuotes, readBack(store, "m-escaped.json", seal(escaped), files));
        String quoted = compact.replace("\"uint8\"", "\"ui\\\"}]nt8\"");
        assertTrue(ManifestLeafScan.of(seal(quoted)) != null);
        assertEquals(withQuotes, readBack(store, "m-quoted.json", seal(quoted), files));
        // numbers as floats: refused by both passes
        String floats = compact.replaceFirst("\"records\":10,", "\"records\":10.0,");
        assertEquals(null, ManifestLeafScan.of(seal(floats)));
        assertThrows(SfcLayerException.CorruptLayer.class, () -> readBack(store, "m-floats.json", seal(floats), files));
    }

    @Test
    public void theTrailerIsFoundAsTheDocumentsRuleFindsIt() {
        String[] texts = {
            "{\"a\":1,\"checksum\":\"0123abcd\"}",
            "{\"a\":\"é\",\"checksum\":\"0123abcd\"}",
            "{\n  \"a\" : 1,\n  \"checksum\" : \"0123abcd\"\n}\n",
            "{\"a\":1,\"checksum\" \t:\r\n\"0123abcd\"  }  \n\n",
            "{\"a\":1,\"checksum\":\"0123ABCD\"}",
            "{\"a\":1,\"checksum\":\"0123abc\"}",
            "{\"a\":1,\"checksum\":\"0123abcd\"",
            "{\"a\":1,\"checksum\":\"0123abcd\"}x",
            "{\"a\":1,\"checksun\":\"0123abcd\"}",
            "{\"a\":1,checksum\":\"0123abcd\"}",
            "\"checksum\":\"0123abcd\"}",
            "\"0123abcd\"}",
            "}",
            "",
        };
        // the rule as FORMAT.md states it, a regular expression over the text
        java.util.regex.Pattern rule = java.util.regex.Pattern.compile(
            "\"checksum\"\\s*:\\s*\"([0-9a-f]{8})\"\\s*}\\s*$");
        for (String t : texts) {
            byte[] b = t.getBytes(StandardCharsets.UTF_8);
            java.util.regex.Matcher m = rule.matcher(t);
            String expected = m.find() ? m.group(1) : null;
            int at = LayerMetadata.trailerAt(b);
            assertEquals(t, expected, at < 0 ? null : new String(b, at, 8, StandardCharsets.US_ASCII));
            assertEquals(t, expected, LayerMetadata.trailer(b));
        }
    }
}
