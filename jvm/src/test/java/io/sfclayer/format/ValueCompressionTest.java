package io.sfclayer.format;

import com.github.luben.zstd.Zstd;
import io.sfclayer.SfcLayerException;
import org.junit.Test;

import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.zip.Inflater;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotSame;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

public class ValueCompressionTest {

    static byte[] sample(Random r, int n, boolean compressible) {
        byte[] b = new byte[n];
        if (compressible) {
            for (int i = 0; i < n; i++) b[i] = (byte) ((i / 7) % 5 + (r.nextInt(20) == 0 ? r.nextInt(3) : 0));
        } else {
            r.nextBytes(b);
        }
        return b;
    }

    @Test
    public void parse() {
        assertSame(ValueCompression.NONE, ValueCompression.parse("none"));
        assertSame(ValueCompression.DEFLATE, ValueCompression.parse("DEFLATE"));
        assertSame(ValueCompression.ZSTD, ValueCompression.parse(" zstd "));
        for (ValueCompression c : ValueCompression.values()) {
            assertSame(c, ValueCompression.parse(c.optionName()));
        }
        assertEquals("deflate", ValueCompression.DEFLATE.optionName());
        for (String bad : new String[]{"lz4", "", "gzip"}) {
            try {
                ValueCompression.parse(bad);
                fail(bad);
            } catch (SfcLayerException.InvalidArgument e) {
                assertTrue(SfcLayerException.reason(e), SfcLayerException.reason(e).contains("'" + bad + "'"));
                assertTrue(SfcLayerException.reason(e), SfcLayerException.reason(e).contains("none, deflate, zstd"));
            }
        }
        try {
            ValueCompression.parse(null);
            fail();
        } catch (SfcLayerException.InvalidArgument e) {
            assertTrue(SfcLayerException.reason(e), SfcLayerException.reason(e).contains("none, deflate, zstd"));
        }
    }

    @Test
    public void roundTrips() {
        Random r = new Random(1);
        for (ValueCompression c : ValueCompression.values()) {
            for (int n : new int[]{0, 1, 5, 100, 4096, 70_000, 3_000_000}) {
                for (boolean compressible : new boolean[]{false, true}) {
                    byte[] data = sample(r, n, compressible);
                    byte[] stored = c.compress(data, 0, n);
                    assertArrayEquals(c + " " + n, data, c.decompress(stored, 0, stored.length));
                    if (c != ValueCompression.NONE && compressible && n > 1000) {
                        assertTrue(c + " compresses", stored.length < n / 3);
                    }
                    // slices of larger arrays, both ways
                    byte[] padded = new byte[n + 9];
                    System.arraycopy(data, 0, padded, 4, n);
                    byte[] stored2 = c.compress(padded, 4, n);
                    assertArrayEquals(stored, stored2);
                    byte[] paddedStored = new byte[stored.length + 3];
                    System.arraycopy(stored, 0, paddedStored, 2, stored.length);
                    assertArrayEquals(data, c.decompress(paddedStored, 2, stored.length));
                }
            }
        }
    }

    @Test
    public void noneReturnsTheInputWhenItCoversTheArray() {
        byte[] b = {1, 2, 3};
        assertSame(b, ValueCompression.NONE.compress(b, 0, 3));
        assertSame(b, ValueCompression.NONE.decompress(b, 0, 3));
        byte[] slice = ValueCompression.NONE.compress(b, 1, 2);
        assertNotSame(b, slice);
        assertArrayEquals(new byte[]{2, 3}, slice);
    }

    static int prefix(byte[] s) {
        return ((s[0] & 0xFF) << 24) | ((s[1] & 0xFF) << 16) | ((s[2] & 0xFF) << 8) | (s[3] & 0xFF);
    }

    @Test
    public void storedFormsAreStandardZlibAndZstd() throws Exception {
        byte[] data = sample(new Random(2), 100_000, true);
        byte[] d = ValueCompression.DEFLATE.compress(data, 0, data.length);
        assertEquals(data.length, prefix(d));
        assertEquals(0x78, d[4] & 0xFF); // zlib header
        Inflater inf = new Inflater();
        inf.setInput(d, 4, d.length - 4);
        byte[] out = new byte[data.length];
        assertEquals(data.length, inf.inflate(out));
        assertTrue(inf.finished());
        assertArrayEquals(data, out);

        byte[] z = ValueCompression.ZSTD.compress(data, 0, data.length);
        assertEquals(data.length, prefix(z));
        byte[] frame = Arrays.copyOfRange(z, 4, z.length);
        assertEquals(0xFD2FB528, (frame[0] & 0xFF) | (frame[1] & 0xFF) << 8 | (frame[2] & 0xFF) << 16 | (frame[3] & 0xFF) << 24);
        assertEquals(data.length, Zstd.getFrameContentSize(frame));
        assertArrayEquals(data, Zstd.decompress(frame, data.length));
    }

    @Test
    public void corruptStoredFormsAreCorruptLayer() {
        Random r = new Random(3);
        byte[] data = sample(r, 20_000, true);
        for (ValueCompression c : new ValueCompression[]{ValueCompression.DEFLATE, ValueCompression.ZSTD}) {
            byte[] stored = c.compress(data, 0, data.length);
            // every truncation
            for (int len = 0; len < stored.length; len += (len < 64 ? 1 : 97)) {
                assertCorrupt(c, Arrays.copyOf(stored, len));
            }
            // wrong declared length, trailing bytes, garbage
            byte[] wrong = stored.clone();
            wrong[3]++;
            assertCorrupt(c, wrong);
            byte[] huge = stored.clone();
            huge[0] = 0x7F;
            assertCorrupt(c, huge);
            byte[] negative = stored.clone();
            negative[0] = (byte) 0x80;
            assertCorrupt(c, negative);
            assertCorrupt(c, Arrays.copyOf(stored, stored.length + 1));
            byte[] garbage = new byte[500];
            r.nextBytes(garbage);
            garbage[0] = 0;
            garbage[1] = 0;
            assertCorrupt(c, garbage);
            // Random mutations never escape as another exception. Zstd frames carry an xxhash64
            // of the content, so a mutation is caught or harmless; zlib's adler32 is weaker
            // (a flip that moves a match in this repetitive data can go unnoticed).
            for (int round = 0; round < 500; round++) {
                byte[] m = stored.clone();
                int i = 4 + r.nextInt(m.length - 4);
                m[i] ^= (byte) (1 << r.nextInt(8));
                try {
                    byte[] out = c.decompress(m, 0, m.length);
                    if (c == ValueCompression.ZSTD) assertArrayEquals(data, out);
                    else assertEquals(data.length, out.length);
                } catch (SfcLayerException.CorruptLayer expected) {
                    assertTrue(SfcLayerException.reason(expected), SfcLayerException.reason(expected).startsWith("corrupt compressed tile group ("));
                }
            }
        }
    }

    static void assertCorrupt(ValueCompression c, byte[] stored) {
        try {
            c.decompress(stored, 0, stored.length);
            fail(c + ": expected CorruptLayer for " + stored.length + " bytes");
        } catch (SfcLayerException.CorruptLayer e) {
            assertTrue(SfcLayerException.reason(e), SfcLayerException.reason(e).startsWith("corrupt compressed tile group (" + c.optionName() + "): "));
        }
    }

    @Test
    public void threadSafe() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            Future<?>[] fs = new Future<?>[8];
            for (int t = 0; t < fs.length; t++) {
                final int seed = t;
                fs[t] = pool.submit(() -> {
                    Random r = new Random(seed);
                    for (int i = 0; i < 200; i++) {
                        byte[] data = sample(r, r.nextInt(50_000), r.nextBoolean());
                        for (ValueCompression c : ValueCompression.values()) {
                            byte[] s = c.compress(data, 0, data.length);
                            assertArrayEquals(data, c.decompress(s, 0, s.length));
                        }
                    }
                    return null;
                });
            }
            for (Future<?> f : fs) f.get();
        } finally {
            pool.shutdownNow();
        }
    }
}
