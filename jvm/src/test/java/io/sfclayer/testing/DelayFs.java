package io.sfclayer.testing;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FilterFileSystem;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.Progressable;
import org.apache.hadoop.util.ReflectionUtils;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.URI;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A Hadoop FileSystem wrapping any other (the class named by {@value #INNER}, local files by default;
 * register it as {@code fs.<scheme>.impl} with the cache disabled) that sleeps a random while before
 * calls on paths under {@link #scope}, so concurrent operations interleave in ways a quiet machine
 * never shows (the race model, {@link RaceHarness}; issue 35). Calls delayed: create, a written file's
 * close, open, rename, delete, mkdirs, getFileStatus, listStatus. Each call is delayed with
 * probability {@link #probability} by 0 .. {@link #maxMillis} ms, drawn from a generator seeded by
 * {@link #arm} (the draws' order follows the threads' interleaving, so a seed fixes the distribution,
 * not the schedule). Test sources only.
 */
public class DelayFs extends FilterFileSystem {
    /** Hadoop setting: the class of the wrapped filesystem. */
    public static final String INNER = "sfclayer.test.delay.inner";

    /** Only calls on paths whose path part starts with this are delayed; null: none. */
    public static volatile String scope;
    public static volatile double probability;
    /** The fraction of calls that throw an IOException instead ({@link #FAULT} in its message), after the delay. */
    public static volatile double failProbability;
    /** What an injected fault's message starts with. */
    public static final String FAULT = "sfclayer race: injected fault";
    public static volatile int maxMillis;
    private static SplittableRandom random = new SplittableRandom(0);
    private static final AtomicLong CALLS = new AtomicLong();
    private static final AtomicLong DELAYED = new AtomicLong();
    private static final AtomicLong FAULTS = new AtomicLong();

    /** Delays calls under {@code scopePath} from now on. */
    public static synchronized void arm(String scopePath, long seed, double p, int max) {
        arm(scopePath, seed, p, max, 0);
    }

    /** Delays calls under {@code scopePath} from now on, and fails a fraction {@code fail} of them. */
    public static synchronized void arm(String scopePath, long seed, double p, int max, double fail) {
        failProbability = fail;
        random = new SplittableRandom(seed);
        probability = p;
        maxMillis = max;
        CALLS.set(0);
        DELAYED.set(0);
        FAULTS.set(0);
        scope = scopePath;
    }

    /**
     * Set on a thread whose calls are not delayed (faults are still injected): the race harness's Spark-free
     * operations run most calls undelayed, so that a run holds thousands of them; Spark's task threads never set it.
     */
    public static final ThreadLocal<Boolean> UNDELAYED = ThreadLocal.withInitial(() -> false);

    /**
     * The failure probability of this thread's calls, as a multiple of {@code failProbability}: the race harness
     * runs most driver-side operations fault-free (0) and the others at a higher rate, so that an operation of
     * hundreds of calls (a copy-on-write append folding the deltas) still commits now and then; Spark's task
     * threads keep 1.
     */
    public static final ThreadLocal<Double> FAIL_FACTOR = ThreadLocal.withInitial(() -> 1.0);

    /** Set on a thread whose calls are neither delayed nor failed: the harness's read-back of a commit (a check). */
    public static final ThreadLocal<Boolean> UNTOUCHED = ThreadLocal.withInitial(() -> false);

    public static void disarm() {
        scope = null;
    }

    /** Calls seen under the scope since {@link #arm}, how many of them were delayed, and how many failed. */
    public static long[] counts() {
        return new long[] {CALLS.get(), DELAYED.get(), FAULTS.get()};
    }

    public DelayFs() {
        super();
    }

    /**
     * The wrapped filesystems, one per class and store, shared by every wrapper (the cache is off for the
     * wrapper so it takes effect in a running session: an S3A client per call would be slow and leak).
     */
    private static final java.util.concurrent.ConcurrentHashMap<String, FileSystem> INNERS =
        new java.util.concurrent.ConcurrentHashMap<>();

    @Override
    public void initialize(URI name, Configuration conf) throws IOException {
        Class<? extends FileSystem> inner = conf.getClass(INNER, LocalFileSystem.class, FileSystem.class);
        String key = inner.getName() + " " + name.getScheme() + "://" + name.getAuthority();
        FileSystem shared = INNERS.get(key);
        if (shared == null) {
            shared = ReflectionUtils.newInstance(inner, conf);
            shared.initialize(name, conf); // newInstance set its conf, so FilterFileSystem would not initialize it
            FileSystem raced = INNERS.putIfAbsent(key, shared);
            if (raced != null) {
                shared.close();
                shared = raced;
            }
        }
        this.fs = shared;
        super.initialize(name, conf);
    }

    @Override
    public void close() {
        // the shared wrapped filesystem stays open for the other wrappers
    }

    @Override
    public String getScheme() {
        return fs.getScheme();
    }

    private static void delay(Path p) throws IOException {
        String s = scope;
        if (s == null || p == null || UNTOUCHED.get() || !p.toUri().getPath().startsWith(s)) {
            return;
        }
        CALLS.incrementAndGet();
        int ms;
        boolean fail;
        synchronized (DelayFs.class) {
            fail = failProbability > 0 && random.nextDouble() < failProbability * FAIL_FACTOR.get();
            if (random.nextDouble() >= probability) {
                ms = -1;
            } else {
                ms = random.nextInt(maxMillis + 1);
            }
        }
        if (fail) {
            FAULTS.incrementAndGet();
            throw new IOException(FAULT + " at " + p);
        }
        if (ms < 0 || UNDELAYED.get()) {
            return;
        }
        DELAYED.incrementAndGet();
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted in an injected delay at " + p);
        }
    }

    /** The classes format.LocalFiles creates files of through java.nio (Hive's proxy is Spark's file: with Hive jars). */
    private static final java.util.Set<String> PLAIN_LOCAL = java.util.Set.of(LocalFileSystem.class.getName(),
        org.apache.hadoop.fs.RawLocalFileSystem.class.getName(), "org.apache.hadoop.hive.ql.io.ProxyLocalFileSystem");

    @Override
    public FSDataOutputStream create(Path f, FsPermission permission, boolean overwrite, int bufferSize,
                                     short replication, long blockSize, Progressable progress) throws IOException {
        delay(f);
        // on plain local files as sfclayer creates them there (format.LocalFiles through ObjectStores: java.nio,
        // no chmod child process, no .crc), which it does only for the exact local classes, not for this wrapper:
        // else every file here cost two forks (~7 ms each), and the race ran a path users' writes never take
        FSDataOutputStream out = PLAIN_LOCAL.contains(fs.getClass().getName())
            ? io.sfclayer.format.ObjectStores.create(fs, f, overwrite, blockSize)
            : fs.create(f, permission, overwrite, bufferSize, replication, blockSize, progress);
        return new FSDataOutputStream(new java.io.FilterOutputStream(out) {
            @Override
            public void write(byte[] b, int off, int len) throws IOException {
                out.write(b, off, len);
            }

            @Override
            public void close() throws IOException {
                delay(f);
                out.close();
            }
        }, statistics);
    }

    @Override
    public FSDataInputStream open(Path f, int bufferSize) throws IOException {
        delay(f);
        return fs.open(f, bufferSize);
    }

    @Override
    public boolean rename(Path src, Path dst) throws IOException {
        delay(src);
        return fs.rename(src, dst);
    }

    @Override
    public boolean delete(Path f, boolean recursive) throws IOException {
        delay(f);
        return fs.delete(f, recursive);
    }

    @Override
    public boolean mkdirs(Path f, FsPermission permission) throws IOException {
        delay(f);
        return fs.mkdirs(f, permission);
    }

    @Override
    public FileStatus getFileStatus(Path f) throws IOException {
        delay(f);
        return fs.getFileStatus(f);
    }

    @Override
    public FileStatus[] listStatus(Path f) throws IOException {
        delay(f);
        return fs.listStatus(f);
    }
}
