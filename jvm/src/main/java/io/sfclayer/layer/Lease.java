package io.sfclayer.layer;

import io.sfclayer.SfcLayerException;
import io.sfclayer.commit.CommitPublisher;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.UUID;

/**
 * A lease: a small file that one job at a time holds while it changes something that is not a
 * single commit (a pyramid run rewrites several level layers and then its document). Taking it
 * creates the file only if it does not exist, atomically, with the primitive a commit uses on that
 * filesystem ({@link CommitPublisher}: a hard link on local files, a rename without overwrite on
 * HDFS, a conditional create on S3A; a store without one is refused unless a single writer is
 * declared), so of two jobs exactly one gets it; the other fails with ConcurrentUpdate naming the
 * holder. A lost answer is decided as a commit's is, by reading the lease back. Its holder deletes it
 * when done. A job that died holding it leaves it behind: the next one refuses, saying when it was
 * taken and which file to delete once no job is running (never taken over silently).
 */
public final class Lease {
    private Lease() {
    }

    /**
     * Takes the lease at {@code path} for {@code what} (said in messages); returns its token, which
     * {@link #release} needs.
     */
    public static String take(Configuration conf, String path, String what) throws IOException {
        Path given = new Path(path);
        FileSystem fs = given.getFileSystem(conf);
        Path p = fs.makeQualified(given);
        String id = UUID.randomUUID().toString();
        String token = id + " " + Instant.now() + " " + what;
        CommitPublisher publisher = CommitPublisher.forLayer(fs, conf, p.getParent());
        publisher.prepare(p.getParent());
        CommitPublisher.Documents leases = new CommitPublisher.Documents() {
            @Override
            public String idAt(Path q) throws IOException {
                String holder = read(fs, q);
                return holder == null ? null : holder.split(" ", 2)[0];
            }

            @Override
            public SfcLayerException unknown(Path target, String why, Throwable cause) {
                return new SfcLayerException.CommitStateUnknown("cannot tell whether this job took the lease " + target
                    + " to " + what + ": it " + why + "; nothing was changed. If no job is running, delete " + target
                    + " and retry", cause);
            }
        };
        if (!publisher.publishDecided(p, token.getBytes(StandardCharsets.UTF_8), id, leases)) {
            String holder = read(fs, p);
            throw new SfcLayerException.ConcurrentUpdate("cannot " + what + ": another job holds its lease " + p
                + (holder == null ? "" : " (token, time taken, purpose: " + holder + ")")
                + "; nothing was changed. Retry when it is done; if no such job is running any more (it died), "
                + "delete " + p + " first");
        }
        return token;
    }

    /** Releases the lease at {@code path} if {@code token} still holds it (false if not). */
    public static boolean release(Configuration conf, String path, String token) throws IOException {
        Path p = new Path(path);
        FileSystem fs = p.getFileSystem(conf);
        if (!token.equals(read(fs, p))) {
            return false;
        }
        return fs.delete(p, false);
    }

    private static String read(FileSystem fs, Path p) throws IOException {
        try (FSDataInputStream in = fs.open(p)) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (java.io.FileNotFoundException e) {
            return null;
        }
    }
}
