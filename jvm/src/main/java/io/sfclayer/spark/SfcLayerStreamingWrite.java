package io.sfclayer.spark;

import io.sfclayer.SfcLayerException;
import io.sfclayer.codec.TileSchema;
import io.sfclayer.commit.VersionLog;
import io.sfclayer.curve.KeyIndex;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.format.Transactions;
import io.sfclayer.format.ValueCompression;
import io.sfclayer.layer.Layer;
import io.sfclayer.layer.LayerWriteOptions;
import io.sfclayer.layer.PartitionBreaks;
import io.sfclayer.layer.TaskSpec;
import io.sfclayer.layer.TaskWrite;
import io.sfclayer.layer.TileGrid;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.connector.write.streaming.StreamingDataWriterFactory;
import org.apache.spark.sql.connector.write.streaming.StreamingWrite;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.Tuple2;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * A streaming query's writes to a layer: each micro-batch one append (one version), exactly once. Its
 * tasks encode the batch's tiles ({@link SfcLayerStreamWriter}); the driver's commit sorts them and
 * merges them into the layer through the append path of batch writes ({@link SfcLayerUpdate#appendSorted},
 * {@link UpdateJob#commit}), with the query's id and the batch id as the version's transaction
 * ({@link Transactions}): a batch the layer already holds (the query was stopped between the layer's
 * commit and its checkpoint, and replays it) is not written again, and of two commits of the same batch
 * racing each other only one publishes. The first batch creates the layer when there is none: it then
 * needs the options a batch write takes for a layer whose keys are not all known yet, {@code bounds}
 * (and {@code timeBounds} for space-time tiles), plus any other layer-shaping option.
 */
final class SfcLayerStreamingWrite implements StreamingWrite {
    /** Streaming-only option: the most encoded bytes one task of a micro-batch may hand the driver. */
    static final String OPTION_MAX_BATCH_BYTES = "maxBatchBytes";
    static final long DEFAULT_MAX_BATCH_BYTES = 256L << 20;
    /** Options of Spark's own that reach a sink's options. */
    private static final Set<String> SPARK_OPTIONS = Set.of("checkpointlocation", "queryname", "outputmode");

    private final SfcLayerTable table;
    private final String path;
    private final String queryId;
    private final StructType input;
    private final Map<String, String> options;
    private final LayerWriteOptions opts;
    private final long maxTaskBytes;
    private final boolean spaceTime;
    private final List<String> valueNames = new ArrayList<>();
    private final StructType valueSchema;

    /**
     * The batch's Hadoop configuration, made once (Spark builds this write for each micro-batch): the
     * factory and the commit made a copy each before, ~1,000 settings copied each time.
     */
    private final Configuration conf;
    /**
     * The newest version when the current batch's writer factory was made, or null when there was no
     * layer: the batch's commit starts from it unless a version was committed since (one probe), so a
     * batch opens the layer once ({@link #commit}).
     */
    private Layer batchBase;
    /** Time spent opening the layer for the current batch, factory and commit (sink metric openMs). */
    private long openNanos;
    /** The key index the current batch's tasks encode with (set when its writer factory is made). */
    private KeyIndex encodedWith;
    /** Whether the layer existed when the current batch started. */
    private boolean layerExisted;
    private int partitions = 1;
    /** Whether the current batch's commit found it in the layer already. */
    private boolean skipped;

    SfcLayerStreamingWrite(SfcLayerTable table, LogicalWriteInfo info) {
        this.table = table;
        this.path = table.path();
        this.queryId = info.queryId();
        this.input = info.schema();
        Map<String, String> o = new HashMap<>();
        long max = DEFAULT_MAX_BATCH_BYTES;
        for (Map.Entry<String, String> e : info.options().asCaseSensitiveMap().entrySet()) {
            String k = e.getKey().toLowerCase(Locale.ROOT);
            if (k.equals(OPTION_MAX_BATCH_BYTES.toLowerCase(Locale.ROOT))) {
                max = LayerWriteOptions.parseBytes(OPTION_MAX_BATCH_BYTES, e.getValue());
            } else if (!SPARK_OPTIONS.contains(k)) {
                o.put(e.getKey(), e.getValue());
            }
        }
        this.options = o;
        this.maxTaskBytes = max;
        this.opts = LayerWriteOptions.parse(o);
        if (opts.txn != null) {
            throw new SfcLayerException.InvalidArgument("options txnAppId and txnVersion are for batch writes"
                + " (foreachBatch); a streaming query's batches are identified by its query id and batch id");
        }
        List<String> names = Arrays.asList(input.fieldNames());
        for (String k : List.of("col", "row")) {
            if (!names.contains(k) || !input.apply(k).dataType().equals(DataTypes.IntegerType)) {
                throw new SfcLayerException.InvalidInput("the streaming DataFrame needs an int key column '" + k
                    + "'; its columns are " + input.simpleString() + " (cast keys to int)");
            }
        }
        spaceTime = names.contains("time");
        if (spaceTime && !input.apply("time").dataType().equals(DataTypes.TimestampType)) {
            throw new SfcLayerException.InvalidInput("key column 'time' must be a timestamp, not "
                + input.apply("time").dataType().simpleString());
        }
        for (StructField f : input.fields()) {
            if (f.name().equals("col") || f.name().equals("row") || f.name().equals("time")) {
                continue;
            }
            if (SfcLayerWrite.RESERVED.contains(f.name()) || (opts.extent != null && TileGrid.COLUMNS.contains(f.name()))) {
                throw new SfcLayerException.InvalidInput("value column '" + f.name() + "' has a name sfclayer reserves;"
                    + " rename it");
            }
            valueNames.add(f.name());
        }
        valueSchema = new StructType(valueNames.stream().map(input::apply).toArray(StructField[]::new));
        this.conf = conf();
        // whether the layer exists (else bounds are needed) is checked when a batch opens it
        // (createStreamingWriterFactory): Spark builds this write again for every micro-batch
    }

    private Configuration conf() {
        Configuration conf = HadoopConfs.forOptions(SparkSession.active(), options);
        if (opts.singleWriter) {
            conf.setBoolean(io.sfclayer.commit.CommitPublisher.SINGLE_WRITER, true);
        }
        return conf;
    }

    /** The newest version of the layer, or null when there is none yet. */
    private Layer newest() throws IOException {
        long t0 = System.nanoTime();
        try {
            return Layer.open(conf, path);
        } catch (SfcLayerException.LayerNotFound e) {
            if (!new VersionLog(conf, new Path(path)).versions().isEmpty()) {
                throw e; // a version there, unreadable: not a missing layer
            }
            return null;
        } finally {
            openNanos += System.nanoTime() - t0;
        }
    }

    /**
     * The version the current batch's commit starts from: the factory's, unless a version was committed
     * after it (then the newest). A replayed batch is found in the factory's version already (the restart
     * opened the layer after the commit it replays); a commit racing this one is checked by the version
     * log's commit, which lists the log and rebases or refuses ({@link VersionLog#commit}).
     */
    private Layer commitBase() throws IOException {
        Layer base = batchBase;
        batchBase = null;
        if (base == null) {
            return newest(); // no layer when the batch started (its first batch), or no factory made
        }
        long t0 = System.nanoTime();
        boolean newer = new VersionLog(conf, new Path(path)).hasVersion(base.metadata().version + 1);
        openNanos += System.nanoTime() - t0;
        return newer ? newest() : base;
    }

    @Override
    public StreamingDataWriterFactory createStreamingWriterFactory(PhysicalWriteInfo info) {
        partitions = Math.max(1, opts.partitions > 0 ? opts.partitions : info.numPartitions());
        Layer base;
        openNanos = 0;
        try {
            base = newest();
        } catch (IOException e) {
            throw new SfcLayerException.StorageError("cannot open layer " + path + ": " + e, e);
        }
        batchBase = base;
        layerExisted = base != null;
        if (base == null && (opts.bounds == null || (spaceTime && opts.timeMin == null))) {
            throw new SfcLayerException.InvalidArgument("there is no layer at " + path + ": a streaming query creates"
                + " it with its first batch, which cannot know the keys of later ones; give option bounds"
                + " ('colMin,rowMin,colMax,rowMax')" + (spaceTime ? " and timeBounds" : "") + ", or write the layer first");
        }
        SfcLayerWrite.Encode encode;
        if (base != null) {
            LayerMetadata md0 = base.metadata();
            opts.checkAppendTo(md0, base.path().toString());
            List<String> layerValues = SfcLayerWrite.checkAppendSchema(md0, valueSchema, spaceTime, base.path().toString());
            encodedWith = md0.keyIndex;
            encode = new SfcLayerWrite.Encode(md0.keyIndex, TileSchema.fromJson(md0.valueSchemaJson, spaceTime), input,
                layerValues);
        } else {
            encodedWith = SfcLayerWrite.buildKeyIndex(null, opts, spaceTime); // bounds given (constructor)
            encode = new SfcLayerWrite.Encode(encodedWith, TileSchema.fromSpark(valueSchema, spaceTime), input, valueNames);
        }
        return new SfcLayerStreamWriter.Factory(encode, maxTaskBytes, path);
    }

    @Override
    public void commit(long epochId, WriterCommitMessage[] messages) {
        long t0 = System.nanoTime();
        Transactions.Txn txn = new Transactions.Txn(queryId, epochId);
        List<Tuple2<Long, byte[]>> sorted = new ArrayList<>();
        for (WriterCommitMessage m : messages) {
            SfcLayerStreamBatch b = (SfcLayerStreamBatch) m;
            for (int i = 0; i < b.indexes.length; i++) {
                sorted.add(new Tuple2<>(b.indexes[i], b.records[i]));
            }
        }
        sorted.sort((x, y) -> Long.compare(x._1(), y._1()));
        String outcome;
        LayerMetadata out;
        UpdateJob[] ran = new UpdateJob[1];
        try {
            skipped = false;
            out = commitBatch(txn, sorted, ran);
            outcome = skipped ? "skipped" : sorted.isEmpty() ? "empty" : "committed";
        } catch (Transactions.AlreadyCommitted e) {
            out = e.newest;
            outcome = "skipped";
        } catch (IOException e) {
            throw new SfcLayerException.StorageError("cannot commit batch " + epochId + " to layer " + path + ": " + e, e);
        } catch (RuntimeException e) {
            SfcLayerException own = SfcLayerWrite.findOwn(e);
            if (own != null && own != e) {
                own.addSuppressed(e);
                throw own;
            }
            throw e;
        }
        Map<String, String> m = new LinkedHashMap<>();
        m.put("batchId", Long.toString(epochId));
        m.put("outcome", outcome);
        m.put("tiles", Integer.toString(sorted.size()));
        m.put("version", out == null ? "" : Long.toString(out.version));
        m.put("commitMs", Long.toString((System.nanoTime() - t0) / 1_000_000));
        // where the batch's sink time went: opening the layer (the factory's, before the job, and the commit's
        // probe), publishing the version and the compaction it started (compactAfterDeltas), both within
        // commitMs; writing the files is most of the rest of commitMs
        UpdateJob job = ran[0];
        m.put("openMs", millis(openNanos));
        m.put("publishMs", millis(job == null ? 0 : job.publishNanos));
        m.put("compactMs", millis(job == null ? 0 : job.compactNanos));
        openNanos = 0;
        table.sinkMetrics(m);
    }

    private static String millis(long nanos) {
        return String.format(Locale.ROOT, "%.1f", nanos / 1e6);
    }

    /**
     * Commits one batch; returns the version holding it (new, or the one that already did), or null when
     * it was empty. {@code ran[0]}: the update it ran, if any (for its timings).
     */
    private LayerMetadata commitBatch(Transactions.Txn txn, List<Tuple2<Long, byte[]>> sorted, UpdateJob[] ran)
            throws IOException {
        Layer base = commitBase();
        if (base != null && Transactions.holds(base.metadata(), txn)) {
            skipped = true;
            return base.metadata(); // a replay of a committed batch
        }
        if (sorted.isEmpty()) {
            return base == null ? null : base.metadata();
        }
        VersionLog log = new VersionLog(conf, new Path(path));
        if (base == null) {
            if (layerExisted) {
                throw new SfcLayerException.LayerNotFound("layer " + path + " has no version any more (it was"
                    + " removed while batch " + txn.version + " was written); nothing was written");
            }
            return create(log, txn, sorted, ran);
        }
        if (!base.metadata().keyIndex.equals(encodedWith)) {
            throw new SfcLayerException.ConcurrentUpdate("layer " + path + " was replaced (key index "
                + base.metadata().keyIndex.toJson() + ") while batch " + txn.version + " was encoded for "
                + encodedWith.toJson() + "; nothing was published, restart the query");
        }
        UpdateJob job = new UpdateJob(SparkSession.active(), log, conf);
        ran[0] = job;
        job.maxGroupBytes = opts.maxGroupBytes;
        job.txn = txn;
        job.deltas = opts.deltas; // a small batch into a large layer: a delta (docs/FORMAT.md section 11)
        return SfcLayerUpdate.appendSorted(job, base, sorted, partitions, opts.onExisting);
    }

    /** The first batch as a new layer, written as a batch write's first version is ({@link SfcLayerWrite#commitNew}). */
    private LayerMetadata create(VersionLog log, Transactions.Txn txn, List<Tuple2<Long, byte[]>> sorted,
                                 UpdateJob[] ran) throws IOException {
        SparkSession spark = SparkSession.active();
        TileSchema tileSchema = TileSchema.fromSpark(valueSchema, spaceTime);
        ValueCompression compression = opts.compressionFor(tileSchema);
        long blockSize = opts.blockSize > 0 ? opts.blockSize : log.fileSystem().getDefaultBlockSize(log.layerPath());
        UpdateJob job = new UpdateJob(spark, log, conf);
        ran[0] = job;
        job.formatVersion = opts.formatVersion;
        job.maxGroupBytes = opts.maxGroupBytes;
        job.txn = txn;
        TaskSpec spec = TaskSpec.of(log.layerPath().toString(), job.dataDirName, job.writeId, blockSize,
                opts.indexInterval, compression, encodedWith, valueSchema.json())
            .withFormatVersion(opts.formatVersion).withMaxGroupBytes(opts.maxGroupBytes)
            .withBloomFpp(opts.bloomFppForNewLayer());
        UpdateTask task = UpdateTask.onDriver(conf, null, spec); // the records are on the driver: no job
        boolean committed = false;
        try {
            List<TaskWrite.Result> results = SfcLayerUpdate.onDriver(sorted,
                PartitionBreaks.compute(encodedWith, partitions), task);
            LayerMetadata out = SfcLayerWrite.commitNew(job, null, results, encodedWith, valueSchema, tileSchema,
                compression, blockSize, spec.bloomFpp(), opts);
            committed = true;
            return out;
        } finally {
            if (!committed) {
                job.discard();
            }
        }
    }

    /**
     * No commit coordination: a task writes no file, it only hands its encoded tiles to the driver, and
     * Spark gives the commit one message per partition (the first successful attempt's), so a second
     * attempt of a task can leave nothing behind. Asking the driver's coordinator cost each task a round trip.
     */
    @Override
    public boolean useCommitCoordinator() {
        return false;
    }

    @Override
    public void abort(long epochId, WriterCommitMessage[] messages) {
        batchBase = null; // the next batch opens the layer afresh
        // the tasks wrote no file; the commit, if it started, removed its own data (UpdateJob#discard)
    }

    @Override
    public String toString() {
        return "sfclayer streaming write to " + path + " (query " + queryId + ")";
    }

}
