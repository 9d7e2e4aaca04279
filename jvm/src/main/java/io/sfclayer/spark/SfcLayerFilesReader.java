package io.sfclayer.spark;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.PartitionReader;

import java.io.IOException;

/**
 * Reads the files of a {@link SfcLayerFilesPartition} in turn, each with its own
 * {@link SfcLayerPartitionReader} (opened when the one before is done); the task's metrics are the
 * sum of its files'.
 */
final class SfcLayerFilesReader implements PartitionReader<InternalRow> {
    private final SfcLayerPartitionReaderFactory factory;
    private final SfcLayerInputPartition[] files;
    private int next;
    private SfcLayerPartitionReader current;
    /** The metrics of the files already read and closed. */
    private long[] done;

    SfcLayerFilesReader(SfcLayerPartitionReaderFactory factory, SfcLayerFilesPartition partition) {
        this.factory = factory;
        this.files = partition.files;
    }

    @Override
    public boolean next() throws IOException {
        while (true) {
            if (current != null) {
                if (current.next()) {
                    return true;
                }
                closeCurrent();
            }
            if (next == files.length) {
                return false;
            }
            current = factory.open(files[next++]);
        }
    }

    private void closeCurrent() throws IOException {
        done = add(done, current.currentMetricsValues());
        SfcLayerPartitionReader r = current;
        current = null;
        r.close();
    }

    private static long[] add(long[] sum, CustomTaskMetric[] m) {
        long[] out = sum == null ? new long[m.length] : sum;
        for (int i = 0; i < m.length; i++) {
            out[i] += m[i].value();
        }
        return out;
    }

    @Override
    public InternalRow get() {
        return current.get();
    }

    @Override
    public CustomTaskMetric[] currentMetricsValues() {
        long[] sum = done == null ? null : done.clone();
        if (current != null) {
            sum = add(sum, current.currentMetricsValues());
        }
        return SfcLayerMetrics.task(sum == null ? new long[SfcLayerMetrics.NAMES.length] : sum);
    }

    @Override
    public void close() throws IOException {
        if (current != null) {
            closeCurrent();
        }
    }
}
