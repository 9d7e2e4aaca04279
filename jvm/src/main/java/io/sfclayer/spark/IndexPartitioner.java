package io.sfclayer.spark;

import io.sfclayer.layer.PartitionBreaks;
import org.apache.spark.Partitioner;

import java.util.Arrays;

/** Sends a record to the partition whose index span (from {@link PartitionBreaks}) holds its SFC index. */
final class IndexPartitioner extends Partitioner {
    private static final long serialVersionUID = 1L;
    private final long[] breaks;

    IndexPartitioner(long[] breaks) {
        this.breaks = breaks;
    }

    @Override
    public int numPartitions() {
        return breaks.length + 1;
    }

    @Override
    public int getPartition(Object key) {
        return PartitionBreaks.partitionOf(breaks, (Long) key);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof IndexPartitioner && Arrays.equals(breaks, ((IndexPartitioner) o).breaks);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(breaks);
    }
}
