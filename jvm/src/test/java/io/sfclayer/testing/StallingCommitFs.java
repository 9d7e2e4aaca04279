package io.sfclayer.testing;

import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.Progressable;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;

/**
 * Local files ({@code fs.file.impl}) that stall, once per process, at the creation of the first file whose
 * path contains what the file the environment variable {@value #STALL} names holds (read at each create, so
 * a test can choose after the process started): inside a layer's commit, e.g.
 * {@code /sink-layer/_sfclayer/.tmp-} (its data files written, its document about to be written and linked:
 * not published) or {@code /sink-layer/_sfclayer/_last_version} (the document published, the hint not
 * yet written). It first writes {@code <that file>.reached} naming the path, then sleeps 120 s: the test
 * kills the process meanwhile (tests/test_streaming_kills.py; issue 38). The pattern of
 * {@link StallingCheckpointFileManager}; test sources only.
 */
public class StallingCommitFs extends LocalFileSystem {
    /** Environment variable: a file holding the part of the path to stall at (absent or empty: none). */
    public static final String STALL = "SFCLAYER_TEST_COMMIT_STALL_FILE";
    private static volatile boolean stalled;

    @Override
    public FSDataOutputStream create(Path f, FsPermission permission, boolean overwrite, int bufferSize,
                                     short replication, long blockSize, Progressable progress) throws IOException {
        String file = System.getenv(STALL);
        if (file != null && !stalled) {
            String target = target(file);
            if (target != null && !target.isEmpty() && f.toUri().getPath().contains(target)) {
                stalled = true;
                Files.write(Paths.get(file + ".reached"), f.toUri().getPath().getBytes(StandardCharsets.UTF_8));
                System.err.println("sfclayer test: stalling the commit at the creation of " + f);
                try {
                    Thread.sleep(120_000);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
        return super.create(f, permission, overwrite, bufferSize, replication, blockSize, progress);
    }

    private static String target(String file) {
        try {
            return new String(Files.readAllBytes(Paths.get(file)), StandardCharsets.UTF_8).trim();
        } catch (IOException e) {
            return null; // no file: no stall
        }
    }
}
