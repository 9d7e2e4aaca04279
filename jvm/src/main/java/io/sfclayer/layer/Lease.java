package io.sfclayer.layer;

import io.sfclayer.SfcLayerException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.FileContext;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Options;
import org.apache.hadoop.fs.Path;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.UUID;

/**
 * A lease: a small file that one job at a time holds while it changes something that is not a
 * single commit (a pyramid run rewrites several level layers and then its document). Taking it
 * creates the file only if it does not exist, atomically (the local filesystem: a create-new;
 * others: a rename without overwrite, atomic on HDFS), so of two jobs exactly one gets it; the
 * other fails with ConcurrentUpdate naming the holder. Its holder deletes it when done. A job that
 * died holding it leaves it behind: the next one refuses, saying when it was taken and which file
 * to delete once no job is running (never taken over silently).
 */
public final class Lease {
    private Lease() {
    }

    /**
     * Takes the lease at {@code path} for {@code what} (said in messages); returns its token, which
     * {@link #release} needs.
     */
    public static String take(Configuration conf, String path, String what) throws IOException {
        Path p = new Path(path);
        FileSystem fs = p.getFileSystem(conf);
        String token = UUID.randomUUID() + " " + Instant.now() + " " + what;
        byte[] bytes = token.getBytes(StandardCharsets.UTF_8);
        fs.mkdirs(p.getParent());
        boolean taken;
        if ("file".equals(fs.getScheme())) {
            try {
                java.nio.file.Files.write(java.nio.file.Paths.get(p.toUri().getPath()), bytes,
                    java.nio.file.StandardOpenOption.CREATE_NEW, java.nio.file.StandardOpenOption.WRITE);
                taken = true;
            } catch (java.nio.file.FileAlreadyExistsException e) {
                taken = false;
            }
        } else {
            Path tmp = new Path(p.getParent(), "." + p.getName() + "-" + UUID.randomUUID() + ".tmp");
            try (FSDataOutputStream out = fs.create(tmp, false)) {
                out.write(bytes);
            }
            try {
                FileContext.getFileContext(p.toUri(), conf).rename(tmp, p, Options.Rename.NONE);
                taken = true;
            } catch (FileAlreadyExistsException e) {
                taken = false;
            } finally {
                fs.delete(tmp, false);
            }
        }
        if (!taken) {
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
