package io.sfclayer.spark;

import io.sfclayer.SfcLayerException;
import io.sfclayer.curve.IndexRange;
import io.sfclayer.format.DataFile;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.layer.Layer;
import io.sfclayer.layer.PartitionBreaks;
import io.sfclayer.layer.TaskSpec;
import io.sfclayer.layer.TaskWrite;
import io.sfclayer.layer.TouchedFiles;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;
import scala.Tuple2;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Appends written as delta files (docs/FORMAT.md section 11), chosen by {@link SfcLayerUpdate#append}
 * and {@link SfcLayerUpdate#appendSorted} ({@link io.sfclayer.layer.DeltaPolicy}): by one shuffle into
 * tasks that write sorted, disjoint delta files merging with nothing, or on the driver; the commit that
 * lists them as the new version's deltas; what auto's rule measures (the new records' ranges and bytes,
 * the base bytes they would rewrite); and the compaction an append may start afterwards.
 */
final class DeltaAppends {
    private DeltaAppends() {
    }

    /**
     * A delta append by one shuffle (docs/FORMAT.md section 11): each task writes its partition's records,
     * sorted, as rolled delta files under its attempt's directory, merging with no base file; the commit
     * lists them as the new version's deltas.
     */
    static LayerMetadata deltaShuffled(UpdateJob job, Layer base, JavaPairRDD<Long, byte[]> encoded,
                                               int partitions) throws IOException {
        LayerMetadata md0 = base.metadata();
        long[] breaks = PartitionBreaks.compute(md0.keyIndex, partitions);
        JavaSparkContext jsc = job.jsc();
        Broadcast<SerializableConf> confB = jsc.broadcast(new SerializableConf(job.conf));
        UpdateTask task = new UpdateTask(confB, null, SfcLayerUpdate.taskSpec(job, base).withMaxGroupBytes(job.maxGroupBytes));
        return commitDelta(job, base, () -> job.run(IndexShuffle.sortedBy(encoded, new IndexPartitioner(breaks)), task,
            "sfclayer: append to " + base.path() + " (delta files)"), confB);
    }

    /**
     * A delta append of records sorted on the driver, without a Spark job: one delta file (or a few,
     * rolled at the block size) under {@code data-<writeId>/driver/}.
     */
    static LayerMetadata deltaOnDriver(UpdateJob job, Layer base, List<Tuple2<Long, byte[]>> sorted)
            throws IOException {
        TaskSpec spec = SfcLayerUpdate.taskSpec(job, base).withMaxGroupBytes(job.maxGroupBytes);
        return commitDelta(job, base, () -> List.of(TaskWrite.write(job.conf, spec, 0, "driver", List.of(), false, null,
            sink -> {
                for (Tuple2<Long, byte[]> r : sorted) {
                    sink.add(r._1(), r._2());
                }
            })));
    }

    /** Runs a delta append's writing and commits its files as the new version's deltas; discards them on failure. */
    static LayerMetadata commitDelta(UpdateJob job, Layer base, SfcLayerUpdate.Results run, Broadcast<?>... broadcasts)
            throws IOException {
        boolean committed = false;
        try {
            List<TaskWrite.Result> results = SfcLayerUpdate.results(job, base, "append", run);
            if (results.stream().allMatch(r -> r.added().isEmpty())) {
                return base.metadata(); // no records: nothing to publish
            }
            LayerMetadata md = base.metadata().copy();
            md.operation = "append";
            md.readVersion = base.metadata().version;
            LayerMetadata out = job.commitDelta(md, results);
            committed = true;
            return afterAppend(job, out);
        } finally {
            for (Broadcast<?> b : broadcasts) {
                b.destroy();
            }
            if (!committed) {
                job.discard();
            }
        }
    }

    /**
     * After an append's commit: with {@code compactAfterDeltas=N}, a version left with N or more delta
     * versions is compacted as a commit of its own ({@code "auto": true}); a compaction that fails (a
     * concurrent update, anything) gives up with a warning: the append stands, the next one tries again.
     */
    static LayerMetadata afterAppend(UpdateJob job, LayerMetadata out) {
        int n = job.deltas.compactAfterDeltas();
        if (n <= 0 || out.deltas.stream().mapToLong(d -> d.addedIn < 0 ? out.version : d.addedIn).distinct().count() < n) {
            return out;
        }
        long t0 = System.nanoTime();
        try {
            SfcLayerUpdate.compact(job.spark, job.conf, job.log.layerPath().toString(), true);
        } catch (Exception e) {
            // any Exception, checked ones too: a failed Spark job reaches here as a SparkException (checked, which
            // UpdateJob rethrows unwrapped), and the append it would fail is committed already
            org.slf4j.LoggerFactory.getLogger(SfcLayerUpdate.class).warn("sfclayer: the compaction after version "
                + out.version + " of " + job.log.layerPath() + " gave up (the next append tries again): "
                + SfcLayerException.reason(e));
        } finally {
            job.compactNanos += System.nanoTime() - t0;
        }
        return out;
    }

    /** The new records' index ranges and encoded bytes, from a first pass over them. */
    record Sized(List<IndexRange> ranges, long bytes) implements java.io.Serializable { }

    /**
     * The data bytes of the base files holding an index of {@code ranges}: what a copy-on-write append of
     * records in those ranges rewrites (an upper bound when the ranges are coarsened).
     */
    static long rewriteBytes(Layer base, List<IndexRange> ranges) throws IOException {
        if (ranges.isEmpty()) {
            return 0;
        }
        long[] sum = {0};
        if (base.manifests() != null) {
            Map<Long, DataFile> meeting = new HashMap<>();
            base.manifests().meeting(ranges, (position, file, coversTo) -> meeting.put(position, file));
            meeting.values().forEach(f -> sum[0] += holds(ranges, f) ? f.dataBytes : 0);
        } else {
            base.files().forEach(f -> sum[0] += holds(ranges, f) ? f.dataBytes : 0);
        }
        return sum[0];
    }

    /** Whether one of the sorted, disjoint {@code ranges} meets {@code f}'s span. */
    private static boolean holds(List<IndexRange> ranges, DataFile f) {
        int lo = 0, hi = ranges.size();
        while (lo < hi) { // the first range ending at or after the file's start
            int mid = (lo + hi) >>> 1;
            if (ranges.get(mid).hi < f.firstIndex) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo < ranges.size() && ranges.get(lo).lo <= f.lastIndex;
    }

    /**
     * The sorted, disjoint ranges of the records' indexes (at most {@link #SfcLayerUpdate.MAX_APPEND_RANGES}: a superset)
     * and their encoded bytes, by one job. Each task sorts its partition's indexes (8 bytes a record, not
     * the records).
     */
    static Sized sized(UpdateJob job, JavaPairRDD<Long, byte[]> records, Layer base) {
        JavaSparkContext jsc = job.jsc();
        String previous = jsc.getLocalProperty("spark.job.description");
        jsc.setJobDescription("sfclayer: append to " + base.path() + " (the new keys' index ranges)");
        List<Sized> parts;
        try {
            parts = records.mapPartitions((java.util.Iterator<Tuple2<Long, byte[]>> it) -> {
                long[] buf = new long[1024];
                int n = 0;
                long bytes = 0;
                while (it.hasNext()) {
                    if (n == buf.length) {
                        buf = Arrays.copyOf(buf, 2 * n);
                    }
                    Tuple2<Long, byte[]> r = it.next();
                    buf[n++] = r._1();
                    bytes += r._2().length;
                }
                long[] sorted = Arrays.copyOf(buf, n);
                Arrays.sort(sorted);
                return java.util.Collections.singletonList(
                    new Sized(TouchedFiles.ranges(sorted, SfcLayerUpdate.MAX_APPEND_RANGES), bytes)).iterator();
            }).collect();
        } finally {
            jsc.setJobDescription(previous);
        }
        job.throwIfRefused(); // the input's encoding refused a tile
        List<IndexRange> all = new ArrayList<>();
        long bytes = 0;
        for (Sized p : parts) {
            all.addAll(p.ranges());
            bytes += p.bytes();
        }
        return new Sized(TouchedFiles.union(all, SfcLayerUpdate.MAX_APPEND_RANGES), bytes);
    }
}
