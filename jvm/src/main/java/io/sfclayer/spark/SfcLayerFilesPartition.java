package io.sfclayer.spark;

import org.apache.spark.sql.connector.read.InputPartition;

/**
 * Several data files of a small scan read by one task, one after the other: a task costs more
 * (~10 ms of scheduling, serialisation and start-up here) than reading a few small files, so a scan
 * whose selected files are few and small is planned as one such partition (issue 23).
 */
final class SfcLayerFilesPartition implements InputPartition {
    private static final long serialVersionUID = 1L;

    final SfcLayerInputPartition[] files;

    SfcLayerFilesPartition(SfcLayerInputPartition[] files) {
        this.files = files;
    }

    @Override
    public String[] preferredLocations() {
        return files.length == 0 ? new String[0] : files[0].preferredLocations();
    }

    @Override
    public String toString() {
        return files.length + " files: " + java.util.Arrays.toString(files);
    }
}
