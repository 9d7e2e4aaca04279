package io.sfclayer.layer;

import io.sfclayer.SfcLayerException;
import io.sfclayer.codec.Varint;
import io.sfclayer.curve.KeyBounds;
import io.sfclayer.curve.KeyIndex;
import io.sfclayer.curve.TimeBounds;
import io.sfclayer.format.DataFileWriter;
import io.sfclayer.format.ValueCompression;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

import java.util.Arrays;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

/** GroupWriter: duplicate keys found in linear time, groups over the size limit refused by name (issue 12). */
public class GroupWriterTest {
    @Rule
    public TemporaryFolder tmp = new TemporaryFolder();

    private static final long YEAR = 366L * 86_400_000_000L;
    private final KeyIndex z3 = KeyIndex.z3(new KeyBounds(0, 0, 9, 9), new TimeBounds(0, 10 * YEAR, YEAR));

    /** A space-time tile record: col, row, time as Avro varints, then {@code valueBytes} bytes of value. */
    private static byte[] record(int col, int row, long time, int valueBytes) {
        byte[] b = new byte[30 + valueBytes];
        int p = Varint.writeInt(b, 0, col);
        p = Varint.writeInt(b, p, row);
        p = Varint.writeLong(b, p, time);
        return Arrays.copyOf(b, p + valueBytes);
    }

    private GroupWriter writer(long maxGroupBytes) throws Exception {
        DataFileWriter files = new DataFileWriter(new Configuration(), new Path(tmp.newFolder().toURI()), 0,
            64L << 20, 4, "w");
        return new GroupWriter(files, ValueCompression.NONE, z3, maxGroupBytes);
    }

    /** 200,000 tiles in one group (one cell, one yearly bin): the pairwise check took minutes. */
    @Test(timeout = 20000)
    public void aLargeGroupIsCheckedInLinearTime() throws Exception {
        GroupWriter w = writer(GroupWriter.DEFAULT_MAX_GROUP_BYTES);
        long index = z3.index(3, 4, 0);
        for (int i = 0; i < 200_000; i++) w.add(index, record(3, 4, i, 4));
        try {
            w.add(index, record(3, 4, 123_456, 4));
            fail("duplicate accepted");
        } catch (SfcLayerException.InvalidInput e) {
            assertTrue(SfcLayerException.reason(e), SfcLayerException.reason(e).contains("duplicate key (col=3, row=4, time="));
        }
        w.abort();
    }

    @Test
    public void duplicatesAreFoundInEveryGroupNotOnlyTheFirst() throws Exception {
        GroupWriter w = writer(GroupWriter.DEFAULT_MAX_GROUP_BYTES);
        for (int i = 0; i < 100; i++) w.add(z3.index(1, 1, 0), record(1, 1, i, 4));
        w.add(z3.index(2, 1, 0), record(2, 1, 5, 4));
        try {
            w.add(z3.index(2, 1, 0), record(2, 1, 5, 4));
            fail("duplicate accepted");
        } catch (SfcLayerException.InvalidInput e) {
            assertTrue(SfcLayerException.reason(e), SfcLayerException.reason(e).contains("duplicate key (col=2, row=1"));
        }
        w.abort();
    }

    @Test
    public void aGroupOverTheLimitNamesItsIndexAndSize() throws Exception {
        GroupWriter w = writer(1 << 20);
        long index = z3.index(5, 6, 0);
        for (int i = 0; i < 17; i++) w.add(index, record(5, 6, i, 60_000)); // 17 x ~60 KB < 1 MiB
        try {
            w.add(index, record(5, 6, 99, 60_000));
            fail("a group over the limit was accepted");
        } catch (SfcLayerException.InvalidInput e) {
            String m = SfcLayerException.reason(e);
            assertTrue(m, m.contains("SFC index " + index) && m.contains("18 tiles") && m.contains("1048576 bytes"));
            assertTrue(m, m.contains("maxGroupBytes"));
        }
        w.abort();
    }

    @Test
    public void theLimitIsCheckedWhenMade() {
        for (long bad : new long[] {0, -1, (1L << 30) + 1, 3L << 30}) {
            try {
                writer(bad);
                fail("accepted maxGroupBytes " + bad);
            } catch (SfcLayerException.InvalidArgument e) {
                assertTrue(SfcLayerException.reason(e), SfcLayerException.reason(e).startsWith("maxGroupBytes: " + bad + " is out of range (1.."));
            } catch (Exception e) {
                throw new AssertionError(e);
            }
        }
        assertEquals(256L << 20, GroupWriter.DEFAULT_MAX_GROUP_BYTES);
    }

    /**
     * Writes {@code n} one-tile groups of {@code valueBytes} at z indexes 0..n-1 as one run (and, with
     * {@code secondRun}, one more group after an endFile: a run of one small file); returns the files.
     */
    private java.util.List<io.sfclayer.format.DataFile> run(java.io.File dir, int n, int valueBytes, boolean merge,
                                                          boolean secondRun) throws Exception {
        KeyIndex z = KeyIndex.z(new KeyBounds(0, 0, 63, 63));
        DataFileWriter files = new DataFileWriter(new Configuration(), new Path(dir.toURI()), 3, 64 << 10, 4, "w");
        GroupWriter w = new GroupWriter(files, ValueCompression.DEFLATE, z, GroupWriter.DEFAULT_MAX_GROUP_BYTES);
        if (merge) {
            w.mergeSmallTails((64 << 10) / 4);
        }
        java.util.Random random = new java.util.Random(7);
        for (int i = 0; i < n; i++) {
            long[] key = z.decode(i);
            byte[] r = new byte[8 + valueBytes];
            int p = Varint.writeInt(r, 0, (int) key[0]);
            p = Varint.writeInt(r, p, (int) key[1]);
            byte[] value = new byte[valueBytes];
            random.nextBytes(value); // incompressible
            System.arraycopy(value, 0, r, p, valueBytes);
            w.add(i, Arrays.copyOf(r, p + valueBytes));
        }
        if (secondRun) {
            w.endFile();
            w.add(n + 10, record2(z, n + 10));
        }
        w.close();
        return w.files();
    }

    private static byte[] record2(KeyIndex z, long index) {
        long[] key = z.decode(index);
        byte[] r = new byte[20];
        int p = Varint.writeInt(r, 0, (int) key[0]);
        p = Varint.writeInt(r, p, (int) key[1]);
        return Arrays.copyOf(r, p + 4);
    }

    /** Indexes of every group of the MapFile, read back with DataFileReader. */
    private static java.util.List<Long> indexes(java.io.File dir, String name) throws Exception {
        java.util.List<Long> out = new java.util.ArrayList<>();
        try (io.sfclayer.format.DataFileReader r = new io.sfclayer.format.DataFileReader(new Configuration(),
                new Path(new java.io.File(dir, name).toURI()))) {
            while (r.next()) {
                out.add(r.index());
            }
        }
        return out;
    }

    /** An update's run that spills a little over a block ends in two balanced files, not a full one and a small one. */
    @Test
    public void aSmallTailIsRebalancedWithTheFileBeforeIt() throws Exception {
        long block = 64 << 10;
        // ~70 KiB of data in one run: rolled at the block size it ends with a ~6 KiB tail
        java.io.File plainDir = tmp.newFolder();
        java.util.List<io.sfclayer.format.DataFile> plain = run(plainDir, 70, 1000, false, true);
        assertEquals(3, plain.size());
        assertTrue(plain.get(1).dataBytes < block / 4); // the small tail an update must not leave

        java.io.File dir = tmp.newFolder();
        java.util.List<io.sfclayer.format.DataFile> files = run(dir, 70, 1000, true, true);
        assertEquals(3, files.size());
        io.sfclayer.format.DataFile a = files.get(0);
        io.sfclayer.format.DataFile b = files.get(1);
        assertTrue(a.dataBytes + " " + b.dataBytes, a.dataBytes >= block / 4 && b.dataBytes >= block / 4);
        assertTrue(a.dataBytes <= block && b.dataBytes <= block);
        // written under names of their own (partition 3 + 100000), not moved out of the way first: a
        // rename on an object store copies every byte
        assertEquals("part-r-100003-0", a.name);
        assertEquals(new io.sfclayer.format.DataFileName(100003, b.firstIndex).name(), b.name);
        assertEquals(a.lastIndex + 1, b.firstIndex);
        assertEquals(70, a.records + b.records);
        assertEquals(plain.get(0).records + plain.get(1).records, a.records + b.records);
        // what is on disk is exactly these files, holding every group once, in order
        java.util.List<Long> all = new java.util.ArrayList<>(indexes(dir, a.name));
        assertEquals(a.records, all.size());
        all.addAll(indexes(dir, b.name));
        for (int i = 0; i < 70; i++) {
            assertEquals(Long.valueOf(i), all.get(i));
        }
        java.util.Set<String> onDisk = new java.util.TreeSet<>(Arrays.asList(dir.list()));
        assertEquals(new java.util.TreeSet<>(Arrays.asList(a.name, b.name, files.get(2).name)), onDisk);
        // the second run is one small file with nothing rewritten before it in its run: left alone
        assertEquals(1, files.get(2).records);
    }
}
