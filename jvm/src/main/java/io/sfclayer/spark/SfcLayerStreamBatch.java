package io.sfclayer.spark;

import org.apache.spark.sql.connector.write.WriterCommitMessage;

/**
 * What one task of a micro-batch sends the driver: its tiles encoded as the layer's records (SFC index
 * and tile record), unsorted. The driver merges them into the layer in the batch's commit, without a
 * second Spark job ({@link SfcLayerStreamingWrite#commit}).
 */
final class SfcLayerStreamBatch implements WriterCommitMessage {
    private static final long serialVersionUID = 1L;
    final long[] indexes;
    final byte[][] records;

    SfcLayerStreamBatch(long[] indexes, byte[][] records) {
        this.indexes = indexes;
        this.records = records;
    }
}
