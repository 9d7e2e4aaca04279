package io.sfclayer.spark;

import io.sfclayer.SfcLayerException;
import io.sfclayer.format.DeltaFile;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.layer.Layer;
import io.sfclayer.lookup.ValueReader;
import io.sfclayer.testing.DeltaVersions;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericRecord;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.junit.Test;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

/**
 * Reads of format 7 versions (delta files, docs/FORMAT.md section 11) against a dict model: box scans
 * (Spark and the driver's), look-ups, counts, time travel and statistics pruning ({@link DeltaLayersBase}
 * builds the layers).
 */
public class DeltaReadTest extends DeltaLayersBase {
    @Test
    public void theVersionsListTheirDeltasInOrder() throws IOException {
        LayerMetadata md = Layer.open(conf(), layer).metadata();
        assertEquals(4, md.version);
        assertEquals(LayerMetadata.DELTA_FORMAT_VERSION, md.formatVersion);
        long prev = 0;
        java.util.Set<Long> added = new java.util.TreeSet<>();
        for (DeltaFile d : md.deltas) {
            assertTrue(d.addedIn >= prev);
            prev = d.addedIn;
            added.add(d.addedIn);
        }
        assertEquals(java.util.Set.of(2L, 3L, 4L), added);
        assertTrue("the test needs base files after the origin block, got first index "
            + Layer.open(conf(), layer).listing().start(0), Layer.open(conf(), layer).listing().start(0) >= 16);
        assertTrue(Layer.open(conf(), layer, 1, -1).metadata().deltas.isEmpty());
    }

    @Test
    public void boxScansOfEveryVersionMatchTheModel() {
        Random rnd = new Random(1);
        for (int v = 1; v <= MODELS.size(); v++) {
            Map<String, Long> model = MODELS.get(v - 1);
            assertEquals("version " + v + " whole", model, collect(read(layer, v), false));
            for (int i = 0; i < 6; i++) {
                int c0 = rnd.nextInt(N), r0 = rnd.nextInt(N);
                int c1 = Math.min(N - 1, c0 + rnd.nextInt(24)), r1 = Math.min(N - 1, r0 + rnd.nextInt(24));
                if (i == 0) {
                    c0 = 0;
                    r0 = 0; // the origin block: deltas before the first base file
                }
                Dataset<Row> d = read(layer, v).where("col between " + c0 + " and " + c1 + " and row between " + r0
                    + " and " + r1);
                assertEquals("version " + v + " box " + c0 + "," + r0 + "," + c1 + "," + r1,
                    inBox(model, c0, r0, c1, r1, x -> true), collect(d, false));
            }
        }
    }

    @Test
    public void valueFiltersNeverSeeAStaleTile() {
        Map<String, Long> model = MODELS.get(MODELS.size() - 1);
        // base files' statistics rule out v >= 300000, and deltas' v < 100000: both must still be read
        // where a newer or older tile of the same key lies in another file
        assertEquals(inBox(model, 0, 0, N - 1, N - 1, x -> x >= 300_000),
            collect(read(layer, 4).where("v >= 300000"), false));
        assertEquals(inBox(model, 0, 0, N - 1, N - 1, x -> x < 100_000),
            collect(read(layer, 4).where("v < 100000"), false));
        assertEquals(inBox(model, 0, 0, 20, 40, x -> x >= 200_000 && x < 300_000),
            collect(read(layer, 4).where("v >= 200000 and v < 300000 and col <= 20 and row <= 40"), false));
        // a version without deltas still prunes base files by their statistics
        String plan = read(layer, 1).where("v >= 300000").queryExecution().executedPlan().toString();
        assertTrue(plan, plan.contains("by statistics 4]") || plan.contains("files=0/"));
    }

    @Test
    public void countsMergeTheDeltas() throws IOException {
        for (int v = 1; v <= MODELS.size(); v++) {
            assertEquals("version " + v, MODELS.get(v - 1).size(), read(layer, v).count());
            assertEquals("version " + v, inBox(MODELS.get(v - 1), 0, 0, 9, 30, x -> true).size(),
                read(layer, v).where("col <= 9 and row <= 30").count());
            try (ValueReader r = ValueReader.open(conf(), layer, 16, v, -1)) {
                assertEquals(MODELS.get(v - 1).size(), r.count(r.boxQuery("")));
                assertEquals(inBox(MODELS.get(v - 1), 3, 2, 40, 17, x -> true).size(),
                    r.count(r.boxQuery("keys=3,2,40,17")));
            }
        }
    }

    @Test
    public void lookUpsAnswerTheNewestTile() throws IOException {
        for (int v = 1; v <= MODELS.size(); v++) {
            Map<String, Long> model = MODELS.get(v - 1);
            try (ValueReader r = ValueReader.open(conf(), layer, 16, v, -1)) {
                Schema schema = new Schema.Parser().parse(r.tileSchemaJson());
                int[] cols = new int[N * N], rows = new int[N * N];
                int i = 0;
                for (int c = 0; c < N; c++) {
                    for (int row = 0; row < N; row++) {
                        byte[] rec = r.getOrNull(c, row, 0);
                        Long want = model.get(c + "," + row);
                        assertEquals("version " + v + " key " + c + "," + row, want,
                            rec == null ? null : (Long) decode(schema, rec).get("v"));
                        cols[i] = c;
                        rows[i++] = row;
                    }
                }
                int[] found = {0};
                r.getMany(cols, rows, new long[cols.length], (j, rec) -> {
                    Long want = model.get(cols[j] + "," + rows[j]);
                    assertEquals(want, rec == null ? null : (Long) decode(schema, rec).get("v"));
                    found[0]++;
                });
                assertEquals(cols.length, found[0]);
                int[] missing = missingKey();
                assertThrows(SfcLayerException.KeyNotFound.class, () -> r.get(missing[0], missing[1]));
                if (v == MODELS.size()) {
                    assertTrue("bloom filters skip files", r.bloomSkips() > 0);
                }
            }
        }
    }

    /** A key no version holds (the newest holds every key any version did: nothing is deleted). */
    @Test
    public void driverBoxQueriesMatchTheModel() throws IOException {
        Random rnd = new Random(2);
        for (int v = 1; v <= MODELS.size(); v++) {
            try (ValueReader r = ValueReader.open(conf(), layer, 2, v, -1)) { // a cache smaller than a merge's files
                Schema schema = new Schema.Parser().parse(r.tileSchemaJson());
                for (int i = 0; i < 5; i++) {
                    int c0 = i == 0 ? 0 : rnd.nextInt(N), r0 = i == 0 ? 0 : rnd.nextInt(N);
                    int c1 = i == 4 ? N - 1 : Math.min(N - 1, c0 + rnd.nextInt(30));
                    int r1 = i == 4 ? N - 1 : Math.min(N - 1, r0 + rnd.nextInt(30));
                    if (i == 4) {
                        c0 = 0;
                        r0 = 0;
                    }
                    Map<String, Long> got = new TreeMap<>();
                    long n = r.query(r.boxQuery("keys=" + c0 + "," + r0 + "," + c1 + "," + r1), batch -> {
                        for (byte[] rec : batch) {
                            GenericRecord g = decode(schema, rec);
                            assertNull(got.put(g.get("col") + "," + g.get("row"), (Long) g.get("v")));
                        }
                    });
                    assertEquals(got.size(), n);
                    assertEquals("version " + v + " box " + c0 + "," + r0 + "," + c1 + "," + r1,
                        inBox(MODELS.get(v - 1), c0, r0, c1, r1, x -> true), got);
                }
                long[] limited = {0};
                assertEquals(7, r.query(r.boxQuery("limit=7"), batch -> limited[0] += batch.size()));
                assertEquals(7, limited[0]);
            }
        }
    }

    @Test
    public void spaceTimeLayersMergeByTheWholeKey() throws IOException {
        for (int v = 1; v <= ST_MODELS.size(); v++) {
            Map<String, Long> model = ST_MODELS.get(v - 1);
            assertEquals("version " + v, model, collect(read(st, v), true));
            assertEquals(inBox(model, 2, 3, 9, 12, x -> true),
                collect(read(st, v).where("col between 2 and 9 and row between 3 and 12"), true));
            assertEquals(model.size(), read(st, v).count());
            try (ValueReader r = ValueReader.open(conf(), st, 16, v, -1)) {
                Schema schema = new Schema.Parser().parse(r.tileSchemaJson());
                for (int c = 0; c < 16; c++) {
                    for (int row = 0; row < 16; row++) {
                        for (int t = 0; t < 5; t++) {
                            long time = T0 + t * DAY;
                            byte[] rec = r.getOrNull(c, row, time);
                            assertEquals("version " + v + " key " + c + "," + row + "," + t,
                                model.get(c + "," + row + "," + time),
                                rec == null ? null : (Long) decode(schema, rec).get("v"));
                        }
                    }
                }
                assertEquals(model.size(), r.count(r.boxQuery("")));
            }
        }
    }


    @Test
    public void manifestVersionsMergeTheirDeltasToo() throws IOException {
        String path = TMP.newFolder("manifests").getAbsolutePath();
        Configuration c = conf();
        Map<String, Long> base = new TreeMap<>();
        for (int col = 0; col < N; col += 2) {
            for (int row = 0; row < N; row++) {
                base.put(col + "," + row, col * 1000L + row);
            }
        }
        c.setInt(io.sfclayer.format.ManifestTree.INLINE_FILES, 2);
        c.setInt(io.sfclayer.format.ManifestTree.LEAF_FILES, 2);
        c.setInt(io.sfclayer.format.ManifestTree.FANOUT, 2);
        try {
            writeSpatial(path, base, 6, true);
        } finally {
            c.unset(io.sfclayer.format.ManifestTree.INLINE_FILES);
            c.unset(io.sfclayer.format.ManifestTree.LEAF_FILES);
            c.unset(io.sfclayer.format.ManifestTree.FANOUT);
        }
        Map<String, Long> delta = randomTiles(new Random(6), 400, 500_000);
        String src = TMP.newFolder("manifestsDelta").getAbsolutePath();
        writeSpatial(src, delta, 2, false);
        assertEquals(2, DeltaVersions.add(c, path, src));
        LayerMetadata md = Layer.open(c, path).metadata();
        assertNotNull("the base files are listed by manifests (format 6), the deltas inline", md.manifests);
        assertFalse(md.deltas.isEmpty());
        Map<String, Long> model = new TreeMap<>(base);
        model.putAll(delta);
        assertEquals(model, collect(read(path, 2), false));
        assertEquals(inBox(model, 5, 9, 30, 41, x -> true),
            collect(read(path, 2).where("col between 5 and 30 and row between 9 and 41"), false));
        assertEquals(model.size(), read(path, 2).count());
        assertEquals(base, collect(read(path, 1), false));
        try (ValueReader r = ValueReader.open(c, path, 16)) {
            Schema schema = new Schema.Parser().parse(r.tileSchemaJson());
            for (int col = 0; col < N; col++) {
                for (int row = 0; row < N; row++) {
                    byte[] rec = r.getOrNull(col, row, 0);
                    assertEquals(col + "," + row, model.get(col + "," + row),
                        rec == null ? null : (Long) decode(schema, rec).get("v"));
                }
            }
            assertEquals(model.size(), r.count(r.boxQuery("")));
        }
        @SuppressWarnings("unchecked")
        Map<String, Object> report = new com.fasterxml.jackson.databind.ObjectMapper()
            .readValue(io.sfclayer.layer.LayerVerifier.run(c, path, null), Map.class);
        assertEquals(report.toString(), List.of(), report.get("problems"));
        assertEquals(report.toString(), List.of(), report.get("files"));
    }
}
