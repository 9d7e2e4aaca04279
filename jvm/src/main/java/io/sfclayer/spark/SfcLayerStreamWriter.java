package io.sfclayer.spark;

import io.sfclayer.SfcLayerException;
import io.sfclayer.codec.TileWriter;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.connector.write.streaming.StreamingDataWriterFactory;
import scala.Tuple2;

import java.util.Arrays;

/**
 * A micro-batch's task: encodes its rows as the layer's records and hands them to the driver in its
 * commit message ({@link SfcLayerStreamBatch}); it writes no file, so an aborted or retried task leaves
 * nothing behind. A task holding more than {@code maxTaskBytes} of records fails, naming the limit:
 * micro-batches are meant to be small (bound them with the source's maxFilesPerTrigger,
 * maxOffsetsPerTrigger or rowsPerSecond; a large backfill is a batch write).
 */
final class SfcLayerStreamWriter implements DataWriter<InternalRow> {
    /** Creates each task's writer (serialised to the executors with the batch's encoding). */
    static final class Factory implements StreamingDataWriterFactory {
        private static final long serialVersionUID = 1L;
        private final SfcLayerWrite.Encode encode;
        private final long maxTaskBytes;
        private final String layer;

        Factory(SfcLayerWrite.Encode encode, long maxTaskBytes, String layer) {
            this.encode = encode;
            this.maxTaskBytes = maxTaskBytes;
            this.layer = layer;
        }

        @Override
        public DataWriter<InternalRow> createWriter(int partitionId, long taskId, long epochId) {
            return new SfcLayerStreamWriter(encode, maxTaskBytes, layer, epochId);
        }
    }

    private final SfcLayerWrite.Encode encode;
    private final TileWriter writer;
    private final long maxTaskBytes;
    private final String layer;
    private final long epochId;
    private long[] indexes = new long[256];
    private byte[][] records = new byte[256][];
    private int n;
    private long bytes;

    private SfcLayerStreamWriter(SfcLayerWrite.Encode encode, long maxTaskBytes, String layer, long epochId) {
        this.encode = encode;
        this.writer = encode.newWriter();
        this.maxTaskBytes = maxTaskBytes;
        this.layer = layer;
        this.epochId = epochId;
    }

    @Override
    public void write(InternalRow row) {
        Tuple2<Long, byte[]> r = encode.encode(writer, row);
        if (n == indexes.length) {
            indexes = Arrays.copyOf(indexes, 2 * n);
            records = Arrays.copyOf(records, 2 * n);
        }
        indexes[n] = r._1();
        records[n++] = r._2();
        bytes += r._2().length + 16L;
        if (bytes > maxTaskBytes) {
            throw new SfcLayerException.InvalidInput("micro-batch " + epochId + " to layer " + layer + " holds more than "
                + (maxTaskBytes >> 20) + " MiB of tiles in one task (option maxBatchBytes): bound the batches with the"
                + " source's maxFilesPerTrigger, maxOffsetsPerTrigger or rowsPerSecond, or write a backfill as a batch");
        }
    }

    @Override
    public WriterCommitMessage commit() {
        return new SfcLayerStreamBatch(Arrays.copyOf(indexes, n), Arrays.copyOf(records, n));
    }

    @Override
    public void abort() {
        n = 0; // nothing was written anywhere
    }

    @Override
    public void close() {
        indexes = null;
        records = null;
    }
}
