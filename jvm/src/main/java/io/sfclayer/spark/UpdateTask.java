package io.sfclayer.spark;

import io.sfclayer.curve.KeyIndex;
import io.sfclayer.curve.QueryBox;
import io.sfclayer.format.DataFile;
import io.sfclayer.format.DataFileWriter;
import io.sfclayer.format.TileSchema;
import io.sfclayer.format.ValueCompression;
import io.sfclayer.layer.GroupWriter;
import io.sfclayer.layer.MergeWriter;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.function.Function2;
import org.apache.spark.broadcast.Broadcast;
import scala.Tuple2;

import java.io.IOException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Set;

/**
 * The writing side of every write (a full write is an update of no existing files): one task's
 * sorted (index, record) pairs merged with the task's existing files ({@link MergeWriter}) into
 * rolled MapFiles.
 *
 * <p>Task attempts: each attempt writes into its own directory {@code <dataDir>/attempt-<id>} (Spark's
 * task attempt id, unique in the application), so a retried, speculative or zombie attempt never
 * overwrites or adds to another attempt's files. The driver publishes exactly the files named in the
 * results it collected: Spark accepts one successful attempt's result per partition (the first; later
 * ones are discarded, as its output commit coordinator would authorise only one), so files of any other
 * attempt are never referenced by a version (vacuum removes them).
 */
final class UpdateTask implements Function2<Integer, Iterator<Tuple2<Long, byte[]>>, Iterator<UpdateTask.Result>> {
    private static final long serialVersionUID = 1L;

    /** What one task attempt wrote and replaced. */
    static final class Result implements Serializable {
        private static final long serialVersionUID = 1L;
        final List<DataFile> added = new ArrayList<>();
        final List<DataFile> removed = new ArrayList<>();
        /** Tiles inserted, replaced, kept (new dropped), deleted. */
        long[] counts = new long[4];
    }

    private final Broadcast<SerializableConf> conf;
    private final String layer;
    private final String dataDirName;
    private final long blockSize;
    private final int indexInterval;
    private final String writeId;
    private final ValueCompression compression;
    private final KeyIndex keyIndex;
    private final String valueSchemaJson;
    private final Broadcast<List<List<DataFile>>> perTask;
    private final Set<String> rewrite;
    private final MergeWriter.OnExisting onExisting;
    private final List<QueryBox> deleteBoxes;
    /** The format of the files written (the current one; the formatVersion write option may ask for 2). */
    private int formatVersion = io.sfclayer.format.LayerMetadata.FORMAT_VERSION;
    /** The largest group of tiles sharing an index (write option maxGroupBytes). */
    long maxGroupBytes = GroupWriter.DEFAULT_MAX_GROUP_BYTES;
    /** The format version of the document listing the task's existing files (0: none, a whole-layer write). */
    int baseFormat;
    /** A repair's: damaged records of the files it rewrites are skipped (a verify listed them), not fatal. */
    boolean skipDamage;
    /** Bloom filters' false-positive probability for the files written (the layer's choice); 0: none. */
    double bloomFpp;
    /**
     * A shuffled append to a version with manifests: each partition's span of new indexes {lo, hi} (null:
     * none), which its files were chosen by; a record outside it is refused (an input recomputed
     * differently after its cache was lost).
     */
    long[][] spans;

    UpdateTask(Broadcast<SerializableConf> conf, String layer, String dataDirName, long blockSize, int indexInterval,
               String writeId, ValueCompression compression, KeyIndex keyIndex, String valueSchemaJson,
               Broadcast<List<List<DataFile>>> perTask, Set<String> rewrite, MergeWriter.OnExisting onExisting,
               List<QueryBox> deleteBoxes) {
        this.conf = conf;
        this.layer = layer;
        this.dataDirName = dataDirName;
        this.blockSize = blockSize;
        this.indexInterval = indexInterval;
        this.writeId = writeId;
        this.compression = compression;
        this.keyIndex = keyIndex;
        this.valueSchemaJson = valueSchemaJson;
        this.perTask = perTask;
        this.rewrite = rewrite;
        this.onExisting = onExisting;
        this.deleteBoxes = deleteBoxes;
    }

    /** Writes files of an earlier format (2: no checksums), for compatibility tests and benchmarks. */
    UpdateTask withFormatVersion(int v) {
        this.formatVersion = v;
        return this;
    }

    /** Where an input error is reported instead of failing the task (UpdateJob.refusals); null: thrown. */
    org.apache.spark.util.CollectionAccumulator<String> refusals;

    @Override
    public Iterator<Result> call(Integer partition, Iterator<Tuple2<Long, byte[]>> records) throws IOException {
        Configuration c = conf.value().get();
        TaskContext tc = TaskContext.get();
        String dir = dataDirName + "/attempt-" + (tc == null ? 0 : tc.taskAttemptId());
        Path layerPath = new Path(layer);
        List<DataFile> files = perTask == null || partition >= perTask.value().size() ? List.of()
            : perTask.value().get(partition);
        DataFileWriter out = new DataFileWriter(c, layerPath, dir, partition, blockSize, indexInterval, writeId,
            formatVersion).withBloomFilter(bloomFpp);
        TileSchema schema = TileSchema.fromJson(valueSchemaJson, keyIndex.isSpaceTime());
        GroupWriter groups = new GroupWriter(out, compression, keyIndex, maxGroupBytes, schema);
        if (perTask != null) {
            // an update (not a whole-layer write): a run of output ending in a small file is rebalanced
            // with the rewritten file before it (docs/FORMAT.md, "Updates")
            groups.mergeSmallTails(blockSize / 4);
        }
        // a delete rewrites only the files holding a tile it deletes (issue 27), not every file its box's spans meet
        Set<String> toRewrite = deleteBoxes.isEmpty() ? rewrite
            : io.sfclayer.layer.DeleteProbe.holdingDeleted(c, layerPath, files, rewrite, deleteBoxes, schema, compression);
        MergeWriter merge = new MergeWriter(c, layerPath, files, baseFormat, toRewrite, groups, schema, compression,
            onExisting, deleteBoxes);
        if (skipDamage) {
            merge.skipDamage(d -> { });
        }
        long[] span = spans == null ? null : partition < spans.length && spans[partition] != null ? spans[partition]
            : new long[] {1, 0};
        try {
            while (records.hasNext()) {
                Tuple2<Long, byte[]> r = records.next();
                if (span != null && (r._1() < span[0] || r._1() > span[1])) {
                    throw new io.sfclayer.SfcLayerException.InvalidInput("append to layer " + layer + ": a tile of"
                        + " index " + r._1() + " is not among the keys an earlier pass over the same input found"
                        + " (the input was computed again, differently: make it deterministic or checkpoint it);"
                        + " nothing was published");
                }
                merge.add(r._1(), r._2());
            }
            merge.close();
        } catch (io.sfclayer.SfcLayerException.InvalidInput e) {
            merge.abort();
            if (refusals == null) {
                throw e;
            }
            refusals.add(e.reason()); // UpdateJob fails the write with it: no task retry, no ERROR log
            return java.util.Collections.emptyIterator();
        } catch (IOException | RuntimeException e) {
            merge.abort();
            throw e;
        }
        Result result = new Result();
        result.added.addAll(groups.files());
        result.removed.addAll(merge.removed());
        result.counts = merge.counts;
        return List.of(result).iterator();
    }
}
