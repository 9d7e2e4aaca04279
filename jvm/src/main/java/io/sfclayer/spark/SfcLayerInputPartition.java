package io.sfclayer.spark;

import org.apache.spark.sql.connector.read.InputPartition;

/** One data file of a scan and the query's SFC ranges clipped to it, as {@code lo, hi} pairs. */
final class SfcLayerInputPartition implements InputPartition {
    private static final long serialVersionUID = 1L;

    final String file;
    final long[] ranges;

    SfcLayerInputPartition(String file, long[] ranges) {
        this.file = file;
        this.ranges = ranges;
    }

    @Override
    public String toString() {
        return file + " (" + ranges.length / 2 + " ranges)";
    }
}
