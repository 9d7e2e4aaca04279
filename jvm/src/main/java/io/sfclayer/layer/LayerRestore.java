package io.sfclayer.layer;

import io.sfclayer.SfcLayerException;
import io.sfclayer.commit.Conflicts;
import io.sfclayer.commit.VersionLog;
import io.sfclayer.format.DataFile;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.format.ObjectStores;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * {@code sfclayer restore}: a new version whose content is an older version's (Delta's RESTORE). The
 * new document is the older one's (its files, or its manifests, as they were; every field such as the
 * raster description) with operation {@code restore}, a replace-type operation (docs/FORMAT.md
 * section 6): it conflicts with any version committed after it read the log. Nothing is copied or
 * deleted. Refused, naming what is gone, when the version was vacuumed (its document) or when any
 * data file it lists is missing.
 */
public final class LayerRestore {
    private LayerRestore() {
    }

    /**
     * Restores {@code version} (when ≥ 0) or the newest version committed at or before
     * {@code asOfMillis}. Returns the new version, or the newest one unchanged when it is the one asked for.
     */
    public static LayerMetadata restore(Configuration conf, String path, long version, long asOfMillis)
            throws IOException {
        if ((version < 0) == (asOfMillis < 0)) {
            throw new SfcLayerException.InvalidArgument("restore of " + path + ": give exactly one of a version and"
                + " a time (as_of)");
        }
        VersionLog log = new VersionLog(conf, new Path(path));
        List<Long> vs = log.versions();
        if (vs.isEmpty()) {
            log.current(); // LayerNotFound naming the path
        }
        long latest = vs.get(vs.size() - 1);
        LayerMetadata target = target(log, vs, version, asOfMillis);
        if (target.version == latest) {
            return target;
        }
        // announced before its files are checked: a vacuum running now refuses it, a later one keeps the version
        Path marker = RestoreGuard.restoreStarts(log, target.version);
        try {
            return commit(conf, log, target, latest);
        } finally {
            RestoreGuard.end(log, marker);
        }
    }

    private static LayerMetadata commit(Configuration conf, VersionLog log, LayerMetadata target, long latest)
            throws IOException {
        checkFilesPresent(conf, log, target);
        LayerMetadata md = target.copy();
        md.operation = Conflicts.RESTORE;
        md.readVersion = latest; // a replace: any version committed since it read the log fails this commit
        md.writeId = VersionLog.newWriteId();
        md.createdAt = Instant.now().truncatedTo(ChronoUnit.MICROS).toString();
        md.removedFiles = new ArrayList<>();
        md.changedRanges = new ArrayList<>();
        Map<String, Object> metrics = new LinkedHashMap<>();
        metrics.put("restoredVersion", target.version);
        md.metrics = metrics;
        return log.commit(md, List.of());
    }

    private static LayerMetadata target(VersionLog log, List<Long> vs, long version, long asOfMillis)
            throws IOException {
        String layer = log.layerPath().toString();
        if (version >= 0) {
            if (!vs.contains(version)) {
                // version numbers are contiguous: one below the newest and not listed was removed, also from the
                // middle of the log (a vacuum keeps the versions restores in progress read; the race model found
                // those refused as "no such version")
                boolean vacuumed = version >= 1 && version < vs.get(vs.size() - 1);
                throw new SfcLayerException.LayerNotFound("cannot restore version " + version + " of layer " + layer
                    + (vacuumed ? ": it was removed by vacuum (its version document is gone)"
                    : ": there is no such version") + "; the versions it has are " + describe(vs));
            }
            try {
                return log.read(version);
            } catch (SfcLayerException.LayerNotFound e) {
                // listed a moment ago: a vacuum removed it since (the race model found this message missing)
                throw new SfcLayerException.LayerNotFound("cannot restore version " + version + " of layer " + layer
                    + ": it was removed by vacuum (its version document is gone); the versions it has are "
                    + describe(log.versions()), e);
            }
        }
        try {
            return log.asOf(asOfMillis);
        } catch (SfcLayerException.LayerNotFound e) {
            throw new SfcLayerException.LayerNotFound("cannot restore layer " + layer + " as of "
                + Instant.ofEpochMilli(asOfMillis) + ": " + SfcLayerException.reason(e)
                + (vs.get(0) > 1 ? " (versions before " + vs.get(0) + " were removed by vacuum)" : ""));
        }
    }

    /**
     * Refuses a version a data file of which is gone (vacuumed, or deleted by hand): each data
     * directory is listed once, rather than a look-up per file.
     */
    private static void checkFilesPresent(Configuration conf, VersionLog log, LayerMetadata target)
            throws IOException {
        List<DataFile> files = new ArrayList<>(Layer.open(conf, log.layerPath().toString(), target.version, -1).files());
        for (io.sfclayer.format.DeltaFile d : target.deltas) { // format 7: its deltas are restored with it
            files.add(d.file);
        }
        Map<String, List<DataFile>> byDir = new TreeMap<>();
        for (DataFile f : files) {
            byDir.computeIfAbsent(f.dir, d -> new ArrayList<>()).add(f);
        }
        FileSystem fs = log.fileSystem();
        List<String> missing = new ArrayList<>();
        for (Map.Entry<String, List<DataFile>> e : byDir.entrySet()) {
            Path dir = log.dataDir(e.getKey());
            Set<String> present = new HashSet<>();
            try {
                String prefix = fs.makeQualified(dir).toUri().getPath() + "/";
                for (FileStatus st : ObjectStores.filesUnder(fs, dir)) {
                    String p = st.getPath().toUri().getPath();
                    if (p.startsWith(prefix)) {
                        present.add(p.substring(prefix.length()));
                    }
                }
            } catch (FileNotFoundException gone) {
                // the whole directory is gone: every file of it is missing
            }
            for (DataFile f : e.getValue()) {
                for (String part : new String[] {"data", "index"}) {
                    if (!present.contains(f.name + "/" + part)) {
                        missing.add(e.getKey() + "/" + f.name + "/" + part);
                    }
                }
            }
        }
        if (!missing.isEmpty()) {
            throw new SfcLayerException.LayerNotFound("cannot restore version " + target.version + " of layer "
                + log.layerPath() + ": " + missing.size() + " of its data files are gone (removed by vacuum, or "
                + "deleted), e.g. " + missing.get(0) + "; nothing was changed. Restore a version whose files are"
                + " all present (sfclayer history lists them; sfclayer verify --version N checks one)");
        }
    }

    private static String describe(List<Long> vs) {
        return vs.size() <= 12 ? vs.toString()
            : "[" + vs.get(0) + ", " + vs.get(1) + ", ... " + vs.get(vs.size() - 1) + "] (" + vs.size() + " versions)";
    }
}
