package io.sfclayer.format;

import io.sfclayer.SfcLayerException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

import java.io.IOException;
import java.nio.file.Files;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

public class BloomFilterTest {
    @Rule
    public final TemporaryFolder tmp = new TemporaryFolder();

    private static long[] randomIndexes(Random rnd, int n, Set<Long> into) {
        long[] out = new long[n];
        for (int i = 0; i < n; i++) {
            long v;
            do {
                v = rnd.nextInt(1 << 22);
            } while (!into.add(v));
            out[i] = v;
        }
        return out;
    }

    @Test
    public void everyAddedIndexIsFoundAndFalsePositivesStayNearTheTarget() {
        Random rnd = new Random(7);
        for (double fpp : new double[] {0.1, 0.01, 0.001}) {
            for (int n : new int[] {1, 10, 1000, 20000}) {
                Set<Long> present = new HashSet<>();
                long[] idx = randomIndexes(rnd, n, present);
                BloomFilter f = BloomFilter.build(idx, n, fpp);
                for (long i : idx) {
                    assertTrue("added index " + i + " must be found (n=" + n + ", fpp=" + fpp + ")", f.mightContain(i));
                }
                if (n >= 1000) {
                    int trials = 200_000;
                    int fp = 0;
                    for (int t = 0; t < trials; t++) {
                        long probe = (1L << 23) + t; // never added
                        if (f.mightContain(probe)) {
                            fp++;
                        }
                    }
                    double rate = (double) fp / trials;
                    assertTrue("false-positive rate " + rate + " at target " + fpp, rate < 1.5 * fpp + 0.0005);
                }
            }
        }
    }

    @Test
    public void theSerializedFormRoundTripsAndAnswersTheSame() throws IOException {
        Random rnd = new Random(3);
        long[] idx = randomIndexes(rnd, 500, new HashSet<>());
        BloomFilter f = BloomFilter.build(idx, idx.length, 0.01);
        byte[] bytes = f.toBytes();
        assertEquals(BloomFilter.HEADER_BYTES + f.bits() / 8, bytes.length);
        BloomFilter g = BloomFilter.parse(bytes, BloomFilter.crc32c(bytes));
        assertEquals(f.hashes(), g.hashes());
        assertEquals(f.bits(), g.bits());
        assertEquals(500, g.entries());
        for (long probe = 0; probe < 100_000; probe++) {
            assertEquals(f.mightContain(probe), g.mightContain(probe));
        }
    }

    /** The layout in docs/FORMAT.md, by hand: another implementation computing the same bits agrees. */
    @Test
    public void bitsFollowTheDocumentedDoubleHashing() throws IOException {
        long[] idx = {0, 5, 123456789L};
        BloomFilter f = BloomFilter.build(idx, 3, 0.01);
        byte[] bytes = f.toBytes();
        java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(bytes);
        assertEquals('S', b.get(0));
        assertEquals(1, b.get(4));
        assertEquals(1, b.get(5));
        int k = b.getShort(6);
        long m = b.getLong(8);
        for (long i : idx) {
            long h1 = BloomFilter.fmix64(i);
            long h2 = BloomFilter.fmix64(h1) | 1;
            for (int j = 0; j < k; j++) {
                long bit = Long.remainderUnsigned(h1 + j * h2, m);
                long word = b.getLong(BloomFilter.HEADER_BYTES + 8 * (int) (bit / 64));
                assertTrue((word & (1L << (bit % 64))) != 0);
            }
        }
        // fmix64 is MurmurHash3's finalizer: its published value for 1
        assertEquals(0xb456bcfc34c2cb2cL, BloomFilter.fmix64(1));
    }

    @Test
    public void everyDamagedByteIsDetected() {
        long[] idx = randomIndexes(new Random(1), 40, new HashSet<>());
        byte[] bytes = BloomFilter.build(idx, idx.length, 0.01).toBytes();
        long crc = BloomFilter.crc32c(bytes);
        for (int at = 0; at < bytes.length; at++) {
            byte[] bad = bytes.clone();
            bad[at] ^= 0x10;
            try {
                BloomFilter.parse(bad, crc);
                fail("damage at byte " + at + " went unnoticed");
            } catch (IOException expected) {
                assertTrue(expected.getMessage(), expected.getMessage().contains("checksum mismatch"));
            }
        }
        try {
            BloomFilter.parse(java.util.Arrays.copyOf(bytes, 10), BloomFilter.crc32c(java.util.Arrays.copyOf(bytes, 10)));
            fail("a truncated filter was accepted");
        } catch (IOException expected) {
            assertTrue(expected.getMessage().contains("truncated"));
        }
    }

    @Test
    public void theWriterBuildsOneFilterPerFileFromWhatItAppends() throws IOException {
        Configuration conf = new Configuration();
        Path dir = new Path(tmp.newFolder("w").getAbsolutePath());
        DataFileWriter w = new DataFileWriter(conf, dir, 0, 4096, 4, "w1").withBloomFilter(0.01);
        byte[] group = new byte[200];
        for (long i = 0; i < 200; i += 3) {
            w.append(i, group, 0, group.length, 1);
        }
        w.close();
        List<DataFile> files = w.files();
        assertTrue("the test needs several files, got " + files.size(), files.size() > 2);
        FileSystem fs = dir.getFileSystem(conf);
        for (DataFile s : files) {
            assertNotNull(s.bloomCrc32c);
            BloomFilter f = BloomFilter.read(fs, new Path(dir, s.name), s.bloomCrc32c, "test");
            assertEquals(s.indexes, f.entries());
            for (long i = s.firstIndex; i <= s.lastIndex; i += 3) {
                assertTrue(f.mightContain(i));
            }
        }
    }

    @Test
    public void aDamagedOrMissingSidecarIsCorruptLayerNamingIt() throws IOException {
        Configuration conf = new Configuration();
        Path dir = new Path(tmp.newFolder("d").getAbsolutePath());
        DataFileWriter w = new DataFileWriter(conf, dir, 0, 1 << 20, 4, "w1").withBloomFilter(0.01);
        w.append(1, new byte[10], 0, 10, 1);
        w.close();
        DataFile s = w.files().get(0);
        Path mapFile = new Path(dir, s.name);
        java.nio.file.Path sidecar = java.nio.file.Paths.get(mapFile.toUri().getPath(), BloomFilter.FILE_NAME);
        byte[] bytes = Files.readAllBytes(sidecar);
        bytes[bytes.length - 1] ^= 1;
        Files.write(sidecar, bytes);
        org.apache.hadoop.fs.LocalFileSystem fs = FileSystem.getLocal(conf);
        try {
            BloomFilter.read(fs, mapFile, s.bloomCrc32c, "L");
            fail("damaged filter accepted");
        } catch (SfcLayerException.CorruptLayer e) {
            // sfclayer writes local files without Hadoop's .crc sidecar (LocalFiles): its CRC32C finds it
            assertTrue(e.getMessage(), e.getMessage().contains(s.name + "/bloom is damaged: checksum mismatch"));
        }
        // without Hadoop's checksums (an object store, a copy): sfclayer's CRC32C in the version document
        try {
            BloomFilter.read(fs.getRaw(), mapFile, s.bloomCrc32c, "L");
            fail("damaged filter accepted");
        } catch (SfcLayerException.CorruptLayer e) {
            assertTrue(e.getMessage(), e.getMessage().contains(s.name + "/bloom is damaged: checksum mismatch"));
        }
        Files.delete(sidecar);
        try {
            BloomFilter.read(fs, mapFile, s.bloomCrc32c, "L");
            fail("missing filter accepted");
        } catch (SfcLayerException.CorruptLayer e) {
            assertTrue(e.getMessage(), e.getMessage().contains("is missing"));
        }
    }
}
