package io.sfclayer.spark;

import io.sfclayer.format.DataFile;
import io.sfclayer.layer.DeltaFold;
import io.sfclayer.layer.TaskSpec;
import io.sfclayer.layer.TaskWrite;
import io.sfclayer.layer.TaskWrite.Result;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.function.Function2;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.util.CollectionAccumulator;
import scala.Tuple2;

import java.io.IOException;
import java.util.Iterator;
import java.util.List;

/**
 * The writing side of every write as a Spark function: one task's sorted (index, record) pairs written by
 * {@link TaskWrite} (merged with the task's existing files into rolled MapFiles) as the task attempt's
 * files, input errors reported to the write's refusals when it has them.
 *
 * <p>Task attempts: each attempt writes into its own directory {@code <dataDir>/attempt-<id>} (Spark's
 * task attempt id, unique in the application), so a retried, speculative or zombie attempt never
 * overwrites or adds to another attempt's files. The driver publishes exactly the files named in the
 * results it collected: Spark accepts one successful attempt's result per partition (the first; later
 * ones are discarded, as its output commit coordinator would authorise only one), so files of any other
 * attempt are never referenced by a version (vacuum removes them).
 */
final class UpdateTask implements Function2<Integer, Iterator<Tuple2<Long, byte[]>>, Iterator<Result>> {
    private static final long serialVersionUID = 1L;

    private final Broadcast<SerializableConf> conf;
    /** Each task's existing files, by partition; null: none (a whole-layer write). */
    private final Broadcast<List<List<DataFile>>> perTask;
    /**
     * A task run only on the driver ({@link #onDriver}): its configuration and files as they are, with no
     * broadcast (serialising a Hadoop configuration into Spark's block manager costs a small batch several
     * ms); never serialised to an executor. Null for tasks of a Spark job.
     */
    private final transient Local local;

    /** What a driver-only task holds instead of broadcasts. */
    private record Local(Configuration conf, List<List<DataFile>> perTask) { }
    private final TaskSpec spec;
    /** Where an input error is reported instead of failing the task (UpdateJob.refusals); null: thrown. */
    private final CollectionAccumulator<String> refusals;
    /** The read version's deltas each task folds into its files (docs/FORMAT.md section 11); null: none. */
    private final DeltaFold.Plan fold;
    /** The directory a run on the driver (no TaskContext) writes in, under the write's data directory. */
    private final String driverDir;

    UpdateTask(Broadcast<SerializableConf> conf, Broadcast<List<List<DataFile>>> perTask, TaskSpec spec) {
        this(conf, perTask, null, spec, null, null, "attempt-0");
    }

    /**
     * A task run on the driver only ({@code SfcLayerUpdate.onDriver}), for records the driver holds:
     * {@code conf} and {@code perTask} (null: no existing files) are used as they are, with no broadcast.
     */
    static UpdateTask onDriver(Configuration conf, List<List<DataFile>> perTask, TaskSpec spec) {
        return new UpdateTask(null, null, new Local(conf, perTask), spec, null, null, "attempt-0");
    }

    private UpdateTask(Broadcast<SerializableConf> conf, Broadcast<List<List<DataFile>>> perTask, Local local,
                       TaskSpec spec, CollectionAccumulator<String> refusals, DeltaFold.Plan fold, String driverDir) {
        this.conf = conf;
        this.perTask = perTask;
        this.local = local;
        this.spec = spec;
        this.refusals = refusals;
        this.fold = fold;
        this.driverDir = driverDir;
    }

    /** This task reporting input errors to {@code refusals} instead of throwing them. */
    UpdateTask reportingTo(CollectionAccumulator<String> refusals) {
        return new UpdateTask(conf, perTask, local, spec, refusals, fold, driverDir);
    }

    /** This task folding {@code plan}'s deltas (null: none) into the files it writes. */
    UpdateTask folding(DeltaFold.Plan plan) {
        return new UpdateTask(conf, perTask, local, spec, refusals, plan, driverDir);
    }

    /** This task writing into {@code dir} (e.g. {@code driver}) when run on the driver. */
    UpdateTask onDriverIn(String dir) {
        return new UpdateTask(conf, perTask, local, spec, refusals, fold, dir);
    }

    /** Whether it folds deltas (then every partition must run, records or not). */
    boolean folds() {
        return fold != null;
    }

    @Override
    public Iterator<Result> call(Integer partition, Iterator<Tuple2<Long, byte[]>> records) throws IOException {
        TaskContext tc = TaskContext.get();
        List<List<DataFile>> all = local != null ? local.perTask() : perTask == null ? null : perTask.value();
        List<DataFile> files = all == null || partition >= all.size() ? List.of() : all.get(partition);
        Configuration hadoop = local != null ? local.conf() : conf.value().get();
        Result result;
        try {
            result = TaskWrite.write(hadoop, spec, partition,
                tc == null ? driverDir : "attempt-" + tc.taskAttemptId(), files, all != null, fold, sink -> {
                    while (records.hasNext()) {
                        Tuple2<Long, byte[]> r = records.next();
                        sink.add(r._1(), r._2());
                    }
                });
        } catch (io.sfclayer.SfcLayerException.InvalidInput e) {
            if (refusals == null) {
                throw e;
            }
            refusals.add(e.reason()); // UpdateJob fails the write with it: no task retry, no ERROR log
            return java.util.Collections.emptyIterator();
        }
        return List.of(result).iterator();
    }
}
