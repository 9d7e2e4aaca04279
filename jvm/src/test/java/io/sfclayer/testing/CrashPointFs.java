package io.sfclayer.testing;

import io.sfclayer.format.ClosingOutputStream;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ContentSummary;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FSDataOutputStreamBuilder;
import org.apache.hadoop.fs.CreateFlag;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FilterFileSystem;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.Progressable;
import org.apache.hadoop.util.ReflectionUtils;

import java.io.IOException;
import java.io.OutputStream;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;

/**
 * A Hadoop FileSystem wrapping any other (the class named by {@value #INNER}, local files by default;
 * register it as {@code fs.<scheme>.impl} with the cache disabled) that records every call made on a
 * path under {@link #scope} and can fail the Nth of them ({@link #failAt}): the crash points of an
 * operation (issue 35). Calls: create, a written file's close, open, rename, delete, mkdirs,
 * getFileStatus (exists too), listStatus, getContentSummary. A failure throws before the call takes
 * effect (a stream's close leaves the file as far as it was flushed); {@link Mode#STICKY} fails every
 * later call too, as a process killed at that call would leave the storage. Test sources only.
 */
public class CrashPointFs extends FilterFileSystem {
    /** Hadoop setting: the class of the wrapped filesystem. */
    public static final String INNER = "sfclayer.test.crashpoint.inner";

    /** How the chosen call fails. */
    public enum Mode {
        /** That one call throws an IOException; the operation may recover (its cleanup runs). */
        IO_EXCEPTION,
        /** That one call throws a java.lang.Error ({@link InjectedError}). */
        ERROR,
        /** That call and every later one throw an IOException (nothing more reaches storage). */
        STICKY
    }

    /** The Error injected: not one Spark treats as fatal to its executor (as it does LinkageError, OOM). */
    public static final class InjectedError extends Error {
        InjectedError(String m) {
            super(m);
        }
    }

    /** Only calls on paths starting with this (a local path, no scheme) are counted; null: none. */
    public static volatile String scope;
    /** The 1-based call to fail, 0 for none. */
    public static volatile int failAt;
    public static volatile Mode mode = Mode.IO_EXCEPTION;
    private static int calls;
    private static boolean failed;
    private static final List<String> RECORDED = new ArrayList<>();

    /** Starts counting from 0 with the given failure (failAt 0: record only). */
    public static synchronized void arm(String scopePath, int at, Mode m) {
        scope = scopePath;
        failAt = at;
        mode = m;
        calls = 0;
        failed = false;
        RECORDED.clear();
    }

    public static synchronized void disarm() {
        scope = null;
        failAt = 0;
    }

    /** The calls recorded since {@link #arm}, "op path" each. */
    public static synchronized List<String> recorded() {
        return new ArrayList<>(RECORDED);
    }

    /** Whether the armed failure was thrown. */
    public static synchronized boolean fired() {
        return failed;
    }

    /** An operation run at a crash point. */
    public interface Run {
        void run() throws Exception;
    }

    /** The calls {@code op} makes under {@code scopePath}, none failing ("op path" each). */
    public static List<String> record(String scopePath, Run op) throws Exception {
        arm(scopePath, 0, Mode.IO_EXCEPTION);
        try {
            op.run();
            return recorded();
        } finally {
            disarm();
        }
    }

    /**
     * One crash point: runs {@code op} with call {@code at} under {@code scopePath} failing in {@code mode};
     * the failure as the operation reports it is swallowed (a caller checks its effects). Returns the call
     * that failed ("(fewer calls: n)" when the run made fewer).
     */
    public static String runFailing(String scopePath, int at, Mode mode, Run op) {
        arm(scopePath, at, mode);
        try {
            op.run();
        } catch (Exception | Error t) {
            // the injected failure, as the operation reports it: checked by its effects
        } finally {
            disarm();
        }
        List<String> rec = recorded();
        return rec.size() >= at ? rec.get(at - 1) : "(fewer calls: " + rec.size() + ")";
    }

    public CrashPointFs() {
        super();
    }

    /**
     * The wrapped filesystems of stores other than local files, one per class and store, shared by every
     * wrapper (the cache is off for the wrapper so it takes effect in a running session: an S3A or HDFS
     * client per call would be slow and leak its threads).
     */
    private static final java.util.concurrent.ConcurrentHashMap<String, FileSystem> INNERS =
        new java.util.concurrent.ConcurrentHashMap<>();
    private boolean shared;

    @Override
    public void initialize(URI name, Configuration conf) throws IOException {
        Class<? extends FileSystem> inner = conf.getClass(INNER, LocalFileSystem.class, FileSystem.class);
        shared = !LocalFileSystem.class.isAssignableFrom(inner) && name.getAuthority() != null;
        String key = inner.getName() + " " + name.getScheme() + "://" + name.getAuthority();
        FileSystem fs = shared ? INNERS.get(key) : null;
        if (fs == null) {
            fs = ReflectionUtils.newInstance(inner, conf);
            fs.initialize(name, conf); // newInstance set its conf, so FilterFileSystem would not initialize it
            if (shared) {
                FileSystem raced = INNERS.putIfAbsent(key, fs);
                if (raced != null) {
                    fs.close();
                    fs = raced;
                }
            }
        }
        this.fs = fs;
        super.initialize(name, conf);
    }

    @Override
    public void close() throws IOException {
        if (!shared) {
            super.close(); // a shared wrapped filesystem stays open for the other wrappers
        }
    }

    @Override
    public String getScheme() {
        return fs.getScheme();
    }

    /** Counts a call on {@code p} and throws when it is the one to fail (or a later one, sticky). */
    private static void call(String op, Path p) throws IOException {
        String s = scope;
        if (s == null || p == null || !p.toUri().getPath().startsWith(s)) {
            return;
        }
        Throwable t;
        synchronized (CrashPointFs.class) {
            calls++;
            RECORDED.add(op + " " + p.toUri().getPath().substring(s.length()));
            boolean now = failAt > 0 && calls == failAt;
            boolean after = failAt > 0 && calls > failAt && mode == Mode.STICKY;
            if (!now && !after) {
                return;
            }
            failed = true;
            String what = "injected at call " + calls + " (" + op + " " + p + ")";
            t = mode == Mode.ERROR ? new InjectedError(what) : new IOException(what);
        }
        if (t instanceof Error) {
            throw (Error) t;
        }
        throw (IOException) t;
    }

    @Override
    public FSDataOutputStream create(Path f, FsPermission permission, boolean overwrite, int bufferSize,
                                     short replication, long blockSize, Progressable progress) throws IOException {
        call("create", f);
        FSDataOutputStream out = fs.create(f, permission, overwrite, bufferSize, replication, blockSize, progress);
        OutputStream counted = new ClosingOutputStream(out, () -> call("close", f), null);
        return new FSDataOutputStream(counted, statistics);
    }

    /**
     * Object stores' builder create (format.ObjectStores, commit.CommitByCreate's conditional create),
     * counted as {@link #create} is: a create, then the written file's close.
     */
    @Override
    public FSDataOutputStreamBuilder createFile(Path f) {
        return new CountedCreate(this, f);
    }

    private final class CountedCreate extends FSDataOutputStreamBuilder<FSDataOutputStream, CountedCreate> {
        CountedCreate(FileSystem owner, Path p) {
            super(owner, p);
        }

        @Override
        public CountedCreate getThisBuilder() {
            return this;
        }

        @Override
        @SuppressWarnings({"rawtypes", "unchecked"})
        public FSDataOutputStream build() throws IOException {
            Path f = getPath();
            call("create", f);
            FSDataOutputStreamBuilder b = fs.createFile(f); // the wrapped store's own builder, told the same
            if (getFlags().contains(CreateFlag.OVERWRITE)) {
                b.overwrite(true);
            }
            if (isRecursive()) {
                b.recursive();
            }
            for (java.util.Map.Entry<String, String> e : getOptions()) {
                if (getMandatoryKeys().contains(e.getKey())) {
                    b.must(e.getKey(), e.getValue());
                } else {
                    b.opt(e.getKey(), e.getValue());
                }
            }
            FSDataOutputStream out = (FSDataOutputStream) b.build();
            return new FSDataOutputStream(new ClosingOutputStream(out, () -> call("close", f), null), statistics);
        }
    }

    /** Object stores' builder open (format.ObjectStores.open), counted as {@link #open} is. */
    @Override
    protected java.util.concurrent.CompletableFuture<FSDataInputStream> openFileWithOptions(Path path,
            org.apache.hadoop.fs.impl.OpenFileParameters parameters) throws IOException {
        call("open", path);
        return super.openFileWithOptions(path, parameters);
    }

    @Override
    public FSDataInputStream open(Path f, int bufferSize) throws IOException {
        call("open", f);
        return fs.open(f, bufferSize);
    }

    @Override
    public boolean rename(Path src, Path dst) throws IOException {
        call("rename", src);
        return fs.rename(src, dst);
    }

    @Override
    public boolean delete(Path f, boolean recursive) throws IOException {
        call("delete", f);
        return fs.delete(f, recursive);
    }

    @Override
    public boolean mkdirs(Path f, FsPermission permission) throws IOException {
        call("mkdirs", f);
        return fs.mkdirs(f, permission);
    }

    @Override
    public FileStatus getFileStatus(Path f) throws IOException {
        call("getFileStatus", f);
        return fs.getFileStatus(f);
    }

    @Override
    public FileStatus[] listStatus(Path f) throws IOException {
        call("listStatus", f);
        return fs.listStatus(f);
    }

    @Override
    public ContentSummary getContentSummary(Path f) throws IOException {
        call("getContentSummary", f);
        return fs.getContentSummary(f);
    }
}
