package io.sfclayer.testing;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The lines a writer killed by a test prints ({@link RaceHarness#main}) and their reading back into a
 * history: {@code race start <id> <kind> <box|-> <target> <startMillis>} before an operation and
 * {@code race end <id> <outcome> <version> <writeId|-> <createdAtMillis> <endMillis> [error]} after it.
 * An operation with no end line was in flight when the process died: its outcome is unknown.
 */
public final class KillLog {
    private static final String START = "race start ";
    private static final String END = "race end ";

    private KillLog() {
    }

    static String started(RaceOp op) {
        String box = op.box == null ? "-" : op.box[0] + "," + op.box[1] + "," + op.box[2] + "," + op.box[3];
        return START + op.id + " " + op.kind + " " + box + " " + op.target + " " + op.startMillis;
    }

    static String ended(RaceOp op) {
        return END + op.id + " " + op.outcome + " " + op.version + " " + (op.writeId == null ? "-" : op.writeId) + " "
            + op.createdAtMillis + " " + op.endMillis + (op.error == null ? "" : " " + op.error.replace('\n', '|'));
    }

    /** The history the lines describe, in the order operations started. */
    public static List<RaceOp> parse(List<String> lines) {
        Map<Integer, RaceOp> ops = new LinkedHashMap<>();
        for (String line : lines) {
            if (line.startsWith(START)) {
                String[] f = line.substring(START.length()).trim().split(" ");
                if (f.length < 5) {
                    continue; // cut short by the kill: the operation never began its work
                }
                int[] box = null;
                if (!f[2].equals("-")) {
                    String[] b = f[2].split(",");
                    box = new int[] {Integer.parseInt(b[0]), Integer.parseInt(b[1]), Integer.parseInt(b[2]),
                        Integer.parseInt(b[3])};
                }
                RaceOp op = new RaceOp(Integer.parseInt(f[0]), 0, RaceOp.Kind.valueOf(f[1]), box, Long.parseLong(f[3]),
                    Long.parseLong(f[4]));
                op.outcome = RaceOp.Outcome.UNKNOWN;
                op.endMillis = Long.MAX_VALUE; // never ended: after everything
                op.error = "in flight when the writer was killed";
                ops.put(op.id, op);
            } else if (line.startsWith(END)) {
                String[] f = line.substring(END.length()).trim().split(" ", 7);
                RaceOp op = f.length >= 6 ? ops.get(Integer.parseInt(f[0])) : null;
                if (op == null) {
                    continue;
                }
                op.outcome = RaceOp.Outcome.valueOf(f[1]);
                op.version = Long.parseLong(f[2]);
                op.writeId = f[3].equals("-") ? null : f[3];
                op.createdAtMillis = Long.parseLong(f[4]);
                op.endMillis = Long.parseLong(f[5]);
                op.error = f.length > 6 ? f[6] : null;
            }
        }
        return new ArrayList<>(ops.values());
    }
}
