package io.sfclayer.spark;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.plans.logical.LocalRelation;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import scala.Tuple2;
import scala.jdk.javaapi.CollectionConverters;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

/**
 * The records of a small local append, encoded on the driver without a Spark job (issue 38): a
 * DataFrame whose optimized plan is a local relation (rows held by the driver: Spark Connect's
 * {@code createDataFrame} of local data, {@code spark.createDataFrame(List, schema)} in Java/Scala)
 * of at most {@value #MAX_ROWS} rows and {@value #MAX_BYTES} encoded bytes. A Spark job costs ~140 ms
 * here, a one-tile delta append's commit a few ms. Classic PySpark's {@code createDataFrame(list)} is
 * a parallelized RDD, not a local relation: reading it takes a job, so it takes the small-append path
 * (one job, no shuffle), when Spark's estimate of its size ({@link #estimatedBytes}) is small.
 */
final class LocalAppend {
    private LocalAppend() {
    }

    /** At most this many rows are encoded on the driver. */
    static final int MAX_ROWS = 10_000;
    /** At most this many encoded bytes (more: the Spark path, which spreads the work). */
    static final long MAX_BYTES = 64L << 20;

    /**
     * The input's (index, record) pairs sorted by index, or null when its plan is not a small local
     * relation. Input errors are reported as the tasks' are ({@link UpdateJob#throwIfRefused}), the
     * write's data directory removed.
     */
    static List<Tuple2<Long, byte[]>> records(Dataset<Row> data, SfcLayerWrite.Encode encode, UpdateJob job) {
        LogicalPlan plan;
        try {
            plan = data.queryExecution().optimizedPlan();
        } catch (RuntimeException e) {
            return null;
        }
        if (!(plan instanceof LocalRelation) || ((LocalRelation) plan).isStreaming()) {
            return null;
        }
        LocalRelation local = (LocalRelation) plan;
        if (local.data().size() > MAX_ROWS || local.output().size() != data.schema().size()) {
            return null;
        }
        Iterator<InternalRow> rows = CollectionConverters.asJava(local.data()).iterator();
        List<Tuple2<Long, byte[]>> out = new ArrayList<>();
        long bytes = 0;
        try {
            for (Iterator<Tuple2<Long, byte[]>> it = encode.call(rows); it.hasNext(); ) {
                Tuple2<Long, byte[]> r = it.next();
                bytes += r._2().length;
                if (bytes > MAX_BYTES) {
                    return null;
                }
                out.add(r);
            }
            job.throwIfRefused();
        } catch (RuntimeException | Error e) {
            job.discard(); // the input refused (a key out of bounds, ...): nothing was written
            throw e;
        }
        out.sort((x, y) -> Long.compare(x._1(), y._1()));
        return out;
    }

    /** Spark's estimate of the input's size in bytes (its optimizer's statistics; huge when unknown). */
    static long estimatedBytes(Dataset<Row> data) {
        try {
            scala.math.BigInt b = data.queryExecution().optimizedPlan().stats().sizeInBytes();
            return b.isValidLong() ? b.longValue() : Long.MAX_VALUE;
        } catch (RuntimeException e) {
            return Long.MAX_VALUE; // no estimate: the shuffled path
        }
    }
}
