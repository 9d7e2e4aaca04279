package io.sfclayer.spark;

import org.apache.hadoop.conf.Configuration;
import org.apache.spark.TaskContext;

/**
 * Fault injection for the task-attempt tests, off unless a Hadoop setting asks for it: with
 * {@code sfclayer.test.failFirstAttemptOfPartition=P}, the first attempt of write task P fails after
 * writing all its files (as a task killed before reporting would), so Spark retries it; with
 * {@code sfclayer.test.commitDelayMillis=N}, a write waits N ms between its job and its commit, so
 * concurrency tests can make two writers' read-to-commit windows overlap.
 */
final class TestHooks {
    static final String FAIL_FIRST_ATTEMPT = "sfclayer.test.failFirstAttemptOfPartition";
    static final String COMMIT_DELAY = "sfclayer.test.commitDelayMillis";

    private TestHooks() {
    }

    static void afterTask(Configuration conf, int partition, TaskContext tc) {
        int p = conf.getInt(FAIL_FIRST_ATTEMPT, -1);
        if (p == partition && tc != null && tc.attemptNumber() == 0) {
            throw new IllegalStateException("sfclayer test hook: attempt 0 of task " + partition
                + " fails after writing its files");
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
