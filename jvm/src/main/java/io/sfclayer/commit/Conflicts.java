package io.sfclayer.commit;

import io.sfclayer.SfcLayerException;

import io.sfclayer.format.DataFile;
import io.sfclayer.format.DeltaFile;
import io.sfclayer.format.LayerMetadata;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The optimistic-concurrency rules of a commit (docs/FORMAT.md, "Commit protocol"): a write based on
 * version R may commit on top of newer versions only if none of them replaced the layer, removed a
 * file this write removed, or changed an index span this write changed; it is then rebuilt from the
 * newest version (a rebase). Otherwise it fails with {@link SfcLayerException.ConcurrentUpdate}.
 */
public final class Conflicts {
    private Conflicts() {
    }

    /**
     * Replace-type operations conflict with everything: a write or overwrite, and a restore (a repair
     * of a damaged version document, which reverts every change since the version it restores and so
     * lists no removed files or changed ranges of its own).
     */
    static boolean replacesLayer(LayerMetadata md) {
        return md.operation.equals("write") || md.operation.equals("overwrite") || md.operation.equals(RESTORE);
    }

    /** The operation of a version that restores an earlier one (LayerRepair.restoreDocument). */
    public static final String RESTORE = "restore";

    /** Throws ConcurrentUpdate naming the version and what conflicts, if {@code mine} cannot rebase over {@code newer}. */
    public static void check(String layer, LayerMetadata mine, List<LayerMetadata> newer) {
        Set<String> myRemoved = new HashSet<>(mine.removedFiles);
        for (LayerMetadata v : newer) {
            String head = "concurrent update of layer " + layer + ": this " + mine.operation + " read version "
                + Math.max(0, mine.readVersion) + ", but version " + v.version + " (" + v.operation + ", " + v.createdAt
                + ") was committed since";
            if (replacesLayer(v)) {
                throw new SfcLayerException.ConcurrentUpdate(head + " and replaced the whole layer; nothing was "
                    + "published, retry the " + mine.operation);
            }
            if (replacesLayer(mine)) {
                throw new SfcLayerException.ConcurrentUpdate(head + "; a replacing " + mine.operation
                    + " conflicts with every concurrent change, nothing was published");
            }
            if (mine.deltaAppend) {
                // a delta append removes nothing and its tiles are newer than any: it lands on any other
                // version (section 11); a copy-on-write update still meets a newer delta append's ranges below
                continue;
            }
            List<String> both = new ArrayList<>();
            for (String f : v.removedFiles) {
                if (myRemoved.contains(f)) {
                    both.add(f);
                }
            }
            if (!both.isEmpty()) {
                throw new SfcLayerException.ConcurrentUpdate(head + " and rewrote or removed the same files "
                    + both + "; nothing was published");
            }
            for (long[] a : mine.changedRanges) {
                for (long[] b : v.changedRanges) {
                    if (a[0] <= b[1] && b[0] <= a[1]) {
                        throw new SfcLayerException.ConcurrentUpdate(head + " and changed index range [" + b[0] + ", "
                            + b[1] + "], which meets this write's [" + a[0] + ", " + a[1] + "]; nothing was published");
                    }
                }
            }
        }
    }

    /**
     * {@code mine} rebuilt on top of {@code newest}: every field of the newest version it does not
     * change, the newest version's files minus those it removed plus those it added, and the newest's
     * deltas minus those it folded plus its own new ones (format 7, section 11).
     */
    public static LayerMetadata rebase(LayerMetadata mine, List<DataFile> added, LayerMetadata newest) {

        LayerMetadata r = newest.copy();
        r.formatVersion = LayerMetadata.FORMAT_VERSION;
        r.writeId = mine.writeId;
        r.createdAt = mine.createdAt;
        r.dataDir = mine.dataDir;
        r.operation = mine.operation;
        r.readVersion = mine.readVersion;
        r.removedFiles = new ArrayList<>(mine.removedFiles);
        r.changedRanges = new ArrayList<>(mine.changedRanges);
        r.metrics = mine.metrics;
        r.txn = mine.txn; // newest's transactions are carried; Transactions.record adds mine
        Set<String> removed = new HashSet<>(mine.removedFiles);
        List<DataFile> files = new ArrayList<>();
        for (DataFile f : newest.files) {
            if (!removed.contains(f.id())) {
                files.add(f);
            }
        }
        files.addAll(added);
        r.setFiles(files);
        // the newest's deltas but those this write folded, then this write's own (section 11)
        List<DeltaFile> deltas = new ArrayList<>();
        for (DeltaFile d : newest.deltas) {
            if (!removed.contains(d.id())) {
                deltas.add(d);
            }
        }
        for (DeltaFile d : mine.deltas) {
            if (d.addedIn < 0) {
                deltas.add(d);
            }
        }
        r.deltas = deltas;
        r.deltaAppend = mine.deltaAppend;
        r.autoCompact = mine.autoCompact;
        r.foldedDeltas = mine.foldedDeltas;
        return r;
    }
}
