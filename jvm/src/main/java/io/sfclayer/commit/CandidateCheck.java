package io.sfclayer.commit;

import io.sfclayer.SfcLayerException;

import io.sfclayer.format.DataFile;
import io.sfclayer.format.DeltaFile;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.format.ManifestRef;
import java.util.HashSet;
import java.util.Set;

/**
 * Checks a version document before it is published: its files sorted by first index, each span
 * well-formed, spans disjoint, no file twice, and the totals (file, record and index counts, data
 * bytes) equal to the sums over the files. A bug in building or rebasing a version then fails the
 * write, instead of publishing a layer no reader can read.
 */
public final class CandidateCheck {
    private CandidateCheck() {
    }

    /**
     * Throws an SfcLayerException (the root class: a writer's bug, not bad bytes on disk) naming the
     * layer, the version and what is wrong; nothing is published then.
     */
    public static void check(String layer, LayerMetadata md) {
        String head = "refusing to publish version " + md.version + " of layer " + layer + " (" + md.operation
            + ", write " + md.writeId + "): ";
        if (md.writeId == null || md.writeId.isEmpty()) {
            throw bad(head + "it has no writeId");
        }
        String deltas = DeltaFile.checkOrder(md.deltas, md.version);
        if (deltas != null) {
            throw bad(head + deltas);
        }
        Set<String> deltaIds = new HashSet<>();
        for (DeltaFile d : md.deltas) {
            if (!deltaIds.add(d.id())) {
                throw bad(head + "delta " + d.id() + " is listed twice");
            }
        }
        if (md.manifests != null) {
            checkManifests(head, md);
            return;
        }
        if (md.files.size() != md.fileCount) {
            throw bad(head + "it lists " + md.files.size() + " files but fileCount is " + md.fileCount);
        }
        if (md.formatVersion < 2) {
            return; // format 1 lists its files for information only
        }
        long records = 0;
        long indexes = 0;
        long bytes = 0;
        Set<String> ids = new HashSet<>();
        DataFile prev = null;
        for (DataFile f : md.files) {
            if (f.firstIndex > f.lastIndex) {
                throw bad(head + "file " + f.id() + " spans [" + f.firstIndex + ", " + f.lastIndex + "]");
            }
            if (!ids.add(f.id()) || deltaIds.contains(f.id())) {
                throw bad(head + "file " + f.id() + " is listed twice");
            }
            if (prev != null && prev.lastIndex >= f.firstIndex) {
                throw bad(head + "files " + prev.id() + " [" + prev.firstIndex + ", " + prev.lastIndex + "] and "
                    + f.id() + " [" + f.firstIndex + ", " + f.lastIndex + "] are not sorted and disjoint");
            }
            records += f.records;
            indexes += f.indexes;
            bytes += f.dataBytes;
            prev = f;
        }
        if (records != md.recordCount || indexes != md.indexCount || bytes != md.dataBytes) {
            throw bad(head + "its totals (recordCount " + md.recordCount + ", indexCount " + md.indexCount
                + ", dataBytes " + md.dataBytes + ") differ from its files' (" + records + ", " + indexes + ", "
                + bytes + ")");
        }
    }

    /** Format 6: the top-level references sorted, disjoint, of one level, and the totals their sums. */
    private static void checkManifests(String head, LayerMetadata md) {
        long files = 0, records = 0, indexes = 0, bytes = 0;
        ManifestRef prev = null;
        for (ManifestRef r : md.manifests) {
            if (prev != null && (prev.lastIndex >= r.firstIndex || prev.level != r.level)) {
                throw bad(head + "manifests " + prev + " and " + r + " are not sorted, disjoint and of one level");
            }
            files += r.fileCount;
            records += r.records;
            indexes += r.indexes;
            bytes += r.dataBytes;
            prev = r;
        }
        if (files != md.fileCount || records != md.recordCount || indexes != md.indexCount || bytes != md.dataBytes) {
            throw bad(head + "its totals differ from its manifests' (" + files + " files, " + records + " records)");
        }
    }

    private static SfcLayerException bad(String message) {
        return new SfcLayerException(message + "; nothing was published");
    }
}
