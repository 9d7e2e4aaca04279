package io.sfclayer.layer;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sfclayer.SfcLayerException;
import io.sfclayer.curve.KeyBounds;
import io.sfclayer.format.LayerMetadata;

import java.io.File;
import java.util.List;
import java.util.Map;

import org.junit.Test;

/**
 * Checks TileGrid against the golden cases in tests/vectors/tilegrid.json, which pytest checks
 * against sfclayer.grid.TileGrid: envelopes and the tiles a map box meets, touching edges included.
 */
public class TileGridVectorsTest {
    @SuppressWarnings("unchecked")
    private static List<Map<String, Object>> grids() throws Exception {
        // next to curves.json (the build passes that one's path)
        File curves = new File(System.getProperty("sfclayer.vectors", "tests/vectors/curves.json"));
        File f = new File(curves.getAbsoluteFile().getParentFile(), "tilegrid.json");
        assertTrue("golden cases missing at " + f.getAbsolutePath(), f.isFile());
        Map<String, Object> v = new ObjectMapper().readValue(f, new TypeReference<Map<String, Object>>() { });
        return (List<Map<String, Object>>) v.get("grids");
    }

    private static double[] doubles(Object o) {
        List<?> l = (List<?>) o;
        double[] out = new double[l.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = ((Number) l.get(i)).doubleValue();
        }
        return out;
    }

    private static int[] ints(Object o) {
        List<?> l = (List<?>) o;
        int[] out = new int[l.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = ((Number) l.get(i)).intValue();
        }
        return out;
    }

    private static TileGrid grid(Map<String, Object> g) {
        double[] e = doubles(g.get("extent"));
        int[] b = ints(g.get("bounds"));
        return new TileGrid(new LayerMetadata.Extent(e[0], e[1], e[2], e[3]), new KeyBounds(b[0], b[1], b[2], b[3]));
    }

    @Test
    @SuppressWarnings("unchecked")
    public void goldenCases() throws Exception {
        int boxes = 0;
        for (Map<String, Object> g : grids()) {
            TileGrid grid = grid(g);
            String name = (String) g.get("name");
            assertEquals(name, ((Number) g.get("tileWidth")).doubleValue(), grid.tileWidth(), 0);
            assertEquals(name, ((Number) g.get("tileHeight")).doubleValue(), grid.tileHeight(), 0);
            for (Map<String, Object> c : (List<Map<String, Object>>) g.get("envelopes")) {
                int[] k = ints(c.get("key"));
                assertArrayEquals(name + " " + c, doubles(c.get("envelope")), grid.envelope(k[0], k[1]), 0);
            }
            for (Map<String, Object> c : (List<Map<String, Object>>) g.get("boxes")) {
                double[] box = doubles(c.get("box"));
                int[] got = grid.keyBox(box[0], box[1], box[2], box[3]);
                if (c.get("keyBox") == null) {
                    assertNull(name + ": " + c.get("why"), got);
                } else {
                    assertArrayEquals(name + ": " + c.get("why"), ints(c.get("keyBox")), got);
                }
                boxes++;
            }
            for (Map<String, Object> c : (List<Map<String, Object>>) g.get("errors")) {
                double[] box = doubles(c.get("box"));
                try {
                    grid.keyBox(box[0], box[1], box[2], box[3]);
                    fail(name + ": no error for " + c);
                } catch (SfcLayerException.InvalidArgument e) {
                    assertTrue(e.getMessage(), e.getMessage().contains((String) c.get("match")));
                }
            }
        }
        assertTrue("too few golden boxes: " + boxes, boxes >= 10);
    }
}
