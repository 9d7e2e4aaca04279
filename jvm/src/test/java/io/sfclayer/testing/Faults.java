package io.sfclayer.testing;

import io.sfclayer.format.ClosingOutputStream;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.TaskContext;

import java.io.IOException;
import java.io.OutputStream;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Fault injection for the concurrency and task-attempt tests, done by a test filesystem
 * ({@link FaultLocalFileSystem}, {@link FaultHdfs}) around the files a write task creates, so the
 * connector's own write path reads no test setting. Settings (Hadoop keys):
 * <ul>
 *   <li>{@value #STALL_FIRST_FILE}=N: the first data file each write creates is held back N ms
 *       (so two writers started together overlap their read-to-commit windows);</li>
 *   <li>{@value #FAIL_FIRST_ATTEMPT}=P: attempt 0 of write task P fails once it has written a whole
 *       data file (its {@code index} closed), as a task killed before reporting would, so Spark retries it;</li>
 *   <li>{@value #SLOW_FIRST_ATTEMPT}=P: attempt 0 of write task P stalls there instead (for
 *       {@value #SLOW_MILLIS} ms, 60 s by default, or until Spark kills it), so a speculative copy overtakes it.</li>
 * </ul>
 * A test sets {@code fs.<scheme>.impl} to the test filesystem and {@code fs.<scheme>.impl.disable.cache}
 * to true (so the setting takes effect in a running application), and unsets them after.
 */
public final class Faults {
    public static final String STALL_FIRST_FILE = "sfclayer.test.stallFirstFileMillis";
    public static final String FAIL_FIRST_ATTEMPT = "sfclayer.test.failFirstAttemptOfPartition";
    public static final String SLOW_FIRST_ATTEMPT = "sfclayer.test.slowFirstAttemptOfPartition";
    public static final String SLOW_MILLIS = "sfclayer.test.slowFirstAttemptMillis";

    /** The data directories ({@code data-<writeId>}) whose first file was held back already. */
    private static final Set<String> STALLED = ConcurrentHashMap.newKeySet();

    private Faults() {
    }

    /** {@code out}, the stream a filesystem created at {@code p}, with the faults {@code conf} asks for. */
    static FSDataOutputStream wrap(Configuration conf, Path p, FSDataOutputStream out,
                                   FileSystem.Statistics stats) throws IOException {
        String writeDir = writeDir(p);
        if (writeDir == null) {
            return out;
        }
        long stall = conf.getLong(STALL_FIRST_FILE, 0);
        if (stall > 0 && "data".equals(p.getName()) && STALLED.add(writeDir)) {
            sleep(stall);
        }
        TaskContext tc = TaskContext.get();
        if (!"index".equals(p.getName()) || tc == null || tc.attemptNumber() != 0) {
            return out;
        }
        int partition = tc.partitionId();
        boolean fail = conf.getInt(FAIL_FIRST_ATTEMPT, -1) == partition;
        boolean slow = conf.getInt(SLOW_FIRST_ATTEMPT, -1) == partition;
        if (!fail && !slow) {
            return out;
        }
        long slowMillis = conf.getLong(SLOW_MILLIS, 60_000);
        OutputStream faulty = new ClosingOutputStream(out, null, () -> {
            if (fail) {
                throw new IOException("sfclayer test fault: attempt 0 of task " + partition
                    + " fails after writing a data file");
            }
            try {
                Thread.sleep(slowMillis);
            } catch (InterruptedException e) {
                // killed (another attempt succeeded): end as a killed task does
                Thread.currentThread().interrupt();
                throw new IOException("sfclayer test fault: slow attempt 0 of task " + partition
                    + " was interrupted", e);
            }
        });
        return new FSDataOutputStream(faulty, stats);
    }

    /** The {@code data-<writeId>} directory a file of a write lies in, or null for any other file. */
    private static String writeDir(Path p) {
        for (Path q = p.getParent(); q != null; q = q.getParent()) {
            if (q.getName().startsWith("data-")) {
                return q.toString();
            }
        }
        return null;
    }

    private static void sleep(long ms) throws IOException {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        }
    }
}
