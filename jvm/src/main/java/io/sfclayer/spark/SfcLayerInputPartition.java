package io.sfclayer.spark;

import org.apache.spark.sql.connector.read.InputPartition;

/** One data file of a scan and the query's SFC ranges clipped to it, as {@code lo, hi} pairs. */
final class SfcLayerInputPartition implements InputPartition {
    private static final long serialVersionUID = 1L;

    private static final String[] NOWHERE = new String[0];

    final String file;
    /** What the version document says about the file, for the reader's checks. */
    final io.sfclayer.format.DataFileEntry entry;
    final long[] ranges;
    /** Hosts holding the file's block (one block: files never cross one), for Spark's locality. */
    private final String[] hosts;

    SfcLayerInputPartition(String file, io.sfclayer.format.DataFileEntry entry, long[] ranges, String[] hosts) {
        this.file = file;
        this.entry = entry;
        this.ranges = ranges;
        this.hosts = hosts == null ? NOWHERE : hosts;
    }

    @Override
    public String[] preferredLocations() {
        return hosts;
    }

    @Override
    public String toString() {
        return file + " (" + ranges.length / 2 + " ranges)";
    }
}
