package io.sfclayer.spark;

import io.sfclayer.format.DataFile;
import io.sfclayer.format.DataFileWriter;
import io.sfclayer.format.TileSchema;
import io.sfclayer.layer.GroupWriter;
import io.sfclayer.layer.MergeWriter;
import io.sfclayer.layer.TaskSpec;
import io.sfclayer.layer.TileCounts;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.function.Function2;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.util.CollectionAccumulator;
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

    /** What one task attempt wrote and replaced, and what it did to tiles. */
    record Result(List<DataFile> added, List<DataFile> removed, TileCounts counts) implements Serializable {
    }

    private final Broadcast<SerializableConf> conf;
    /** Each task's existing files, by partition; null: none (a whole-layer write). */
    private final Broadcast<List<List<DataFile>>> perTask;
    private final TaskSpec spec;
    /** Where an input error is reported instead of failing the task (UpdateJob.refusals); null: thrown. */
    private final CollectionAccumulator<String> refusals;

    UpdateTask(Broadcast<SerializableConf> conf, Broadcast<List<List<DataFile>>> perTask, TaskSpec spec) {
        this(conf, perTask, spec, null);
    }

    private UpdateTask(Broadcast<SerializableConf> conf, Broadcast<List<List<DataFile>>> perTask, TaskSpec spec,
                       CollectionAccumulator<String> refusals) {
        this.conf = conf;
        this.perTask = perTask;
        this.spec = spec;
        this.refusals = refusals;
    }

    /** This task reporting input errors to {@code refusals} instead of throwing them. */
    UpdateTask reportingTo(CollectionAccumulator<String> refusals) {
        return new UpdateTask(conf, perTask, spec, refusals);
    }

    @Override
    public Iterator<Result> call(Integer partition, Iterator<Tuple2<Long, byte[]>> records) throws IOException {
        Configuration c = conf.value().get();
        TaskContext tc = TaskContext.get();
        String dir = spec.dataDirName() + "/attempt-" + (tc == null ? 0 : tc.taskAttemptId());
        Path layerPath = new Path(spec.layer());
        List<DataFile> files = perTask == null || partition >= perTask.value().size() ? List.of()
            : perTask.value().get(partition);
        DataFileWriter out = new DataFileWriter(c, layerPath, dir, partition, spec.blockSize(), spec.indexInterval(),
            spec.writeId(), spec.formatVersion()).withBloomFilter(spec.bloomFpp());
        TileSchema schema = TileSchema.fromJson(spec.valueSchemaJson(), spec.keyIndex().isSpaceTime());
        GroupWriter groups = new GroupWriter(out, spec.compression(), spec.keyIndex(), spec.maxGroupBytes(),
            schema);
        if (perTask != null) {
            // an update (not a whole-layer write): a run of output ending in a small file is rebalanced
            // with the rewritten file before it (docs/FORMAT.md, "Updates")
            groups.mergeSmallTails(spec.blockSize() / 4);
        }
        // a delete rewrites only the files holding a tile it deletes (issue 27), not every file its box's spans meet
        Set<String> toRewrite = spec.deleteBoxes().isEmpty() ? spec.rewrite()
            : io.sfclayer.layer.DeleteProbe.holdingDeleted(c, layerPath, files, spec.rewrite(), spec.deleteBoxes(), schema,
                spec.compression());
        MergeWriter merge = new MergeWriter(c, layerPath, files, spec.baseFormat(), toRewrite, groups, schema,
            spec.compression(), spec.onExisting(), spec.deleteBoxes());
        if (spec.skipDamage()) {
            merge.skipDamage(d -> { });
        }
        long[][] spans = spec.spans();
        long[] span = spans == null ? null : partition < spans.length && spans[partition] != null ? spans[partition]
            : new long[] {1, 0};
        try {
            while (records.hasNext()) {
                Tuple2<Long, byte[]> r = records.next();
                if (span != null && (r._1() < span[0] || r._1() > span[1])) {
                    throw new io.sfclayer.SfcLayerException.InvalidInput("append to layer " + spec.layer() + ": a tile of"
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
        Result result = new Result(new ArrayList<>(groups.files()), new ArrayList<>(merge.removed()), merge.counts());
        return List.of(result).iterator();
    }
}
