package io.sfclayer.lookup;

import io.sfclayer.SfcLayerException;
import org.junit.Test;

import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

/** The one framing of tile answers (socket and Spark Connect), read back by an independent decoder here. */
public class TileAnswersTest {
    /**
     * A source over a map of col to record (row and time ignored), answering in descending col order
     * (any order but the request's), failing with {@code failure} after {@code failAfter} answers.
     */
    private static final class Source implements TileSource<String> {
        final Map<Integer, byte[]> tiles = new HashMap<>();
        int failAfter = Integer.MAX_VALUE;
        Exception failure;

        @Override public byte[] getOrNull(int col, int row, long timeMicros) { return tiles.get(col); }

        @Override
        public void getMany(int[] cols, int[] rows, long[] timesMicros, Answers answers) throws IOException {
            Integer[] order = new Integer[cols.length];
            Arrays.setAll(order, i -> i);
            Arrays.sort(order, (a, b) -> Integer.compare(cols[b], cols[a]));
            int done = 0;
            for (int i : order) {
                if (done++ == failAfter) {
                    if (failure instanceof IOException) {
                        throw (IOException) failure;
                    }
                    throw (RuntimeException) failure;
                }
                answers.accept(i, tiles.get(cols[i]));
            }
        }

        @Override public String boxQuery(String spec) { return spec; }
        @Override public long query(String q, Batches batches) { return 0; }
        @Override public long count(String q) { return 0; }
        @Override public void close() { }
    }

    private static byte[] packed(int... cols) {
        ByteBuffer b = ByteBuffer.allocate(16 * cols.length);
        for (int c : cols) {
            b.putInt(c).putInt(0).putLong(0);
        }
        return b.array();
    }

    /** Decodes n × (position, answer): per position the record, "missing", or "error:" and the error text. */
    private static Object[] decode(byte[] bytes, int n) throws IOException {
        DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes));
        Object[] out = new Object[n];
        for (int k = 0; k < n; k++) {
            int i = in.readInt();
            assertNull("position " + i + " answered twice", out[i]);
            int len = in.readInt();
            if (len == -1) {
                out[i] = "missing";
            } else if (len == -2) {
                byte[] text = new byte[in.readInt()];
                in.readFully(text);
                out[i] = "error:" + new String(text, StandardCharsets.UTF_8);
            } else {
                byte[] r = new byte[len];
                in.readFully(r);
                out[i] = r;
            }
        }
        assertEquals("bytes after the last answer", -1, in.read());
        return out;
    }

    @Test
    public void everyKeyIsAnsweredOnceWithItsPositionRecordOrMiss() throws IOException {
        Source s = new Source();
        s.tiles.put(3, new byte[] {3, 3, 3});
        s.tiles.put(7, new byte[0]); // an empty record is a record, not a miss
        s.tiles.put(1, new byte[] {1});
        Object[] got = decode(TileAnswers.many(s, packed(3, 5, 7, 1, 3)), 5);
        assertArrayEquals(new byte[] {3, 3, 3}, (byte[]) got[0]);
        assertEquals("missing", got[1]);
        assertArrayEquals(new byte[0], (byte[]) got[2]);
        assertArrayEquals(new byte[] {1}, (byte[]) got[3]);
        assertArrayEquals(new byte[] {3, 3, 3}, (byte[]) got[4]);
        assertEquals(0, TileAnswers.many(s, new byte[0]).length);
    }

    @Test
    public void aSourceFailureIsTheAnswerOfEveryKeyNotAnsweredYet() throws IOException {
        Source s = new Source();
        s.tiles.put(9, new byte[] {9});
        s.tiles.put(8, new byte[] {8});
        s.failAfter = 2;
        s.failure = new SfcLayerException.CorruptLayer("file part-2 is damaged");
        Object[] got = decode(TileAnswers.many(s, packed(1, 9, 2, 8)), 4); // answered: 9, then 8
        assertArrayEquals(new byte[] {9}, (byte[]) got[1]);
        assertArrayEquals(new byte[] {8}, (byte[]) got[3]);
        String error = "error:" + SfcLayerException.CorruptLayer.class.getName() + "\tfile part-2 is damaged";
        assertEquals(error, got[0]);
        assertEquals(error, got[2]);

        s.failAfter = 0;
        s.failure = new IOException("disk gone");
        got = decode(TileAnswers.many(s, packed(9, 8)), 2);
        assertTrue(String.valueOf(got[0]), String.valueOf(got[0]).startsWith(
            "error:" + SfcLayerException.class.getName() + "\tjava.io.IOException: disk gone"));
        assertEquals(got[0], got[1]);
    }

    @Test
    public void aFailingOutputIsThrownNotAnswered() {
        Source s = new Source();
        s.tiles.put(1, new byte[100]);
        OutputStream broken = new OutputStream() {
            @Override
            public void write(int b) throws IOException {
                throw new IOException("client gone");
            }
        };
        IOException e = assertThrows(IOException.class, () -> TileAnswers.writeMany(s, new int[] {1}, new int[1],
            new long[1], new DataOutputStream(broken), TileAnswers.Pacing.NONE));
        assertEquals("client gone", e.getMessage());
    }

    @Test
    public void packedKeysOfABadLengthAreRefusedByName() {
        SfcLayerException.InvalidArgument e = assertThrows(SfcLayerException.InvalidArgument.class,
            () -> TileAnswers.many(new Source(), new byte[17]));
        assertTrue(e.getMessage(), e.getMessage().contains("16 bytes each"));
    }
}
