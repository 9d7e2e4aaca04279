package io.sfclayer.lookup;

import io.sfclayer.SfcLayerException;
import io.sfclayer.format.BloomFilter;
import io.sfclayer.format.DataFileListing;
import io.sfclayer.layer.Layer;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Paths;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

/** Look-ups on sparse layers with bloom filters: present keys always found, misses skip the files. */
public class ValueReaderBloomTest {
    @Rule
    public final TemporaryFolder tmp = new TemporaryFolder();
    static final int N = 64;

    /** About 10% of the grid, scattered (a multiplicative hash of the key). */
    static boolean present(int c, int r) {
        return Math.floorMod((c * 73856093) ^ (r * 19349663), 10) == 0;
    }

    private String sparse(String name, double fpp) throws IOException {
        String dir = tmp.newFolder(name).getAbsolutePath();
        TestLayers.write(new Configuration(), new Path(dir), N, 4096, ValueReaderBloomTest::present, fpp);
        return dir;
    }

    @Test
    public void presentKeysAreFoundAndMissesOpenNoFile() throws IOException {
        Configuration conf = new Configuration();
        String path = sparse("with", 0.01);
        assertTrue("the test needs several files", Layer.open(conf, path).listing().size() >= 4);
        int misses = 0;
        try (ValueReader r = ValueReader.open(conf, path, 1024)) {
            for (int c = 0; c < N; c++) {
                for (int row = 0; row < N; row++) {
                    if (!present(c, row)) {
                        assertNull(r.getOrNull(c, row, 0));
                        misses++;
                    }
                }
            }
            // false positives (fpp 1%) may open a file or two; everything else is answered by the filters
            assertTrue("bloom skips " + r.bloomSkips() + " of " + misses, r.bloomSkips() >= misses * 0.95);
            assertTrue("files opened on misses: " + r.filesOpened(), r.filesOpened() <= misses - r.bloomSkips());
            assertEquals(Layer.open(conf, path).listing().size(), r.filtersKept());
            for (int c = 0; c < N; c++) {
                for (int row = 0; row < N; row++) {
                    if (present(c, row)) {
                        byte[] rec = r.get(c, row);
                        assertEquals(TestLayers.value(c, row), ValueReaderTest.valueOf(rec));
                    }
                }
            }
        }
    }

    @Test
    public void withoutFiltersEveryMissOpensItsFile() throws IOException {
        Configuration conf = new Configuration();
        String path = sparse("without", 0);
        try (ValueReader r = ValueReader.open(conf, path, 1)) {
            int misses = 0;
            for (int c = 0; c < N; c += 3) {
                if (!present(c, 5)) {
                    assertNull(r.getOrNull(c, 5, 0));
                    misses++;
                }
            }
            assertEquals(0, r.bloomSkips());
            assertEquals(0, r.filtersKept());
            assertTrue(r.filesOpened() > 0);
            assertTrue(misses > 0);
        }
    }

    @Test
    public void getManyAnswersAsGetDoes() throws IOException {
        Configuration conf = new Configuration();
        String path = sparse("many", 0.05);
        int n = N * N;
        int[] cols = new int[n];
        int[] rows = new int[n];
        long[] times = new long[n];
        for (int i = 0; i < n; i++) {
            cols[i] = i % N;
            rows[i] = i / N;
        }
        try (ValueReader r = ValueReader.open(conf, path, 1024)) {
            r.getMany(cols, rows, times, (i, record) -> {
                if (present(cols[i], rows[i])) {
                    assertNotNull("present key " + cols[i] + "," + rows[i] + " answered missing", record);
                    assertEquals(TestLayers.value(cols[i], rows[i]), ValueReaderTest.valueOf(record));
                } else {
                    assertNull(record);
                }
            });
            assertTrue(r.bloomSkips() > 0);
        }
    }

    @Test
    public void aDamagedFilterFailsTheLookUpNamingIt() throws IOException {
        Configuration conf = new Configuration();
        String path = sparse("damaged", 0.01);
        DataFileListing listing = Layer.open(conf, path).listing();
        Path mapFile = listing.path(1);
        java.nio.file.Path sidecar = Paths.get(mapFile.toUri().getPath(), BloomFilter.FILE_NAME);
        byte[] bytes = Files.readAllBytes(sidecar);
        bytes[bytes.length - 3] ^= 0x40;
        Files.write(sidecar, bytes);
        Files.deleteIfExists(Paths.get(mapFile.toUri().getPath(), "." + BloomFilter.FILE_NAME + ".crc"));
        try (ValueReader r = ValueReader.open(conf, path, 1024)) {
            long[] xy = r.metadata().keyIndex.decode(listing.start(1));
            try {
                r.getOrNull((int) xy[0], (int) xy[1], 0);
                fail("a damaged filter was believed");
            } catch (SfcLayerException.CorruptLayer e) {
                assertTrue(e.getMessage(), e.getMessage().contains(listing.name(1) + "/bloom is damaged: checksum mismatch"));
                assertTrue(e.getMessage(), e.getMessage().contains("sfclayer repair"));
            }
            // other files still answer
            long[] other = r.metadata().keyIndex.decode(listing.start(0));
            assertNotNull(r.getOrNull((int) other[0], (int) other[1], 0));
        }
    }
}
