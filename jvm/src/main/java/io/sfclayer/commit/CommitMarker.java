package io.sfclayer.commit;

import io.sfclayer.format.LogDirectory;
import io.sfclayer.format.ObjectStores;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

import java.io.IOException;
import java.util.UUID;

/**
 * A commit in progress, announced to vacuum (docs/FORMAT.md section 6, "Vacuum and commits"). A commit
 * publishes version n+1 after finding n the newest; a version document is published by an exclusive create
 * (a hard link, a rename, a conditional PUT), exclusive only while the name was never used. A vacuum that
 * removed version n+1 (a newer one existed) between the commit's listing and its publish let the commit
 * publish n+1 again: a second version n+1, below the newest, whose writer was told it committed (the race
 * model found two appends both acknowledged as one version). So a commit first creates
 * {@code _sfclayer/_commit-<writeId>-<uuid>} and deletes it after its publish; a vacuum reads the markers
 * after its listing of the log and keeps every version whose document is no older than the oldest marker
 * younger than {@link #GRACE_MILLIS} (less {@link #MARGIN_MILLIS}): any version published after the commit
 * began, so after its listing, hence any number it may publish.
 */
public final class CommitMarker {
    /** The markers' names start with this (before {@code v…}: a reader's listing from {@code v} never sees them). */
    public static final String PREFIX = "_commit-";
    /** A marker older than this is a dead commit's (a killed process): ignored, as a pending marker is. */
    public static final long GRACE_MILLIS = 24L * 3600 * 1000;
    /**
     * How much older than a marker a document vacuum still keeps: a document's time is its temporary file's
     * (the publish links or renames it), written just before the publish; and stores count whole seconds.
     */
    public static final long MARGIN_MILLIS = 5_000;

    private CommitMarker() {
    }

    /** Announces a commit of {@code writeId} in {@code logDir}; returns its marker (for {@link #end}). */
    static Path start(FileSystem fs, Path logDir, String writeId) throws IOException {
        Path p = new Path(logDir, PREFIX + writeId + "-" + UUID.randomUUID());
        ObjectStores.create(fs, p, false).close();
        return p;
    }

    /**
     * Best effort: a marker left behind keeps recent versions from vacuum until it expires. On an object store
     * one bulk delete (S3A: no HEAD before it, no LIST after it for a parent directory marker).
     */
    static void end(FileSystem fs, Path marker) {
        try {
            if (ObjectStores.isObjectStore(fs)) {
                try (org.apache.hadoop.fs.BulkDelete bulk = fs.createBulkDelete(marker.getParent())) {
                    bulk.bulkDelete(java.util.List.of(marker));
                }
            } else {
                fs.delete(marker, false);
            }
        } catch (IOException | RuntimeException e) {
            // expires after the grace
        }
    }

    /**
     * From a listing of the log directory (made after vacuum's listing of the versions): the versions vacuum must
     * keep for the commits in progress, those whose document was written since the oldest live marker, less the
     * margin. None when no commit is in progress; a version the listing does not show is kept.
     */
    public static java.util.function.LongPredicate keptForCommits(FileStatus[] logEntries, long now) {
        long oldest = Long.MAX_VALUE;
        java.util.Map<Long, Long> written = new java.util.HashMap<>();
        for (FileStatus st : logEntries) {
            String name = st.getPath().getName();
            java.util.regex.Matcher m = LogDirectory.VERSION_FILE.matcher(name);
            if (m.matches()) {
                written.put(Long.parseLong(m.group(1)), st.getModificationTime());
            } else if (name.startsWith(PREFIX) && now - st.getModificationTime() < GRACE_MILLIS) {
                oldest = Math.min(oldest, st.getModificationTime());
            }
        }
        if (oldest == Long.MAX_VALUE) {
            return v -> false;
        }
        long keepFrom = oldest - MARGIN_MILLIS;
        return v -> written.getOrDefault(v, Long.MAX_VALUE) >= keepFrom;
    }
}
