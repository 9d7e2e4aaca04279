package io.sfclayer.spark;

import org.apache.spark.sql.connector.read.InputPartition;

/**
 * One data file of a scan and the query's SFC ranges clipped to it, as {@code lo, hi} pairs; in a
 * version with delta files (format 7), also the deltas meeting those ranges, merged with it (and a
 * range no base file covers has a partition of deltas alone: {@code file} null).
 */
final class SfcLayerInputPartition implements InputPartition {
    private static final long serialVersionUID = 1L;

    private static final String[] NOWHERE = new String[0];

    /** The base file, or null for deltas alone. */
    final String file;
    /** What the version document says about the file, for the reader's checks. */
    final io.sfclayer.format.DataFileEntry entry;
    final long[] ranges;
    /** The delta files to merge, in list order (oldest first), and their document entries; empty: none. */
    final String[] deltaFiles;
    final io.sfclayer.format.DataFileEntry[] deltaEntries;
    /** Hosts holding the file's block (one block: files never cross one), for Spark's locality. */
    private final String[] hosts;

    SfcLayerInputPartition(String file, io.sfclayer.format.DataFileEntry entry, long[] ranges, String[] hosts) {
        this(file, entry, ranges, hosts, NOWHERE, new io.sfclayer.format.DataFileEntry[0]);
    }

    SfcLayerInputPartition(String file, io.sfclayer.format.DataFileEntry entry, long[] ranges, String[] hosts,
                           String[] deltaFiles, io.sfclayer.format.DataFileEntry[] deltaEntries) {
        this.deltaFiles = deltaFiles;
        this.deltaEntries = deltaEntries;
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
        return (file == null ? "no base file" : file) + " (" + ranges.length / 2 + " ranges"
            + (deltaFiles.length == 0 ? "" : ", " + deltaFiles.length + " deltas") + ")";
    }
}
