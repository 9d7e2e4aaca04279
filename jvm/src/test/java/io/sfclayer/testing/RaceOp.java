package io.sfclayer.testing;

import java.util.Map;
import java.util.TreeMap;

/**
 * One operation of a race run and its outcome, as {@link RaceHarness} records it and {@link RaceChecker}
 * judges it. Tiles are keys {@code col * 100 + row} of a 16 x 16 layer with one long value {@code v}.
 */
public final class RaceOp {
    /**
     * What a run may do. APPEND is copy-on-write (appendMode=rewrite), DELTA_APPEND writes delta files
     * (appendMode=delta, docs/FORMAT.md section 11: it conflicts only with a restore, else rebases and
     * wins) and may compact afterwards as a commit of its own; REPAIR rewrites one whole data file of the
     * newest version (repair's path on an undamaged file: no change of content).
     */
    public enum Kind { APPEND, DELETE, COMPACT, VACUUM, RESTORE, DELTA_APPEND, REPAIR }

    /** How it ended. */
    public enum Outcome {
        /** Returned a version (new, or the newest unchanged for an operation with nothing to do). */
        COMMITTED,
        /** Refused with ConcurrentUpdate: must be wholly absent. */
        CONFLICT,
        /** CommitStateUnknown: wholly present or wholly absent. */
        UNKNOWN,
        /** Failed by a fault the run injected (DelayFs): wholly present or wholly absent. */
        FAULTED,
        /** Refused before committing for a reason the run allows (a restore of a vacuumed version). */
        REFUSED,
        /** Anything else: the checker fails the run on it. */
        FAILED
    }

    public final int id;
    public final int thread;
    public final Kind kind;
    /** APPEND, DELTA_APPEND: the box written (col0, row0, col1, row1, inclusive); DELETE: the box deleted. */
    public final int[] box;
    /** RESTORE: the version restored. */
    public final long target;
    public final long startMillis;
    public long endMillis;
    public Outcome outcome;
    /** COMMITTED: the version returned, its writeId and createdAt (epoch ms). */
    public long version = -1;
    public String writeId;
    public long createdAtMillis = -1;
    /** The error's class and message when not committed. */
    public String error;
    /** The full scan of the returned version read right after the commit (key → v), or null (vacuumed since). */
    public Map<Integer, Long> observed;

    /** An operation beginning now. */
    public RaceOp(int id, int thread, Kind kind, int[] box, long target) {
        this(id, thread, kind, box, target, System.currentTimeMillis());
    }

    /** An operation that began at {@code startMillis} (the checker's own tests). */
    public RaceOp(int id, int thread, Kind kind, int[] box, long target, long startMillis) {
        this.id = id;
        this.thread = thread;
        this.kind = kind;
        this.box = box;
        this.target = target;
        this.startMillis = startMillis;
    }

    /** Whether this operation writes tiles (an append of either kind): never a no-op. */
    public boolean writes() {
        return kind == Kind.APPEND || kind == Kind.DELTA_APPEND;
    }

    /** The value an append writes at a tile: unique to the operation and the tile. */
    public static long value(int opId, int col, int row) {
        return opId * 100_000L + col * 100L + row;
    }

    public static int key(int col, int row) {
        return col * 100 + row;
    }

    /** {@code before} with this operation applied (a RESTORE needs the target's state, {@code restored}). */
    public TreeMap<Integer, Long> apply(Map<Integer, Long> before, Map<Integer, Long> restored) {
        TreeMap<Integer, Long> out = new TreeMap<>(before);
        switch (kind) {
            case APPEND:
            case DELTA_APPEND:
                for (int c = box[0]; c <= box[2]; c++) {
                    for (int r = box[1]; r <= box[3]; r++) {
                        out.put(key(c, r), value(id, c, r));
                    }
                }
                return out;
            case DELETE:
                for (int c = box[0]; c <= box[2]; c++) {
                    for (int r = box[1]; r <= box[3]; r++) {
                        out.remove(key(c, r));
                    }
                }
                return out;
            case RESTORE:
                return new TreeMap<>(restored);
            default:
                return out;
        }
    }

    @Override
    public String toString() {
        String what = kind + (box != null ? " " + box[0] + "," + box[1] + "," + box[2] + "," + box[3] : "")
            + (kind == Kind.RESTORE ? " v" + target : "");
        return "op " + id + " (thread " + thread + ", " + what + ", " + (endMillis - startMillis) + " ms) " + outcome
            + (outcome == Outcome.COMMITTED ? " v" + version : "") + (error != null ? ": " + error : "");
    }
}
