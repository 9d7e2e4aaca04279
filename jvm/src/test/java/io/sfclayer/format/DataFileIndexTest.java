package io.sfclayer.format;

import io.sfclayer.SfcLayerException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.junit.BeforeClass;
import org.junit.ClassRule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.util.Arrays;
import java.util.Random;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

/** The data file read alone from a kept index answers exactly as a reader that reads the index itself. */
public class DataFileIndexTest {
    @ClassRule
    public static final TemporaryFolder TMP = new TemporaryFolder();
    private static final Configuration CONF = new Configuration();
    private static Path file;
    private static long first, last;

    @BeforeClass
    public static void write() throws IOException {
        Path dir = new Path(TMP.newFolder("data").getAbsolutePath());
        Random rng = new Random(3);
        long index = 17;
        first = index;
        // groups of 1 byte to 9 KB: sync escapes land between many records, some groups span windows
        try (DataFileWriter w = new DataFileWriter(CONF, dir, 0, 1L << 30, 4, "test")) {
            for (int i = 0; i < 3000; i++) {
                byte[] g = group(index, 1 + rng.nextInt(i % 50 == 0 ? 90_000 : 3000));
                w.append(index, g, 0, g.length, 1);
                last = index;
                index += 1 + rng.nextInt(5);
            }
        }
        file = new Path(dir, "part-r-00000-" + first);
    }

    static byte[] group(long index, int n) {
        byte[] b = new byte[n];
        new Random(index).nextBytes(b);
        return b;
    }

    static byte[] current(DataFileReader r) {
        return Arrays.copyOfRange(r.bytes(), r.offset(), r.offset() + r.length());
    }

    @Test
    public void seeksGetsAndWalksAgreeWithMapFileReader() throws IOException {
        DataFileIndex index = DataFileIndex.read(CONF, file);
        assertTrue(index.size() > 500);
        Random rng = new Random(9);
        try (DataFileReader hadoop = new DataFileReader(CONF, file);
             DataFileReader mine = new DataFileReader(CONF, file, index)) {
            for (int q = 0; q < 2000; q++) {
                long target = first - 5 + (long) (rng.nextDouble() * (last - first + 10));
                boolean a = hadoop.seekCeiling(target);
                assertEquals("seek " + target, a, mine.seekCeiling(target));
                if (a) {
                    assertEquals(hadoop.index(), mine.index());
                    assertArrayEquals(current(hadoop), current(mine));
                    assertArrayEquals(group(mine.index(), mine.length()), current(mine));
                    for (int k = 0; k < rng.nextInt(6); k++) {
                        boolean more = hadoop.next();
                        assertEquals(more, mine.next());
                        if (!more) {
                            break;
                        }
                        assertEquals(hadoop.index(), mine.index());
                        assertArrayEquals(current(hadoop), current(mine));
                    }
                }
                assertEquals("get " + target, hadoop.get(target), mine.get(target));
            }
        }
    }

    @Test
    public void aTruncatedDataFileIsCorruptNotData() throws IOException {
        File copy = TMP.newFolder("truncated");
        File src = new File(file.toUri().getPath());
        Files.copy(new File(src, "data").toPath(), new File(copy, "data").toPath());
        Files.copy(new File(src, "index").toPath(), new File(copy, "index").toPath());
        try (RandomAccessFile raf = new RandomAccessFile(new File(copy, "data"), "rw")) {
            raf.setLength(raf.length() - 100);
        }
        Path broken = new Path(copy.getAbsolutePath());
        try (DataFileReader r = new DataFileReader(CONF, broken, DataFileIndex.read(CONF, broken))) {
            r.get(last);
            fail("read a truncated group");
        } catch (SfcLayerException.CorruptLayer e) {
            assertTrue(e.getMessage(), e.getMessage().contains("runs past the end of the file"));
        }
    }

    /** The index parsed directly (the look-up path) equals what Hadoop's SequenceFile.Reader reads, entry by entry. */
    @Test
    public void directParseAgreesWithSequenceFileReader() throws IOException {
        for (int records : new int[] {1, 7, 2_000, 300_000}) { // 300,000 / interval 4: several compressed blocks
            Path dir = new Path(TMP.newFolder("parse-" + records).getAbsolutePath());
            try (DataFileWriter w = new DataFileWriter(CONF, dir, 0, 1L << 30, 4, "test")) {
                for (int i = 0; i < records; i++) {
                    byte[] g = {(byte) i};
                    w.append(10L + 3L * i, g, 0, 1, 1);
                }
            }
            Path index = new Path(new Path(dir, "part-r-00000-10"), "index");
            byte[] bytes = Files.readAllBytes(new File(index.toUri().getPath()).toPath());
            org.apache.hadoop.io.LongWritable k = new org.apache.hadoop.io.LongWritable();
            org.apache.hadoop.io.LongWritable v = new org.apache.hadoop.io.LongWritable();
            java.util.List<long[]> expected = new java.util.ArrayList<>();
            try (org.apache.hadoop.io.SequenceFile.Reader r = new org.apache.hadoop.io.SequenceFile.Reader(CONF,
                    org.apache.hadoop.io.SequenceFile.Reader.file(index))) {
                while (r.next(k, v)) {
                    expected.add(new long[] {k.get(), v.get()});
                }
            }
            DataFileIndex parsed = DataFileIndex.parseBlockCompressed(bytes, 0, Long.MAX_VALUE);
            assertTrue("parsed directly: " + records, parsed != null);
            assertEquals(expected.size(), parsed.size());
            for (int i = 0; i < expected.size(); i++) {
                assertEquals(expected.get(i)[0], parsed.key(i));
                assertEquals(expected.get(i)[1], parsed.position(i));
            }
            // a truncated copy is not parsed directly (SequenceFile.Reader then says what is wrong)
            assertEquals(null, DataFileIndex.parseBlockCompressed(Arrays.copyOf(bytes, bytes.length - 3), 0, Long.MAX_VALUE));
        }
    }

    /** Positioned reads through a window (look-ups off checksummed local files) answer as stream reads do. */
    @Test
    public void positionedReadsAgreeWithStreamReads() throws IOException {
        Configuration raw = new Configuration();
        raw.set("fs.file.impl", org.apache.hadoop.fs.RawLocalFileSystem.class.getName());
        raw.setBoolean("fs.file.impl.disable.cache", true);
        DataFileIndex index = DataFileIndex.read(CONF, file);
        Random rng = new Random(12);
        for (int windowBytes : new int[] {64, 4096, 1 << 16}) { // smaller and larger than most groups
            try (DataFileReader stream = new DataFileReader(CONF, file, index);
                 DataFileReader positioned = new DataFileReader(raw, file, index)) {
                positioned.usePositionedReads(windowBytes);
                for (int q = 0; q < 1500; q++) {
                    long target = first - 5 + (long) (rng.nextDouble() * (last - first + 10));
                    boolean a = stream.seekCeiling(target);
                    assertEquals("seek " + target, a, positioned.seekCeiling(target));
                    if (a) {
                        assertEquals(stream.index(), positioned.index());
                        assertArrayEquals(current(stream), current(positioned));
                        if (rng.nextInt(4) == 0 && stream.next()) {
                            assertTrue(positioned.next());
                            assertArrayEquals(current(stream), current(positioned));
                        }
                    }
                }
            }
        }
    }
}
