package io.sfclayer.spark;

import io.sfclayer.SfcLayerException;
import io.sfclayer.commit.VersionLog;
import io.sfclayer.format.DataFile;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.layer.GroupWriter;
import io.sfclayer.layer.TaskWrite;
import io.sfclayer.layer.TileCounts;
import io.sfclayer.layer.Transaction;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.SparkJobInfo;
import org.apache.spark.SparkStageInfo;
import org.apache.spark.api.java.JavaFutureAction;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkStatusTracker;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.spark.util.CollectionAccumulator;

/** What a job needs besides its input: where it writes and how. */
final class UpdateJob {
    final SparkSession spark;
    final VersionLog log;
    final String writeId = VersionLog.newWriteId();
    final String dataDirName = VersionLog.DATA_DIR_PREFIX + writeId;
    final Configuration conf;
    /** The largest group of tiles sharing an index its tasks write (write option maxGroupBytes). */
    long maxGroupBytes = GroupWriter.DEFAULT_MAX_GROUP_BYTES;

    /**
     * Input errors its tasks met (InvalidInput: a null key, a duplicate key, a null in a NOT NULL column):
     * a task that meets one stops and reports it here instead of failing, so that Spark neither retries it
     * (a retry cannot fix the input) nor logs its stack at ERROR; the driver cancels the job and fails
     * the write with the first, naming it, before anything is committed.
     */
    final CollectionAccumulator<String> refusals;

    /**
     * Refuses, before any work, a layer whose filesystem cannot publish a version atomically
     * (CommitPublisher); then marks the write as in progress for vacuum ({@link Vacuum#PENDING} in its
     * data directory, removed with the attempts no result named after the commit, or with the directory).
     */
    UpdateJob(SparkSession spark, VersionLog log, Configuration conf) throws IOException {
        log.publisher();
        this.spark = spark;
        this.log = log;
        this.conf = conf;
        this.refusals = spark.sparkContext().collectionAccumulator("sfclayer: refused input");
        // the write's directory is new (its writeId): no probes first (each is a request on an object store)
        Path marker = new Path(log.dataDir(dataDirName), io.sfclayer.layer.Vacuum.PENDING);
        for (int attempt = 0; ; attempt++) {
            try {
                // a retry may find its own marker from the failed attempt (created, then a fault): replace it
                io.sfclayer.format.ObjectStores.create(log.fileSystem(), marker, attempt > 0).close();
                break;
            } catch (IOException e) {
                // A vacuum with no retention may remove this directory, new and still empty, between its
                // creation and the marker's (the race model found it: Hadoop's chmod of the directory failed).
                // Nothing of the write exists yet: create both again; a lasting fault fails as it did.
                if (attempt >= MARKER_ATTEMPTS - 1) {
                    throw e;
                }
            }
        }
    }

    /** Attempts at creating the write's directory and its pending marker. */
    private static final int MARKER_ATTEMPTS = 3;

    JavaSparkContext jsc() {
        return JavaSparkContext.fromSparkContext(spark.sparkContext());
    }

    /** Runs {@code input} through {@code task} under a job description, removing the write's files if it fails. */
    List<TaskWrite.Result> run(JavaPairRDD<Long, byte[]> input, UpdateTask task, String description) {
        JavaSparkContext jsc = jsc();
        String previous = jsc.getLocalProperty("spark.job.description");
        jsc.setJobDescription(description);
        JavaFutureAction<List<TaskWrite.Result>> action;
        try {
            action = input.mapPartitionsWithIndex(task.reportingTo(refusals), true).collectAsync();
        } finally {
            jsc.setJobDescription(previous);
        }
        jobIds.addAll(action.jobIds());
        try {
            while (true) {
                try {
                    List<TaskWrite.Result> results = action.get(REFUSAL_POLL_MS, TimeUnit.MILLISECONDS);
                    throwIfRefused();
                    return results;
                } catch (TimeoutException still) {
                    if (!refusals.isZero()) { // a task refused its input: no use writing the rest
                        action.cancel(true);
                        throwIfRefused();
                    }
                }
            }
        } catch (ExecutionException e) {
            throwIfRefused();
            throw SfcLayerUpdate.<RuntimeException>rethrow(e.getCause() == null ? e : e.getCause());
        } catch (InterruptedException e) {
            action.cancel(true);
            Thread.currentThread().interrupt();
            throw new SfcLayerException("write to layer " + log.layerPath() + " interrupted", e);
        }
    }

    private static final long REFUSAL_POLL_MS = 100;

    /** Fails the write with the first input error a task reported ({@link #refusals}), if any. */
    void throwIfRefused() {
        List<String> found = refusals.value();
        if (!found.isEmpty()) {
            throw new SfcLayerException.InvalidInput(found.get(0));
        }
    }

    /** The Spark jobs this write ran (a failed job's tasks may still be running when it fails). */
    private final List<Integer> jobIds = new ArrayList<>();

    /**
     * Set once the commit published a version, or could not tell whether it did: from then on the
     * write's data directory may be referenced and is never deleted here (issue 27).
     */
    private boolean keepData;

    /** Removes this write's data directory (it failed, or lost a race), unless its commit may have published it. */
    void discard() {
        if (keepData) {
            return;
        }
        awaitTasks();
        try {
            log.fileSystem().delete(log.dataDir(dataDirName), true);
        } catch (IOException ignored) {
            // no version names it; vacuum removes what is left
        }
    }

    /**
     * Waits (at most {@value #AWAIT_TASKS_MS} ms) until no task of this write's jobs runs: when a
     * job fails, Spark kills its other tasks asynchronously, and one still writing would put files
     * back into the directory {@link #discard()} deletes.
     */
    private void awaitTasks() {
        JavaSparkStatusTracker tracker = jsc().statusTracker();
        long deadline = System.nanoTime() + AWAIT_TASKS_MS * 1_000_000L;
        while (System.nanoTime() < deadline) {
            boolean running = false;
            for (int id : jobIds) {
                SparkJobInfo job = tracker.getJobInfo(id);
                for (int stage : job == null ? new int[0] : job.stageIds()) {
                    SparkStageInfo info = tracker.getStageInfo(stage);
                    running |= info != null && info.numActiveTasks() > 0;
                }
            }
            if (!running) {
                return;
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    static final long AWAIT_TASKS_MS = 60_000;

    /** Index spans the write covers beyond its files' (a delete's boxes): recorded as changed. */
    final List<long[]> coveredRanges = new ArrayList<>();
    /** The format of the version committed. */
    int formatVersion = LayerMetadata.FORMAT_VERSION;
    /** What a repair dropped, recorded in the version's history entry; null for other writes. */
    Object repair;
    /**
     * An overwrite of a version with manifests: that version, whose files are not read (its totals give
     * the history's files and records removed; {@code removedFiles} stays empty). Null otherwise.
     */
    LayerMetadata replaced;
    /** The batch this write commits idempotently (a stream's, or options txnAppId/txnVersion); null: none. */
    io.sfclayer.format.Transactions.Txn txn;

    /**
     * Builds the new version from {@code md} (its shape fields set) with {@code baseFiles} minus
     * what the tasks removed (all of them when {@code replaceAll}) plus what they added ({@link Transaction}),
     * and commits it.
     */
    LayerMetadata commit(LayerMetadata md, List<DataFile> baseFiles, List<TaskWrite.Result> results,
                         boolean replaceAll) throws IOException {
        List<DataFile> added = new ArrayList<>();
        List<DataFile> removed = new ArrayList<>();
        TileCounts counts = TileCounts.NONE;
        for (TaskWrite.Result r : results) {
            added.addAll(r.added());
            removed.addAll(r.removed());
            counts = counts.plus(r.counts());
        }
        for (io.sfclayer.format.DeltaFile d : folded) {
            removed.add(d.file); // folded into the files added (docs/FORMAT.md section 11)
        }
        new Transaction(writeId, dataDirName, formatVersion, coveredRanges, replaced, repair, txn)
            .apply(md, baseFiles, added, removed, counts, replaceAll);
        LayerMetadata committed;
        long t0 = System.nanoTime();
        try {
            committed = log.commit(md, added);
        } catch (SfcLayerException.ConcurrentUpdate | SfcLayerException.StorageError | SfcLayerException.LayerNotFound
                 | SfcLayerException.InvalidArgument | io.sfclayer.format.Transactions.AlreadyCommitted e) {
            throw e; // decided: nothing was published (VersionLog#commit), the data may go
        } catch (Throwable t) {
            // anything else (CommitStateUnknown, and any Throwable, an Error too, thrown once the publish was
            // decided) may come after the version was published: its data must stay (issue 35)
            keepData = true;
            throw t;
        }
        keepData = true;
        publishNanos += System.nanoTime() - t0;
        removeOtherAttempts(added);
        return committed;
    }

    /** Time its version log's commit took (a streaming batch reports it: sink metric publishMs). */
    long publishNanos;
    /** Time the compaction it started after its commit took ({@code compactAfterDeltas}; sink metric compactMs). */
    long compactNanos;

    /** Whether an append writes deltas (write options appendMode, deltaRewriteRatio, compactAfterDeltas). */
    io.sfclayer.layer.DeltaPolicy deltas = io.sfclayer.layer.DeltaPolicy.DEFAULT;
    /** A compaction an append started ({@code "auto": true} in its history entry). */
    boolean autoCompact;

    /** The read version's deltas this write's tasks fold into its files (all of them, or none). */
    List<io.sfclayer.format.DeltaFile> folded = List.of();

    /**
     * Commits a delta append (docs/FORMAT.md section 11): {@code md}, a copy of the version read, with
     * the files {@code results} wrote as its new deltas.
     */
    LayerMetadata commitDelta(LayerMetadata md, List<TaskWrite.Result> results) throws IOException {
        List<DataFile> added = new ArrayList<>();
        for (TaskWrite.Result r : results) {
            added.addAll(r.added());
        }
        new Transaction(writeId, dataDirName, formatVersion, coveredRanges, replaced, repair, txn)
            .applyDelta(md, added);
        LayerMetadata committed;
        long t0 = System.nanoTime();
        try {
            committed = log.commit(md, List.of());
        } catch (SfcLayerException.ConcurrentUpdate | SfcLayerException.StorageError | SfcLayerException.LayerNotFound
                 | SfcLayerException.InvalidArgument | io.sfclayer.format.Transactions.AlreadyCommitted e) {
            throw e; // decided: nothing was published (VersionLog#commit), the data may go
        } catch (Throwable t) {
            keepData = true; // the version may have been published (issue 35)
            throw t;
        }
        keepData = true;
        publishNanos += System.nanoTime() - t0;
        removeOtherAttempts(added);
        return committed;
    }

    /**
     * Best effort: attempt directories of this write that no result named (failed or duplicate
     * attempts), and its pending marker (the write is over).
     */
    private void removeOtherAttempts(List<DataFile> added) {
        Set<String> used = new HashSet<>();
        for (DataFile f : added) {
            used.add(f.dir);
        }
        try {
            FileSystem fs = log.fileSystem();
            Path dir = log.dataDir(dataDirName);
            for (FileStatus st : fs.listStatus(dir)) { // FileNotFoundException when it is gone: nothing to do
                if (!used.contains(dataDirName + "/" + st.getPath().getName())) {
                    fs.delete(st.getPath(), true);
                }
            }
            if (used.isEmpty()) {
                fs.delete(dir, true);
            }
        } catch (IOException | RuntimeException ignored) {
            // never referenced: vacuum removes it (after a publish nothing may throw)
        }
    }
}
