package io.sfclayer.format;

import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.StandardOpenOption;

/**
 * New files on Hadoop's local filesystem created through {@code java.nio}. Without Hadoop's native
 * library (a pip-installed PySpark has none) its local filesystem sets the permissions of every file it
 * creates, of the file's {@code .crc} sidecar and of each directory it makes by running {@code chmod} in
 * a child process: ~7 ms each on 2 busy cores, two per file, so a streaming micro-batch's delta (data,
 * index, bloom, marker, document, hint) paid ~100 ms in forks (bench/RESULTS.md "Streaming sink").
 * Files made here get the process's default permissions (as Hadoop's default, 0644 under umask 022) and
 * no {@code .crc} sidecar: Hadoop reads a file without one unchecked, and every sfclayer file carries
 * its own CRC32C (docs/FORMAT.md section 2). Only the exact local classes are bypassed (Hadoop's, and
 * Hive's ProxyLocalFileSystem, which Spark's Hive jars register for {@code file:}): a subclass (a test's
 * faulty filesystem) keeps its own {@code create}.
 */
final class LocalFiles {
    private LocalFiles() {
    }

    private static final java.util.Set<String> PLAIN_LOCAL = java.util.Set.of(LocalFileSystem.class.getName(),
        RawLocalFileSystem.class.getName(), "org.apache.hadoop.hive.ql.io.ProxyLocalFileSystem");

    /** Whether {@code fs} is a plain local filesystem (Hadoop's checksummed or raw one, Hive's proxy), not a subclass. */
    static boolean applies(FileSystem fs) {
        return PLAIN_LOCAL.contains(fs.getClass().getName());
    }

    /**
     * Creates {@code p} and its parents; {@code overwrite} false fails with Hadoop's
     * FileAlreadyExistsException when it exists. A replaced file's stale {@code .crc} sidecar is removed
     * (Hadoop would check the new bytes against it).
     */
    static FSDataOutputStream create(FileSystem fs, Path p, boolean overwrite) throws IOException {
        java.nio.file.Path local = java.nio.file.Paths.get(fs.makeQualified(p).toUri().getPath());
        java.nio.file.Path parent = local.getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        java.io.OutputStream out;
        try {
            out = overwrite
                ? Files.newOutputStream(local, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                    StandardOpenOption.WRITE)
                : Files.newOutputStream(local, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
        } catch (java.nio.file.FileAlreadyExistsException e) {
            throw new org.apache.hadoop.fs.FileAlreadyExistsException("file " + p + " already exists");
        }
        if (overwrite && parent != null) {
            Files.deleteIfExists(parent.resolve("." + local.getFileName() + ".crc"));
        }
        return new FSDataOutputStream(new BufferedOutputStream(out, 64 << 10), null);
    }
}
