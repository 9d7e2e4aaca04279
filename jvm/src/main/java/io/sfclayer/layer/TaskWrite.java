package io.sfclayer.layer;

import io.sfclayer.SfcLayerException;
import io.sfclayer.codec.TileSchema;
import io.sfclayer.format.DataFile;
import io.sfclayer.format.DataFileWriter;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;

import java.io.IOException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * The body of one write task, without Spark (a full write is an update of no existing files): the
 * task's sorted (index, record) pairs merged with its existing files ({@link MergeWriter}) into rolled
 * MapFiles under {@code <dataDir>/attempt-<id>}, as its {@link TaskSpec} says. The Spark side
 * ({@code io.sfclayer.spark.UpdateTask}) gives it the attempt's id, its files and its records.
 */
public final class TaskWrite {
    private TaskWrite() {
    }

    /** What one task attempt wrote and replaced, and what it did to tiles. */
    public record Result(List<DataFile> added, List<DataFile> removed, TileCounts counts) implements Serializable {
    }

    /** Receives a task's records, in index order. */
    @FunctionalInterface
    public interface Sink {
        void add(long index, byte[] record) throws IOException;
    }

    /** A task's records: hands each to the sink, in index order. */
    @FunctionalInterface
    public interface Records {
        void each(Sink sink) throws IOException;
    }

    /**
     * Writes partition {@code partition}'s records as attempt {@code attemptId}.
     *
     * @param files  the existing files this task may touch (sorted, disjoint)
     * @param update an update of existing files (not a whole-layer write): a run of output ending in a
     *               small file is then rebalanced with the rewritten file before it
     * @throws SfcLayerException.InvalidInput for bad input (nothing of the attempt is kept)
     */
    public static Result write(Configuration c, TaskSpec spec, int partition, long attemptId, List<DataFile> files,
                               boolean update, Records records) throws IOException {
        return write(c, spec, partition, "attempt-" + attemptId, files, update, null, records);
    }

    /**
     * Writes partition {@code partition}'s records into {@code <dataDir>/<attempt>} ({@code attempt-<id>}
     * for a Spark task, {@code driver} for a write on the driver), folding the deltas of {@code fold}
     * that fall in the partition's range into the files (null: no deltas to fold; docs/FORMAT.md section 11).
     */
    public static Result write(Configuration c, TaskSpec spec, int partition, String attempt, List<DataFile> files,
                               boolean update, DeltaFold.Plan fold, Records records) throws IOException {
        String dir = spec.dataDirName() + "/" + attempt;
        Path layerPath = new Path(spec.layer());
        DataFileWriter out = new DataFileWriter(c, layerPath, dir, partition, spec.blockSize(), spec.indexInterval(),
            spec.writeId(), spec.formatVersion()).withBloomFilter(spec.bloomFpp());
        TileSchema schema = TileSchema.fromJson(spec.valueSchemaJson(), spec.keyIndex().isSpaceTime());
        GroupWriter groups = new GroupWriter(out, spec.compression(), spec.keyIndex(), spec.maxGroupBytes(),
            schema);
        if (update) {
            // an update (not a whole-layer write): a run of output ending in a small file is rebalanced
            // with the rewritten file before it (docs/FORMAT.md, "Updates")
            groups.mergeSmallTails(spec.blockSize() / 4);
        }
        // a delete rewrites only the files holding a tile it deletes (issue 27), not every file its box's spans meet
        Set<String> toRewrite = spec.deleteBoxes().isEmpty() ? spec.rewrite()
            : DeleteProbe.holdingDeleted(c, layerPath, files, spec.rewrite(), spec.deleteBoxes(), schema,
                spec.compression(), spec.baseFormat(), spec.skipDamage() ? d -> { } : null);
        MergeWriter merge = new MergeWriter(c, layerPath, files, spec.baseFormat(), toRewrite, groups, schema,
            spec.compression(), spec.onExisting(), spec.deleteBoxes());
        if (spec.skipDamage()) {
            merge.skipDamage(d -> { });
        }
        long[][] spans = spec.spans();
        long[] span = spans == null ? null : partition < spans.length && spans[partition] != null ? spans[partition]
            : new long[] {1, 0};
        DeltaFold folding = null;
        try {
            if (fold != null) {
                folding = new DeltaFold(c, layerPath, fold, partition, schema, spec.compression(), spec.onExisting(),
                    merge);
            }
            TaskWrite.Sink into = folding != null ? folding : merge::add;
            records.each((index, record) -> {
                if (span != null && (index < span[0] || index > span[1])) {
                    throw new SfcLayerException.InvalidInput("append to layer " + spec.layer() + ": a tile of"
                        + " index " + index + " is not among the keys an earlier pass over the same input found"
                        + " (the input was computed again, differently: make it deterministic or checkpoint it);"
                        + " nothing was published");
                }
                into.add(index, record);
            });
            if (folding != null) {
                folding.finish();
            }
            merge.close();
        } catch (IOException | RuntimeException e) {
            if (folding != null) {
                folding.abort();
            }
            merge.abort();
            throw e;
        }
        TileCounts counts = folding == null ? merge.counts() : merge.counts().plus(folding.counts());
        return new Result(new ArrayList<>(groups.files()), new ArrayList<>(merge.removed()), counts);
    }
}
