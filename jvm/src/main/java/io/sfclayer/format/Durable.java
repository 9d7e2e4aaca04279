package io.sfclayer.format;

import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.StreamCapabilities;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.StandardOpenOption;

/**
 * Making what a version will reference reach stable storage before the version is published
 * (docs/FORMAT.md section 6, "Durability"): data files, bloom sidecars, manifests and version
 * documents, and the directory entries that name them. Per filesystem:
 * <ul>
 *   <li>local files: {@code FileChannel.force} on each file after it is closed (with its checksum
 *       sidecar), and on the directory that holds a new name (a file, a link, a subdirectory): Linux
 *       makes a new directory entry durable only when the directory is synced;</li>
 *   <li>HDFS and other streams declaring {@link StreamCapabilities#HSYNC}: {@code hsync()} before
 *       {@code close()}. Hadoop's output stream specification ({@code filesystem/outputstream.md},
 *       "Syncable.hsync()") is the only call that asks for data on the DataNodes' disks; a close makes
 *       the blocks visible, on disk only where {@code dfs.datanode.synconclose} is set (default false,
 *       hdfs-default.xml). Names (create, rename) are NameNode edits, logged durably before the call
 *       returns;</li>
 *   <li>object stores (S3A, GCS, ABFS): nothing to add: an object exists only once its upload has
 *       completed, and the store acknowledges it after storing it durably; their streams do not
 *       declare hsync.</li>
 * </ul>
 * The Hadoop setting {@value #SYNC}{@code =false} turns all of it off (a benchmark's baseline; a power
 * failure may then lose or truncate a committed version's files).
 */
public final class Durable {
    /** Hadoop setting: whether written files are synced to stable storage (default true). */
    public static final String SYNC = "sfclayer.sync";

    private Durable() {
    }

    static boolean enabled(FileSystem fs) {
        return fs.getConf() == null || fs.getConf().getBoolean(SYNC, true);
    }

    static boolean isLocal(FileSystem fs) {
        return "file".equals(fs.getScheme());
    }

    /**
     * {@code out}, a new file {@code p} of {@code fs}, made durable when it is closed: hsync first where
     * the stream can, the file forced after it on local files. Positions count from 0 (a new file).
     */
    public static FSDataOutputStream onClose(FileSystem fs, Path p, FSDataOutputStream out) {
        if (!enabled(fs)) {
            return out;
        }
        boolean local = isLocal(fs);
        boolean hsync = !local && out.hasCapability(StreamCapabilities.HSYNC);
        if (!local && !hsync) {
            return out; // an object store: the completed upload is durable
        }
        OutputStream synced = new ClosingOutputStream(out, hsync ? out::hsync : null,
            local ? () -> force(fs, p) : null);
        return new FSDataOutputStream(synced, null);
    }

    /** A closed local file forced to disk, with its checksum sidecar when it has one. */
    public static void force(FileSystem fs, Path p) throws IOException {
        if (!enabled(fs) || !isLocal(fs)) {
            return;
        }
        java.nio.file.Path local = java.nio.file.Paths.get(p.toUri().getPath());
        forceLocal(local, false);
        java.nio.file.Path crc = local.resolveSibling("." + local.getFileName() + ".crc");
        if (Files.exists(crc)) {
            forceLocal(crc, false);
        }
    }

    /**
     * After a name was made in {@code dir} (a file, a link, a directory): the local directory synced.
     * A directory that does not exist holds nothing to make durable.
     */
    public static void directory(FileSystem fs, Path dir) throws IOException {
        if (!enabled(fs) || !isLocal(fs)) {
            return;
        }
        try {
            forceLocal(java.nio.file.Paths.get(dir.toUri().getPath()), true);
        } catch (java.nio.file.NoSuchFileException e) {
            // nothing was named in it
        }
    }

    private static void forceLocal(java.nio.file.Path p, boolean directory) throws IOException {
        try (FileChannel ch = FileChannel.open(p, directory ? StandardOpenOption.READ : StandardOpenOption.WRITE)) {
            ch.force(true);
        }
    }
}
