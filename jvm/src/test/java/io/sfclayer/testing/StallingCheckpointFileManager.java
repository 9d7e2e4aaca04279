package io.sfclayer.testing;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager;
import org.apache.spark.sql.execution.streaming.checkpointing.FileContextBasedCheckpointFileManager;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;

/**
 * Spark's checkpoint file manager for local files ({@code spark.sql.streaming.checkpointFileManagerClass})
 * that holds back a checkpoint's {@code commits/<b>} for 120 s when the file the environment variable
 * {@value #STALL} names holds the end of its path, e.g. {@code /sink-ckpt/commits/3} (read at each
 * checkpoint commit, so a test can pick the query and batch after the process started): the streaming
 * query then stands still after its sink committed batch {@code b} and before the checkpoint records
 * it, where the test kills the process (tests/test_streaming_kills.py; issue 38). Everything else is
 * Spark's own. Test sources only: the connector reads no test setting.
 */
public class StallingCheckpointFileManager extends FileContextBasedCheckpointFileManager {
    /** Environment variable: a file holding the end of the path of the checkpoint commit held back (absent: none). */
    public static final String STALL = "SFCLAYER_TEST_STALL_FILE";

    public StallingCheckpointFileManager(Path path, Configuration conf) {
        super(path, conf);
    }

    @Override
    public CheckpointFileManager.CancellableFSDataOutputStream createAtomic(Path path, boolean overwriteIfPossible) {
        String file = System.getenv(STALL);
        String target = file == null ? null : target(file);
        if (target != null && !target.isEmpty() && path.getParent() != null
                && path.getParent().getName().equals("commits") && path.toUri().getPath().endsWith(target)) {
            System.err.println("sfclayer test: holding back checkpoint commit " + path);
            try {
                Thread.sleep(120_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt(); // the query stopped: go on as Spark would
            }
        }
        return super.createAtomic(path, overwriteIfPossible);
    }

    private static String target(String file) {
        try {
            return new String(Files.readAllBytes(Paths.get(file)), StandardCharsets.UTF_8).trim();
        } catch (IOException e) {
            return null; // no file: no stall
        }
    }
}
