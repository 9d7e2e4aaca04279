package io.sfclayer.layer;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.sfclayer.SfcLayerException;
import io.sfclayer.commit.Conflicts;
import io.sfclayer.commit.VersionLog;
import io.sfclayer.format.LayerMetadata;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;

import java.io.IOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The part of {@code sfclayer repair} that a damaged newest version document needs: that version's
 * changes cannot be recovered from it, so a new version restores the newest readable one, saying
 * so in its history entry (operation {@code restore}). (Damaged records are repaired by rewriting, in Python's
 * {@code sfclayer.repair}, through an ordinary write.) The damaged document stays in place.
 */
public final class LayerRepair {
    private static final ObjectMapper JSON = new ObjectMapper();

    private LayerRepair() {
    }

    /** Restores the newest readable version as a new one; its report as JSON. */
    public static String restoreDocument(Configuration conf, String path) throws IOException {
        VersionLog log = new VersionLog(conf, new Path(path));
        List<Long> vs = log.versions();
        if (vs.isEmpty()) {
            throw new SfcLayerException.LayerNotFound("no sfclayer layer at " + path);
        }
        long latest = vs.get(vs.size() - 1);
        List<Long> damaged = new ArrayList<>();
        LayerMetadata good = null;
        for (int i = vs.size() - 1; i >= 0 && good == null; i--) {
            try {
                good = log.read(vs.get(i));
            } catch (SfcLayerException.CorruptLayer e) {
                damaged.add(vs.get(i));
            }
        }
        if (good == null) {
            throw new SfcLayerException.CorruptLayer("cannot repair layer " + log.layerPath() + ": no version document"
                + " of it is readable (" + damaged.size() + " damaged)");
        }
        Map<String, Object> report = new LinkedHashMap<>();
        report.put("damagedVersions", damaged);
        report.put("restoredVersion", good.version);
        if (damaged.isEmpty()) {
            report.put("newVersion", null);
            return JSON.writeValueAsString(report);
        }
        LayerMetadata md = good.copy();
        md.formatVersion = LayerMetadata.FORMAT_VERSION;
        // a replace-type operation (Conflicts): it reverts every change since good.version, so it conflicts
        // with any version committed after it read the log, and any write that read an older version
        // conflicts with it; readVersion = latest, so a version committed since fails this commit
        md.operation = Conflicts.RESTORE;
        md.readVersion = latest;
        md.writeId = VersionLog.newWriteId();
        md.createdAt = Instant.now().truncatedTo(java.time.temporal.ChronoUnit.MICROS).toString();
        md.removedFiles = new ArrayList<>();
        md.changedRanges = new ArrayList<>();
        Map<String, Object> dropped = new LinkedHashMap<>();
        dropped.put("damagedDocuments", damaged);
        dropped.put("restoredVersion", good.version);
        dropped.put("what", "the document of version " + damaged.get(0) + " is damaged: its changes since version "
            + good.version + " are not in this version, which restores version " + good.version);
        Map<String, Object> metrics = new LinkedHashMap<>();
        metrics.put("dropped", dropped);
        md.metrics = metrics;
        LayerMetadata committed = log.commit(md, List.of());
        report.put("newVersion", committed.version);
        return JSON.writeValueAsString(report);
    }
}
