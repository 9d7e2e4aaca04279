package io.sfclayer.format;

import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.hadoop.util.functional.FutureIO;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * Opening and creating data files the way object stores (S3A, GCS, ADLS) want it: every call there is
 * an HTTP request of tens of milliseconds, so say what is already known instead of asking again.
 *
 * <ul>
 *   <li>Reads: {@code openFile} with the length the version document records (S3A then skips its HEAD)
 *       and a read policy: {@code random} for look-ups (ranged GETs of what is asked for), {@code
 *       sequential} for scans (one GET streaming on).</li>
 *   <li>Writes: no {@code mkdirs} (creating a file makes its parents; on S3A a mkdirs is probes and a
 *       marker PUT) and S3A's performance create (no probe for a directory or file at the path: data
 *       files go to a fresh directory of their write, so nothing can be there).</li>
 * </ul>
 * Other filesystems get the plain calls: their metadata is a local stat or one NameNode RPC.
 */
public final class ObjectStores {
    /** Schemes of object stores: no real directories, no locality, every metadata call a request. */
    private static final Set<String> SCHEMES = Set.of("s3a", "s3", "s3n", "gs", "abfs", "abfss", "wasb", "wasbs",
        "oss", "cosn", "obs");
    /** Hadoop's standard openFile options (Hadoop 3.3.5+); unknown options are ignored by filesystems. */
    static final String READ_POLICY = "fs.option.openfile.read.policy";
    static final String LENGTH = "fs.option.openfile.length";
    /** S3A's per-file read-ahead (how far a forward seek reads on rather than opening a new GET). */
    static final String S3A_READAHEAD = "fs.s3a.readahead.range";
    /** S3A's per-file create option: skip the probes for an existing file or directory. */
    public static final String S3A_CREATE_PERFORMANCE = "fs.s3a.create.performance";

    /**
     * Data files up to this size are scanned from their start in one GET rather than after reading
     * their index: the index's HEAD and GET are two round trips (tens of ms), more than a MiB takes
     * to stream from an object store.
     */
    public static final long SCAN_WHOLE_BYTES = 1L << 20;

    /** How a file will be read. */
    public enum Access {
        /** Look-ups: small reads here and there. */
        RANDOM("random"),
        /** Scans and whole files: read on from where reading starts. */
        SEQUENTIAL("sequential"),
        /** Small files read in full at once (indexes, bloom filters). */
        WHOLE_FILE("whole-file");

        final String policy;

        Access(String policy) {
            this.policy = policy;
        }
    }

    private ObjectStores() {
    }

    public static boolean isObjectStore(FileSystem fs) {
        String scheme = fs.getUri().getScheme(); // getScheme() is not implemented by every filesystem
        return scheme != null && SCHEMES.contains(scheme.toLowerCase(Locale.ROOT));
    }

    /**
     * Opens {@code p} for reading with a read policy and, when {@code knownLength >= 0}, its length
     * (an object store then asks nothing before the first read; a file shorter than that ends early,
     * an EOFException at the read, which readers report as damage).
     */
    public static FSDataInputStream open(FileSystem fs, Path p, Access access, long knownLength) throws IOException {
        if (!isObjectStore(fs)) {
            return fs.open(p);
        }
        var builder = fs.openFile(p).opt(READ_POLICY, access.policy);
        if (access == Access.SEQUENTIAL) {
            // a scan skips forward over what its box leaves out: reading on through up to this much
            // is cheaper than S3A's new GET (a round trip) at every gap wider than its 64 KiB default
            builder.opt(S3A_READAHEAD, SCAN_WHOLE_BYTES);
        }
        if (knownLength >= 0) {
            builder.opt(LENGTH, knownLength);
        }
        return FutureIO.awaitFuture(builder.build());
    }

    /**
     * Every file under {@code dir}, at any depth ({@code FileNotFoundException} when {@code dir} is gone). On an
     * object store one flat listing ({@code listFiles}, paged); elsewhere a walk with {@code listStatus}, since
     * {@code listFiles} builds a {@code LocatedFileStatus} per file: block locations from the NameNode on HDFS, and on
     * local files without Hadoop's native library the file's permissions, read by running {@code ls} in a child
     * process (a restore of a version of 300 files forked 600 times).
     */
    public static List<FileStatus> filesUnder(FileSystem fs, Path dir) throws IOException {
        List<FileStatus> out = new ArrayList<>();
        if (isObjectStore(fs)) {
            RemoteIterator<LocatedFileStatus> it = fs.listFiles(dir, true);
            while (it.hasNext()) {
                out.add(it.next());
            }
            return out;
        }
        ArrayDeque<Path> dirs = new ArrayDeque<>(List.of(dir));
        while (!dirs.isEmpty()) {
            Path d = dirs.pop();
            FileStatus[] entries;
            try {
                entries = fs.listStatus(d);
            } catch (FileNotFoundException gone) {
                if (d == dir) {
                    throw gone;
                }
                continue; // a subdirectory removed while listing (a concurrent vacuum): nothing under it
            }
            for (FileStatus st : entries) {
                if (st.isDirectory()) {
                    dirs.push(st.getPath());
                } else {
                    out.add(st);
                }
            }
        }
        return out;
    }

    /**
     * Creates a file in a directory of a write's own, its parents included. On object stores nothing
     * is probed first ({@code overwrite} is then moot: the write's directory is new).
     */
    public static FSDataOutputStream create(FileSystem fs, Path p, boolean overwrite) throws IOException {
        return create(fs, p, overwrite, -1);
    }

    /** As {@link #create(FileSystem, Path, boolean)}, with the file's block size ({@code <= 0}: the filesystem's). */
    public static FSDataOutputStream create(FileSystem fs, Path p, boolean overwrite, long blockSize) throws IOException {
        if (isObjectStore(fs)) {
            // createFile returns a raw builder type
            return (FSDataOutputStream) fs.createFile(p).overwrite(true).recursive().opt(S3A_CREATE_PERFORMANCE, true).build();
        }
        if (LocalFiles.applies(fs)) {
            return LocalFiles.create(fs, p, overwrite); // no chmod child processes (LocalFiles)
        }
        if (blockSize <= 0) {
            return fs.create(p, overwrite);
        }
        return fs.create(p, overwrite, fs.getConf().getInt("io.file.buffer.size", 4096), fs.getDefaultReplication(p),
            blockSize);
    }
}
