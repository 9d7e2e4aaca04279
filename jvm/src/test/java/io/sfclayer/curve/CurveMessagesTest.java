package io.sfclayer.curve;

import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import io.sfclayer.SfcLayerException;
import java.util.HashMap;
import java.util.Map;
import java.util.regex.Pattern;
import org.junit.Test;

/**
 * The curves' messages for bad arguments follow the project's one pattern, {@code <name>: <value>
 * <why> (<allowed>)} (python/sfclayer/_args.py writes it down; tests/test_messages.py checks the
 * Python side). The exact texts shared with Python are pinned by tests/vectors/curves.json.
 */
public class CurveMessagesTest {
    private static void check(Runnable call, Class<? extends SfcLayerException> error, String name, String value) {
        try {
            call.run();
            fail("no error for " + name + " " + value);
        } catch (SfcLayerException e) {
            assertTrue(e.getClass().getName(), error.isInstance(e));
            Pattern shape = Pattern.compile("^" + Pattern.quote(name + ": " + value) + " \\S.* \\(.+\\)$");
            assertTrue(SfcLayerException.reason(e), shape.matcher(SfcLayerException.reason(e)).matches());
        }
    }

    private static Map<String, Object> json(Object... kv) {
        Map<String, Object> m = new HashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }

    @Test
    public void primitivesNameTheValueAndTheRange() {
        Class<SfcLayerException.InvalidArgument> bad = SfcLayerException.InvalidArgument.class;
        check(() -> Z2.encode(-1, 0), bad, "z2 x", "-1");
        check(() -> Z2.decode(-1), bad, "z2 index", "-1");
        check(() -> Z3.encode(0, 0, -5), bad, "z3 t", "-5");
        check(() -> Z3.decode(-1), bad, "z3 index", "-1");
        check(() -> Hilbert.encode(4, 0, 2), bad, "hilbert x", "4");
        check(() -> Hilbert.encode(0, 0, 32), bad, "hilbert order", "32");
        check(() -> Hilbert.decode(16, 2), bad, "hilbert index", "16");
        check(() -> Z2.ranges(5, 0, 3, 0, 0), bad, "z2 query box", "x 5..3, y 0..0");
        check(() -> new IndexRange(5, 3), bad, "index range", "[5, 3]");
    }

    @Test
    public void boundsAndKeyIndexesNameTheValueAndWhatIsAllowed() {
        Class<SfcLayerException.InvalidArgument> bad = SfcLayerException.InvalidArgument.class;
        check(() -> new KeyBounds(5, 0, 3, 9), bad, "key bounds", "cols 5..3");
        check(() -> new TimeBounds(0, 10, 0), bad, "time resolution", "0 us");
        check(() -> new QueryBox(3, 0, 1, 9, Long.MIN_VALUE, Long.MAX_VALUE), bad, "query box", "cols 3..1");
        check(() -> KeyIndex.create("zz", new KeyBounds(0, 0, 9, 9), null), bad, "key index kind", "\"zz\"");
        check(() -> KeyIndex.create("z3", new KeyBounds(0, 0, 9, 9), null), bad, "time bounds", "null");
        check(() -> KeyIndex.z(new KeyBounds(-1, 0, Integer.MAX_VALUE, 9)), bad, "key bounds",
            "cols -1..2147483647, rows 0..9");
        check(() -> KeyIndex.fromJson(json("kind", "z", "colMin", 1.5, "rowMin", 0, "colMax", 9, "rowMax", 9)),
            bad, "key index JSON \"colMin\"", "1.5");
        check(() -> KeyIndex.fromJson(json("kind", "z", "rowMin", 0, "colMax", 9, "rowMax", 9)),
            bad, "key index JSON \"colMin\"", "null");
    }

    @Test
    public void keysOutsideTheBoundsNameTheKeyAndTheBounds() {
        Class<SfcLayerException.KeyOutOfBounds> out = SfcLayerException.KeyOutOfBounds.class;
        KeyIndex z = KeyIndex.z(new KeyBounds(0, 0, 9, 9));
        check(() -> z.index(5, 90), out, "key", "(col=5, row=90)");
        check(() -> z.decode(-1), out, "index", "-1");
        check(() -> new TimeBounds(0, 10, 1).bin(11), out, "time", "1970-01-01T00:00:00.000011Z");
    }
}
