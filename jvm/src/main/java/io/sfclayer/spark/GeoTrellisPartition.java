package io.sfclayer.spark;

import org.apache.spark.sql.connector.read.InputPartition;

/** One GeoTrellis MapFile directory and the index ranges to read in it ({@code lo, hi} pairs, sorted). */
final class GeoTrellisPartition implements InputPartition {
    private static final long serialVersionUID = 1L;
    final String dir;
    final long[] ranges;

    GeoTrellisPartition(String dir, long[] ranges) {
        this.dir = dir;
        this.ranges = ranges;
    }
}
