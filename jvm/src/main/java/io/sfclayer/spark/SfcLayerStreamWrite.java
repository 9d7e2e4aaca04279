package io.sfclayer.spark;

import io.sfclayer.SfcLayerException;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.connector.write.streaming.StreamingWrite;

/**
 * {@code df.writeStream.format("sfclayer")}: the DataSource V2 write of a streaming query, one commit
 * per micro-batch ({@link SfcLayerStreamingWrite}). Batch writes never come here: the table does not
 * declare {@code BATCH_WRITE}, so {@code df.write} takes the V1 fallback ({@link SfcLayerWrite} says why).
 */
final class SfcLayerStreamWrite implements WriteBuilder, Write {
    private final SfcLayerTable table;
    private final LogicalWriteInfo info;

    SfcLayerStreamWrite(SfcLayerTable table, LogicalWriteInfo info) {
        this.table = table;
        this.info = info;
    }

    @Override
    public Write build() {
        return this;
    }

    @Override
    public String description() {
        return "sfclayer streaming write to " + table.path();
    }

    @Override
    public StreamingWrite toStreaming() {
        return new SfcLayerStreamingWrite(table, info);
    }

    @Override
    public BatchWrite toBatch() {
        throw new SfcLayerException.InvalidArgument("sfclayer batch writes go through df.write...save(path),"
            + " not a DataSource V2 batch write");
    }
}
