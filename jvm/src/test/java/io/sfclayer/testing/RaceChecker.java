package io.sfclayer.testing;

import io.sfclayer.format.LayerMetadata;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Checks a race run's history ({@link RaceHarness}) against a dict model, key → value. The log's
 * versions are the claimed order: walking them from 1, each version's content is the previous one's
 * with exactly one operation applied: an operation that returned that version (others returning it too
 * must have had nothing to do: a compaction, an empty delete, a restore of the newest), or else one whose
 * commit outcome was unknown or that failed by an injected fault (found by the writeId a CommitStateUnknown
 * names, by the content read after the run, or by what the run read of the next version).
 * Then: every scan the run read right after a commit, and up to 16 versions left in the log (full scan,
 * count, a look-up of a present and of an absent tile, time travel to its stamp, verify), equals the
 * model; createdAt increases with the version; an operation that ended before another began has a lower
 * version (linearizability in real time); an operation refused with ConcurrentUpdate is nowhere, an
 * unknown one wholly in or wholly out (its effect is in exactly one version's difference or in none);
 * no operation failed in any other way. Conflicts follow docs/FORMAT.md sections 6 and 11: a delta append
 * refused with ConcurrentUpdate must have run while a restore (a replace-type version) could commit; a
 * version no operation claims whose document is an automatic compaction ({@code "auto": true}, started by a
 * delta append) changes nothing (a vacuumed one is taken for one when no unknown operation explains it).
 */
public final class RaceChecker {
    /** Versions left in the log read through Spark at the end, at most (the newest among them). */
    private static final int LEFT_READ = 16;

    /** Stamps may lead the operation's end by this much (clocks of one machine: none expected). */
    private static final long SKEW_MILLIS = 1000;

    /** What the checker reads of the layer after the run. */
    public interface Reader {
        List<LayerMetadata> history() throws IOException;

        Map<Integer, Long> scan(long version);

        long count(long version);

        Long lookup(long version, int col, int row);

        Map<Integer, Long> asOf(long millis);

        String verify(long version) throws IOException;
    }

    private RaceChecker() {
    }

    /** Checks; returns a summary of what was checked, or throws AssertionError listing every violation. */
    public static String check(List<RaceOp> history, Reader reader, long seed) throws IOException {
        List<String> bad = new ArrayList<>();
        List<RaceOp> ops = new ArrayList<>(history);
        Map<Long, List<RaceOp>> claims = new TreeMap<>();
        List<RaceOp> unknown = new ArrayList<>();
        int[] outcomes = new int[RaceOp.Outcome.values().length];
        int[] kinds = new int[RaceOp.Kind.values().length];
        int deltaAppends = 0;
        int autoCompactions = 0;
        for (RaceOp op : ops) {
            outcomes[op.outcome.ordinal()]++;
            kinds[op.kind.ordinal()]++;
            deltaAppends += op.kind == RaceOp.Kind.DELTA_APPEND ? 1 : 0;
            if (op.outcome == RaceOp.Outcome.FAILED) {
                bad.add(op.toString());
            } else if (op.outcome == RaceOp.Outcome.UNKNOWN || op.outcome == RaceOp.Outcome.FAULTED) {
                unknown.add(op);
            } else if (op.outcome == RaceOp.Outcome.COMMITTED && op.version >= 1) {
                claims.computeIfAbsent(op.version, k -> new ArrayList<>()).add(op);
            }
        }
        List<LayerMetadata> log = reader.history();
        Map<Long, LayerMetadata> docs = new HashMap<>();
        long newest = 0;
        for (LayerMetadata md : log) {
            docs.put(md.version, md);
            newest = Math.max(newest, md.version);
        }
        for (long v : claims.keySet()) {
            newest = Math.max(newest, v);
        }

        // the model of every version, walking the log's order
        Map<Long, TreeMap<Integer, Long>> model = new HashMap<>();
        Map<Long, RaceOp> creator = new HashMap<>();
        Set<RaceOp> placed = new HashSet<>();
        model.put(0L, new TreeMap<>());
        for (long v = 1; v <= newest; v++) {
            TreeMap<Integer, Long> prev = model.get(v - 1);
            if (prev == null) {
                break; // reported below
            }
            List<RaceOp> cs = claims.getOrDefault(v, List.of());
            TreeMap<Integer, Long> state = null;
            if (!cs.isEmpty()) {
                for (RaceOp c : cs) {
                    TreeMap<Integer, Long> s = c.apply(prev, model.get(c.target));
                    if (c.kind == RaceOp.Kind.RESTORE && !model.containsKey(c.target)) {
                        continue;
                    }
                    boolean othersNoOps = true;
                    for (RaceOp o : cs) {
                        if (o != c && (o.writes()
                                || !o.apply(s, o.target == v ? s : model.get(o.target)).equals(s))) {
                            othersNoOps = false;
                        }
                    }
                    if (othersNoOps) {
                        state = s;
                        creator.put(v, c);
                        break;
                    }
                }
                if (state == null) {
                    bad.add("version " + v + " is claimed by " + cs + ": no one of them made it, the others having"
                        + " nothing to do");
                    break;
                }
            } else {
                LayerMetadata doc = docs.get(v);
                RaceOp found = null;
                for (RaceOp u : unknown) {
                    if (!placed.contains(u) && doc != null && u.writeId != null && u.writeId.equals(doc.writeId)) {
                        found = u;
                    }
                }
                if (found == null && doc != null && doc.autoCompact && "compact".equals(doc.operation)) {
                    // the compaction a delta append ran after its commit (compactAfterDeltas): no change of content
                    autoCompactions++;
                    model.put(v, prev);
                    continue;
                }
                if (found == null && doc != null && unknown.size() > placed.size()) {
                    Map<Integer, Long> read = reader.scan(v);
                    for (RaceOp u : unknown) {
                        if (!placed.contains(u) && u.apply(prev, model.get(u.target)).equals(read)) {
                            found = u;
                        }
                    }
                }
                if (found == null && doc == null) {
                    found = byNextRead(v, prev, unknown, placed, claims.getOrDefault(v + 1, List.of()), model);
                }
                if (found == null && doc == null && deltaAppends > 0
                        && noOpFitsNextRead(prev, claims.getOrDefault(v + 1, List.of()), model)) {
                    // vacuumed, made by no unknown operation: a delta append's compaction (no change of content;
                    // were it anything else, the versions after it would differ from the model)
                    autoCompactions++;
                    model.put(v, prev);
                    continue;
                }
                if (found == null) {
                    bad.add("version " + v + " was made by no operation the run knows of (committed or unknown)"
                        + (doc == null ? " and is no longer in the log" : ": " + doc.operation + " " + doc.writeId));
                    break;
                }
                placed.add(found);
                creator.put(v, found);
                state = found.apply(prev, model.get(found.target));
            }
            model.put(v, state);
        }

        // what the run read right after each commit
        int observed = 0;
        for (RaceOp op : ops) {
            if (op.observed != null) {
                observed++;
                TreeMap<Integer, Long> want = model.get(op.version);
                if (want != null && !want.equals(op.observed)) {
                    bad.add(op + ": read right after its commit, version " + op.version + " differs from the model: "
                        + diff(want, op.observed));
                }
            }
        }

        // what is left in the log: the stamps of every version; read through Spark, at most LEFT_READ of them (the
        // newest and others evenly spread: each was read right after its commit, and a vacuum keeps the versions
        // published while a commit ran, hundreds in a long run)
        int checked = 0;
        int every = Math.max(1, (log.size() + LEFT_READ - 2) / (LEFT_READ - 1));
        for (int i = 0; i < log.size(); i++) {
            LayerMetadata md = log.get(i);
            long v = md.version;
            if (i > 0 && log.get(i - 1).version == v - 1 && millisMicros(log.get(i - 1).createdAt)
                    >= millisMicros(md.createdAt)) {
                bad.add("version " + v + " is stamped " + md.createdAt + ", not after version " + (v - 1) + "'s "
                    + log.get(i - 1).createdAt);
            }
            TreeMap<Integer, Long> want = model.get(v);
            if (want == null || (i != log.size() - 1 && (log.size() - 1 - i) % every != 0)) {
                continue; // reported above, or not in the sample
            }
            checked++;
            Map<Integer, Long> got = reader.scan(v);
            if (!want.equals(got)) {
                bad.add("version " + v + " (" + md.operation + ") differs from the model: " + diff(want, got));
            }
            long n = reader.count(v);
            if (n != want.size()) {
                bad.add("version " + v + ": count() " + n + ", the model holds " + want.size());
            }
            int absent = absentKey(want);
            Long none = want.size() == 256 ? null : reader.lookup(v, absent / 100, absent % 100);
            if (none != null) {
                bad.add("version " + v + ": look-up of absent tile (" + absent / 100 + ", " + absent % 100 + ") found " + none);
            }
            if (!want.isEmpty()) {
                int k = want.lastKey();
                Long one = reader.lookup(v, k / 100, k % 100);
                if (!want.get(k).equals(one)) {
                    bad.add("version " + v + ": look-up of (" + k / 100 + ", " + k % 100 + ") found " + one + ", the model "
                        + want.get(k));
                }
            }
            String report = reader.verify(v);
            if (!report.contains("\"problems\":[]")) {
                bad.add("version " + v + " does not verify clean: " + report);
            }
            // time travel to its stamp (millisecond resolution): the newest version stamped in that millisecond
            long ms = millis(md.createdAt);
            long expect = v;
            for (int j = i + 1; j < log.size() && millis(log.get(j).createdAt) <= ms; j++) {
                expect = log.get(j).version;
            }
            Map<Integer, Long> asOf = reader.asOf(ms);
            if (model.containsKey(expect) && !model.get(expect).equals(asOf)) {
                bad.add("as of " + md.createdAt + " (version " + expect + "): " + diff(model.get(expect), asOf));
            }
        }

        // conflicts (docs/FORMAT.md sections 6 and 11): a delta append conflicts only with a replace-type version
        // (of this run's operations, a restore) committed while it ran; against anything else it rebases and wins
        for (RaceOp d : ops) {
            if (d.kind != RaceOp.Kind.DELTA_APPEND || d.outcome != RaceOp.Outcome.CONFLICT
                    || String.valueOf(d.error).contains("removed by a vacuum")
                    || String.valueOf(d.error).matches("(?s).* \\d+ times in a row.*")) {
                // section 6: a version it cannot check (vacuumed) refuses any commit, a delta append's too; and a
                // commit that lost the race for its number at every attempt gives up (nothing published, the model
                // checks that)
                continue;
            }
            boolean restoreMeanwhile = false;
            for (RaceOp r : ops) {
                boolean mayHaveCommitted = r.outcome == RaceOp.Outcome.COMMITTED || r.outcome == RaceOp.Outcome.UNKNOWN
                    || r.outcome == RaceOp.Outcome.FAULTED;
                long rEnd = r.endMillis <= 0 ? Long.MAX_VALUE : r.endMillis;
                if (r.kind == RaceOp.Kind.RESTORE && mayHaveCommitted && r.startMillis <= d.endMillis
                        && rEnd >= d.startMillis) {
                    restoreMeanwhile = true;
                }
            }
            if (!restoreMeanwhile) {
                bad.add(d + ": a delta append refused with no restore running at the same time (it conflicts only"
                    + " with write, overwrite and restore)");
            }
        }

        // stamps and real-time order of every commit the run saw
        List<RaceOp> made = new ArrayList<>();
        for (RaceOp op : ops) {
            if (op.outcome == RaceOp.Outcome.COMMITTED && op.version >= 1) {
                made.add(op);
                if (creator.get(op.version) == op && op.createdAtMillis > op.endMillis + SKEW_MILLIS) {
                    bad.add(op + ": stamped " + op.createdAtMillis + " after it returned (" + op.endMillis + ")");
                }
            }
        }
        for (RaceOp a : made) {
            for (RaceOp b : made) {
                if (a.endMillis < b.startMillis && a.version > b.version) {
                    bad.add(a + " returned before " + b + " began, yet has the higher version");
                }
                if (a.version < b.version && creator.get(a.version) == a && creator.get(b.version) == b
                        && a.createdAtMillis > b.createdAtMillis) {
                    bad.add(a + " is stamped after " + b + " (" + a.createdAtMillis + " > " + b.createdAtMillis + ")");
                }
            }
        }
        int in = placed.size();
        List<String> faultedIn = new ArrayList<>();
        for (RaceOp op : placed) {
            if (op.outcome == RaceOp.Outcome.FAULTED) {
                faultedIn.add("op " + op.id + " " + op.kind);
            }
        }
        String summary = "operations " + kindCounts(kinds) + ", outcomes " + counts(outcomes) + ", "
            + autoCompactions + " automatic compactions, " + model.size() + " versions modelled, " + observed
            + " read right after their commit, " + checked + " left in the log checked, unknown outcomes " + in
            + " in and " + (unknown.size() - in) + " out (of which failed by an injected fault yet committed: "
            + faultedIn + ")";
        if (!bad.isEmpty()) {
            StringBuilder sb = new StringBuilder("race seed " + seed + ": " + bad.size() + " violations (" + summary
                + "):\n");
            for (String b : bad) {
                sb.append(" - ").append(b).append('\n');
            }
            sb.append("history:\n");
            for (RaceOp op : ops) {
                sb.append("   ").append(op).append('\n');
            }
            throw new AssertionError(sb.toString());
        }
        return summary;
    }

    /**
     * A version vacuum removed before the run could read it, made by an operation whose outcome is not
     * known: the one unknown operation that, followed by the next version's operation, gives what the run
     * read of the next version right after its commit; null when none or several do.
     */
    private static RaceOp byNextRead(long v, TreeMap<Integer, Long> prev, List<RaceOp> unknown, Set<RaceOp> placed,
                                     List<RaceOp> next, Map<Long, TreeMap<Integer, Long>> model) {
        RaceOp found = null;
        for (RaceOp u : unknown) {
            if (placed.contains(u) || (u.kind == RaceOp.Kind.RESTORE && !model.containsKey(u.target))) {
                continue;
            }
            TreeMap<Integer, Long> s = u.apply(prev, model.get(u.target));
            for (RaceOp n : next) {
                if (n.observed != null && (n.kind != RaceOp.Kind.RESTORE || model.containsKey(n.target))
                        && n.apply(s, model.get(n.target)).equals(n.observed)) {
                    if (found != null && found != u) {
                        return null;
                    }
                    found = u;
                }
            }
        }
        return found;
    }

    /**
     * Whether a change of nothing at a vacuumed version fits what the run read of the next version right
     * after its commit (true when it read none of it: nothing says otherwise).
     */
    private static boolean noOpFitsNextRead(TreeMap<Integer, Long> prev, List<RaceOp> next,
                                            Map<Long, TreeMap<Integer, Long>> model) {
        boolean read = false;
        for (RaceOp n : next) {
            if (n.observed != null && (n.kind != RaceOp.Kind.RESTORE || model.containsKey(n.target))) {
                read = true;
                if (n.apply(prev, model.get(n.target)).equals(n.observed)) {
                    return true;
                }
            }
        }
        return !read;
    }

    private static String counts(int[] outcomes) {
        StringBuilder sb = new StringBuilder("{");
        for (RaceOp.Outcome o : RaceOp.Outcome.values()) {
            sb.append(sb.length() > 1 ? ", " : "").append(o).append('=').append(outcomes[o.ordinal()]);
        }
        return sb.append('}').toString();
    }

    private static String kindCounts(int[] kinds) {
        StringBuilder sb = new StringBuilder("{");
        for (RaceOp.Kind k : RaceOp.Kind.values()) {
            sb.append(sb.length() > 1 ? ", " : "").append(k).append('=').append(kinds[k.ordinal()]);
        }
        return sb.append('}').toString();
    }

    private static long millis(String createdAt) {
        return java.time.Instant.parse(createdAt).toEpochMilli();
    }

    private static long millisMicros(String createdAt) {
        java.time.Instant t = java.time.Instant.parse(createdAt);
        return t.getEpochSecond() * 1_000_000L + t.getNano() / 1000;
    }

    private static int absentKey(Map<Integer, Long> state) {
        for (int c = 15; c >= 0; c--) {
            for (int r = 15; r >= 0; r--) {
                if (!state.containsKey(RaceOp.key(c, r))) {
                    return RaceOp.key(c, r);
                }
            }
        }
        return RaceOp.key(0, 0); // never: 16 x 16 tiles full; a look-up then finds it
    }

    private static String diff(Map<Integer, Long> want, Map<Integer, Long> got) {
        if (got == null) {
            return "nothing read";
        }
        List<String> d = new ArrayList<>();
        Set<Integer> keys = new java.util.TreeSet<>(want.keySet());
        keys.addAll(got.keySet());
        for (int k : keys) {
            Long a = want.get(k), b = got.get(k);
            if (a == null ? b != null : !a.equals(b)) {
                d.add("(" + k / 100 + ", " + k % 100 + ") model " + a + " read " + b);
            }
        }
        return d.size() + " tiles: " + (d.size() > 8 ? d.subList(0, 8) + " ..." : d);
    }
}
