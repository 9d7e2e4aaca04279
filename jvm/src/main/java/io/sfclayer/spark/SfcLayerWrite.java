package io.sfclayer.spark;

import io.sfclayer.SfcLayerException;
import io.sfclayer.codec.TileSchema;
import io.sfclayer.codec.TileWriter;
import io.sfclayer.commit.VersionLog;
import io.sfclayer.curve.KeyBounds;
import io.sfclayer.curve.KeyIndex;
import io.sfclayer.curve.TimeBounds;
import io.sfclayer.format.DataFileListing;
import io.sfclayer.format.DataFileWriter;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.format.ValueCompression;
import io.sfclayer.layer.Layer;
import io.sfclayer.layer.LayerWriteOptions;
import io.sfclayer.layer.PartitionBreaks;
import io.sfclayer.layer.TaskSpec;
import io.sfclayer.layer.TaskWrite;
import io.sfclayer.layer.TileGrid;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.api.java.function.Function2;
import org.apache.spark.api.java.function.PairFlatMapFunction;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SaveMode;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.Tuple2;

import java.io.IOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Writes a DataFrame of tiles as a new version of a layer (the design's "Layer Writing").
 *
 * <p>Why this is not a DataSource V2 {@code BatchWrite}: a V2 write cannot ask Spark for a custom
 * partitioner. {@code RequiresDistributionAndOrdering} accepts only columns, buckets and catalog
 * functions, and an ordered distribution means a sampled range partitioning (an extra job), so
 * the one-shuffle write of the design is out of reach. A {@code TableProvider} whose table does not
 * declare {@code BATCH_WRITE} makes {@code DataFrameWriter} fall back to the source's V1
 * {@code CreatableRelationProvider}, which receives the whole DataFrame (and serves every save
 * mode). Here the writer runs its own partitioner, with breaks computed from the key bounds, and
 * sorts by index within that same shuffle, as GeoTrellis' RDD writer does:
 * {@code repartitionAndSortWithinPartitions}. The input's own stages plus one shuffle map stage and
 * one writing stage are all a write costs (one small aggregation job more when no bounds are given).
 */
public final class SfcLayerWrite {
    public static final Set<String> RESERVED = Set.of("_sfc_index", "_file");

    private SfcLayerWrite() {
    }

    /** Runs the write; returns the committed metadata, or null when mode is ignore and a layer exists. */
    public static LayerMetadata run(SparkSession spark, Dataset<Row> data, String path, SaveMode mode,
                                    Map<String, String> options) {
        try {
            return write(spark, data, path, mode, options);
        } catch (io.sfclayer.format.Transactions.AlreadyCommitted e) {
            return e.newest; // its batch is in the layer already (a concurrent duplicate committed it first)
        } catch (IOException e) {
            throw new SfcLayerException.StorageError("cannot write layer " + path + ": " + e, e);
        } catch (RuntimeException e) {
            // A failed task reaches the driver wrapped in SparkException: surface sfclayer's own error.
            SfcLayerException own = findOwn(e);
            if (own != null && own != e) {
                own.addSuppressed(e);
                throw own;
            }
            throw e;
        }
    }

    static SfcLayerException findOwn(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof SfcLayerException) {
                return (SfcLayerException) t;
            }
            if (t.getCause() == t) {
                break;
            }
        }
        return null;
    }

    private static LayerMetadata write(SparkSession spark, Dataset<Row> input, String path, SaveMode mode,
                                       Map<String, String> options) throws IOException {
        if (path == null || path.isEmpty()) {
            throw new SfcLayerException.InvalidArgument("no layer path: use save(path)");
        }
        LayerWriteOptions opts = LayerWriteOptions.parse(options);
        Dataset<Row> data = normaliseKeys(input);
        StructType schema = data.schema();
        boolean spaceTime = Arrays.asList(schema.fieldNames()).contains("time");
        List<String> valueNames = new ArrayList<>();
        for (StructField f : schema.fields()) {
            if (f.name().equals("col") || f.name().equals("row") || f.name().equals("time")) {
                continue;
            }
            if (RESERVED.contains(f.name()) || (opts.extent != null && TileGrid.COLUMNS.contains(f.name()))) {
                throw new SfcLayerException.InvalidInput("value column '" + f.name() + "' has a name sfclayer reserves"
                    + (TileGrid.COLUMNS.contains(f.name()) ? " for tile envelopes of layers with an extent" : "")
                    + "; rename it");
            }
            valueNames.add(f.name());
        }
        StructType valueSchema = new StructType(valueNames.stream().map(n -> schema.apply(n)).toArray(StructField[]::new));
        TileSchema tileSchema = TileSchema.fromSpark(valueSchema, spaceTime);

        Configuration conf = HadoopConfs.forOptions(spark, options);
        if (opts.singleWriter) {
            conf.setBoolean(io.sfclayer.commit.CommitPublisher.SINGLE_WRITER, true);
        }
        VersionLog log = new VersionLog(conf, new Path(path));
        FileSystem fs = log.fileSystem();
        List<Long> versions = log.versions();
        if (!versions.isEmpty()) {
            if (mode == SaveMode.Ignore) {
                return null;
            }
            if (mode == SaveMode.ErrorIfExists) {
                throw new SfcLayerException.LayerExists("a layer already exists at " + log.layerPath()
                    + " (mode errorifexists); use mode overwrite to replace it");
            }
        } else if (log.pathExists() && !onlyLeftovers(fs, log.layerPath())) {
            if (mode == SaveMode.Ignore) {
                return null;
            }
            throw new SfcLayerException.LayerExists(log.layerPath() + " exists and is not an sfclayer layer;"
                + " sfclayer never deletes what it did not write: choose another path or remove it");
        }

        Layer base = versions.isEmpty() ? null : Layer.open(conf, path);
        if (base != null && io.sfclayer.format.Transactions.holds(base.metadata(), opts.txn)) {
            return base.metadata(); // a replayed batch (txnAppId, txnVersion): in the layer already, not written twice
        }
        if (mode == SaveMode.Append && base != null) {
            LayerMetadata md0 = base.metadata();
            opts.checkAppendTo(md0, log.layerPath().toString());
            List<String> layerValues = checkAppendSchema(md0, valueSchema, spaceTime, log.layerPath().toString());
            JavaRDD<InternalRow> rows = data.queryExecution().toRdd().toJavaRDD();
            int partitions = opts.partitions > 0 ? opts.partitions : Math.max(1, rows.getNumPartitions());
            Encode encode = new Encode(md0.keyIndex, TileSchema.fromJson(md0.valueSchemaJson, spaceTime), schema,
                layerValues);
            opts.checkBloomAgainst(io.sfclayer.format.BloomFilter.layerFpp(md0), log.layerPath().toString());
            UpdateJob job = new UpdateJob(spark, log, conf);
            encode.reportingTo(job);
            job.maxGroupBytes = opts.maxGroupBytes;
            job.txn = opts.txn;
            long estimate = LocalAppend.estimatedBytes(data);
            job.deltas = opts.deltas.withEstimatedBytes(estimate);
            List<Tuple2<Long, byte[]>> local = LocalAppend.records(data, encode, job);
            if (local != null) {
                return SfcLayerUpdate.appendSorted(job, base, local, partitions, opts.onExisting);
            }
            long small = opts.smallAppendBytes > 0 && estimate <= opts.smallAppendBytes ? opts.smallAppendBytes : 0;
            return SfcLayerUpdate.append(job, base, rows.mapPartitionsToPair(encode), partitions, opts.onExisting, small);
        }

        ValueCompression compression = opts.compressionFor(tileSchema);
        if (!io.sfclayer.format.RecordFrame.checked(opts.formatVersion)
                && io.sfclayer.format.RasterLayout.hasMask(valueSchema.json(), spaceTime)) {
            throw new SfcLayerException.InvalidArgument("option formatVersion: '" + opts.formatVersion + "' cannot"
                + " hold raster tiles with a mask column (format " + io.sfclayer.format.RasterLayout.MASK_FORMAT_VERSION
                + "); leave the option out; nothing was written");
        }
        KeyIndex keyIndex = buildKeyIndex(data, opts, spaceTime);
        JavaRDD<InternalRow> rows = data.queryExecution().toRdd().toJavaRDD();
        int partitions = opts.partitions > 0 ? opts.partitions : Math.max(1, rows.getNumPartitions());
        long blockSize = opts.blockSize > 0 ? opts.blockSize : fs.getDefaultBlockSize(log.layerPath());
        long[] breaks = PartitionBreaks.compute(keyIndex, partitions);

        UpdateJob job = new UpdateJob(spark, log, conf);
        JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
        Broadcast<SerializableConf> confB = jsc.broadcast(new SerializableConf(conf));
        Encode encode = new Encode(keyIndex, tileSchema, schema, valueNames).reportingTo(job);
        TaskSpec spec = TaskSpec.of(log.layerPath().toString(), job.dataDirName, job.writeId, blockSize,
                opts.indexInterval, compression, keyIndex, valueSchema.json())
            .withFormatVersion(opts.formatVersion).withMaxGroupBytes(opts.maxGroupBytes)
            .withBloomFpp(opts.bloomFppForNewLayer());
        UpdateTask task = new UpdateTask(confB, null, spec);
        job.formatVersion = opts.formatVersion;
        job.repair = opts.repair;
        job.txn = opts.txn;
        boolean committed = false;
        try {
            List<TaskWrite.Result> results = job.run(IndexShuffle.sortedBy(rows.mapPartitionsToPair(encode),
                new IndexPartitioner(breaks)), task, "sfclayer: write " + path);
            LayerMetadata out = commitNew(job, base, results, keyIndex, valueSchema, tileSchema, compression,
                blockSize, spec.bloomFpp(), opts);
            committed = true;
            return out;
        } finally {
            confB.destroy();
            if (!committed) {
                job.discard();
            }
        }
    }

    /**
     * Commits what a first write or an overwrite of {@code base} (null: none) wrote as a new layer: the
     * version document of its shape (key index, schemas, compression, ...) listing {@code results}' files.
     * An overwrite keeps the replaced layer's {@code transactions} (a stream's batches stay written once).
     */
    static LayerMetadata commitNew(UpdateJob job, Layer base, List<TaskWrite.Result> results, KeyIndex keyIndex,
                                   StructType valueSchema, TileSchema tileSchema, ValueCompression compression,
                                   long blockSize, double bloomFpp, LayerWriteOptions opts) throws IOException {
        LayerMetadata md = new LayerMetadata();
        md.keyIndex = keyIndex;
        md.valueSchemaJson = valueSchema.json();
        md.tileSchemaJson = tileSchema.avroSchemaJson();
        md.compression = compression.optionName();
        md.blockSize = blockSize;
        md.indexInterval = opts.indexInterval;
        md.extent = opts.extent;
        md.crs = opts.crs;
        if (opts.raster != null) {
            md.extras.put("raster", opts.raster);
        }
        io.sfclayer.format.BloomFilter.setLayerFpp(md, bloomFpp);
        md.operation = base == null ? "write" : "overwrite";
        md.readVersion = base == null ? -1 : base.metadata().version;
        if (base != null) {
            md.transactions.putAll(base.metadata().transactions);
        }
        // an overwrite replaces every file: a version with manifests is not read (the history counts its
        // files from its totals; its removedFiles stay empty, docs/FORMAT.md section 10)
        if (base != null && base.metadata().manifests != null) {
            job.replaced = base.metadata();
        }
        return job.commit(md, base == null || job.replaced != null ? List.of() : base.files(), results, true);
    }

    /**
     * Whether a path holds nothing but what sfclayer writes (data directories, an empty or
     * version-less commit log): the leftovers of a killed first write, which is no layer yet.
     */
    static boolean onlyLeftovers(FileSystem fs, Path path) throws IOException {
        if (!fs.getFileStatus(path).isDirectory()) {
            return false;
        }
        for (FileStatus st : fs.listStatus(path)) {
            String name = st.getPath().getName();
            if (!st.isDirectory() || !(name.startsWith(VersionLog.DATA_DIR_PREFIX) || name.equals(VersionLog.LOG_DIR))) {
                return false;
            }
        }
        return true;
    }

    /**
     * An append's value columns must be the layer's (same names and types, in any order); returns
     * them in the layer's order, or fails naming the column that differs.
     */
    static List<String> checkAppendSchema(LayerMetadata md, StructType values, boolean spaceTime, String layer) {
        if (spaceTime != md.isSpaceTime()) {
            throw new SfcLayerException.InvalidInput("cannot append to layer " + layer + ": it is "
                + (md.isSpaceTime() ? "space-time (keys col, row, time)" : "spatial (keys col, row)")
                + " but the DataFrame " + (spaceTime ? "has" : "has no") + " time column");
        }
        StructType layerValues = (StructType) DataType.fromJson(md.valueSchemaJson);
        List<String> out = new ArrayList<>();
        for (StructField f : layerValues.fields()) {
            if (!Arrays.asList(values.fieldNames()).contains(f.name())) {
                throw new SfcLayerException.InvalidInput("cannot append to layer " + layer + ": the DataFrame has no"
                    + " value column '" + f.name() + "' (" + f.dataType().simpleString() + ") that the layer has");
            }
            StructField g = values.apply(f.name());
            // A nullable column may feed a NOT NULL one (Spark marks most computed columns nullable): its
            // values are checked as they are written, and a null fails the write naming column and key.
            if (!g.dataType().sameType(f.dataType())) {
                throw new SfcLayerException.InvalidInput("cannot append to layer " + layer + ": value column '"
                    + f.name() + "' is " + g.dataType().simpleString() + (g.nullable() ? " (nullable)" : "")
                    + " in the DataFrame but " + f.dataType().simpleString() + (f.nullable() ? "" : " (not null)")
                    + " in the layer");
            }
            out.add(f.name());
        }
        for (StructField g : values.fields()) {
            if (!out.contains(g.name())) {
                throw new SfcLayerException.InvalidInput("cannot append to layer " + layer + ": value column '"
                    + g.name() + "' is not in the layer (its value columns are " + out + ")");
            }
        }
        return out;
    }

    /** Narrow int types for keys are widened; wrong types are refused by name. */
    private static Dataset<Row> normaliseKeys(Dataset<Row> data) {
        StructType schema = data.schema();
        List<String> names = Arrays.asList(schema.fieldNames());
        for (String k : List.of("col", "row")) {
            if (!names.contains(k)) {
                throw new SfcLayerException.InvalidInput("the DataFrame has no key column '" + k
                    + "' (an int); its columns are " + names);
            }
            DataType t = schema.apply(k).dataType();
            if (t.equals(DataTypes.ByteType) || t.equals(DataTypes.ShortType)) {
                data = data.withColumn(k, data.col(k).cast(DataTypes.IntegerType));
            } else if (!t.equals(DataTypes.IntegerType)) {
                throw new SfcLayerException.InvalidInput("key column '" + k + "' must be an int, not "
                    + t.simpleString() + (t.equals(DataTypes.LongType) ? " (cast it to int)" : ""));
            }
        }
        if (names.contains("time")) {
            DataType t = schema.apply("time").dataType();
            if (t.equals(DataTypes.DateType)) {
                data = data.withColumn("time", data.col("time").cast(DataTypes.TimestampType));
            } else if (!t.equals(DataTypes.TimestampType)) {
                throw new SfcLayerException.InvalidInput("key column 'time' must be a timestamp, not " + t.simpleString());
            }
        }
        return data;
    }

    static KeyIndex buildKeyIndex(Dataset<Row> data, LayerWriteOptions opts, boolean spaceTime) {
        if (spaceTime && !opts.keyIndex.equals("z")) {
            throw new SfcLayerException.InvalidArgument("option keyIndex: " + opts.keyIndex
                + " has no space-time form; space-time layers use z (Z3)");
        }
        KeyBounds bounds = opts.bounds;
        Long tMin = opts.timeMin;
        Long tMax = opts.timeMax;
        if (bounds == null || (spaceTime && tMin == null)) {
            // The one small job a write without bounds costs: a single narrow stage (no shuffle)
            // folding each partition's key extremes, then merging them on the driver.
            long[] ext = keyExtremes(data, spaceTime);
            if (ext[6] == 0) {
                throw new SfcLayerException.InvalidInput("cannot compute the key bounds of an empty DataFrame"
                    + " (or one whose keys are all null): give the bounds option"
                    + (spaceTime ? " and timeBounds" : ""));
            }
            if (bounds == null) {
                bounds = new KeyBounds((int) ext[0], (int) ext[2], (int) ext[1], (int) ext[3]);
            }
            if (spaceTime && tMin == null) {
                tMin = ext[4];
                tMax = ext[5];
            }
        }
        switch (opts.keyIndex) {
            case "hilbert":
                return KeyIndex.hilbert(bounds);
            case "rowmajor":
                return KeyIndex.rowMajor(bounds);
            default:
                return spaceTime ? KeyIndex.z3(bounds, new TimeBounds(tMin, tMax, opts.timeResolutionMicros))
                    : KeyIndex.z(bounds);
        }
    }

    /** {colMin, colMax, rowMin, rowMax, timeMin, timeMax, rows with complete keys}. */
    private static long[] keyExtremes(Dataset<Row> data, boolean spaceTime) {
        StructType schema = data.schema();
        int c = schema.fieldIndex("col");
        int r = schema.fieldIndex("row");
        int t = spaceTime ? schema.fieldIndex("time") : -1;
        return data.queryExecution().toRdd().toJavaRDD().mapPartitions((Iterator<InternalRow> it) -> {
            long[] a = {Long.MAX_VALUE, Long.MIN_VALUE, Long.MAX_VALUE, Long.MIN_VALUE, Long.MAX_VALUE, Long.MIN_VALUE, 0};
            while (it.hasNext()) {
                InternalRow row = it.next();
                if (row.isNullAt(c) || row.isNullAt(r) || (t >= 0 && row.isNullAt(t))) {
                    continue; // refused with a clear error by the write itself
                }
                a[0] = Math.min(a[0], row.getInt(c));
                a[1] = Math.max(a[1], row.getInt(c));
                a[2] = Math.min(a[2], row.getInt(r));
                a[3] = Math.max(a[3], row.getInt(r));
                if (t >= 0) {
                    a[4] = Math.min(a[4], row.getLong(t));
                    a[5] = Math.max(a[5], row.getLong(t));
                }
                a[6]++;
            }
            return List.of(a).iterator();
        }).reduce((x, y) -> new long[] {Math.min(x[0], y[0]), Math.max(x[1], y[1]), Math.min(x[2], y[2]),
            Math.max(x[3], y[3]), Math.min(x[4], y[4]), Math.max(x[5], y[5]), x[6] + y[6]});
    }

    /** Map side: each input row becomes (SFC index, encoded tile record). */
    static final class Encode implements PairFlatMapFunction<Iterator<InternalRow>, Long, byte[]> {
        private static final long serialVersionUID = 1L;
        private final KeyIndex keyIndex;
        private final TileSchema tileSchema;
        private final int colOrd;
        private final int rowOrd;
        private final int timeOrd;
        private final int[] valueOrds;

        Encode(KeyIndex keyIndex, TileSchema tileSchema, StructType input, List<String> valueNames) {
            this.keyIndex = keyIndex;
            this.tileSchema = tileSchema;
            this.colOrd = input.fieldIndex("col");
            this.rowOrd = input.fieldIndex("row");
            this.timeOrd = keyIndex.isSpaceTime() ? input.fieldIndex("time") : -1;
            this.valueOrds = valueNames.stream().mapToInt(input::fieldIndex).toArray();
        }

        /**
         * Where an input error is reported instead of failing the task (UpdateJob.refusals): the task stops
         * there and the driver fails the write with it. Null: thrown.
         */
        org.apache.spark.util.CollectionAccumulator<String> refusals;

        Encode reportingTo(UpdateJob job) {
            this.refusals = job.refusals;
            return this;
        }

        @Override
        public Iterator<Tuple2<Long, byte[]>> call(Iterator<InternalRow> it) {
            TileWriter writer = newWriter();
            return new Iterator<Tuple2<Long, byte[]>>() {
                private Tuple2<Long, byte[]> ahead;
                private boolean done;

                @Override
                public boolean hasNext() {
                    if (ahead == null && !done) {
                        if (!it.hasNext()) {
                            done = true;
                        } else {
                            try {
                                ahead = encode(it.next());
                            } catch (SfcLayerException.InvalidInput e) {
                                if (refusals == null) {
                                    throw e;
                                }
                                refusals.add(e.reason());
                                done = true;
                            }
                        }
                    }
                    return ahead != null;
                }

                @Override
                public Tuple2<Long, byte[]> next() {
                    if (!hasNext()) {
                        throw new java.util.NoSuchElementException();
                    }
                    Tuple2<Long, byte[]> r = ahead;
                    ahead = null;
                    return r;
                }

                private Tuple2<Long, byte[]> encode(InternalRow row) {
                    return Encode.this.encode(writer, row);
                }
            };
        }

        /** The writer {@link #encode} takes (one per task: it reuses its buffers). */
        TileWriter newWriter() {
            return new TileWriter(tileSchema, colOrd, rowOrd, timeOrd, valueOrds);
        }

        /** One row as (SFC index, encoded tile record); InvalidInput naming the key when the row cannot be a tile. */
        Tuple2<Long, byte[]> encode(TileWriter writer, InternalRow row) {
            if (row.isNullAt(colOrd) || row.isNullAt(rowOrd) || (timeOrd >= 0 && row.isNullAt(timeOrd))) {
                throw new SfcLayerException.InvalidInput("null key: a row has a null "
                    + (row.isNullAt(colOrd) ? "col" : row.isNullAt(rowOrd) ? "row" : "time")
                    + "; every tile needs a complete key");
            }
            int col = row.getInt(colOrd);
            int r = row.getInt(rowOrd);
            long index = timeOrd >= 0 ? keyIndex.index(col, r, row.getLong(timeOrd)) : keyIndex.index(col, r);
            try {
                return new Tuple2<>(index, writer.encodeRecord(row));
            } catch (SfcLayerException.InvalidInput e) {
                throw new SfcLayerException.InvalidInput(e.reason() + " (the tile at key "
                    + KeyIndex.describeKey(col, r, timeOrd >= 0, timeOrd >= 0 ? row.getLong(timeOrd) : 0)
                    + "); nothing was written");
            }
        }
    }
}
