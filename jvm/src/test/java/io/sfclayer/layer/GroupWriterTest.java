package io.sfclayer.layer;

import io.sfclayer.SfcLayerException;
import io.sfclayer.curve.KeyBounds;
import io.sfclayer.curve.KeyIndex;
import io.sfclayer.curve.TimeBounds;
import io.sfclayer.format.DataFileWriter;
import io.sfclayer.format.ValueCompression;
import io.sfclayer.format.Varint;
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
            assertTrue(e.getMessage(), e.getMessage().contains("duplicate key (col=3, row=4, time="));
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
            assertTrue(e.getMessage(), e.getMessage().contains("duplicate key (col=2, row=1"));
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
            String m = e.getMessage();
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
                assertTrue(e.getMessage(), e.getMessage().startsWith("maxGroupBytes: " + bad + " is out of range (1.."));
            } catch (Exception e) {
                throw new AssertionError(e);
            }
        }
        assertEquals(256L << 20, GroupWriter.DEFAULT_MAX_GROUP_BYTES);
    }
}
