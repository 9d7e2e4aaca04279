package io.sfclayer.geotrellis;

import io.sfclayer.SfcLayerException;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.hadoop.conf.Configuration;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

import java.io.File;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

/** The reader over MapFiles written with Hadoop's MapFile.Writer as GeoTrellis writes them (GtTestCatalog). */
public class GtReaderTest {
    @Rule
    public TemporaryFolder tmp = new TemporaryFolder();

    private static short[] cells(int col, int row) {
        short[] c = new short[16];
        for (int i = 0; i < 16; i++) c[i] = (short) (col * 1000 + row * 10 + i - 300);
        return c;
    }

    private static byte[] le(short[] c) {
        ByteBuffer b = ByteBuffer.allocate(2 * c.length).order(ByteOrder.LITTLE_ENDIAN);
        for (short s : c) b.putShort(s);
        return b.array();
    }

    private static String bounds(int c0, int r0, int c1, int r1, String t0, String t1) {
        return "{\"minKey\":{\"col\":" + c0 + ",\"row\":" + r0 + (t0 == null ? "" : ",\"instant\":" + t0) + "},"
            + "\"maxKey\":{\"col\":" + c1 + ",\"row\":" + r1 + (t1 == null ? "" : ",\"instant\":" + t1) + "}}";
    }

    /** A spatial layer over cols 2..9, rows 3..8 with every 7th key missing, 5 records per file. */
    private File spatial(String kind) throws Exception {
        File catalog = tmp.newFolder();
        String json = "{\"type\":\"" + kind + "\",\"properties\":{\"keyBounds\":" + bounds(2, 3, 9, 8, null, null)
            + (kind.equals("hilbert") ? ",\"xResolution\":3,\"yResolution\":3" : "") + "}}";
        GtKeyIndex index = GtKeyIndex.fromJson(new com.fasterxml.jackson.databind.ObjectMapper().readTree(json), false, "test");
        List<GtTestCatalog.Entry> entries = new ArrayList<>();
        int i = 0;
        for (int r = 3; r <= 8; r++) {
            for (int c = 2; c <= 9; c++) {
                if (i++ % 7 == 3) continue;
                entries.add(new GtTestCatalog.Entry(c, r, 0, GtTestCatalog.shortTile(4, 4, cells(c, r), -32768)));
            }
        }
        GtTestCatalog.write(catalog, "dem", 3, json, index, false, GtTestCatalog.TILE, "int16", entries, 5);
        return catalog;
    }

    private static boolean present(int col, int row) {
        int i = (row - 3) * 8 + (col - 2);
        return col >= 2 && col <= 9 && row >= 3 && row <= 8 && i % 7 != 3;
    }

    @Test
    public void everyTileReadsBackAndMissingKeysAreNull() throws Exception {
        for (String kind : List.of("zorder", "hilbert", "rowmajor")) {
            File catalog = spatial(kind);
            assertEquals(1, GtLayer.list(catalog.toURI().toString(), new Configuration()).size());
            GtLayer layer = GtLayer.open(catalog.toURI().toString(), "dem", 3, new Configuration());
            assertTrue(layer.dataPath, layer.dataPath.startsWith(catalog.toURI().toString().replaceAll("/$", "")));
            try (GtValueReader reader = new GtValueReader(layer, new Configuration(), 2)) {
                assertTrue(kind, reader.fileCount() > 3);
                for (int r = 0; r <= 10; r++) {
                    for (int c = 0; c <= 11; c++) {
                        GtTile t = reader.get(c, r, 0);
                        if (!present(c, r)) {
                            assertNull(kind + " " + c + "," + r, t);
                            continue;
                        }
                        assertArrayEquals(kind + " " + c + "," + r, le(cells(c, r)), t.pixels);
                        assertEquals("int16", t.dtype);
                        assertEquals(-32768.0, t.nodata, 0);
                        assertEquals(4, t.width);
                    }
                }
            }
        }
    }

    @Test
    public void boxesEqualABruteForceFilter() throws Exception {
        for (String kind : List.of("zorder", "hilbert", "rowmajor")) {
            File catalog = spatial(kind);
            GtLayer layer = GtLayer.open(catalog.toURI().toString(), "dem", 3, new Configuration());
            try (GtValueReader reader = new GtValueReader(layer, new Configuration(), 2)) {
                int[][] boxes = {{0, 0, 20, 20}, {3, 4, 5, 6}, {9, 8, 9, 8}, {4, 0, 4, 20}, {10, 10, 12, 12}};
                for (int[] b : boxes) {
                    List<String> want = new ArrayList<>();
                    for (int r = b[1]; r <= b[3]; r++) {
                        for (int c = b[0]; c <= b[2]; c++) {
                            if (present(c, r)) want.add(c + "," + r);
                        }
                    }
                    List<String> got = new ArrayList<>();
                    for (GtTile t : reader.query(b[0], b[1], b[2], b[3], 0, 0, -1)) got.add(t.col + "," + t.row);
                    got.sort(null);
                    want.sort(null);
                    assertEquals(kind + " " + Arrays.toString(b), want, got);
                    assertEquals(want.size(), reader.count(b[0], b[1], b[2], b[3], 0, 0));
                }
            }
        }
    }

    @Test
    public void aFileScanSeeksPastGapsAndReadsOnlyItsRanges() throws Exception {
        File catalog = spatial("zorder");
        GtLayer layer = GtLayer.open(catalog.toURI().toString(), "dem", 3, new Configuration());
        GtLayerFiles files = GtLayerFiles.list(layer, new Configuration());
        long total = 0, returned = 0;
        for (int i = 0; i < files.size(); i++) {
            org.apache.hadoop.fs.Path dir = new org.apache.hadoop.fs.Path(files.path(i));
            List<io.sfclayer.curve.IndexRange> all = List.of(new io.sfclayer.curve.IndexRange(files.first(i), files.last(i)));
            try (GtFileScan s = new GtFileScan(GtMapFile.open(dir.getFileSystem(new Configuration()), dir), all,
                    new GtRecordCodec(layer.schemaJson, "t"), (c, r, t) -> true)) {
                while (s.next() != null) total++;
            }
        }
        assertEquals(48 - 7, total);
        // the key (3, 4) alone: one record read
        List<io.sfclayer.curve.IndexRange> one = layer.keyIndex.ranges(3, 4, 3, 4, 0, 0);
        int f = files.fileOf(one.get(0).lo);
        org.apache.hadoop.fs.Path dir = new org.apache.hadoop.fs.Path(files.path(f));
        try (GtFileScan s = new GtFileScan(GtMapFile.open(dir.getFileSystem(new Configuration()), dir), one,
                new GtRecordCodec(layer.schemaJson, "t"), (c, r, t) -> true)) {
            while (s.next() != null) returned++;
            assertEquals(1, returned);
            assertEquals(1, s.recordsRead());
            assertTrue(s.groupsRead() <= 4); // at most the index interval
        }
    }

    @Test
    public void spaceTimeLayersKeepTheirInstants() throws Exception {
        File catalog = tmp.newFolder();
        long day = 86_400_000L, t0 = 1_577_836_800_000L; // 2020-01-01
        String json = "{\"type\":\"zorder\",\"properties\":{\"keyBounds\":" + bounds(0, 0, 3, 3, "" + t0, "" + (t0 + 3 * day))
            + ",\"temporalResolution\":" + day + "}}";
        GtKeyIndex index = GtKeyIndex.fromJson(new com.fasterxml.jackson.databind.ObjectMapper().readTree(json), true, "t");
        List<GtTestCatalog.Entry> entries = new ArrayList<>();
        // two instants of the same day share a record (one index)
        for (long t : new long[] {t0, t0 + day / 2, t0 + 3 * day}) {
            for (int c = 0; c <= 3; c++) entries.add(new GtTestCatalog.Entry(c, 1, t, GtTestCatalog.shortTile(4, 4, cells(c, (int) (t % 97)), null)));
        }
        GtTestCatalog.write(catalog, "st", 2, json, index, true, GtTestCatalog.TILE, "int16raw", entries, 3);
        GtLayer layer = GtLayer.open(catalog.toURI().toString(), "st", 2, new Configuration());
        assertTrue(layer.spaceTime);
        try (GtValueReader reader = new GtValueReader(layer, new Configuration(), 4)) {
            for (GtTestCatalog.Entry e : entries) {
                GtTile t = reader.get(e.col, e.row, e.millis);
                assertArrayEquals(le(cells(e.col, (int) (e.millis % 97))), t.pixels);
                assertEquals(e.millis, t.millis);
                assertNull(t.nodata);
            }
            assertNull(reader.get(0, 1, t0 + 1));
            assertEquals(4, reader.count(0, 0, 3, 3, t0 + 1, t0 + day));
            assertEquals(12, reader.count(0, 0, 3, 3, Long.MIN_VALUE, Long.MAX_VALUE));
        }
    }

    @Test
    public void paddedBitConstantAndMultibandTiles() {
        GenericRecord bits = new GenericData.Record(GtTestCatalog.BIT_TILE);
        bits.put("cols", 3);
        bits.put("rows", 3);
        bits.put("cells", ByteBuffer.wrap(new byte[] {(byte) 0b10100101, 1}));
        GtPixels p = GtPixels.decode(bits, "t");
        assertArrayEquals(new byte[] {1, 0, 1, 0, 0, 1, 0, 1, 1}, p.pixels); // LSB first
        assertEquals("uint8", p.dtype);

        GenericRecord padded = new GenericData.Record(GtTestCatalog.PADDED);
        padded.put("chunk", GtTestCatalog.shortTile(1, 2, new short[] {7, 8}, -32768));
        padded.put("colOffset", 1);
        padded.put("rowOffset", 1);
        padded.put("cols", 3);
        padded.put("rows", 3);
        short m = Short.MIN_VALUE;
        assertArrayEquals(le(new short[] {m, m, m, m, 7, m, m, 8, m}), GtPixels.decode(padded, "t").pixels);

        GenericRecord constant = new GenericData.Record(GtTestCatalog.INT_CONST);
        constant.put("cols", 2);
        constant.put("rows", 1);
        constant.put("cell", -5);
        constant.put("noDataValue", Integer.MIN_VALUE);
        GtPixels c = GtPixels.decode(constant, "t");
        assertEquals("int32", c.dtype);
        assertEquals((double) Integer.MIN_VALUE, c.nodata, 0);
        assertArrayEquals(new byte[] {-5, -1, -1, -1, -5, -1, -1, -1}, c.pixels);

        GenericRecord ub = new GenericData.Record(GtTestCatalog.UBYTE_TILE);
        ub.put("cols", 2);
        ub.put("rows", 1);
        ub.put("cells", ByteBuffer.wrap(new byte[] {(byte) 255, 3}));
        ub.put("noDataValue", -1); // UByteUserDefinedNoDataCellType(255.toByte): stored as the byte's int
        GtPixels u = GtPixels.decode(ub, "t");
        assertEquals(255.0, u.nodata, 0);

        GenericRecord mb = new GenericData.Record(GtTestCatalog.MULTIBAND);
        mb.put("bands", List.of(GtTestCatalog.shortTile(1, 1, new short[] {1}, null), GtTestCatalog.shortTile(1, 1, new short[] {2}, null)));
        GtPixels b = GtPixels.decode(mb, "t");
        assertEquals(2, b.bands);
        assertArrayEquals(new byte[] {1, 0, 2, 0}, b.pixels);

        GenericRecord fl = new GenericData.Record(GtTestCatalog.FLOAT_TILE);
        fl.put("cols", 1);
        fl.put("rows", 1);
        fl.put("cells", List.of(1.5f));
        fl.put("noDataValue", true);
        assertTrue(Double.isNaN(GtPixels.decode(fl, "t").nodata));
        fl.put("noDataValue", false);
        assertNull(GtPixels.decode(fl, "t").nodata);
        fl.put("noDataValue", -9999f);
        assertEquals(-9999.0, GtPixels.decode(fl, "t").nodata, 0);
    }

    @Test
    public void unknownIndexTypesAndMissingLayersAreRefused() throws Exception {
        try {
            GtKeyIndex.fromJson(new com.fasterxml.jackson.databind.ObjectMapper().readTree(
                "{\"type\":\"custom\",\"properties\":{\"keyBounds\":" + bounds(0, 0, 1, 1, null, null) + "}}"), false, "t");
            fail();
        } catch (SfcLayerException.UnsupportedFormat e) {
            assertTrue(e.getMessage(), e.getMessage().contains("custom"));
        }
        File catalog = spatial("zorder");
        try {
            GtLayer.open(catalog.toURI().toString(), "dem", 4, new Configuration());
            fail();
        } catch (SfcLayerException.LayerNotFound e) {
            assertTrue(e.getMessage(), e.getMessage().contains("dem/4"));
        }
    }

    /** The index is read whole and parsed from memory: a cut-off or damaged one is CorruptLayer naming it, never a wrong seek. */
    @Test
    public void aTruncatedOrDamagedIndexIsCorruptLayer() throws Exception {
        File catalog = spatial("zorder");
        GtLayer layer = GtLayer.open(catalog.toURI().toString(), "dem", 3, new Configuration());
        File dir = new File(new java.net.URI(GtLayerFiles.list(layer, new Configuration()).path(0)));
        File index = new File(dir, "index");
        byte[] whole = java.nio.file.Files.readAllBytes(index.toPath());
        org.apache.hadoop.fs.FileSystem raw = org.apache.hadoop.fs.FileSystem.getLocal(new Configuration()).getRaw();
        for (int cut : new int[] {whole.length - 3, whole.length / 2, 10}) {
            java.nio.file.Files.write(index.toPath(), Arrays.copyOf(whole, cut));
            try {
                GtMapFile.open(raw, new org.apache.hadoop.fs.Path(dir.toURI())).close();
                fail("an index cut at " + cut + " of " + whole.length + " bytes was read");
            } catch (SfcLayerException.CorruptLayer e) {
                assertTrue(e.getMessage(), e.getMessage().contains(dir.getName()));
            }
        }
        byte[] flipped = whole.clone();
        flipped[whole.length - 20] ^= 0x5a; // inside the last compressed buffer
        java.nio.file.Files.write(index.toPath(), flipped);
        try {
            GtMapFile.open(raw, new org.apache.hadoop.fs.Path(dir.toURI())).close();
            fail("a damaged index was read");
        } catch (SfcLayerException e) {
            assertTrue(e.getMessage(), e.getMessage().contains(dir.getName()));
        }
        java.nio.file.Files.write(index.toPath(), whole);
        try (GtMapFile f = GtMapFile.open(raw, new org.apache.hadoop.fs.Path(dir.toURI()))) {
            f.seekFloor(0);
            assertTrue(f.next());
        }
    }

    /** Parsed writer schemas are kept by their text: the same text shares one parse, another text is parsed anew. */
    @Test
    public void parsedSchemasAreKeptByTheirText() throws Exception {
        GtRecordCodec.clearSchemas();
        File a = spatial("zorder");
        GtLayer layer = GtLayer.open(a.toURI().toString(), "dem", 3, new Configuration());
        try (GtValueReader r = new GtValueReader(layer, new Configuration(), 4)) {
            assertEquals(3, r.get(3, 3, 0).col);
        }
        assertEquals(1, GtRecordCodec.schemasKept());
        try (GtValueReader r = new GtValueReader(layer, new Configuration(), 4)) {
            assertEquals(3, r.get(3, 3, 0).col);
        }
        assertEquals(1, GtRecordCodec.schemasKept());
        String other = layer.schemaJson.replace("\"ShortArrayTile\"", "\"ShortArrayTileX\"");
        assertTrue(!other.equals(layer.schemaJson));
        new GtRecordCodec(other, "t");
        assertEquals(2, GtRecordCodec.schemasKept());
        try {
            new GtRecordCodec("{\"type\": \"record\"", "layer x");
            fail();
        } catch (SfcLayerException.CorruptLayer e) {
            assertTrue(e.getMessage(), e.getMessage().contains("layer x"));
        }
        assertEquals(2, GtRecordCodec.schemasKept()); // a schema that does not parse is not kept
        GtRecordCodec.clearSchemas();
        assertEquals(0, GtRecordCodec.schemasKept());
    }
}
