package io.sfclayer.spark;

import org.apache.hadoop.conf.Configuration;
import org.apache.spark.TaskContext;

/**
 * Fault injection for the task-attempt tests, off unless a Hadoop setting asks for it: with
 * {@code sfclayer.test.failFirstAttemptOfPartition=P}, the first attempt of write task P fails after
 * writing all its files (as a task killed before reporting would), so Spark retries it; with
 * {@code sfclayer.test.slowFirstAttemptOfPartition=P}, the first attempt of write task P stalls
 * after writing all its files (for {@code sfclayer.test.slowFirstAttemptMillis}, 60 s by default, or
 * until Spark kills it), so that with {@code spark.speculation} on a speculative copy overtakes it;
 * with {@code sfclayer.test.commitDelayMillis=N}, a write waits N ms between its job and its commit,
 * so concurrency tests can make two writers' read-to-commit windows overlap.
 */
final class TestHooks {
    static final String FAIL_FIRST_ATTEMPT = "sfclayer.test.failFirstAttemptOfPartition";
    static final String SLOW_FIRST_ATTEMPT = "sfclayer.test.slowFirstAttemptOfPartition";
    static final String SLOW_MILLIS = "sfclayer.test.slowFirstAttemptMillis";
    static final String COMMIT_DELAY = "sfclayer.test.commitDelayMillis";

    private TestHooks() {
    }

    static void afterTask(Configuration conf, int partition, TaskContext tc) {
        int p = conf.getInt(FAIL_FIRST_ATTEMPT, -1);
        if (p == partition && tc != null && tc.attemptNumber() == 0) {
            throw new IllegalStateException("sfclayer test hook: attempt 0 of task " + partition
                + " fails after writing its files");
        }
        if (conf.getInt(SLOW_FIRST_ATTEMPT, -1) == partition && tc != null && tc.attemptNumber() == 0) {
            try {
                Thread.sleep(conf.getLong(SLOW_MILLIS, 60_000));
            } catch (InterruptedException e) {
                // killed (another attempt succeeded): end as a killed task does
                Thread.currentThread().interrupt();
                throw new IllegalStateException("sfclayer test hook: slow attempt 0 of task " + partition
                    + " was interrupted", e);
            }
        }
    }

    static void beforeCommit(Configuration conf) {
        long ms = conf.getLong(COMMIT_DELAY, 0);
        if (ms > 0) {
            try {
                Thread.sleep(ms);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
