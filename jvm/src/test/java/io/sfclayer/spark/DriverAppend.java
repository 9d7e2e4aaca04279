package io.sfclayer.spark;

import io.sfclayer.codec.TileSchema;
import io.sfclayer.commit.VersionLog;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.layer.Layer;
import io.sfclayer.layer.LayerWriteOptions;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import scala.Tuple2;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * An append of (col, row, v) tiles held in memory, through the production code of a small local append
 * below its DataFrame (test sources; the race harness's Spark-free operations, issue 35):
 * {@link SfcLayerWrite}'s append branch encodes the rows ({@link SfcLayerWrite.Encode}), sorts them as
 * {@link LocalAppend#records} does and hands them to {@link SfcLayerUpdate#appendSorted}, which writes and
 * commits on the driver (delta files, or copy-on-write merges) exactly as for a DataFrame of local rows;
 * only Spark's planning of that DataFrame (tens of ms a write) is skipped.
 */
public final class DriverAppend {
    private DriverAppend() {
    }

    private static final StructType SCHEMA = new StructType()
        .add("col", DataTypes.IntegerType, false)
        .add("row", DataTypes.IntegerType, false)
        .add("v", DataTypes.LongType, false);

    /** Appends {@code tiles} (each {col, row, v}) to the layer at {@code path} with write options {@code options}. */
    public static LayerMetadata run(SparkSession spark, String path, List<long[]> tiles, Map<String, String> options)
            throws IOException {
        LayerWriteOptions opts = LayerWriteOptions.parse(options);
        Configuration conf = HadoopConfs.forOptions(spark, options);
        VersionLog log = new VersionLog(conf, new Path(path));
        Layer base = Layer.open(conf, path);
        LayerMetadata md0 = base.metadata();
        opts.checkAppendTo(md0, log.layerPath().toString());
        SfcLayerWrite.checkAppendSchema(md0, new StructType().add(SCHEMA.apply("v")), false, log.layerPath().toString());
        SfcLayerWrite.Encode encode = new SfcLayerWrite.Encode(md0.keyIndex, TileSchema.fromJson(md0.valueSchemaJson,
            false), SCHEMA, List.of("v"));
        UpdateJob job = new UpdateJob(spark, log, conf);
        encode.reportingTo(job);
        job.maxGroupBytes = opts.maxGroupBytes;
        job.txn = opts.txn;
        job.deltas = opts.deltas.withEstimatedBytes(24L * tiles.size()); // Spark's estimate of such a local relation
        List<InternalRow> rows = new ArrayList<>();
        for (long[] t : tiles) {
            rows.add(new GenericInternalRow(new Object[] {(int) t[0], (int) t[1], t[2]}));
        }
        List<Tuple2<Long, byte[]>> sorted = new ArrayList<>();
        try {
            for (Iterator<Tuple2<Long, byte[]>> it = encode.call(rows.iterator()); it.hasNext(); ) {
                sorted.add(it.next());
            }
            job.throwIfRefused();
        } catch (RuntimeException | Error e) {
            job.discard();
            throw e;
        }
        sorted.sort((x, y) -> Long.compare(x._1(), y._1()));
        int partitions = opts.partitions > 0 ? opts.partitions : 1;
        return SfcLayerUpdate.appendSorted(job, base, sorted, partitions, opts.onExisting);
    }
}
