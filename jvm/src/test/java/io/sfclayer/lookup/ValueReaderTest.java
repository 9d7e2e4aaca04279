package io.sfclayer.lookup;

import io.sfclayer.format.DataFileListing;
import io.sfclayer.layer.Layer;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.junit.BeforeClass;
import org.junit.ClassRule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

import java.io.IOException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

public class ValueReaderTest {
    @ClassRule
    public static final TemporaryFolder TMP = new TemporaryFolder();
    static final int N = 64;
    static String layerUri;
    static Configuration conf;

    @BeforeClass
    public static void writeLayer() throws IOException {
        conf = new Configuration();
        conf.set("fs.slowopen.impl", SlowOpenFileSystem.class.getName());
        conf.setBoolean("fs.slowopen.impl.disable.cache", true);
        String dir = TMP.newFolder("layer").getAbsolutePath();
        TestLayers.write(new Configuration(), new Path(dir), N, 8192);
        layerUri = "slowopen://" + dir;
    }

    /** The long value {@code v} at the end of a record (spatial keys: varint col, varint row, then v). */
    static long valueOf(byte[] record) {
        long raw = 0;
        int shift = 0;
        int i = record.length - 1;
        // v is the last field: a zig-zag varint; find its start (the byte after the last one with the high bit clear before it)
        int start = i;
        while (start > 0 && (record[start - 1] & 0x80) != 0) {
            start--;
        }
        for (int k = start; k <= i; k++) {
            raw |= (long) (record[k] & 0x7f) << shift;
            shift += 7;
        }
        return (raw >>> 1) ^ -(raw & 1);
    }

    /** A key held by file {@code i} of the listing (its first index's key). */
    static int[] keyIn(ValueReader r, DataFileListing listing, int file) {
        long[] xy = r.metadata().keyIndex.decode(listing.start(file));
        return new int[] {(int) xy[0], (int) xy[1]};
    }

    @Test
    public void aColdOpenDoesNotStallWarmHitsOnOtherFiles() throws Exception {
        DataFileListing listing = Layer.open(conf, layerUri).listing();
        assertTrue("the test needs several files, got " + listing.size(), listing.size() >= 4);
        ExecutorService pool = Executors.newCachedThreadPool();
        try (ValueReader reader = ValueReader.open(conf, layerUri, 16)) {
            int[] warm = keyIn(reader, listing, 0);
            int[] cold = keyIn(reader, listing, 2);
            assertEquals(TestLayers.value(warm[0], warm[1]), valueOf(reader.get(warm[0], warm[1])));

            SlowOpenFileSystem.gate = new CountDownLatch(1);
            SlowOpenFileSystem.waiting = new CountDownLatch(1);
            SlowOpenFileSystem.slowDir = listing.name(2);
            Future<byte[]> slow = pool.submit(() -> reader.get(cold[0], cold[1]));
            Future<byte[]> sameFile = null;
            try {
                assertTrue("the cold open never started", SlowOpenFileSystem.waiting.await(10, TimeUnit.SECONDS));
                sameFile = pool.submit(() -> reader.get(cold[0], cold[1]));
                // while file 2's open waits at the gate, warm hits on file 0 are answered at once
                Future<Long> hits = pool.submit(() -> {
                    long sum = 0;
                    for (int i = 0; i < 200; i++) {
                        sum += valueOf(reader.get(warm[0], warm[1]));
                    }
                    return sum;
                });
                assertEquals(200 * TestLayers.value(warm[0], warm[1]), (long) hits.get(5, TimeUnit.SECONDS));
                // and so is a cold open of another file
                int[] other = keyIn(reader, listing, 3);
                Future<byte[]> third = pool.submit(() -> reader.get(other[0], other[1]));
                assertEquals(TestLayers.value(other[0], other[1]), valueOf(third.get(5, TimeUnit.SECONDS)));
                assertFalse(slow.isDone());
                assertFalse("a second caller for the file being opened waits for that open", sameFile.isDone());
            } finally {
                SlowOpenFileSystem.gate.countDown();
            }
            assertEquals(TestLayers.value(cold[0], cold[1]), valueOf(slow.get(10, TimeUnit.SECONDS)));
            assertEquals(TestLayers.value(cold[0], cold[1]), valueOf(sameFile.get(10, TimeUnit.SECONDS)));
            assertEquals("file 2 was opened once for both callers", 3, reader.filesOpened());
        } finally {
            SlowOpenFileSystem.slowDir = null;
            pool.shutdownNow();
        }
    }

    @Test
    public void aFailedOpenIsAnErrorAndTheFileIsOpenedAgainNextTime() throws Exception {
        DataFileListing listing = Layer.open(conf, layerUri).listing();
        try (ValueReader reader = ValueReader.open(conf, layerUri, 2)) {
            int[] k = keyIn(reader, listing, 1);
            SlowOpenFileSystem.gate = new CountDownLatch(0);
            SlowOpenFileSystem.failWith = new IOException("injected open failure");
            SlowOpenFileSystem.slowDir = listing.name(1);
            try {
                reader.get(k[0], k[1]);
                fail("the open should have failed");
            } catch (io.sfclayer.SfcLayerException | IOException e) {
                assertTrue(e.toString(), e.getMessage().contains("injected open failure"));
            } finally {
                SlowOpenFileSystem.failWith = null;
                SlowOpenFileSystem.slowDir = null;
            }
            assertEquals(0, reader.openFiles());
            assertEquals(TestLayers.value(k[0], k[1]), valueOf(reader.get(k[0], k[1])));
        }
    }

    @Test
    public void getManyAnswersEveryKeyOnceInIndexOrder() throws Exception {
        try (ValueReader reader = ValueReader.open(conf, layerUri, 4)) {
            int[] cols = {5, 63, 0, 70, 12};
            int[] rows = {7, 63, 0, 1, 40};
            long[] times = new long[5];
            long[][] seen = new long[5][];
            long[] lastIndex = {-1};
            reader.getMany(cols, rows, times, (i, record) -> {
                long index = cols[i] >= N ? -1 : reader.metadata().keyIndex.index(cols[i], rows[i]);
                assertTrue(index >= lastIndex[0]);
                lastIndex[0] = index;
                assertNull(seen[i]);
                seen[i] = record == null ? new long[0] : new long[] {valueOf(record)};
            });
            for (int i = 0; i < 5; i++) {
                long[] want = cols[i] >= N ? new long[0] : new long[] {TestLayers.value(cols[i], rows[i])};
                assertArrayEquals(want, seen[i]);
            }
        }
    }

}
