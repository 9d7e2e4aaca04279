package io.sfclayer.format;

import io.sfclayer.SfcLayerException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.junit.BeforeClass;
import org.junit.ClassRule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

/**
 * The record framing holds whatever byte is hit: every single byte of every record of a data file
 * is flipped in turn, and each time a checked read fails with CorruptLayer, while a read that skips
 * damage returns exactly the other records, byte for byte. The records' spans come from the
 * writer's own offsets (the index at interval 1), not from the reader under test.
 */
public class DataFileDamageTest {
    @ClassRule
    public static final TemporaryFolder TMP = new TemporaryFolder();
    private static final Configuration CONF = new Configuration();

    private static byte[] data;
    private static byte[] index;
    /** Original groups by SFC index, in order. */
    private static final Map<Long, byte[]> GROUPS = new LinkedHashMap<>();
    /** Record start offsets in {@code data}, in order, and the file's end. */
    private static long[] starts;

    @BeforeClass
    public static void write() throws IOException {
        Path dir = new Path(TMP.newFolder("src").getAbsolutePath());
        Random rnd = new Random(11);
        try (DataFileWriter w = new DataFileWriter(CONF, dir, 0, 1 << 30, 1, "test")) {
            for (long i = 5; i < 5 + 3 * 24; i += 3) {
                byte[] g = new byte[1 + rnd.nextInt(40)];
                rnd.nextBytes(g);
                GROUPS.put(i, g);
                w.append(i, g, 0, g.length, 1);
            }
        }
        java.nio.file.Path mapFile = java.nio.file.Paths.get(dir.toString(), "part-r-00000-5");
        data = Files.readAllBytes(mapFile.resolve("data"));
        index = Files.readAllBytes(mapFile.resolve("index"));
        DataFileIndex idx = DataFileIndex.read(CONF, new Path(mapFile.toString()).getFileSystem(CONF),
            new Path(mapFile.resolve("index").toString()), null, 0, data.length);
        assertEquals(GROUPS.size(), idx.size()); // interval 1: every record's offset
        starts = Arrays.copyOf(idx.offsets, idx.size() + 1);
        starts[idx.size()] = data.length;
    }

    /** A copy of the file with {@code data[at]} flipped, written without Hadoop's .crc sidecars. */
    private static Path damaged(int at, int mask) throws IOException {
        java.nio.file.Path dir = TMP.newFolder().toPath().resolve("part-r-00000-5");
        Files.createDirectories(dir);
        byte[] copy = data.clone();
        copy[at] ^= (byte) mask;
        Files.write(dir.resolve("data"), copy);
        Files.write(dir.resolve("index"), index);
        return new Path(dir.toString());
    }

    private static Map<Long, byte[]> readAll(Path file, List<DataFileReader.Damage> damage) throws IOException {
        Map<Long, byte[]> out = new LinkedHashMap<>();
        DataFileEntry entry = new DataFileEntry("part-r-00000-5", 5, -1, -1, data.length, null, 3, "test-layer");
        try (DataFileReader r = new DataFileReader(CONF, file, entry, damage == null ? null : damage::add)) {
            while (r.next()) {
                out.put(r.index(), Arrays.copyOfRange(r.bytes(), r.offset(), r.offset() + r.length()));
            }
        }
        return out;
    }

    @Test
    public void everyFlippedByteOfEveryRecordIsCaughtAndOnlyItsRecordIsLost() throws IOException {
        Long[] keys = GROUPS.keySet().toArray(new Long[0]);
        for (int at = (int) starts[0]; at < data.length; at++) {
            int rec = 0;
            while (starts[rec + 1] <= at) {
                rec++;
            }
            for (int mask : new int[] {0x01, 0x80, 0xff}) {
                Path file = damaged(at, mask);
                try {
                    readAll(file, null);
                    fail("byte " + at + " ^ " + mask + " (record " + rec + ") was not detected");
                } catch (SfcLayerException.CorruptLayer e) {
                    assertTrue(e.getMessage(), e.getMessage().contains("byte " + starts[rec]));
                    assertTrue(e.getMessage(), e.getMessage().contains("test-layer"));
                }
                List<DataFileReader.Damage> damage = new ArrayList<>();
                Map<Long, byte[]> got = readAll(file, damage);
                assertEquals("byte " + at, 1, damage.size());
                assertEquals(starts[rec], damage.get(0).offset);
                assertEquals("byte " + at + " ^ " + mask, GROUPS.size() - 1, got.size());
                for (Long k : keys) {
                    if (k != keys[rec]) {
                        assertArrayEquals("byte " + at + ", group " + k, GROUPS.get(k), got.get(k));
                    }
                }
            }
        }
    }

    @Test
    public void lookUpsNeverReturnADamagedGroup() throws IOException {
        Long[] keys = GROUPS.keySet().toArray(new Long[0]);
        Random rnd = new Random(3);
        for (int n = 0; n < 200; n++) {
            int at = (int) starts[0] + rnd.nextInt(data.length - (int) starts[0]);
            Path file = damaged(at, 1 << rnd.nextInt(8));
            DataFileEntry entry = new DataFileEntry("part-r-00000-5", 5, -1, -1, data.length, null, 3, "test-layer");
            try (DataFileReader r = new DataFileReader(CONF, file, entry, null)) {
                for (Long k : keys) {
                    try {
                        if (r.get(k)) {
                            assertArrayEquals(GROUPS.get(k), Arrays.copyOfRange(r.bytes(), r.offset(), r.offset() + r.length()));
                        } else {
                            fail("group " + k + " missing after flipping byte " + at);
                        }
                    } catch (SfcLayerException.CorruptLayer e) {
                        assertTrue(e.getMessage(), e.getMessage().contains("damaged"));
                    }
                }
            }
        }
    }

    @Test
    public void aDamagedLengthDoesNotAllocateWhatItSays() throws IOException {
        int at = (int) starts[3];
        byte[] copy = data.clone();
        copy[at] = 0x7f; // record length ~2 GB
        java.nio.file.Path dir = TMP.newFolder().toPath().resolve("part-r-00000-5");
        Files.createDirectories(dir);
        Files.write(dir.resolve("data"), copy);
        Files.write(dir.resolve("index"), index);
        List<DataFileReader.Damage> damage = new ArrayList<>();
        Map<Long, byte[]> got = readAll(new Path(dir.toString()), damage);
        assertEquals(GROUPS.size() - 1, got.size());
        assertTrue(damage.get(0).what, damage.get(0).what.contains("runs past the end of the file"));
    }
}
