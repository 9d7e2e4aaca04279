package io.sfclayer.layer;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.sfclayer.SfcLayerException;
import io.sfclayer.commit.VersionLog;
import io.sfclayer.format.DataFile;
import io.sfclayer.format.DataFileEntry;
import io.sfclayer.format.DataFileName;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.format.Manifest;
import io.sfclayer.format.ObjectStores;
import io.sfclayer.format.ManifestRef;
import io.sfclayer.format.RecordFrame;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

import java.io.IOException;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The part of {@code sfclayer repair} for a format 6 version whose manifest is damaged or missing
 * (docs/FORMAT.md section 10): the manifest's reference in its parent (or the version document) still
 * says which SFC span it covered and how many files, records, index groups and data bytes it listed,
 * so its files are found again among the data files on disk: every whole data file (verified record by
 * record) in that span is a candidate, and exactly one chain of candidates must match the reference
 * (first and last index, disjoint and ordered, the four totals). The version is then committed again
 * (operation {@code repair}) with its manifests rebuilt from the files. When no chain, or more than
 * one, matches (a file is damaged or gone), nothing is written and the error names the newest older
 * version whose manifests all read, to restore.
 */
public final class ManifestRepair {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** Chains matching a reference's totals looked at, at most (then the choice below is refused as unsure). */
    private static final int ENOUGH = 64;

    private final Configuration conf;
    private final VersionLog log;
    private final LayerMetadata md;
    private final Manifest.Store store;
    private List<DataFile> onDisk;
    /** Damaged or unreadable data files on disk: {@code dir/name} by first index. */
    private final Map<String, Long> damagedOnDisk = new java.util.TreeMap<>();

    private ManifestRepair(Configuration conf, VersionLog log, LayerMetadata md) throws IOException {
        this.conf = conf;
        this.log = log;
        this.md = md;
        this.store = new Manifest.Store(conf, log.layerPath());
    }

    /**
     * Rebuilds the damaged manifests of the newest version; the report as JSON: {@code damagedManifests}
     * (their names), {@code repairedVersion} and {@code newVersion} (null when every manifest read).
     */
    public static String run(Configuration conf, String path) throws IOException {
        VersionLog log = new VersionLog(conf, new Path(path));
        LayerMetadata md = log.current();
        Map<String, Object> report = new LinkedHashMap<>();
        List<String> damaged = new ArrayList<>();
        report.put("damagedManifests", damaged);
        report.put("repairedVersion", md.version);
        report.put("newVersion", null);
        if (md.manifests == null) {
            return JSON.writeValueAsString(report);
        }
        ManifestRepair r = new ManifestRepair(conf, log, md);
        List<DataFile> files = new ArrayList<>();
        for (ManifestRef ref : md.manifests) {
            r.collect(ref, files, damaged);
        }
        if (damaged.isEmpty()) {
            return JSON.writeValueAsString(report);
        }
        LayerMetadata c = md.copy();
        c.writeId = VersionLog.newWriteId();
        c.setFiles(files);
        // the version's manifests built whole again (section 10), whatever the inline threshold: it stays format 6
        c.setManifests(new io.sfclayer.format.ManifestTree(new Manifest.Store(conf, log.layerPath()), c.writeId, conf)
            .build(c.files));
        c.operation = "repair";
        c.readVersion = md.version;
        c.createdAt = Instant.now().truncatedTo(ChronoUnit.MICROS).toString();
        c.removedFiles = new ArrayList<>();
        c.changedRanges = new ArrayList<>();
        Map<String, Object> metrics = new LinkedHashMap<>();
        metrics.put("repairedVersion", md.version);
        metrics.put("rebuiltManifests", damaged);
        c.metrics = metrics;
        report.put("newVersion", log.commit(c, List.of()).version);
        return JSON.writeValueAsString(report);
    }

    private void collect(ManifestRef ref, List<DataFile> files, List<String> damaged) throws IOException {
        Manifest m;
        try {
            m = store.read(ref);
        } catch (SfcLayerException.CorruptLayer e) {
            damaged.add(ref.path);
            files.addAll(rebuild(ref, e));
            return;
        }
        if (m.level == 0) {
            files.addAll(m.files);
        } else {
            for (ManifestRef child : m.children) {
                collect(child, files, damaged);
            }
        }
    }

    /** The files a damaged manifest listed: the one chain of whole files on disk matching its reference. */
    private List<DataFile> rebuild(ManifestRef ref, SfcLayerException.CorruptLayer why) throws IOException {
        List<DataFile> candidates = new ArrayList<>();
        for (DataFile f : onDisk()) {
            if (f.firstIndex >= ref.firstIndex && f.lastIndex <= ref.lastIndex) {
                candidates.add(f);
            }
        }
        // The manifest's write (its name, m-<writeId>-…) listed only files of writes up to itself, and every
        // file it wrote in its span (a write's own files are all in its version)
        String writer = writeTime(ref.path.replaceFirst("^m-", "").replaceFirst("-[0-9a-f]{8}\\.json$", ""));
        candidates.removeIf(f -> writeTime(f.dir).compareTo(writer) > 0);
        List<String> suspects = new ArrayList<>(); // a damaged file the manifest may have listed: refuse to guess
        damagedOnDisk.forEach((id, first) -> {
            if (first >= ref.firstIndex && first <= ref.lastIndex && writeTime(id).compareTo(writer) <= 0) {
                suspects.add(id);
            }
        });
        List<List<DataFile>> chains = new ArrayList<>();
        search(ref, candidates, 0, new ArrayList<>(), chains);
        String own = ref.path.replaceFirst("^m-", "").replaceFirst("-[0-9a-f]{8}\\.json$", "");
        long owned = candidates.stream().filter(f -> writeId(f.dir).equals(own)).count();
        chains.removeIf(c -> c.stream().filter(f -> writeId(f.dir).equals(own)).count() != owned);
        // of files rewritten in turn, a version lists the newest: the chain of the latest writes
        chains.sort(Comparator.comparing(ManifestRepair::recency).reversed());
        boolean one = chains.size() == 1 || chains.size() > 1 && chains.size() < ENOUGH
            && recency(chains.get(0)).compareTo(recency(chains.get(1))) > 0;
        if (suspects.isEmpty() && one) {
            return chains.get(0);
        }
        throw new SfcLayerException.CorruptLayer("cannot repair layer " + log.layerPath() + ": " + SfcLayerException.reason(why)
            + ", and its " + ref.fileCount + " data files cannot be told from the whole data files on disk in SFC"
            + " indexes " + ref.firstIndex + ".." + ref.lastIndex + " (" + candidates.size() + " whole candidates, "
            + (chains.isEmpty() ? "no set" : "several sets") + " matching its records, index groups and bytes"
            + (suspects.isEmpty() ? "" : "; damaged or unreadable data files in that span: " + suspects) + "). "
            + restoreAdvice());
    }

    /** The write of a data file's directory ({@code data-<writeId>/...}). */
    private static String writeId(String dir) {
        String top = dir.split("/", 2)[0];
        return top.startsWith(VersionLog.DATA_DIR_PREFIX) ? top.substring(VersionLog.DATA_DIR_PREFIX.length()) : top;
    }

    /** A write's start time as its id says ({@code yyyyMMdd'T'HHmmss-…}), comparable as text. */
    private static String writeTime(String dirOrId) {
        String id = writeId(dirOrId);
        return id.length() >= 15 ? id.substring(0, 15) : id;
    }

    /** A chain's write times, newest first, compared as text: the chain of later writes is the greater. */
    private static String recency(List<DataFile> chain) {
        List<String> times = new ArrayList<>();
        for (DataFile f : chain) {
            times.add(writeTime(f.dir));
        }
        times.sort(Comparator.reverseOrder());
        return String.join(",", times);
    }

    private static void search(ManifestRef ref, List<DataFile> sorted, int from, List<DataFile> chain,
                               List<List<DataFile>> out) {
        if (out.size() >= ENOUGH || chain.size() > ref.fileCount) {
            return;
        }
        long records = 0, indexes = 0, bytes = 0;
        for (DataFile f : chain) {
            records += f.records;
            indexes += f.indexes;
            bytes += f.dataBytes;
        }
        if (records > ref.records || indexes > ref.indexes || bytes > ref.dataBytes) {
            return;
        }
        DataFile last = chain.isEmpty() ? null : chain.get(chain.size() - 1);
        if (last != null && chain.size() == ref.fileCount) {
            if (last.lastIndex == ref.lastIndex && records == ref.records && indexes == ref.indexes
                    && bytes == ref.dataBytes) {
                out.add(new ArrayList<>(chain));
            }
            return;
        }
        for (int i = from; i < sorted.size(); i++) {
            DataFile f = sorted.get(i);
            if (chain.isEmpty() ? f.firstIndex != ref.firstIndex : f.firstIndex <= last.lastIndex) {
                continue;
            }
            chain.add(f);
            search(ref, sorted, i + 1, chain, out);
            chain.remove(chain.size() - 1);
        }
    }

    /** Every whole data file on disk (verified record by record), with the entry a document would list. */
    private List<DataFile> onDisk() throws IOException {
        if (onDisk != null) {
            return onDisk;
        }
        onDisk = new ArrayList<>();
        FileSystem fs = log.fileSystem();
        String layer = log.layerPath().toUri().getPath() + "/";
        for (FileStatus d : fs.listStatus(log.layerPath())) {
            if (!d.isDirectory() || !d.getPath().getName().startsWith(VersionLog.DATA_DIR_PREFIX)) {
                continue;
            }
            for (FileStatus st : ObjectStores.filesUnder(fs, d.getPath())) {
                Path mapFile = st.getPath().getParent();
                if (!st.getPath().getName().equals("data") || !DataFileName.looksLikeDataFile(mapFile.getName())) {
                    continue;
                }
                String dir = mapFile.getParent().toUri().getPath().substring(layer.length());
                DataFile f = whole(fs, dir, mapFile, st.getLen());
                if (f != null) {
                    onDisk.add(f);
                }
            }
        }
        onDisk.sort(Comparator.comparingLong((DataFile f) -> f.firstIndex).thenComparing(DataFile::id));
        return onDisk;
    }

    /** The entry of the data file {@code mapFile}, or null (noted) when it is damaged or unreadable. */
    private DataFile whole(FileSystem fs, String dir, Path mapFile, long length) {
        String name = mapFile.getName();
        try {
            java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
            try (FSDataInputStream in = fs.open(new Path(mapFile, "index"))) {
                crc.update(in.readAllBytes());
            }
            DataFileEntry entry = new DataFileEntry(name, DataFileName.parse(name).firstIndex, -1, -1, length,
                crc.getValue(), RecordFrame.FIRST_CHECKED_VERSION, log.layerPath().toString());
            LayerVerifier.FileReport r = new LayerVerifier.FileCheck(entry, Long.MAX_VALUE, mapFile.toString(), md)
                .run(conf);
            if (r.damagedRecords > 0 || !r.problems.isEmpty() || r.groups == 0) {
                damagedOnDisk.put(dir + "/" + name, entry.firstIndex);
                return null;
            }
            return new DataFile(dir, name, entry.firstIndex, r.lastIndex, r.tiles, r.groups, length, crc.getValue(), null);
        } catch (IOException | RuntimeException e) {
            damagedOnDisk.put(dir + "/" + name, DataFileName.looksLikeDataFile(name) ? DataFileName.parse(name).firstIndex
                : -1);
            return null;
        }
    }

    /** Which older version to restore: the newest whose manifests (and files' list) all read. */
    private String restoreAdvice() throws IOException {
        List<Long> vs = log.versions();
        for (int i = vs.size() - 1; i >= 0; i--) {
            long v = vs.get(i);
            if (v >= md.version) {
                continue;
            }
            try {
                Layer.open(conf, log.layerPath().toString(), v, -1).files();
                return "Restore the newest older version whose manifests read whole: sfclayer restore "
                    + log.layerPath() + " --version " + v + " (then sfclayer verify it)";
            } catch (SfcLayerException.CorruptLayer | SfcLayerException.LayerNotFound e) {
                // that one is damaged too: look further back
            }
        }
        return "No older version of it reads whole either: it cannot be restored from this layer";
    }
}
