package io.sfclayer.layer;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.sfclayer.SfcLayerException;
import io.sfclayer.codec.TileCursor;
import io.sfclayer.codec.TileSchema;
import io.sfclayer.commit.VersionLog;
import io.sfclayer.curve.KeyIndex;
import io.sfclayer.format.BloomFilter;
import io.sfclayer.format.DataFile;
import io.sfclayer.format.DataFileEntry;
import io.sfclayer.format.DataFileIndex;
import io.sfclayer.format.DataFileListing;
import io.sfclayer.format.DataFileReader;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.format.ValueCompression;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;

import java.io.IOException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code sfclayer verify}: reads every record of one layer version and checks what the format
 * promises: record checksums and lengths, key order within and across files, each file's name against its first record, every index entry
 * against the record it points at, file lengths and index checksums, bloom filters (checksum, and no
 * index of the file ruled out), record and tile counts
 * against the version document, and that every tile's key maps to its group's SFC index.
 * The result is a JSON report (the Python {@code sfclayer.verify} turns it into a report object).
 *
 * <p>Spark-free: the per-file checks ({@link FileCheck}, serializable) run wherever the caller's
 * {@link Runner} sends them: {@code io.sfclayer.spark.VerifyJob} runs them as one distributed Spark job,
 * {@link #run(Configuration, String, Long)} one after another here.
 */
public final class LayerVerifier {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** Lost records listed per file in the report (the count is always exact). */
    static final int MAX_LISTED = 1000;

    private LayerVerifier() {
    }

    /** What one file holds and what is wrong with it. */
    public static final class FileReport implements Serializable {
        private static final long serialVersionUID = 1L;
        public String name;
        /** A delta file's directory (format 7), null for base files (named by their name alone, as before). */
        public String dir;
        public boolean delta;
        /** A delta file's {@code addedIn}: the version before it is the newest that does not list it. */
        public long addedIn;
        public long firstIndex;
        public long lastIndex;
        public long groups;
        public long tiles;
        public long damagedRecords;
        public long firstOffset = -1;
        public final List<String> problems = new ArrayList<>();
        /** Per damaged record: offset, claimed SFC index, last intact index before it, what. */
        public final List<Map<String, Object>> lost = new ArrayList<>();

        Map<String, Object> toJson() {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("name", name);
            if (delta) {
                m.put("dir", dir);
                m.put("delta", true);
                m.put("addedIn", addedIn);
            }
            m.put("firstIndex", firstIndex);
            m.put("lastIndex", lastIndex);
            m.put("groups", groups);
            m.put("tiles", tiles);
            m.put("damagedRecords", damagedRecords);
            m.put("firstOffset", firstOffset);
            m.put("problems", problems);
            m.put("lost", lost);
            return m;
        }
    }

    /** Runs the checks of a version's files; {@code description} names the work (a job's description). */
    @FunctionalInterface
    public interface Runner {
        List<FileReport> run(String description, List<FileCheck> checks) throws IOException;
    }

    /** The checks of one data file, with all they need, sent to wherever they run. */
    public static final class FileCheck implements Serializable {
        private static final long serialVersionUID = 1L;
        final DataFileEntry entry;
        final long nextFirst;
        final String path;
        final KeyIndex keyIndex;
        final String valueSchema;
        final boolean spaceTime;
        final String compression;
        /** A delta file's directory (format 7), else null. */
        String deltaDir;
        long addedIn;

        FileCheck(DataFileEntry entry, long nextFirst, String path, LayerMetadata md) {
            this.entry = entry;
            this.nextFirst = nextFirst;
            this.path = path;
            this.keyIndex = md.keyIndex;
            this.valueSchema = md.valueSchemaJson;
            this.spaceTime = md.isSpaceTime();
            this.compression = md.compression;
        }

        /** Checks the file whole. */
        public FileReport run(Configuration conf) throws IOException {
            FileReport r = verifyFile(conf, new Path(path), entry, nextFirst, keyIndex, valueSchema, spaceTime, compression);
            if (deltaDir != null) {
                r.delta = true;
                r.dir = deltaDir;
                r.addedIn = addedIn;
            }
            return r;
        }
    }

    /** Verifies here, one file after another (no cluster). */
    public static String run(Configuration conf, String path, Long version) throws IOException {
        return run(conf, path, version, (description, checks) -> {
            List<FileReport> out = new ArrayList<>();
            for (FileCheck c : checks) {
                out.add(c.run(conf));
            }
            return out;
        });
    }

    /** Verifies version {@code version} (null: the newest) of the layer at {@code path}; the report as JSON. */
    public static String run(Configuration conf, String path, Long version, Runner runner) throws IOException {
        Map<String, Object> report = new LinkedHashMap<>();
        List<String> problems = new ArrayList<>();
        report.put("layer", path);
        LayerMetadata md;
        try {
            VersionLog log = new VersionLog(conf, new Path(path));
            report.put("layer", log.layerPath().toString());
            if (version == null) {
                List<Long> vs = log.versions();
                version = vs.isEmpty() ? null : vs.get(vs.size() - 1);
            }
            md = version == null ? log.current() : log.read(version);
        } catch (SfcLayerException.CorruptLayer e) {
            problems.add(SfcLayerException.reason(e));
            report.put("documentDamaged", true);
            report.put("version", version);
            report.put("problems", problems);
            report.put("files", List.of());
            return JSON.writeValueAsString(report);
        }
        Layer layer = Layer.open(conf, path, md.version, -1);
        report.put("version", md.version);
        report.put("formatVersion", md.formatVersion);
        List<DataFileEntry> entries = new ArrayList<>();
        List<String> paths = new ArrayList<>();
        if (md.manifests != null) {
            // format 6: every manifest is read and checked (checksum, reference, order) on the way
            List<DataFile> all;
            try {
                all = layer.files();
            } catch (SfcLayerException.CorruptLayer e) {
                problems.add(SfcLayerException.reason(e));
                report.put("manifestsDamaged", true); // repair rebuilds them from the data files (ManifestRepair)
                report.put("problems", problems);
                report.put("files", List.of());
                return JSON.writeValueAsString(report);
            }
            for (DataFile f : all) {
                entries.add(DataFileEntry.of(f, md.formatVersion, layer.path().toString()));
                paths.add(new Path(new Path(layer.path(), f.dir), f.name).toString());
            }
        } else if (!md.files.isEmpty() || md.fileCount == 0) {
            for (DataFile f : md.files) { // sorted by first index
                entries.add(DataFileEntry.of(f, md.formatVersion, layer.path().toString()));
                paths.add(new Path(new Path(layer.path(), f.dir), f.name).toString());
            }
        } else {
            DataFileListing listing = layer.listing();
            for (int i = 0; i < listing.size(); i++) {
                entries.add(layer.entry(listing.name(i)));
                paths.add(listing.path(i).toString());
            }
        }
        if (entries.size() != md.fileCount) {
            problems.add("the version document lists " + entries.size() + " files but says fileCount " + md.fileCount);
        }
        List<FileCheck> checks = new ArrayList<>();
        for (int i = 0; i < entries.size(); i++) {
            long nextFirst = i + 1 < entries.size() ? entries.get(i + 1).firstIndex : Long.MAX_VALUE;
            checks.add(new FileCheck(entries.get(i), nextFirst, paths.get(i), md));
        }
        // format 7: each delta is checked as a base file is, within its own span (its groups and tiles are
        // not among the document's totals, which count base files only)
        Deltas deltas = layer.deltas();
        for (int d = 0; d < deltas.size(); d++) {
            long last = deltas.last(d);
            FileCheck c = new FileCheck(deltas.entry(d), last == Long.MAX_VALUE ? last : last + 1,
                deltas.path(d).toString(), md);
            c.deltaDir = deltas.get(d).file.dir;
            c.addedIn = deltas.get(d).addedIn;
            checks.add(c);
        }
        List<FileReport> files = checks.isEmpty() ? List.of()
            : runner.run("sfclayer: verify " + path + " v" + md.version, checks);
        long groups = 0, tiles = 0, damaged = 0;
        List<Map<String, Object>> out = new ArrayList<>();
        for (FileReport f : files) {
            if (!f.delta) {
                groups += f.groups;
                tiles += f.tiles;
            }
            damaged += f.damagedRecords;
            if (!f.problems.isEmpty() || f.damagedRecords > 0) {
                out.add(f.toJson());
            }
        }
        if (problems.isEmpty() && damaged == 0 && out.isEmpty()) {
            if (groups != md.indexCount) {
                problems.add("the files hold " + groups + " index groups but the version document says " + md.indexCount);
            }
            if (tiles != md.recordCount) {
                problems.add("the files hold " + tiles + " tiles but the version document says " + md.recordCount);
            }
        }
        report.put("filesChecked", files.size());
        if (!deltas.isEmpty()) {
            report.put("deltasChecked", deltas.size());
        }
        report.put("groupsChecked", groups);
        report.put("tilesChecked", tiles);
        report.put("damagedRecords", damaged);
        report.put("problems", problems);
        report.put("files", out);
        return JSON.writeValueAsString(report);
    }

    /** Checks one data file whole (on an executor). */
    static FileReport verifyFile(Configuration conf, Path file, DataFileEntry entry, long nextFirst, KeyIndex keyIndex,
                                 String valueSchema, boolean spaceTime, String compressionName) throws IOException {
        FileReport r = new FileReport();
        r.name = entry.name;
        r.firstIndex = entry.firstIndex;
        r.lastIndex = entry.lastIndex;
        DataFileReader.DamageSink sink = d -> {
            r.damagedRecords += d.records;
            if (d.offset >= 0 && (r.firstOffset < 0 || d.offset < r.firstOffset)) {
                r.firstOffset = d.offset;
            }
            if (d.records == 0 || d.offset < 0) {
                r.problems.add(d.what);
            }
            if (d.records > 0 && r.lost.size() < MAX_LISTED) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("offset", d.offset);
                m.put("index", d.index);
                m.put("after", d.after);
                m.put("what", d.what);
                r.lost.add(m);
            }
        };
        TileCursor cursor = new TileCursor(TileSchema.fromJson(valueSchema, spaceTime));
        ValueCompression compression = ValueCompression.parse(compressionName);
        try (DataFileReader reader = new DataFileReader(conf, file, entry, sink)) {
            if (!reader.readable()) {
                return r;
            }
            reader.verifyIndex();
            BloomFilter bloom = null;
            if (entry.bloomCrc32c != null) {
                try {
                    bloom = BloomFilter.read(file.getFileSystem(conf), file, entry.bloomCrc32c, entry.layer);
                } catch (SfcLayerException.CorruptLayer e) {
                    r.problems.add(SfcLayerException.reason(e));
                }
            }
            long first = -1;
            long last = -1;
            while (reader.next()) {
                long index = reader.index();
                if (bloom != null && !bloom.mightContain(index)) {
                    r.problems.add("bloom filter " + new Path(file, BloomFilter.FILE_NAME) + " says SFC index " + index
                        + " (byte " + reader.recordOffset() + ") is absent: it does not match the data file");
                    bloom = null; // one line per file is enough
                }
                if (first < 0) {
                    first = index;
                }
                last = index;
                if (index < entry.firstIndex || index >= nextFirst) {
                    r.problems.add("SFC index " + index + " at byte " + reader.recordOffset() + " lies outside the file's"
                        + " span [" + entry.firstIndex + ", " + (nextFirst == Long.MAX_VALUE ? "end" : nextFirst - 1) + "]");
                }
                r.groups++;
                try {
                    byte[] buf = reader.bytes();
                    int off = reader.offset();
                    int len = reader.length();
                    if (compression != ValueCompression.NONE) {
                        buf = compression.decompress(buf, off, len);
                        off = 0;
                        len = buf.length;
                    }
                    cursor.reset(buf, off, len);
                    while (cursor.next()) {
                        long k = spaceTime ? keyIndex.index(cursor.col(), cursor.row(), cursor.timeMicros())
                            : keyIndex.index(cursor.col(), cursor.row());
                        if (k != index) {
                            throw new SfcLayerException.CorruptLayer("tile (" + cursor.col() + ", " + cursor.row()
                                + ") maps to SFC index " + k);
                        }
                        cursor.skipValues();
                        r.tiles++;
                    }
                } catch (SfcLayerException | IllegalArgumentException | IndexOutOfBoundsException e) {
                    sink.damaged(new DataFileReader.Damage(file.toString(), reader.recordOffset(), index, null, -1, 1,
                        "the group at SFC index " + index + " (byte " + reader.recordOffset() + ") does not decode: "
                            + SfcLayerException.reason(e)));
                }
            }
            if (r.damagedRecords > 0 && entry.indexes > r.groups + r.damagedRecords) {
                // damaged lengths or a cut-off end lose records the reader could not count: the document can
                r.damagedRecords = entry.indexes - r.groups;
            }
            if (entry.lastIndex < 0) {
                r.lastIndex = last; // a file no document lists yet (ManifestRepair): what it holds
            }
            if (first >= 0 && first != entry.firstIndex && r.damagedRecords == 0) {
                r.problems.add("its name says first index " + entry.firstIndex + " but its first record is " + first);
            }
            if (r.damagedRecords == 0 && r.problems.isEmpty()) {
                if (entry.lastIndex >= 0 && last != entry.lastIndex) {
                    r.problems.add("its last record is SFC index " + last + " but the version document says " + entry.lastIndex);
                }
                if (entry.indexes >= 0 && r.groups != entry.indexes) {
                    r.problems.add("it holds " + r.groups + " index groups but the version document says " + entry.indexes);
                }
            }
        }
        return r;
    }
}
