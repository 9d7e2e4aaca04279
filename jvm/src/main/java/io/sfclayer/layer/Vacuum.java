package io.sfclayer.layer;

import io.sfclayer.SfcLayerException;
import io.sfclayer.curve.TimeText;
import io.sfclayer.format.DataFile;
import io.sfclayer.format.DataFileName;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.format.VersionLog;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Deletes what no retained version needs (docs/FORMAT.md, "Vacuum"), the only code that deletes
 * committed data: version documents committed before the retention horizon (never the newest),
 * data files no remaining version references that are older than the horizon (files of dropped
 * versions, failed or duplicate task attempts, killed writes), and then empty data directories.
 * Younger unreferenced files may belong to a write in progress and are kept. As Delta does, a
 * retention under 7 days is refused unless the caller says it knows better.
 */
public final class Vacuum {
    public static final long DEFAULT_RETAIN_MILLIS = 7L * 24 * 3600 * 1000;

    private Vacuum() {
    }

    /** What was (or, in a dry run, would be) removed: {versionsRemoved, filesRemoved, bytesFreed, dryRun}. */
    public static Map<String, Object> run(Configuration conf, String path, long retainMillis, boolean dryRun,
                                          boolean enforceRetention) throws IOException {
        if (retainMillis < 0) {
            throw new SfcLayerException.InvalidArgument("vacuum retain: " + retainMillis + " ms is negative (0 or more)");
        }
        checkRetention(retainMillis, enforceRetention, "vacuum retain: " + retainMillis / 1000.0 + " s",
            "turn the retention check off (Python: enforce_retention=False, CLI: --force, SQL: force => true)");
        VersionLog log = new VersionLog(conf, new Path(path));
        FileSystem fs = log.fileSystem();
        List<LayerMetadata> versions = log.history();
        if (versions.isEmpty()) {
            log.current(); // LayerNotFound naming the path
        }
        long horizon = System.currentTimeMillis() - retainMillis;
        Set<String> referenced = new HashSet<>();
        List<Long> dropped = new ArrayList<>();
        for (int i = 0; i < versions.size(); i++) {
            LayerMetadata md = versions.get(i);
            boolean newest = i == versions.size() - 1;
            if (newest || Math.floorDiv(TimeText.parseInstantMicros("createdAt", md.createdAt), 1000L) >= horizon) {
                for (DataFile f : md.files) {
                    referenced.add(f.id());
                }
                if (md.formatVersion < 2 && md.files.isEmpty()) {
                    referenced.add(md.dataDir + "/*");
                }
            } else {
                dropped.add(md.version);
            }
        }
        List<String> removed = new ArrayList<>();
        long[] bytes = {0};
        for (FileStatus st : fs.listStatus(log.layerPath())) {
            String name = st.getPath().getName();
            if (st.isDirectory() && name.startsWith(VersionLog.DATA_DIR_PREFIX)) {
                sweep(fs, st, name, referenced, horizon, dryRun, removed, bytes);
            }
        }
        if (!dryRun) {
            for (long v : dropped) {
                log.deleteVersion(v);
            }
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("dryRun", dryRun);
        out.put("versionsRemoved", dropped);
        out.put("filesRemoved", removed);
        out.put("bytesFreed", bytes[0]);
        return out;
    }

    /**
     * Delta's rule: a retention under 7 days is refused unless {@code enforceRetention} is off. The
     * message starts with {@code what} (the retention in the caller's words, e.g. {@code argument retain:
     * '1d'}) and ends with {@code override}, how that caller turns the check off.
     */
    public static void checkRetention(long retainMillis, boolean enforceRetention, String what, String override) {
        if (enforceRetention && retainMillis < DEFAULT_RETAIN_MILLIS) {
            throw new SfcLayerException.InvalidArgument(what + " is under the 7-day minimum: readers pinned to older"
                + " versions and writes in progress could lose their files; to do it anyway, " + override);
        }
    }

    /** Walks a data directory (and its attempt directories); returns whether it is now empty. */
    private static boolean sweep(FileSystem fs, FileStatus dirStatus, String rel, Set<String> referenced, long horizon,
                                 boolean dryRun, List<String> removed, long[] bytes) throws IOException {
        if (referenced.contains(rel + "/*")) {
            return false;
        }
        Path dir = dirStatus.getPath();
        boolean empty = true;
        for (FileStatus st : fs.listStatus(dir)) {
            String name = st.getPath().getName();
            String id = rel + "/" + name;
            if (st.isDirectory() && DataFileName.looksLikeDataFile(name)) {
                if (referenced.contains(id) || st.getModificationTime() >= horizon) {
                    empty = false;
                    continue;
                }
                bytes[0] += fs.getContentSummary(st.getPath()).getLength();
                removed.add(id);
                if (!dryRun) {
                    fs.delete(st.getPath(), true);
                }
            } else if (st.isDirectory()) {
                if (!sweep(fs, st, id, referenced, horizon, dryRun, removed, bytes)) {
                    empty = false;
                }
            } else if (st.getModificationTime() >= horizon) {
                empty = false;
            } else if (!dryRun) {
                fs.delete(st.getPath(), false);
            }
        }
        // an empty directory younger than the horizon may be a write that has not written yet
        empty = empty && dirStatus.getModificationTime() < horizon;
        if (empty && !dryRun) {
            fs.delete(dir, true);
        }
        return empty;
    }
}
