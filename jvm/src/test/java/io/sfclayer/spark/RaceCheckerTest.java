package io.sfclayer.spark;

import io.sfclayer.format.LayerMetadata;
import io.sfclayer.testing.RaceChecker;
import io.sfclayer.testing.RaceOp;
import org.junit.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

/**
 * The race checker catches what it is for (issue 35): hand-made histories and layers (no storage),
 * one consistent, the others each with one fault a broken commit path would show.
 */
public class RaceCheckerTest {
    /** A layer as the checker reads it: each version's content and stamp. */
    private static final class FakeLayer implements RaceChecker.Reader {
        final TreeMap<Long, Map<Integer, Long>> content = new TreeMap<>();
        final TreeMap<Long, LayerMetadata> docs = new TreeMap<>();

        void put(long v, String writeId, String createdAt, Map<Integer, Long> c) {
            LayerMetadata md = new LayerMetadata();
            md.version = v;
            md.writeId = writeId;
            md.createdAt = createdAt;
            md.operation = "append";
            docs.put(v, md);
            content.put(v, c);
        }

        @Override
        public List<LayerMetadata> history() {
            return new ArrayList<>(docs.values());
        }

        @Override
        public Map<Integer, Long> scan(long v) {
            return content.get(v);
        }

        @Override
        public long count(long v) {
            return content.get(v).size();
        }

        @Override
        public Long lookup(long v, int col, int row) {
            return content.get(v).get(RaceOp.key(col, row));
        }

        @Override
        public Map<Integer, Long> asOf(long millis) {
            Map<Integer, Long> best = null;
            for (LayerMetadata md : docs.values()) {
                if (java.time.Instant.parse(md.createdAt).toEpochMilli() <= millis) {
                    best = content.get(md.version);
                }
            }
            return best;
        }

        @Override
        public String verify(long v) {
            return "{\"problems\":[]}";
        }
    }

    private static RaceOp op(int id, RaceOp.Kind kind, int[] box, RaceOp.Outcome outcome, long version, String writeId,
                             long start, long end, String createdAt) {
        RaceOp op = new RaceOp(id, 0, kind, box, -1, start);
        op.outcome = outcome;
        op.version = version;
        op.writeId = writeId;
        op.endMillis = end;
        op.createdAtMillis = createdAt == null ? -1 : java.time.Instant.parse(createdAt).toEpochMilli();
        return op;
    }

    private static final String T1 = "2026-01-01T00:00:01Z", T2 = "2026-01-01T00:00:02Z", T3 = "2026-01-01T00:00:03Z";

    /** op 0 writes (0..1, 0..1), op 1 appends (2, 2), op 2 deletes (0, 0); op 3's append was refused; op 4 unknown. */
    private static List<RaceOp> history() {
        long now = System.currentTimeMillis() + 10_000; // every operation "ends" after its stamp
        List<RaceOp> h = new ArrayList<>();
        h.add(op(0, RaceOp.Kind.APPEND, new int[] {0, 0, 1, 1}, RaceOp.Outcome.COMMITTED, 1, "w0", 0, now, T1));
        h.add(op(1, RaceOp.Kind.APPEND, new int[] {2, 2, 2, 2}, RaceOp.Outcome.COMMITTED, 2, "w1", 0, now, T2));
        h.add(op(2, RaceOp.Kind.DELETE, new int[] {0, 0, 0, 0}, RaceOp.Outcome.COMMITTED, 3, "w2", 0, now, T3));
        h.add(op(3, RaceOp.Kind.APPEND, new int[] {5, 5, 5, 5}, RaceOp.Outcome.CONFLICT, -1, null, 0, now, null));
        return h;
    }

    private static TreeMap<Integer, Long> state(int[][] tiles) {
        TreeMap<Integer, Long> m = new TreeMap<>();
        for (int[] t : tiles) {
            m.put(RaceOp.key(t[1], t[2]), RaceOp.value(t[0], t[1], t[2]));
        }
        return m;
    }

    /** The layer the history above makes: {op, col, row} per tile. */
    private static FakeLayer layer() {
        FakeLayer l = new FakeLayer();
        l.put(1, "w0", T1, state(new int[][] {{0, 0, 0}, {0, 0, 1}, {0, 1, 0}, {0, 1, 1}}));
        l.put(2, "w1", T2, state(new int[][] {{0, 0, 0}, {0, 0, 1}, {0, 1, 0}, {0, 1, 1}, {1, 2, 2}}));
        l.put(3, "w2", T3, state(new int[][] {{0, 0, 1}, {0, 1, 0}, {0, 1, 1}, {1, 2, 2}}));
        return l;
    }

    private static void assertViolation(List<RaceOp> h, FakeLayer l, String expected) throws Exception {
        try {
            RaceChecker.check(h, l, 7);
        } catch (AssertionError e) {
            assertTrue("the violation names " + expected + ": " + e.getMessage(), e.getMessage().contains(expected));
            assertTrue(e.getMessage(), e.getMessage().startsWith("race seed 7:"));
            return;
        }
        fail("no violation found; expected: " + expected);
    }

    @Test
    public void aConsistentHistoryPasses() throws Exception {
        String s = RaceChecker.check(history(), layer(), 7);
        assertTrue(s, s.contains("COMMITTED=3, CONFLICT=1") && s.contains("3 left in the log checked"));
    }

    @Test
    public void aLostAppendIsFound() throws Exception {
        FakeLayer l = layer();
        l.content.get(3L).remove(RaceOp.key(2, 2));
        assertViolation(history(), l, "version 3 (append) differs from the model: 1 tiles: [(2, 2) model 100202 read null]");
    }

    @Test
    public void aRefusedAppendThatLandedIsFound() throws Exception {
        FakeLayer l = layer();
        l.content.get(3L).put(RaceOp.key(5, 5), RaceOp.value(3, 5, 5));
        assertViolation(history(), l, "version 3 (append) differs from the model");
    }

    @Test
    public void aStampGoingBackIsFound() throws Exception {
        FakeLayer l = layer();
        l.docs.get(3L).createdAt = "2026-01-01T00:00:01.500Z";
        assertViolation(history(), l, "version 3 is stamped 2026-01-01T00:00:01.500Z, not after version 2's");
    }

    @Test
    public void anUnknownOutcomeIsPlacedByItsWriteIdAndAVersionNoOneMadeIsFound() throws Exception {
        List<RaceOp> h = history();
        h.add(op(4, RaceOp.Kind.APPEND, new int[] {9, 9, 9, 9}, RaceOp.Outcome.UNKNOWN, -1, "w4", 0,
            System.currentTimeMillis() + 10_000, null));
        FakeLayer l = layer();
        TreeMap<Integer, Long> v4 = new TreeMap<>(l.content.get(3L));
        v4.put(RaceOp.key(9, 9), RaceOp.value(4, 9, 9));
        l.put(4, "w4", "2026-01-01T00:00:04Z", v4);
        String s = RaceChecker.check(h, l, 7);
        assertTrue(s, s.contains("unknown outcomes 1 in and 0 out"));
        l.docs.get(4L).writeId = "someone-else";
        l.content.get(4L).put(RaceOp.key(9, 9), 1L); // neither its writeId nor its content is op 4's
        assertViolation(h, l, "version 4 was made by no operation the run knows of");
    }

    @Test
    public void aLaterOperationWithAnEarlierVersionIsFound() throws Exception {
        // op 2 (version 3) returned at 4 ms, before op 1 (version 2) began at 10 ms: op 1 should have the higher version
        List<RaceOp> h = history();
        RaceOp one = h.get(1);
        h.set(1, op(1, one.kind, one.box, one.outcome, one.version, one.writeId, 10, one.endMillis, T2));
        h.set(2, op(2, RaceOp.Kind.DELETE, new int[] {0, 0, 0, 0}, RaceOp.Outcome.COMMITTED, 3, "w2", 0, 4, T3));
        assertViolation(h, layer(), "returned before op 1");
    }

    /** History and layer with a delta append (op 5, version 4) over the consistent history's version 3. */
    private static List<RaceOp> withDeltaAppend(FakeLayer l) {
        List<RaceOp> h = history();
        long now = System.currentTimeMillis() + 10_000;
        h.add(op(5, RaceOp.Kind.DELTA_APPEND, new int[] {3, 3, 3, 4}, RaceOp.Outcome.COMMITTED, 4, "w5", 0, now,
            "2026-01-01T00:00:04Z"));
        TreeMap<Integer, Long> v4 = new TreeMap<>(l.content.get(3L));
        v4.put(RaceOp.key(3, 3), RaceOp.value(5, 3, 3));
        v4.put(RaceOp.key(3, 4), RaceOp.value(5, 3, 4));
        l.put(4, "w5", "2026-01-01T00:00:04Z", v4);
        return h;
    }

    @Test
    public void aDeltaAppendAndTheCompactionItStartedPass() throws Exception {
        FakeLayer l = layer();
        List<RaceOp> h = withDeltaAppend(l);
        // version 5: the compaction op 5 ran after its commit (no operation of the run returned it)
        l.put(5, "w5-compact", "2026-01-01T00:00:05Z", new TreeMap<>(l.content.get(4L)));
        l.docs.get(5L).operation = "compact";
        l.docs.get(5L).autoCompact = true;
        String s = RaceChecker.check(h, l, 7);
        assertTrue(s, s.contains("DELTA_APPEND=1") && s.contains("1 automatic compactions") && s.contains("5 left in the log"));
        l.content.get(5L).remove(RaceOp.key(3, 4)); // the compaction lost a tile of the delta it folded
        assertViolation(h, l, "version 5 (compact) differs from the model: 1 tiles: [(3, 4) model 500304 read null]");
    }

    @Test
    public void aDeltaAppendRefusedWithNoRestoreRunningIsFound() throws Exception {
        FakeLayer l = layer();
        List<RaceOp> h = withDeltaAppend(l);
        long now = System.currentTimeMillis() + 10_000;
        h.add(op(6, RaceOp.Kind.DELTA_APPEND, new int[] {0, 0, 0, 0}, RaceOp.Outcome.CONFLICT, -1, null, 100, 200,
            null));
        assertViolation(h, l, "op 6 (thread 0, DELTA_APPEND 0,0,0,0, 100 ms) CONFLICT: a delta append refused with no"
            + " restore running");
        // a restore of version 1 committed (version 5) while it ran: the refusal is the rule (FORMAT.md section 11)
        RaceOp restore = new RaceOp(7, 1, RaceOp.Kind.RESTORE, null, 1, 150);
        restore.outcome = RaceOp.Outcome.COMMITTED;
        restore.version = 5;
        restore.writeId = "w7";
        restore.endMillis = now;
        restore.createdAtMillis = java.time.Instant.parse("2026-01-01T00:00:05Z").toEpochMilli();
        h.add(restore);
        l.put(5, "w7", "2026-01-01T00:00:05Z", new TreeMap<>(l.content.get(1L)));
        l.docs.get(5L).operation = "restore";
        String s = RaceChecker.check(h, l, 7);
        assertTrue(s, s.contains("CONFLICT=2"));
    }

    @Test
    public void aRepairThatChangedContentIsFound() throws Exception {
        FakeLayer l = layer();
        List<RaceOp> h = history();
        h.add(op(8, RaceOp.Kind.REPAIR, null, RaceOp.Outcome.COMMITTED, 4, "w8", 0, System.currentTimeMillis() + 10_000,
            "2026-01-01T00:00:04Z"));
        l.put(4, "w8", "2026-01-01T00:00:04Z", new TreeMap<>(l.content.get(3L)));
        l.docs.get(4L).operation = "repair";
        String s = RaceChecker.check(h, l, 7);
        assertTrue(s, s.contains("REPAIR=1") && s.contains("4 left in the log"));
        l.content.get(4L).put(RaceOp.key(2, 2), 1L); // the rewritten file does not hold what it held
        assertViolation(h, l, "version 4 (repair) differs from the model: 1 tiles: [(2, 2) model 100202 read 1]");
    }
}
