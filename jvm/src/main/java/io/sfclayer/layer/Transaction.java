package io.sfclayer.layer;

import io.sfclayer.format.DataFile;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.format.Transactions;

import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The new version one write commits, built from the version it read: that version's files minus those
 * its tasks removed (all of them for a whole-layer write) plus those they added, the index spans it
 * changed and its history entry's metrics. No Spark and no storage here: the caller publishes the
 * document ({@link io.sfclayer.commit.VersionLog#commit}).
 *
 * @param writeId       the write's id
 * @param dataDirName   the write's data directory
 * @param formatVersion the format of the version committed
 * @param coveredRanges index spans the write covers beyond its files' (a delete's boxes): recorded as changed
 * @param replaced      an overwrite of a version with manifests: that version, whose files are not read (its
 *                      totals give the history's files and records removed); null otherwise
 * @param repair        what a repair dropped, recorded in the version's history entry; null for other writes
 * @param txn           the batch this write commits idempotently; null: none
 */
public record Transaction(String writeId, String dataDirName, int formatVersion, List<long[]> coveredRanges,
                          LayerMetadata replaced, Object repair, Transactions.Txn txn) {
    /** At most this many {@code changedRanges} in a version document (more are coarsened). */
    public static final int MAX_CHANGED_RANGES = 64;

    /**
     * Sets {@code md} (its shape fields set) to the new version: {@code baseFiles} minus {@code removed}
     * (all of them when {@code replaceAll}) plus {@code added}, with the changed ranges and the metrics
     * ({@code counts}: the tasks' tiles). Returns {@code md}.
     */
    public LayerMetadata apply(LayerMetadata md, List<DataFile> baseFiles, List<DataFile> added,
                               List<DataFile> removed, TileCounts counts, boolean replaceAll) {
        if (replaceAll) {
            removed = new ArrayList<>(baseFiles);
        }
        Set<String> removedIds = new HashSet<>();
        for (DataFile f : removed) {
            removedIds.add(f.id());
        }
        List<DataFile> files = new ArrayList<>();
        for (DataFile f : baseFiles) {
            if (!removedIds.contains(f.id())) {
                files.add(f);
            }
        }
        files.addAll(added);
        // deltas among the removed were folded into the files added (docs/FORMAT.md section 11)
        List<io.sfclayer.format.DeltaFile> deltas = new ArrayList<>();
        Set<String> folded = new HashSet<>();
        for (io.sfclayer.format.DeltaFile d : md.deltas) {
            if (removedIds.contains(d.id())) {
                folded.add(d.id());
            } else {
                deltas.add(d);
            }
        }
        md.deltas = deltas;
        md.foldedDeltas = folded;
        md.formatVersion = formatVersion;
        md.writeId = writeId;
        md.createdAt = Instant.now().truncatedTo(ChronoUnit.MICROS).toString();
        md.dataDir = dataDirName;
        md.setFiles(files);
        md.removedFiles = new ArrayList<>(removedIds);
        md.removedFiles.sort(null);
        md.changedRanges = TouchedFiles.coarsen(spans(added, replaceAll ? List.of() : removed, coveredRanges),
            MAX_CHANGED_RANGES);
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("filesAdded", added.size());
        m.put("filesRemoved", replaced != null ? replaced.fileCount : removed.size());
        m.put("recordsAdded", added.stream().mapToLong(f -> f.records).sum());
        m.put("recordsRemoved", replaced != null ? replaced.recordCount
            : removed.stream().mapToLong(f -> f.records).sum());
        m.put("bytesWritten", added.stream().mapToLong(f -> f.dataBytes).sum());
        m.put("tilesInserted", counts.inserted());
        m.put("tilesReplaced", counts.replaced());
        m.put("tilesKept", counts.kept());
        m.put("tilesDeleted", counts.deleted());
        if (repair != null) {
            // the history entry of a repair lists what it dropped
            md.operation = "repair";
            m.put("dropped", repair);
        }
        md.metrics = m;
        md.txn = txn;
        return md;
    }

    /**
     * Sets {@code md} (a copy of the version read, its base files as they are) to a delta append's
     * version (docs/FORMAT.md section 11): the read version's deltas plus {@code added} as this
     * version's own (their {@code addedIn} set at publish), nothing removed, the changed ranges the
     * new files' spans; whether its tiles were inserted or replaced is unknown (null). Returns {@code md}.
     */
    public LayerMetadata applyDelta(LayerMetadata md, List<DataFile> added) {
        List<DataFile> sorted = new ArrayList<>(added);
        sorted.sort(null);
        for (DataFile f : sorted) {
            md.deltas.add(new io.sfclayer.format.DeltaFile(f, -1));
        }
        md.deltaAppend = true;
        md.foldedDeltas = null;
        md.formatVersion = formatVersion;
        md.writeId = writeId;
        md.createdAt = Instant.now().truncatedTo(ChronoUnit.MICROS).toString();
        md.dataDir = dataDirName;
        md.removedFiles = new ArrayList<>();
        md.changedRanges = TouchedFiles.coarsen(spans(sorted, List.of(), List.of()), MAX_CHANGED_RANGES);
        long records = sorted.stream().mapToLong(f -> f.records).sum();
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("filesAdded", sorted.size());
        m.put("filesRemoved", 0);
        m.put("recordsAdded", records);
        m.put("recordsRemoved", 0);
        m.put("bytesWritten", sorted.stream().mapToLong(f -> f.dataBytes).sum());
        m.put("tilesWritten", records);
        m.put("tilesInserted", null); // unknown without reading the base files
        m.put("tilesReplaced", null);
        m.put("tilesKept", 0);
        m.put("tilesDeleted", 0);
        md.metrics = m;
        md.txn = txn;
        return md;
    }

    /** The sorted, merged index spans of {@code a} and {@code b}'s files and of {@code extra}. */
    public static List<long[]> spans(List<DataFile> a, List<DataFile> b, List<long[]> extra) {
        List<long[]> all = new ArrayList<>();
        for (long[] r : extra) {
            all.add(r.clone());
        }
        for (DataFile f : a) {
            all.add(new long[] {f.firstIndex, f.lastIndex});
        }
        for (DataFile f : b) {
            all.add(new long[] {f.firstIndex, f.lastIndex});
        }
        all.sort((x, y) -> Long.compare(x[0], y[0]));
        List<long[]> out = new ArrayList<>();
        for (long[] s : all) {
            if (!out.isEmpty() && s[0] <= out.get(out.size() - 1)[1] + 1) {
                long[] last = out.get(out.size() - 1);
                last[1] = Math.max(last[1], s[1]);
            } else {
                out.add(s.clone());
            }
        }
        return out;
    }
}
