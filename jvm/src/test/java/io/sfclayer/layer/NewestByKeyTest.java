package io.sfclayer.layer;

import org.junit.Test;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

/** The merge-by-key rule reads and delta folds share, against a LinkedHashMap model (newest wins, first place kept). */
public class NewestByKeyTest {
    @Test
    public void aLaterTileReplacesAnEarlierOneInItsPlace() {
        NewestByKey m = new NewestByKey(true);
        byte[] buf = {10, 11, 12, 13, 14, 15};
        m.put(1, 2, 0, buf, 0, 2, 0);      // key A from file 0
        m.put(3, 4, 5, buf, 2, 1, 0);      // key B from file 0
        m.put(1, 2, 0, buf, 3, 3, 2);      // key A again, from file 2: replaces, in A's place
        m.put(1, 2, 7, buf, 5, 1, 1);      // same col and row, another time: another key
        assertEquals(3, m.size());
        assertArrayEquals(new byte[] {13, 14, 15}, m.record(0));
        assertEquals(2, m.source(0));
        assertArrayEquals(new byte[] {12}, m.record(1));
        assertArrayEquals(new byte[] {15}, m.record(2));
        assertTrue(m.contains(3, 4, 5));
        assertFalse(m.contains(3, 4, 0));
        m.clear();
        assertEquals(0, m.size());
        assertFalse(m.contains(1, 2, 0));
    }

    @Test
    public void randomOffersMergeAsTheModel() {
        Random rnd = new Random(39);
        for (int round = 0; round < 200; round++) {
            NewestByKey m = new NewestByKey(false);
            Map<List<Integer>, Integer> model = new LinkedHashMap<>();
            int offers = rnd.nextInt(40);
            byte[] buf = new byte[offers];
            for (int i = 0; i < offers; i++) {
                buf[i] = (byte) i;
                List<Integer> key = List.of(rnd.nextInt(4), rnd.nextInt(4));
                m.put(key.get(0), key.get(1), 0L, buf, i, 1, i);
                model.put(key, i);
            }
            List<Integer> got = new ArrayList<>();
            for (int j = 0; j < m.size(); j++) {
                assertEquals(m.source(j), m.record(j)[0]);
                got.add(m.source(j));
            }
            assertEquals(new ArrayList<>(model.values()), got);
        }
    }
}
