package io.sfclayer.lookup;

import io.sfclayer.SfcLayerException;
import org.junit.Test;

import java.util.List;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

/** The registry of open tile sources: handles, tokens, owners, and what a closed handle answers. */
public class OpenSourcesTest {
    /** A source that only knows whether it is closed (the registry never calls its look-ups). */
    private static final class Source implements TileSource<String> {
        boolean closed;

        @Override public byte[] getOrNull(int col, int row, long timeMicros) { return null; }
        @Override public void getMany(int[] cols, int[] rows, long[] timesMicros, Answers answers) { }
        @Override public String boxQuery(String spec) { return spec; }
        @Override public long query(String q, Batches batches) { return 0; }
        @Override public long count(String q) { return 0; }
        @Override public void close() { closed = true; }
    }

    @Test
    public void handlesAreNewAndATokenReachesOnlyItsOwnSource() {
        OpenSources<Source> open = new OpenSources<>("look-up handle");
        Source a = new Source();
        Source b = new Source();
        OpenSources.Entry<Source> ea = open.add(a, new byte[] {1, 2, (byte) 0xab}, "s1");
        OpenSources.Entry<Source> eb = open.add(b, new byte[] {9, 9, 9}, "s2");
        assertTrue(ea.handle() != eb.handle());
        assertEquals("0102ab", ea.tokenHex());
        assertSame(a, open.get(ea.handle()).source());
        assertSame(a, open.get(ea.handle(), "0102AB").source()); // hex in either case
        SfcLayerException.InvalidArgument wrong = assertThrows(SfcLayerException.InvalidArgument.class,
            () -> open.get(ea.handle(), eb.tokenHex()));
        assertEquals("look-up handle " + ea.handle() + " is closed", SfcLayerException.reason(wrong));
        assertThrows(SfcLayerException.InvalidArgument.class, () -> open.get(ea.handle(), "not hex"));
        assertThrows(SfcLayerException.InvalidArgument.class, () -> open.get(ea.handle(), null));
        assertNull(open.remove(ea.handle(), "090909")); // someone else's token removes nothing
        assertEquals(2, open.size());
        assertSame(ea, open.remove(ea.handle(), "0102ab"));
        assertNull(open.remove(ea.handle()));
        assertThrows(SfcLayerException.InvalidArgument.class, () -> open.get(ea.handle()));
        assertTrue(!a.closed); // closing is the caller's
    }

    @Test
    public void anOwnersSourcesLeaveTogether() {
        OpenSources<Source> open = new OpenSources<>("GeoTrellis look-up handle");
        OpenSources.Entry<Source> e1 = open.add(new Source(), new byte[1], "s1");
        OpenSources.Entry<Source> e2 = open.add(new Source(), new byte[1], "s2");
        OpenSources.Entry<Source> e3 = open.add(new Source(), new byte[1], "s1");
        open.add(new Source(), new byte[1], null);
        List<OpenSources.Entry<Source>> gone = open.removeOwner("s1");
        assertEquals(2, gone.size());
        assertTrue(gone.contains(e1) && gone.contains(e3));
        assertEquals(2, open.size());
        assertSame(e2, open.get(e2.handle()));
        SfcLayerException.InvalidArgument e = assertThrows(SfcLayerException.InvalidArgument.class,
            () -> open.get(e1.handle()));
        assertEquals("GeoTrellis look-up handle " + e1.handle() + " is closed", SfcLayerException.reason(e));
    }
}
