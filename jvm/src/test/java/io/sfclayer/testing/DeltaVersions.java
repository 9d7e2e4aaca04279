package io.sfclayer.testing;

import io.sfclayer.commit.VersionLog;
import io.sfclayer.format.DataFile;
import io.sfclayer.format.DeltaFile;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.layer.Layer;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.FileUtil;
import org.apache.hadoop.fs.Path;

import java.io.IOException;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * Builds format 7 versions (delta files, docs/FORMAT.md section 11) by hand, for readers' tests while
 * no writer writes them, and as an independent way to make them afterwards: a layer {@code source}
 * written with the same key index, schema and compression as {@code layer} has its newest version's
 * files copied into {@code layer} (its data directories, under the same names) and listed as the
 * deltas of a new version of {@code layer}, whose document is otherwise its newest's (base files,
 * totals, fields). Called again with another source, it adds a newer delta version (later wins).
 *
 * <pre>
 *   DeltaVersions.add(conf, "/tmp/a", "/tmp/b1");   // version 2: a's files + b1's as deltas
 *   DeltaVersions.add(conf, "/tmp/a", "/tmp/b2");   // version 3: ... + b2's, newer than b1's
 * </pre>
 *
 * Python tests call it through py4j when the test jar is on the classpath
 * ({@code build/libs/sfclayer-bench.jar}): {@code spark._jvm.io.sfclayer.testing.DeltaVersions.add(
 * spark._jsc.hadoopConfiguration(), a, b)}.
 */
public final class DeltaVersions {
    private DeltaVersions() {
    }

    /**
     * Publishes a version of {@code layer} adding {@code source}'s files as its newest deltas; returns
     * the new version's number. The source layer is left as it is (its files are copied, so it can be
     * removed or vacuumed afterwards).
     *
     * @throws IllegalArgumentException when the layers differ in key index, value schema or compression,
     *                                  or the source has no files
     */
    public static long add(Configuration conf, String layer, String source) throws IOException {
        Layer target = Layer.open(conf, layer);
        Layer from = Layer.open(conf, source);
        LayerMetadata base = target.metadata();
        LayerMetadata src = from.metadata();
        if (!base.keyIndex.toJson().equals(src.keyIndex.toJson()) || !base.valueSchemaJson.equals(src.valueSchemaJson)
                || !base.compression.equals(src.compression)) {
            throw new IllegalArgumentException("layer " + source + " differs from " + layer
                + " in key index, value schema or compression: its files cannot be " + layer + "'s deltas");
        }
        List<DataFile> files = from.files();
        if (files.isEmpty()) {
            throw new IllegalArgumentException("layer " + source + " has no files to add as deltas");
        }
        FileSystem fs = target.path().getFileSystem(conf);
        Set<String> dirs = new TreeSet<>();
        for (DataFile f : files) {
            dirs.add(f.dir.contains("/") ? f.dir.substring(0, f.dir.indexOf('/')) : f.dir);
        }
        for (String d : dirs) {
            Path to = new Path(target.path(), d);
            if (fs.exists(to)) {
                throw new IllegalArgumentException("layer " + layer + " has a directory " + d
                    + " already (were " + source + "'s files added before?)");
            }
            FileUtil.copy(from.path().getFileSystem(conf), new Path(from.path(), d), fs, to, false, conf);
        }
        LayerMetadata md = base.copy();
        md.readVersion = base.version;
        md.operation = "append";
        md.writeId = VersionLog.newWriteId();
        md.createdAt = Instant.now().truncatedTo(ChronoUnit.MICROS).toString();
        md.removedFiles = new ArrayList<>();
        md.changedRanges = new ArrayList<>();
        long records = 0, bytes = 0;
        for (DataFile f : files) {
            md.deltas.add(new DeltaFile(f, -1)); // its addedIn: the new version's number, set at publish
            md.changedRanges.add(new long[] {f.firstIndex, f.lastIndex});
            records += f.records;
            bytes += f.dataBytes;
        }
        md.metrics = new java.util.LinkedHashMap<>();
        md.metrics.put("filesAdded", files.size());
        md.metrics.put("filesRemoved", 0);
        md.metrics.put("recordsAdded", records);
        md.metrics.put("recordsRemoved", 0);
        md.metrics.put("bytesWritten", bytes);
        md.metrics.put("tilesInserted", null);
        md.metrics.put("tilesReplaced", null);
        // no files added as base files: the deltas are outside the base files' list (and manifests)
        return new VersionLog(conf, target.path()).commit(md, List.of()).version;
    }
}
