package io.sfclayer.spark;

import io.sfclayer.SfcLayerException;
import io.sfclayer.commit.VersionLog;
import io.sfclayer.curve.IndexRange;
import io.sfclayer.curve.KeyIndex;
import io.sfclayer.curve.QueryBox;
import io.sfclayer.format.DataFile;
import io.sfclayer.format.DataFileListing;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.format.ValueCompression;
import io.sfclayer.layer.BoxQuery;
import io.sfclayer.layer.DeltaPolicy;
import io.sfclayer.layer.Layer;
import io.sfclayer.layer.MergeWriter;
import io.sfclayer.layer.PartitionBreaks;
import io.sfclayer.layer.TaskSpec;
import io.sfclayer.layer.TaskWrite;
import io.sfclayer.layer.TouchedFiles;
import io.sfclayer.layer.UpdatePartitions;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.SparkSession;
import scala.Tuple2;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;

/**
 * Updates of an existing layer, each one Spark job and one commit: append/upsert, delete and compact
 * (over 500 lines on purpose: they share one choice of the files to rewrite and one commit around
 * it; docs/FORMAT.md, "Commit protocol"). Only the files an update must change are read and
 * rewritten; the new version references every other file where it is. What one job holds (its
 * writeId, data directory, progress, candidate document) is {@link UpdateJob}.
 */
public final class SfcLayerUpdate {
    private SfcLayerUpdate() {
    }

    /**
     * Appends (upserts) encoded records to the layer's newest version {@code base}: one shuffle by
     * the layer's key index into partitions no existing file straddles, then each task merges its
     * records with the files they fall in.
     *
     * <p>A small append ({@code smallBytes} > 0: Spark estimated its input at most that size) skips
     * the shuffle: one job without one collects the encoded records to the driver, which sorts them,
     * splits them at the same breaks and runs each partition's merge itself, so the files written and
     * the version committed follow the same rules as the shuffled path's (a Spark job and its shuffle
     * cost more than the merge of a few thousand records). If the records turn out larger than
     * {@code 2 × smallBytes} (a wrong estimate), it falls back to the shuffled path.
     */
    static LayerMetadata append(UpdateJob job, Layer base, JavaPairRDD<Long, byte[]> input, int partitions,
                                MergeWriter.OnExisting onExisting, long smallBytes) throws IOException {
        try {
            return appendOrFail(job, base, input, partitions, onExisting, smallBytes);
        } catch (Throwable t) {
            // Any failure: a first pass's job (a SparkException, checked in Java), an IOException reading the
            // base, an Error. Before the publish decision it removes the write's files and marker, as a failed
            // write's does; after it discard keeps them (UpdateJob#keepData: the version may be published).
            job.discard();
            throw t;
        }
    }

    private static LayerMetadata appendOrFail(UpdateJob job, Layer base, JavaPairRDD<Long, byte[]> input,
                                              int partitions, MergeWriter.OnExisting onExisting, long smallBytes)
            throws IOException {
        LayerMetadata md0 = base.metadata();
        boolean mayDelta = job.deltas.mayWriteDelta(md0, onExisting);
        if ((md0.manifests != null || mayDelta) && smallBytes > 0) {
            // collect first: the records' indexes choose between a delta and a rewrite, and with
            // manifests only the manifests on the records' paths are read
            List<Tuple2<Long, byte[]>> collected = collectSmall(job, input, smallBytes, base);
            if (collected != null) {
                return appendSortedOrFail(job, base, collected, partitions, onExisting);
            }
        }
        // with manifests, only those on the paths to the new records' ranges and the deltas' spans are read
        // (the deltas are folded: the tasks rewrite every base file a delta record falls into)
        boolean viaManifests = md0.manifests != null;
        long small = viaManifests ? 0 : smallBytes;
        long[] breaks;
        List<List<DataFile>> perPartition;
        long[][] spans = null;
        // A version with manifests: a first pass finds the new records' index ranges, so that only the
        // manifests meeting them are read (issue 20). The input is computed once: that pass caches the
        // encoded records (spilling to local disk) for the shuffle, as an ingest or a pyramid level is
        // costly to compute twice. An append that may write deltas makes the same pass to choose.
        boolean firstPass = viaManifests || (mayDelta && job.deltas.needsFirstPass(md0));
        JavaPairRDD<Long, byte[]> encoded = firstPass
            ? input.persist(org.apache.spark.storage.StorageLevel.MEMORY_AND_DISK_SER()) : input;
        try {
            DeltaAppends.Sized sized = firstPass ? DeltaAppends.sized(job, encoded, base) : null;
            if (mayDelta && (job.deltas.mode() == DeltaPolicy.Mode.DELTA
                    || (sized != null && job.deltas.prefersDelta(DeltaAppends.rewriteBytes(base, sized.ranges()), sized.bytes())))) {
                return DeltaAppends.deltaShuffled(job, base, encoded, partitions);
            }
            if (viaManifests) {
                TouchedFiles.Partitioned plan = TouchedFiles.forAppend(base.manifests(),
                    PartitionBreaks.compute(md0.keyIndex, partitions), withDeltaSpans(sized.ranges(), md0), partitions);
                breaks = plan.breaks;
                perPartition = plan.perPartition;
                spans = plan.spans;
            } else {
                List<DataFile> files = base.files();
                breaks = UpdatePartitions.snap(PartitionBreaks.compute(md0.keyIndex, partitions), files);
                perPartition = UpdatePartitions.assign(breaks, files);
            }
            return shuffled(job, base, encoded, breaks, perPartition, spans, small, onExisting, null);
        } finally {
            if (encoded != input) {
                encoded.unpersist(false);
            }
        }
    }

    /** The shuffled append itself: each partition's records merged with its files ({@link #append}). */
    private static LayerMetadata shuffled(UpdateJob job, Layer base, JavaPairRDD<Long, byte[]> encoded, long[] breaks,
                                          List<List<DataFile>> perPartition, long[][] spans, long small,
                                          MergeWriter.OnExisting onExisting, List<Tuple2<Long, byte[]>> sorted)
            throws IOException {
        LayerMetadata md0 = base.metadata();
        JavaSparkContext jsc = job.jsc();
        TaskSpec spec = taskSpec(job, base).withMerge(Set.of(), onExisting, List.of())
            .withMaxGroupBytes(job.maxGroupBytes).withSpans(spans);
        // records on the driver already (a micro-batch's): no job, so nothing to broadcast
        Broadcast<SerializableConf> confB = sorted != null ? null : jsc.broadcast(new SerializableConf(job.conf));
        Broadcast<List<List<DataFile>>> perTask = sorted != null ? null : jsc.broadcast(perPartition);
        UpdateTask task = folding(job, base, breaks, sorted != null ? UpdateTask.onDriver(job.conf, perPartition, spec)
            : new UpdateTask(confB, perTask, spec));
        Results run = () -> {
            if (sorted != null) {
                return onDriver(sorted, breaks, task);
            }
            List<Tuple2<Long, byte[]>> collected = small > 0 ? collectSmall(job, encoded, small, base) : null;
            return collected != null ? onDriver(collected, breaks, task)
                : job.run(IndexShuffle.sortedBy(encoded, new IndexPartitioner(breaks)), task,
                    "sfclayer: append to " + base.path());
        };
        // An append that inserted and replaced no tile (no rows, or only keys kept by onExisting=ignore)
        // publishes nothing: a version without a change would only conflict with concurrent writers.
        LayerMetadata out = runAndCommit(job, base, run, "append",
            results -> results.stream().allMatch(r -> r.counts().inserted() == 0 && r.counts().replaced() == 0), confB,
            perTask);
        return out == null ? md0 : DeltaAppends.afterAppend(job, out);
    }

    /**
     * {@code task} folding the deltas of {@code base} (all of them, docs/FORMAT.md section 11) under
     * {@code breaks}, which the commit then lists as removed; {@code task} itself when it has none.
     */
    private static UpdateTask folding(UpdateJob job, Layer base, long[] breaks, UpdateTask task) {
        LayerMetadata md0 = base.metadata();
        if (md0.deltas.isEmpty()) {
            return task;
        }
        job.folded = md0.deltas;
        return task.folding(new io.sfclayer.layer.DeltaFold.Plan(md0.deltas, breaks, md0.formatVersion));
    }

    /**
     * Appends records already on the driver, sorted by index (a streaming micro-batch's), without a
     * Spark job: the merges run on the driver under the same breaks and commit rules as {@link #append}'s.
     */
    static LayerMetadata appendSorted(UpdateJob job, Layer base, List<Tuple2<Long, byte[]>> sorted, int partitions,
                                      MergeWriter.OnExisting onExisting) throws IOException {
        try {
            return appendSortedOrFail(job, base, sorted, partitions, onExisting);
        } catch (Throwable t) {
            job.discard(); // as append's: a no-op once the publish was decided
            throw t;
        }
    }

    private static LayerMetadata appendSortedOrFail(UpdateJob job, Layer base, List<Tuple2<Long, byte[]>> sorted,
                                                    int partitions, MergeWriter.OnExisting onExisting)
            throws IOException {
        LayerMetadata md0 = base.metadata();
        if (sorted.isEmpty()) {
            job.discard();
            return md0;
        }
        if (job.deltas.mayWriteDelta(md0, onExisting)) {
            long bytes = 0;
            long[] indexes = new long[sorted.size()];
            for (int i = 0; i < indexes.length; i++) {
                indexes[i] = sorted.get(i)._1();
                bytes += sorted.get(i)._2().length;
            }
            if (job.deltas.mode() == DeltaPolicy.Mode.DELTA || job.deltas.prefersDelta(
                    DeltaAppends.rewriteBytes(base, TouchedFiles.ranges(indexes, Integer.MAX_VALUE)), bytes)) {
                return DeltaAppends.deltaOnDriver(job, base, sorted);
            }
        }
        if (md0.manifests != null) {
            return appendOnDriver(job, base, sorted, partitions, onExisting);
        }
        List<DataFile> files = base.files();
        long[] breaks = UpdatePartitions.snap(PartitionBreaks.compute(md0.keyIndex, partitions), files);
        return shuffled(job, base, null, breaks, UpdatePartitions.assign(breaks, files), null, 0, onExisting, sorted);
    }

    /**
     * {@code ranges} (sorted, disjoint) with the index spans of {@code md}'s delta files added: what an update
     * folding them reaches, so that with manifests only the manifests on the paths to them are read
     * (a delta's tiles lie in its span; a delta of keys all over the layer spans it all).
     */
    static List<IndexRange> withDeltaSpans(List<IndexRange> ranges, LayerMetadata md) {
        if (md.deltas.isEmpty()) {
            return ranges;
        }
        List<IndexRange> all = new ArrayList<>(ranges);
        for (io.sfclayer.format.DeltaFile d : md.deltas) {
            all.add(new IndexRange(d.file.firstIndex, d.file.lastIndex));
        }
        return TouchedFiles.union(all, MAX_APPEND_RANGES);
    }

    /** At most this many index ranges describe a shuffled append's new records (more are coarsened). */
    static final int MAX_APPEND_RANGES = 1024;

    /**
     * A small append to a version with manifests, its records collected and sorted on the driver:
     * only the manifests on the paths to the records' index spans are read (issue 20: an append of
     * one tile to a 10^6-file layer reads a few manifests, not all of them); the rest of the version
     * is carried by reference when the commit rewrites those paths ({@link VersionLog#commit}). The
     * breaks and each partition's files are chosen as {@link TouchedFiles#forAppend} says.
     */
    static LayerMetadata appendOnDriver(UpdateJob job, Layer base, List<Tuple2<Long, byte[]>> sorted, int partitions,
                                        MergeWriter.OnExisting onExisting) throws IOException {
        LayerMetadata md0 = base.metadata();
        if (sorted.isEmpty()) {
            job.discard();
            return md0;
        }
        long[] indexes = new long[sorted.size()];
        for (int i = 0; i < indexes.length; i++) {
            indexes[i] = sorted.get(i)._1();
        }
        TouchedFiles.Partitioned plan = TouchedFiles.forAppend(base.manifests(),
            PartitionBreaks.compute(md0.keyIndex, partitions),
            withDeltaSpans(TouchedFiles.ranges(indexes, Integer.MAX_VALUE), md0), partitions);
        long[] breaks = plan.breaks;
        // the version's deltas, if any, are folded under the same breaks: they lie in the ranges planned
        UpdateTask task = folding(job, base, breaks, UpdateTask.onDriver(job.conf, plan.perPartition, taskSpec(job, base)
            .withMerge(Set.of(), onExisting, List.of()).withMaxGroupBytes(job.maxGroupBytes)));
        LayerMetadata out = runAndCommit(job, base, () -> onDriver(sorted, breaks, task), "append",
            results -> results.stream().allMatch(r -> r.counts().inserted() == 0 && r.counts().replaced() == 0));
        return out == null ? md0 : DeltaAppends.afterAppend(job, out);
    }

    /**
     * What the tasks of a write to {@code base} are told of it: its shape, compression and bloom filters,
     * and the format of the document listing its files.
     */
    static TaskSpec taskSpec(UpdateJob job, Layer base) {
        LayerMetadata md0 = base.metadata();
        return TaskSpec.of(base.path().toString(), job.dataDirName, job.writeId, md0.blockSize, md0.indexInterval,
                ValueCompression.parse(md0.compression), md0.keyIndex, md0.valueSchemaJson)
            .withBloomFpp(io.sfclayer.format.BloomFilter.layerFpp(md0)).withBaseFormat(md0.formatVersion);
    }

    /** The work of a job: its tasks' results. */
    interface Results {
        List<TaskWrite.Result> get() throws IOException;
    }

    /**
     * {@code run}'s results; a data file of the version it read found missing, when that version is no longer in
     * the log, is a vacuum's doing (a retention shorter than the write): ConcurrentUpdate saying so, not the
     * CorruptLayer (advice to repair) or raw FileNotFoundException a task reports, since nothing is damaged.
     */
    static List<TaskWrite.Result> results(UpdateJob job, Layer base, String operation, Results run)
            throws IOException {
        try {
            return run.get();
        } catch (Exception e) { // a failed Spark job's SparkException too (checked, thrown unwrapped): rethrown as is
            if (missingFile(e) && !job.log.versions().contains(base.metadata().version)) {
                SfcLayerException.ConcurrentUpdate c = new SfcLayerException.ConcurrentUpdate("concurrent update of "
                    + "layer " + job.log.layerPath() + ": this " + operation + " read version "
                    + base.metadata().version + ", which was removed by a vacuum while it ran (its data files are "
                    + "deleted; nothing is damaged); nothing was published, retry the " + operation);
                c.addSuppressed(e);
                throw c;
            }
            throw e;
        }
    }

    private static boolean missingFile(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof java.io.FileNotFoundException || (t instanceof SfcLayerException.LayerNotFound)
                    || (t instanceof SfcLayerException.CorruptLayer
                        && String.valueOf(t.getMessage()).contains("the listed data file is missing"))) {
                return true;
            }
        }
        return false;
    }

    /**
     * The encoded records of a small append, collected by one job without a shuffle; null when they
     * hold more than {@code 2 × smallBytes} (each task gives up past {@code smallBytes}).
     */
    static List<Tuple2<Long, byte[]>> collectSmall(UpdateJob job, JavaPairRDD<Long, byte[]> encoded, long smallBytes,
                                                   Layer base) {
        JavaSparkContext jsc = job.jsc();
        String previous = jsc.getLocalProperty("spark.job.description");
        jsc.setJobDescription("sfclayer: append to " + base.path() + " (small: collected, sorted on the driver)");
        List<ArrayList<Tuple2<Long, byte[]>>> parts;
        try {
            parts = encoded.mapPartitions((java.util.Iterator<Tuple2<Long, byte[]>> it) -> {
                ArrayList<Tuple2<Long, byte[]>> buf = new ArrayList<>();
                long bytes = 0;
                while (it.hasNext()) {
                    Tuple2<Long, byte[]> r = it.next();
                    bytes += r._2().length + 16L;
                    if (bytes > smallBytes) {
                        return java.util.Collections.singletonList((ArrayList<Tuple2<Long, byte[]>>) null).iterator();
                    }
                    buf.add(r);
                }
                return java.util.Collections.singletonList(buf).iterator();
            }).collect();
        } finally {
            jsc.setJobDescription(previous);
        }
        job.throwIfRefused(); // the input's encoding refused a tile
        List<Tuple2<Long, byte[]>> all = new ArrayList<>();
        long bytes = 0;
        for (ArrayList<Tuple2<Long, byte[]>> p : parts) {
            if (p == null) {
                return null;
            }
            for (Tuple2<Long, byte[]> r : p) {
                bytes += r._2().length + 16L;
                all.add(r);
            }
            if (bytes > 2 * smallBytes) {
                return null;
            }
        }
        all.sort((x, y) -> Long.compare(x._1(), y._1()));
        return all;
    }

    /** Runs {@code task} on the driver for each partition (under {@code breaks}) that {@code sorted} records fall in. */
    static List<TaskWrite.Result> onDriver(List<Tuple2<Long, byte[]>> sorted, long[] breaks, UpdateTask task)
            throws IOException {
        List<TaskWrite.Result> out = new ArrayList<>();
        if (task.folds()) {
            // every partition folds its share of the deltas, records or not
            int from = 0;
            for (int p = 0; p <= breaks.length; p++) {
                int to = from;
                while (to < sorted.size() && PartitionBreaks.partitionOf(breaks, sorted.get(to)._1()) == p) {
                    to++;
                }
                task.call(p, sorted.subList(from, to).iterator()).forEachRemaining(out::add);
                from = to;
            }
            return out;
        }
        int from = 0;
        while (from < sorted.size()) {
            int p = PartitionBreaks.partitionOf(breaks, sorted.get(from)._1());
            int to = from;
            while (to < sorted.size() && PartitionBreaks.partitionOf(breaks, sorted.get(to)._1()) == p) {
                to++;
            }
            java.util.Iterator<TaskWrite.Result> r = task.call(p, sorted.subList(from, to).iterator());
            r.forEachRemaining(out::add);
            from = to;
        }
        return out;
    }

    /**
     * Runs {@code run} and commits what it wrote as a new version made by {@code operation} on
     * {@code base}, or commits nothing when {@code unchanged} says the results changed nothing (then
     * null). Whatever happens, the broadcasts are released, and the write's files are removed unless
     * they were committed.
     */
    private static LayerMetadata runAndCommit(UpdateJob job, Layer base, Results run, String operation,
                                              Predicate<List<TaskWrite.Result>> unchanged,
                                              Broadcast<?>... broadcasts) throws IOException {
        boolean committed = false;
        try {
            List<TaskWrite.Result> results = results(job, base, operation, run);
            if (unchanged.test(results)) {
                return null;
            }
            LayerMetadata md = base.metadata().copy();
            md.operation = operation;
            md.readVersion = base.metadata().version;
            md.autoCompact = job.autoCompact;
            // with manifests the commit rewrites only the paths to the files removed and added
            // (VersionLog.commit): the base's file list is not needed, nor read
            LayerMetadata out = job.commit(md, md.manifests != null ? List.of() : base.files(), results, false);
            committed = true;
            return out;
        } finally {
            for (Broadcast<?> b : broadcasts) {
                if (b != null) { // none for work done on the driver
                    b.destroy();
                }
            }
            if (!committed) {
                job.discard();
            }
        }
    }

    /**
     * Rewrites {@code groups} of existing files (each group one task, adjacent files together) with
     * the tiles in {@code deleteBoxes} dropped; no new records. Returns null when nothing changed.
     */
    private static LayerMetadata rewrite(UpdateJob job, Layer base, List<List<DataFile>> groups, Set<String> ids,
                                         List<QueryBox> deleteBoxes, String operation) throws IOException {
        return rewrite(job, base, groups, ids, deleteBoxes, operation, false);
    }

    private static LayerMetadata rewrite(UpdateJob job, Layer base, List<List<DataFile>> groups, Set<String> ids,
                                         List<QueryBox> deleteBoxes, String operation, boolean skipDamage)
            throws IOException {
        return rewrite(job, base, groups, ids, deleteBoxes, operation, skipDamage, null);
    }

    /**
     * {@code foldBreaks}: the breaks the deltas are folded under, {@code groups} each partition's files
     * under them (a plan that read only the manifests the deltas need); null: planned here from the
     * whole file list.
     */
    private static LayerMetadata rewrite(UpdateJob job, Layer base, List<List<DataFile>> groups, Set<String> ids,
                                         List<QueryBox> deleteBoxes, String operation, boolean skipDamage,
                                         long[] foldBreaks) throws IOException {
        LayerMetadata md0 = base.metadata();
        if (groups.isEmpty() && md0.deltas.isEmpty()) {
            return null;
        }
        long[] breaks = foldBreaks;
        if (!md0.deltas.isEmpty() && breaks == null) {
            // deltas to fold (docs/FORMAT.md section 11): tasks over the whole index space, each with every
            // base file in its range (those no delta record falls into and not in ids stay unread);
            // no group (a compaction's run of small files) is split between two tasks
            List<DataFile> files = base.files();
            breaks = keepTogether(UpdatePartitions.snap(PartitionBreaks.compute(md0.keyIndex,
                job.spark.sparkContext().defaultParallelism()), files), groups);
            groups = UpdatePartitions.assign(breaks, files);
        }
        JavaSparkContext jsc = job.jsc();
        Broadcast<SerializableConf> confB = jsc.broadcast(new SerializableConf(job.conf));
        Broadcast<List<List<DataFile>>> perTask = jsc.broadcast(groups);
        UpdateTask task = new UpdateTask(confB, perTask, taskSpec(job, base)
            .withMerge(ids, MergeWriter.OnExisting.REPLACE, deleteBoxes).withSkipDamage(skipDamage));
        if (breaks != null) {
            task = folding(job, base, breaks, task);
        }
        UpdateTask run = task;
        JavaPairRDD<Long, byte[]> none = JavaPairRDD.fromJavaRDD(
            jsc.<scala.Tuple2<Long, byte[]>>parallelize(new ArrayList<>(), groups.size()));
        // A delete that removed no tile publishes nothing.
        return runAndCommit(job, base, () -> job.run(none, run, "sfclayer: " + operation + " " + base.path()), operation,
            results -> operation.equals("delete") && results.stream().mapToLong(r -> r.counts().deleted()).sum() == 0,
            confB, perTask);
    }

    /** {@code breaks} without those that would split one of {@code groups} (runs of adjacent files). */
    static long[] keepTogether(long[] breaks, List<List<DataFile>> groups) {
        List<Long> out = new ArrayList<>();
        for (long b : breaks) {
            boolean inside = false;
            for (List<DataFile> g : groups) {
                inside |= !g.isEmpty() && g.get(0).firstIndex < b && b <= g.get(g.size() - 1).lastIndex;
            }
            if (!inside) {
                out.add(b);
            }
        }
        return out.stream().mapToLong(Long::longValue).toArray();
    }

    /**
     * Deletes the tiles whose keys lie in {@code boxes} from the layer at {@code path}, as a new
     * version; only files whose index span meets the boxes' ranges are read and rewritten.
     * Returns the metadata of the new version, or of the newest one when no tile matched.
     */
    public static LayerMetadata delete(SparkSession spark, String path, List<QueryBox> boxes) throws IOException {
        Configuration conf = HadoopConfs.forOptions(spark, java.util.Map.of());
        Layer base = Layer.open(conf, path);
        KeyIndex ki = base.metadata().keyIndex;
        List<IndexRange> ranges = SfcLayerScan.ranges(ki, boxes, BoxQuery.DEFAULT_MAX_RANGES);
        List<DataFile> touched = new ArrayList<>();
        List<List<DataFile>> groups;
        if (base.manifests() != null) {
            // only the manifests meeting the ranges are read; each task gets a run of adjacent files
            groups = TouchedFiles.meeting(base.manifests(), ranges, spark.sparkContext().defaultParallelism(), touched);
        } else {
            DataFileListing listing = base.listing();
            Map<Long, DataFile> byFirst = new HashMap<>();
            for (DataFile f : base.files()) {
                byFirst.put(f.firstIndex, f);
            }
            for (DataFileListing.Selection s : listing.select(ranges)) {
                touched.add(byFirst.get(s.firstIndex));
            }
            groups = UpdatePartitions.slices(base.files(), touched, spark.sparkContext().defaultParallelism());
        }
        UpdateJob job = new UpdateJob(spark, new VersionLog(conf, new Path(path)), conf);
        Set<String> ids = new HashSet<>();
        for (DataFile f : touched) {
            ids.add(f.id());
        }
        // The delete's boxes count as changed (as ranges, coarsened): an append inserting into a gap
        // inside a box while the delete runs then conflicts with it (no write skew; docs/FORMAT.md,
        // "Conflicts and isolation").
        for (IndexRange r : ranges) {
            job.coveredRanges.add(new long[] {r.lo, r.hi});
        }
        LayerMetadata out = rewrite(job, base, groups, ids, boxes, "delete");
        return out == null ? base.metadata() : out;
    }

    /**
     * Repairs version {@code version} of the layer at {@code path} as an update based on it: the data
     * files named in {@code damagedNames} (those a verify of that version found damaged; all of them
     * when empty) are rewritten without their damaged records, every other file and every field of
     * the document (a raster description, ...) is kept. The commit is checked against versions
     * committed since {@code version} like any update's, so none of them is erased: it rebases over
     * them, or fails with ConcurrentUpdate when one changed the same files. {@code dropped} goes into
     * the history entry. Returns the new version's metadata.
     */
    public static LayerMetadata repair(SparkSession spark, String path, long version, List<String> damagedNames,
                                       Object dropped) throws IOException {
        Configuration conf = HadoopConfs.forOptions(spark, java.util.Map.of());
        Layer base = Layer.open(conf, path, version, -1);
        List<DataFile> touched = new ArrayList<>();
        List<List<DataFile>> groups;
        int tasks = spark.sparkContext().defaultParallelism();
        if (base.manifests() != null && !damagedNames.isEmpty()) {
            // the named files through their manifests' paths only
            groups = TouchedFiles.named(base.manifests(), new HashSet<>(damagedNames), tasks, touched);
        } else {
            List<DataFile> all = base.files();
            for (DataFile f : all) {
                if (damagedNames.isEmpty() || damagedNames.contains(f.name)) {
                    touched.add(f);
                }
            }
            groups = touched.isEmpty() ? List.of() : UpdatePartitions.slices(all, touched, tasks);
        }
        if (touched.isEmpty()) {
            throw new SfcLayerException.InvalidArgument("repair of layer " + path + " version " + version
                + ": none of the files " + damagedNames + " is in that version");
        }
        Set<String> ids = new HashSet<>();
        for (DataFile f : touched) {
            ids.add(f.id());
        }
        UpdateJob job = new UpdateJob(spark, new VersionLog(conf, new Path(path)), conf);
        job.repair = dropped;
        return rewrite(job, base, groups, ids, List.of(), "repair", true);
    }

    /**
     * Rewrites each run of adjacent small files (data below a quarter of the block size) into
     * block-sized files, and folds the version's deltas into the base files they fall into (docs/FORMAT.md
     * section 11), as a new version; nothing else is touched. Returns the newest metadata (unchanged when
     * there was nothing to compact).
     */
    public static LayerMetadata compact(SparkSession spark, String path) throws IOException {
        return compact(spark, HadoopConfs.forOptions(spark, java.util.Map.of()), path, false);
    }

    /** {@link #compact(SparkSession, String)}; {@code auto}: one an append started ({@code compactAfterDeltas}). */
    static LayerMetadata compact(SparkSession spark, Configuration conf, String path, boolean auto) throws IOException {
        Layer base = Layer.open(conf, path);
        if (auto && base.manifests() != null && !base.metadata().deltas.isEmpty()) {
            // an append's compaction folds its deltas, reading only the manifests on the paths to their
            // spans; merging runs of small files takes the whole file list: compact() called by a user
            LayerMetadata md0 = base.metadata();
            int tasks = spark.sparkContext().defaultParallelism();
            TouchedFiles.Partitioned plan = TouchedFiles.forAppend(base.manifests(),
                PartitionBreaks.compute(md0.keyIndex, tasks), withDeltaSpans(List.of(), md0), tasks);
            UpdateJob job = new UpdateJob(spark, new VersionLog(conf, new Path(path)), conf);
            job.autoCompact = true;
            LayerMetadata out = rewrite(job, base, plan.perPartition, Set.of(), List.of(), "compact", false, plan.breaks);
            return out == null ? md0 : out;
        }
        long small = base.metadata().blockSize / 4;
        List<List<DataFile>> runs = new ArrayList<>();
        List<DataFile> run = new ArrayList<>();
        for (DataFile f : base.files()) {
            if (f.dataBytes < small) {
                run.add(f);
                continue;
            }
            if (run.size() > 1) {
                runs.add(run);
            }
            run = new ArrayList<>();
        }
        if (run.size() > 1) {
            runs.add(run);
        }
        if (runs.isEmpty() && base.metadata().deltas.isEmpty()) {
            return base.metadata();
        }
        UpdateJob job = new UpdateJob(spark, new VersionLog(conf, new Path(path)), conf);
        job.autoCompact = auto;
        Set<String> ids = new HashSet<>();
        for (List<DataFile> r : runs) {
            for (DataFile f : r) {
                ids.add(f.id());
            }
        }
        LayerMetadata out = rewrite(job, base, runs, ids, List.of(), "compact");
        return out == null ? base.metadata() : out;
    }

    /** Throws {@code t} as it is (a job's SparkException is checked in Java, unchecked where Scala threw it). */
    @SuppressWarnings("unchecked")
    static <T extends Throwable> RuntimeException rethrow(Throwable t) throws T {
        throw (T) t;
    }
}
