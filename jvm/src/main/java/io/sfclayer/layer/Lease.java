package io.sfclayer.layer;

import io.sfclayer.SfcLayerException;
import io.sfclayer.commit.CommitPublisher;
import io.sfclayer.format.ObjectStores;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * A lease: a small file that one job at a time holds while it changes something that is not a
 * single commit (a pyramid run rewrites several level layers and then its document). Taking it
 * creates the file only if it does not exist, atomically, with the primitive a commit uses on that
 * filesystem ({@link CommitPublisher}: a hard link on local files, a rename without overwrite on
 * HDFS, a conditional create on S3A; a store without one is refused unless a single writer is
 * declared), so of two jobs exactly one gets it; the other fails with ConcurrentUpdate naming the
 * holder. A lost answer is decided as a commit's is, by reading the lease back.
 *
 * <p>The lease names its owner (process id and host) and a heartbeat file beside it
 * ({@code .lease-<uuid>.alive}, created before the lease, so a live lease always has one) that the
 * holder's JVM touches every {@value #DEFAULT_HEARTBEAT_MS} ms ({@value #HEARTBEAT_MS}). Its holder
 * deletes the heartbeat, then the lease, when done, each retried once. A lease whose heartbeat file is
 * gone (its holder finished but could not delete it) or older than {@value #DEFAULT_STALE_MS} ms
 * ({@value #STALE_MS}: its holder died), or whose owner process is gone from this host, was left by a
 * run that no longer holds it: the next one still refuses (it is never taken over silently: a holder
 * cut off from the store for a while may still be writing), saying so, who owned it and which file to
 * delete; a live one's message says to retry when it is done (docs/FORMAT.md section 8).
 */
public final class Lease {
    private Lease() {
    }

    /** Hadoop setting: how often a holder touches its heartbeat file, in ms. */
    public static final String HEARTBEAT_MS = "sfclayer.lease.heartbeatMs";
    public static final long DEFAULT_HEARTBEAT_MS = 30_000;
    /** Hadoop setting: a heartbeat older than this (ms) is a dead holder's (clock skew and pauses included). */
    public static final String STALE_MS = "sfclayer.lease.staleMs";
    public static final long DEFAULT_STALE_MS = 300_000;

    /** The heartbeats of the leases this JVM holds, by token. */
    private static final Map<String, ScheduledFuture<?>> BEATS = new ConcurrentHashMap<>();
    private static final ScheduledExecutorService BEATER = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "sfclayer-lease-heartbeat");
        t.setDaemon(true);
        return t;
    });

    /**
     * Takes the lease at {@code path} for {@code what} (said in messages); returns its token, which
     * {@link #release} needs. Its heartbeat runs until then.
     */
    public static String take(Configuration conf, String path, String what) throws IOException {
        Path given = new Path(path);
        FileSystem fs = given.getFileSystem(conf);
        Path p = fs.makeQualified(given);
        String id = UUID.randomUUID().toString();
        long every = conf.getLong(HEARTBEAT_MS, DEFAULT_HEARTBEAT_MS);
        Path beat = heartbeat(p, id);
        String token = id + " " + Instant.now() + " " + what + "\nowner " + owner() + "\nheartbeat " + beat.getName()
            + " every " + every + " ms\n";
        CommitPublisher publisher = CommitPublisher.forLayer(fs, conf, p.getParent());
        publisher.prepare(p.getParent());
        CommitPublisher.Documents leases = new CommitPublisher.Documents() {
            @Override
            public String idAt(Path q) throws IOException {
                String holder = read(fs, q);
                return holder == null ? null : holder.split("[ \n]", 2)[0];
            }

            @Override
            public SfcLayerException unknown(Path target, String why, Throwable cause) {
                return new SfcLayerException.CommitStateUnknown("cannot tell whether this job took the lease " + target
                    + " to " + what + ": it " + why + "; nothing was changed. If no job is running, delete " + target
                    + " and retry", cause);
            }
        };
        // the heartbeat first: a lease without one is never a live holder's
        ObjectStores.create(fs, beat, true).close();
        boolean taken = false;
        try {
            taken = publisher.publishDecided(p, token.getBytes(StandardCharsets.UTF_8), id, leases);
        } finally {
            if (!taken) {
                deleteQuietly(fs, beat);
            }
        }
        if (!taken) {
            String holder = read(fs, p);
            throw new SfcLayerException.ConcurrentUpdate("cannot " + what + ": the lease " + p + " is "
                + (holder == null ? "held by another job (released since: retry)" : state(fs, conf, p, holder))
                + "; nothing was changed");
        }
        BEATS.put(token, BEATER.scheduleWithFixedDelay(() -> touch(fs, beat), every, every, TimeUnit.MILLISECONDS));
        return token;
    }

    /**
     * Releases the lease at {@code path} if {@code token} still holds it (false if not): its heartbeat
     * stops and its files are deleted, heartbeat first, each step retried once. A lease still there
     * after that throws StorageError naming it; the next run then reports it as left by a finished run.
     */
    public static boolean release(Configuration conf, String path, String token) throws IOException {
        ScheduledFuture<?> beating = BEATS.remove(token);
        if (beating != null) {
            beating.cancel(false);
        }
        Path p = new Path(path);
        FileSystem fs = p.getFileSystem(conf);
        Path beat = heartbeat(p, token.split("[ \n]", 2)[0]);
        IOException last = null;
        for (int attempt = 0; attempt < 2; attempt++) {
            try {
                if (!token.equals(read(fs, p))) {
                    deleteQuietly(fs, beat);
                    return false; // not (or no longer) this job's
                }
                fs.delete(beat, false);
                if (fs.delete(p, false) || !fs.exists(p)) {
                    return true;
                }
            } catch (IOException e) {
                last = e;
            }
        }
        throw new SfcLayerException.StorageError("cannot release the lease " + p + " (owner " + field(token, "owner")
            + "): " + (last == null ? "it is still there after two deletes" : last.toString()) + ". The run is over"
            + " (its heartbeat stopped): once no other job uses the layer, delete " + p + " (and " + beat.getName()
            + " beside it, if there) before the next run", last);
    }

    /** Why the lease held by {@code holder} (its content) refuses another job, and what to do. */
    static String state(FileSystem fs, Configuration conf, Path p, String holder) {
        String first = holder.split("\n", 2)[0];
        String owner = field(holder, "owner");
        String beatName = field(holder, "heartbeat");
        if (owner == null || beatName == null) { // an older sfclayer's lease: no owner, no heartbeat
            return "held by another job (token, time taken, purpose: " + first + "); retry when it is done;"
                + " if no such job is running any more (it died), delete " + p + " first";
        }
        String who = "owner " + owner + "; token, time taken, purpose: " + first;
        String gone = "; no job holds it: delete " + p + " and retry";
        Path beat = new Path(p.getParent(), beatName.split(" ", 2)[0]);
        long staleMs = conf.getLong(STALE_MS, DEFAULT_STALE_MS);
        long age;
        try {
            age = System.currentTimeMillis() - fs.getFileStatus(beat).getModificationTime();
        } catch (java.io.FileNotFoundException e) {
            return "left by a run that finished or died (" + who + "; its heartbeat file " + beat.getName()
                + " is gone: its release deleted it, then could not delete the lease)" + gone;
        } catch (IOException e) {
            return "held by another job (" + who + "; its heartbeat " + beat + " cannot be read: " + e
                + "); retry when it is done; if no such job is running any more, delete " + p + " and "
                + beat.getName() + " first";
        }
        if (age > staleMs) {
            return "left by a run that died (" + who + "; its last heartbeat was " + age / 1000 + " s ago, a live"
                + " run's is at most " + staleMs / 1000 + " s old)" + gone + " (and " + beat.getName() + ")";
        }
        if (!ownerAlive(owner)) {
            return "left by a run that died (" + who + "; process " + owner + " no longer runs on this host)"
                + gone + " (and " + beat.getName() + ")";
        }
        return "held by a live run (" + who + "; its heartbeat " + age / 1000 + " s ago); retry when it is done";
    }

    /** The value of the line {@code name ...} of a lease's content; null when it has none. */
    private static String field(String content, String name) {
        for (String line : content.split("\n")) {
            if (line.startsWith(name + " ")) {
                return line.substring(name.length() + 1);
            }
        }
        return null;
    }

    private static Path heartbeat(Path lease, String id) {
        return new Path(lease.getParent(), lease.getName() + "-" + id + ".alive");
    }

    /** {@code <pid>@<host>} of this JVM. */
    private static String owner() {
        String host;
        try {
            host = java.net.InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            host = "unknown-host";
        }
        return ProcessHandle.current().pid() + "@" + host;
    }

    /** False only when {@code owner} names a process of this host that no longer runs. */
    private static boolean ownerAlive(String owner) {
        int at = owner.indexOf('@');
        if (at < 0 || !owner.substring(at + 1).equals(owner().substring(owner().indexOf('@') + 1))) {
            return true; // another host: only its heartbeat tells
        }
        try {
            return ProcessHandle.of(Long.parseLong(owner.substring(0, at))).map(ProcessHandle::isAlive).orElse(false);
        } catch (NumberFormatException e) {
            return true;
        }
    }

    /**
     * One heartbeat: the file's modification time set to now (local files, HDFS), or the file written
     * again where a store keeps no settable times (an object store). A failure waits for the next beat.
     */
    private static void touch(FileSystem fs, Path beat) {
        try {
            String scheme = fs.getScheme();
            if (scheme.equals("file") || scheme.equals("hdfs")) {
                fs.setTimes(beat, System.currentTimeMillis(), -1);
            } else {
                ObjectStores.create(fs, beat, true).close();
            }
        } catch (IOException | RuntimeException ignored) {
            // the next beat tries again; a holder cut off for staleMs is reported as dead
        }
    }

    private static void deleteQuietly(FileSystem fs, Path p) {
        try {
            fs.delete(p, false);
        } catch (IOException | RuntimeException ignored) {
            // a leftover heartbeat file names no lease: harmless
        }
    }

    private static String read(FileSystem fs, Path p) throws IOException {
        try (FSDataInputStream in = fs.open(p)) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (java.io.FileNotFoundException e) {
            return null;
        }
    }
}
