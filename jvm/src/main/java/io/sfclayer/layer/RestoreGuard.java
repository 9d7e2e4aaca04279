package io.sfclayer.layer;

import io.sfclayer.SfcLayerException;
import io.sfclayer.commit.VersionLog;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.util.HashSet;
import java.util.Set;
import java.util.UUID;

/**
 * Restore against vacuum (docs/FORMAT.md section 6, "Vacuum and restores"). A restore commits a version
 * listing an older version's data files, which no pending marker protects: a vacuum that dropped that
 * version and listed its files before the restore published, and deleted them after it checked them,
 * left a committed version whose files are gone (the race model found it). So each announces itself in
 * the log directory before it looks at anything:
 * <ul>
 *   <li>a vacuum creates {@code _sfclayer/_vacuum-<uuid>} first, then reads the restores in progress and
 *   keeps the versions they restore (documents and files), and deletes its marker when done;</li>
 *   <li>a restore creates {@code _sfclayer/_restore-<uuid>-<version>} first, then refuses with
 *   ConcurrentUpdate while a vacuum's marker is there, and deletes its own after its commit.</li>
 * </ul>
 * A vacuum that started before the restore's marker was created is seen by the restore (refused); one that
 * started after sees the marker (keeps the version). Markers older than {@link Vacuum#PENDING_GRACE_MILLIS}
 * are a dead job's and ignored. Concurrent vacuums, and concurrent restores, do not exclude each other.
 */
public final class RestoreGuard {
    static final String VACUUM_PREFIX = "_vacuum-";
    static final String RESTORE_PREFIX = "_restore-";

    private RestoreGuard() {
    }

    /** A vacuum of {@code log} starts: its marker (delete it with {@link #end}). */
    static Path vacuumStarts(VersionLog log) throws IOException {
        return create(log, VACUUM_PREFIX + UUID.randomUUID());
    }

    /** The versions restores in progress restore (their markers younger than the grace), from a listing of the log. */
    static Set<Long> restoring(FileStatus[] logEntries) {
        Set<Long> out = new HashSet<>();
        long now = System.currentTimeMillis();
        for (FileStatus st : logEntries) {
            String name = st.getPath().getName();
            if (name.startsWith(RESTORE_PREFIX) && now - st.getModificationTime() < Vacuum.PENDING_GRACE_MILLIS) {
                try {
                    out.add(Long.parseLong(name.substring(name.lastIndexOf('-') + 1)));
                } catch (NumberFormatException e) {
                    // not a restore's marker
                }
            }
        }
        return out;
    }

    /**
     * A restore of {@code version} starts: its marker (delete it with {@link #end}); ConcurrentUpdate (its
     * marker removed) while a vacuum runs.
     */
    static Path restoreStarts(VersionLog log, long version) throws IOException {
        Path mine = create(log, RESTORE_PREFIX + UUID.randomUUID() + "-" + version);
        long now = System.currentTimeMillis();
        for (FileStatus st : markers(log)) {
            if (st.getPath().getName().startsWith(VACUUM_PREFIX)
                    && now - st.getModificationTime() < Vacuum.PENDING_GRACE_MILLIS) {
                end(log, mine);
                throw new SfcLayerException.ConcurrentUpdate("cannot restore version " + version + " of layer "
                    + log.layerPath() + " while a vacuum runs (" + st.getPath() + "): it could delete the files the "
                    + "restored version lists; nothing was changed, retry when it is done (if no vacuum runs, one that died "
                    + "left that file: delete it)");
            }
        }
        return mine;
    }

    /** Deletes a marker (best effort: a marker left behind expires). */
    static void end(VersionLog log, Path marker) {
        try {
            log.fileSystem().delete(marker, false);
        } catch (IOException | RuntimeException e) {
            // expires after the grace
        }
    }

    private static Path create(VersionLog log, String name) throws IOException {
        FileSystem fs = log.fileSystem();
        Path p = new Path(new Path(log.layerPath(), VersionLog.LOG_DIR), name);
        io.sfclayer.format.ObjectStores.create(fs, p, false).close(); // no chmod child process on local files
        return p;
    }

    private static FileStatus[] markers(VersionLog log) throws IOException {
        try {
            return log.fileSystem().listStatus(new Path(log.layerPath(), VersionLog.LOG_DIR),
                p -> p.getName().startsWith(VACUUM_PREFIX) || p.getName().startsWith(RESTORE_PREFIX));
        } catch (FileNotFoundException e) {
            return new FileStatus[0];
        }
    }
}
