package io.sfclayer.commit;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.DelegateToFileSystem;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FSDataOutputStreamBuilder;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.Progressable;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.StandardOpenOption;

/**
 * Local files under several schemes, each standing for a kind of store, with one injectable fault
 * of the commit path ({@link #fault}) and a hook run once when a write is about to publish (its
 * temporary document or its conditional create is made: {@link #beforePublish}, another writer commits in between). Test sources only.
 * <ul>
 *   <li>{@code file}: local files (hard-link commit), as {@code fs.file.impl};</li>
 *   <li>{@code hdfs://faulty/}: rename commit, with {@link RenameAfs} as its FileContext side;</li>
 *   <li>{@code objfs://faulty/}: an object store with S3A's conditional create (capability and
 *       builder option), the document written at {@code close()}, create-if-absent there;</li>
 *   <li>{@code plainfs://faulty/}: a store with neither (refused unless a single writer is declared).</li>
 * </ul>
 */
public abstract class FaultyCommitFs extends RawLocalFileSystem {
    public enum Fault {
        NONE,
        /** Deleting a temporary document fails (after it was published). */
        DELETE_TMP,
        /** A rename to a version document is applied, then throws (an RPC answer lost). */
        RENAME_AFTER,
        /** A rename to a version document throws without being applied. */
        RENAME_BEFORE,
        /** A conditional create's close stores the document, then throws (a lost acknowledgement). */
        CLOSE_AFTER,
        /** As CLOSE_AFTER, but the client's retry then gets 412: close throws "already exists". */
        CLOSE_AFTER_RETRY_412,
        /** A conditional create's close fails without storing, once. */
        CLOSE_BEFORE_ONCE,
        /** Every conditional create's close fails without storing. */
        CLOSE_BEFORE_ALWAYS,
        /** Writing the hint {@code _last_version} (after a publish) throws a java.lang.Error. */
        HINT_ERROR,
    }

    static volatile Fault fault = Fault.NONE;
    /** Run once (then cleared) when a temporary document or a conditional create is made. */
    public static volatile Runnable beforePublish;

    /** Run once (then cleared) when a thread lists {@link #listHookDir} (an absolute local path). */
    public static volatile Runnable beforeList;
    public static volatile String listHookDir;

    /** Run once (then cleared) when a thread opens a file named {@link #openHookName} (e.g. a version document). */
    public static volatile Runnable beforeOpen;
    public static volatile String openHookName;

    /** The scheme's root; a method, since RawLocalFileSystem's constructor already asks for the URI. */
    abstract String root();

    /** The configuration registering all schemes (uncached, so each test's settings hold). */
    public static Configuration conf() {
        Configuration conf = new Configuration();
        conf.set("fs.file.impl", Local.class.getName());
        conf.setBoolean("fs.file.impl.disable.cache", true);
        conf.set("fs.hdfs.impl", Hdfs.class.getName());
        conf.setBoolean("fs.hdfs.impl.disable.cache", true);
        conf.set("fs.AbstractFileSystem.hdfs.impl", RenameAfs.class.getName());
        conf.set("fs.objfs.impl", ObjectStore.class.getName());
        conf.setBoolean("fs.objfs.impl.disable.cache", true);
        conf.set("fs.plainfs.impl", Plain.class.getName());
        conf.setBoolean("fs.plainfs.impl.disable.cache", true);
        return conf;
    }

    /** Injects {@code f} into every commit from now on (tests of other packages). */
    public static void inject(Fault f) {
        fault = f;
    }

    public static void reset() {
        fault = Fault.NONE;
        beforePublish = null;
        beforeList = null;
        listHookDir = null;
        beforeOpen = null;
        openHookName = null;
    }

    @Override
    public URI getUri() {
        return URI.create(root());
    }

    @Override
    public String getScheme() {
        return getUri().getScheme();
    }

    private static void runBeforePublish() {
        Runnable hook = beforePublish;
        beforePublish = null;
        if (hook != null) {
            hook.run();
        }
    }

    private static boolean isVersionDocument(Path p) {
        return p.getName().matches("v\\d{8,}\\.json");
    }

    @Override
    public FSDataOutputStream create(Path f, FsPermission permission, boolean overwrite, int bufferSize,
                                     short replication, long blockSize, Progressable progress) throws IOException {
        if (f.getName().startsWith(".tmp-")) {
            runBeforePublish();
        }
        if (fault == Fault.HINT_ERROR && f.getName().equals(VersionLog.HINT_FILE)) {
            throw new NoClassDefFoundError("injected: a java.lang.Error writing " + f);
        }
        return super.create(f, permission, overwrite, bufferSize, replication, blockSize, progress);
    }

    @Override
    public FSDataOutputStream create(Path f, boolean overwrite, int bufferSize, short replication, long blockSize,
                                     Progressable progress) throws IOException {
        return create(f, null, overwrite, bufferSize, replication, blockSize, progress);
    }

    @Override
    public org.apache.hadoop.fs.FileStatus[] listStatus(Path f) throws IOException {
        Runnable hook = beforeList;
        if (hook != null && f.toUri().getPath().equals(listHookDir)) {
            beforeList = null;
            hook.run();
        }
        return super.listStatus(f);
    }

    @Override
    public org.apache.hadoop.fs.FSDataInputStream open(Path f, int bufferSize) throws IOException {
        Runnable hook = beforeOpen;
        if (hook != null && f.getName().equals(openHookName)) {
            beforeOpen = null;
            hook.run();
        }
        return super.open(f, bufferSize);
    }

    @Override
    public boolean delete(Path p, boolean recursive) throws IOException {
        if (fault == Fault.DELETE_TMP && p.getName().startsWith(".tmp-")) {
            throw new IOException("injected: cannot delete " + p);
        }
        return super.delete(p, recursive);
    }

    @Override
    public boolean rename(Path src, Path dst) throws IOException {
        if (fault == Fault.RENAME_BEFORE && isVersionDocument(dst)) {
            throw new IOException("injected: rename to " + dst + " timed out before it was applied");
        }
        boolean done = super.rename(src, dst);
        if (fault == Fault.RENAME_AFTER && isVersionDocument(dst)) {
            throw new IOException("injected: rename to " + dst + " was applied, its answer lost");
        }
        return done;
    }

    public static final class Local extends FaultyCommitFs {
        @Override
        String root() {
            return "file:///";
        }
    }

    /**
     * What {@code hdfs://faulty/} streams were asked, in order: "hsync p" and "close p" (p the local
     * path): its streams declare hsync, as HDFS's do, so a test sees what is synced before its close.
     */
    public static final java.util.List<String> SYNC_EVENTS = java.util.Collections.synchronizedList(
        new java.util.ArrayList<>());

    public static final class Hdfs extends FaultyCommitFs {
        @Override
        String root() {
            return "hdfs://faulty/";
        }

        @Override
        public FSDataOutputStream create(Path f, FsPermission permission, boolean overwrite, int bufferSize,
                                         short replication, long blockSize, Progressable progress) throws IOException {
            FSDataOutputStream out = super.create(f, permission, overwrite, bufferSize, replication, blockSize, progress);
            String p = f.toUri().getPath();
            class Synced extends OutputStream implements org.apache.hadoop.fs.Syncable,
                    org.apache.hadoop.fs.StreamCapabilities {
                @Override
                public void write(int b) throws IOException {
                    out.write(b);
                }

                @Override
                public void write(byte[] b, int off, int len) throws IOException {
                    out.write(b, off, len);
                }

                @Override
                public void hflush() throws IOException {
                    out.hflush();
                }

                @Override
                public void hsync() throws IOException {
                    SYNC_EVENTS.add("hsync " + p);
                    out.hsync();
                }

                @Override
                public boolean hasCapability(String capability) {
                    return capability.equals(org.apache.hadoop.fs.StreamCapabilities.HSYNC)
                        || capability.equals(org.apache.hadoop.fs.StreamCapabilities.HFLUSH);
                }

                @Override
                public void close() throws IOException {
                    SYNC_EVENTS.add("close " + p);
                    out.close();
                }
            }
            return new FSDataOutputStream(new Synced(), statistics);
        }
    }

    public static final class Plain extends FaultyCommitFs {
        @Override
        String root() {
            return "plainfs://faulty/";
        }
    }

    /** FileContext's side of {@code hdfs://faulty/}: renames go through {@link Hdfs#rename}. */
    public static final class RenameAfs extends DelegateToFileSystem {
        public RenameAfs(URI theUri, Configuration conf) throws IOException, URISyntaxException {
            super(theUri, new Hdfs(), conf, "hdfs", false);
        }
    }

    /** S3A's conditional create, emulated: the document is stored at close, only if the name is free. */
    public static final class ObjectStore extends FaultyCommitFs {
        private static volatile boolean failedOnce;

        @Override
        String root() {
            return "objfs://faulty/";
        }

        public static void resetOnce() {
            failedOnce = false;
        }

        @Override
        public boolean hasPathCapability(Path path, String capability) throws IOException {
            return CommitPublisher.CONDITIONAL_CREATE.equals(capability) || super.hasPathCapability(path, capability);
        }

        @Override
        public FSDataOutputStreamBuilder createFile(Path path) {
            return new Conditional(this, path);
        }

        private final class Conditional extends FSDataOutputStreamBuilder<FSDataOutputStream, Conditional> {
            Conditional(ObjectStore fs, Path p) {
                super(fs, p);
            }

            @Override
            public Conditional getThisBuilder() {
                return this;
            }

            @Override
            public FSDataOutputStream build() throws IOException {
                if (!getMandatoryKeys().contains(CommitPublisher.CONDITIONAL_CREATE)) {
                    throw new IllegalArgumentException("test store: only conditional creates");
                }
                runBeforePublish();
                File file = pathToFile(getPath());
                ByteArrayOutputStream buf = new ByteArrayOutputStream();
                OutputStream put = new OutputStream() {
                    private boolean closed;

                    @Override
                    public void write(int b) {
                        buf.write(b);
                    }

                    @Override
                    public void write(byte[] b, int off, int len) {
                        buf.write(b, off, len);
                    }

                    @Override
                    public void close() throws IOException {
                        if (closed) {
                            return;
                        }
                        closed = true;
                        if (fault == Fault.CLOSE_BEFORE_ALWAYS || (fault == Fault.CLOSE_BEFORE_ONCE && !failedOnce)) {
                            failedOnce = true;
                            throw new IOException("injected: PUT of " + file + " failed (connection reset)");
                        }
                        file.getParentFile().mkdirs(); // an object store has no directories
                        try {
                            Files.write(file.toPath(), buf.toByteArray(), StandardOpenOption.CREATE_NEW,
                                StandardOpenOption.WRITE);
                        } catch (java.nio.file.FileAlreadyExistsException e) {
                            throw new FileAlreadyExistsException("412 Precondition Failed: " + file);
                        }
                        if (fault == Fault.CLOSE_AFTER) {
                            throw new IOException("injected: PUT of " + file + " stored, its answer lost");
                        }
                        if (fault == Fault.CLOSE_AFTER_RETRY_412) {
                            throw new FileAlreadyExistsException("injected: retried PUT of " + file
                                + " got 412 Precondition Failed");
                        }
                    }
                };
                return new FSDataOutputStream(put, null);
            }
        }
    }
}
