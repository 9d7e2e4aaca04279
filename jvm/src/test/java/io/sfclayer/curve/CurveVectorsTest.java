package io.sfclayer.curve;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sfclayer.SfcLayerException;

import java.io.File;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.junit.BeforeClass;
import org.junit.Test;

/**
 * Checks the JVM curves against the golden vectors in tests/vectors/curves.json (written by
 * tests/vectors/generate.py from the Python implementation): same indexes, same ranges, same errors.
 */
public class CurveVectorsTest {
    private static Map<String, Object> vectors;

    @BeforeClass
    public static void load() throws Exception {
        String path = System.getProperty("sfclayer.vectors", "tests/vectors/curves.json");
        File f = new File(path);
        assertTrue("golden vectors missing at " + f.getAbsolutePath(), f.isFile());
        vectors = new ObjectMapper().readValue(f, new TypeReference<Map<String, Object>>() { });
    }

    @SuppressWarnings("unchecked")
    private static List<Map<String, Object>> section(String name) {
        List<Map<String, Object>> s = (List<Map<String, Object>>) vectors.get(name);
        assertTrue("no vectors in section " + name, s != null && !s.isEmpty());
        return s;
    }

    private static long l(Object o) {
        return ((Number) o).longValue();
    }

    private static int i(Object o) {
        return ((Number) o).intValue();
    }

    /** Numbers as Longs, so Jackson's Integer/Long choice does not matter. */
    static Map<String, Object> norm(Map<String, Object> m) {
        Map<String, Object> out = new java.util.TreeMap<>();
        for (Map.Entry<String, Object> e : m.entrySet()) {
            Object v = e.getValue();
            out.put(e.getKey(), v instanceof Number ? (Object) ((Number) v).longValue() : v);
        }
        return out;
    }

    @SuppressWarnings("unchecked")
    private static List<IndexRange> ranges(Object o) {
        List<IndexRange> out = new ArrayList<>();
        for (List<Object> r : (List<List<Object>>) o) out.add(new IndexRange(l(r.get(0)), l(r.get(1))));
        return out;
    }

    @Test
    public void z2() {
        for (Map<String, Object> v : section("z2")) {
            assertEquals(v.toString(), l(v.get("z")), Z2.encode(l(v.get("x")), l(v.get("y"))));
            assertArrayEquals(v.toString(), new long[] {l(v.get("x")), l(v.get("y"))}, Z2.decode(l(v.get("z"))));
        }
    }

    @Test
    public void z3() {
        for (Map<String, Object> v : section("z3")) {
            assertEquals(v.toString(), l(v.get("z")), Z3.encode(l(v.get("x")), l(v.get("y")), l(v.get("t"))));
            assertArrayEquals(v.toString(), new long[] {l(v.get("x")), l(v.get("y")), l(v.get("t"))},
                Z3.decode(l(v.get("z"))));
        }
    }

    @Test
    public void hilbert() {
        for (Map<String, Object> v : section("hilbert")) {
            int order = i(v.get("order"));
            assertEquals(v.toString(), l(v.get("d")), Hilbert.encode(l(v.get("x")), l(v.get("y")), order));
            assertArrayEquals(v.toString(), new long[] {l(v.get("x")), l(v.get("y"))},
                Hilbert.decode(l(v.get("d")), order));
        }
    }

    @Test
    public void z2Ranges() {
        for (Map<String, Object> v : section("z2_ranges")) {
            assertEquals(v.toString(), ranges(v.get("ranges")), Z2.ranges(l(v.get("xmin")), l(v.get("ymin")),
                l(v.get("xmax")), l(v.get("ymax")), i(v.get("max_ranges"))));
        }
    }

    @Test
    public void z3Ranges() {
        for (Map<String, Object> v : section("z3_ranges")) {
            assertEquals(v.toString(), ranges(v.get("ranges")), Z3.ranges(l(v.get("xmin")), l(v.get("ymin")),
                l(v.get("tmin")), l(v.get("xmax")), l(v.get("ymax")), l(v.get("tmax")), i(v.get("max_ranges"))));
        }
    }

    @Test
    public void hilbertRanges() {
        for (Map<String, Object> v : section("hilbert_ranges")) {
            assertEquals(v.toString(), ranges(v.get("ranges")), Hilbert.ranges(l(v.get("xmin")), l(v.get("ymin")),
                l(v.get("xmax")), l(v.get("ymax")), i(v.get("order")), i(v.get("max_ranges"))));
        }
        for (Map<String, Object> v : section("hilbert_max_index")) {
            assertEquals(v.toString(), l(v.get("max_index")), Hilbert.maxIndex(l(v.get("xmin")), l(v.get("ymin")),
                l(v.get("xmax")), l(v.get("ymax")), i(v.get("order"))));
        }
    }

    @Test
    public void mergeRanges() {
        for (Map<String, Object> v : section("merge_ranges")) {
            assertEquals(v.toString(), ranges(v.get("ranges")),
                RangeMerge.capRanges(ranges(v.get("input")), i(v.get("max_ranges"))));
        }
    }

    @Test
    public void formatMicros() {
        for (Map<String, Object> v : section("format_micros")) {
            assertEquals(v.get("iso"), TimeBounds.formatMicros(l(v.get("micros"))));
        }
    }

    @Test
    @SuppressWarnings("unchecked")
    public void primitiveErrors() {
        for (Map<String, Object> v : section("primitive_errors")) {
            List<Object> a = (List<Object>) v.get("args");
            String fn = (String) v.get("fn");
            try {
                switch (fn) {
                    case "z2_encode": Z2.encode(l(a.get(0)), l(a.get(1))); break;
                    case "z2_decode": Z2.decode(l(a.get(0))); break;
                    case "z3_encode": Z3.encode(l(a.get(0)), l(a.get(1)), l(a.get(2))); break;
                    case "z3_decode": Z3.decode(l(a.get(0))); break;
                    case "hilbert_encode": Hilbert.encode(l(a.get(0)), l(a.get(1)), i(a.get(2))); break;
                    case "hilbert_decode": Hilbert.decode(l(a.get(0)), i(a.get(1))); break;
                    case "z2_ranges": Z2.ranges(l(a.get(0)), l(a.get(1)), l(a.get(2)), l(a.get(3)), 0); break;
                    case "z3_ranges":
                        Z3.ranges(l(a.get(0)), l(a.get(1)), l(a.get(2)), l(a.get(3)), l(a.get(4)), l(a.get(5)), 0);
                        break;
                    case "hilbert_ranges":
                        Hilbert.ranges(l(a.get(0)), l(a.get(1)), l(a.get(2)), l(a.get(3)), i(a.get(4)), 0);
                        break;
                    default: fail("unknown fn " + fn);
                }
                fail(fn + a + " should have failed");
            } catch (SfcLayerException.InvalidArgument e) {
                assertEquals(v.get("message"), SfcLayerException.reason(e));
            }
        }
    }

    @Test
    @SuppressWarnings("unchecked")
    public void keyIndexes() {
        for (Map<String, Object> c : section("key_indexes")) {
            Map<String, Object> json = (Map<String, Object>) c.get("json");
            KeyIndex ki = KeyIndex.fromJson(json);
            String ctx = json.toString();
            assertEquals(ctx, norm(json), norm(ki.toJson()));
            assertEquals(ctx, l(c.get("max_index")), ki.maxIndex());
            assertEquals(ctx, c.get("str"), ki.toString());
            for (Map<String, Object> k : (List<Map<String, Object>>) c.get("keys")) {
                long idx = ki.isSpaceTime()
                    ? ki.index(i(k.get("col")), i(k.get("row")), l(k.get("time")))
                    : ki.index(i(k.get("col")), i(k.get("row")));
                assertEquals(ctx + " " + k, l(k.get("index")), idx);
                List<Object> d = (List<Object>) k.get("decoded");
                long[] want = new long[d.size()];
                for (int j = 0; j < want.length; j++) want[j] = l(d.get(j));
                assertArrayEquals(ctx + " " + k, want, ki.decode(idx));
            }
            for (Map<String, Object> k : (List<Map<String, Object>>) c.get("out_of_bounds")) {
                try {
                    if (ki.isSpaceTime()) ki.index(i(k.get("col")), i(k.get("row")), l(k.get("time")));
                    else ki.index(i(k.get("col")), i(k.get("row")));
                    fail(ctx + " accepted " + k);
                } catch (SfcLayerException.KeyOutOfBounds e) {
                    assertEquals(k.get("message"), SfcLayerException.reason(e));
                }
            }
            for (Map<String, Object> k : (List<Map<String, Object>>) c.get("decode_invalid")) {
                try {
                    ki.decode(l(k.get("index")));
                    fail(ctx + " decoded " + k);
                } catch (SfcLayerException.KeyOutOfBounds e) {
                    assertEquals(k.get("message"), SfcLayerException.reason(e));
                }
            }
            for (Map<String, Object> q : (List<Map<String, Object>>) c.get("ranges")) {
                long t0 = q.get("timeMin") == null ? Long.MIN_VALUE : l(q.get("timeMin"));
                long t1 = q.get("timeMax") == null ? Long.MAX_VALUE : l(q.get("timeMax"));
                QueryBox box = QueryBox.of(i(q.get("colMin")), i(q.get("rowMin")), i(q.get("colMax")),
                    i(q.get("rowMax")), t0, t1);
                assertEquals(ctx + " " + q, ranges(q.get("ranges")), ki.ranges(box, i(q.get("max_ranges"))));
            }
        }
    }

    @Test
    @SuppressWarnings("unchecked")
    public void invalidKeyIndexes() {
        for (Map<String, Object> c : section("invalid_key_indexes")) {
            try {
                KeyIndex.fromJson((Map<String, Object>) c.get("json"));
                fail("accepted " + c.get("json"));
            } catch (SfcLayerException.InvalidArgument e) {
                assertEquals(c.get("message"), SfcLayerException.reason(e));
            }
        }
        for (Map<String, Object> c : section("valid_key_index_json")) {
            KeyIndex ki = KeyIndex.fromJson((Map<String, Object>) c.get("json"));
            assertEquals(norm((Map<String, Object>) c.get("normalized")), norm(ki.toJson()));
        }
    }
}
