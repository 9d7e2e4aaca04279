package io.sfclayer.spark;

import io.sfclayer.curve.QueryBox;
import io.sfclayer.format.DataFileListing;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.layer.Deltas;
import io.sfclayer.layer.Layer;
import io.sfclayer.layer.QueryPlan;
import io.sfclayer.layer.TileGrid;
import org.apache.hadoop.fs.BlockLocation;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.types.StructType;

import java.io.IOException;
import java.util.List;

/**
 * The batch of a planned {@link SfcLayerScan}: one input partition per selected data file, holding
 * that file's clipped ranges (and its block's hosts, as a locality hint) and the delta files (format 7)
 * to merge with it, and the reader factory.
 */
final class SfcLayerBatch implements Batch {
    private final Layer layer;
    private final StructType readSchema;
    private final List<QueryBox> boxes;
    private final List<SfcLayerScan.Part> selected;
    private final OnCorrupt onCorrupt;

    SfcLayerBatch(Layer layer, StructType readSchema, List<QueryBox> boxes, List<SfcLayerScan.Part> selected,
                  OnCorrupt onCorrupt) {
        this.onCorrupt = onCorrupt;
        this.layer = layer;
        this.readSchema = readSchema;
        this.boxes = boxes;
        this.selected = selected;
    }

    @Override
    public InputPartition[] planInputPartitions() {
        SfcLayerInputPartition[] out = new SfcLayerInputPartition[selected.size()];
        FileSystem fs = localityFileSystem(selected.size());
        long bytes = 0;
        Deltas deltas = layer.deltas();
        for (int i = 0; i < out.length; i++) {
            SfcLayerScan.Part part = selected.get(i);
            DataFileListing.Selection s = part.base;
            long[] pairs = QueryPlan.pairs(part.ranges);
            Path file = s == null ? null : new Path(s.path);
            io.sfclayer.format.DataFileEntry entry = s == null ? null : layer.entry(s.name);
            if (s != null) {
                bytes += entry == null ? SMALL_SCAN_BYTES + 1 : bytesToRead(entry, pairs);
            }
            String[] deltaFiles = new String[part.deltas.length];
            io.sfclayer.format.DataFileEntry[] deltaEntries = new io.sfclayer.format.DataFileEntry[part.deltas.length];
            for (int k = 0; k < deltaFiles.length; k++) {
                deltaFiles[k] = deltas.path(part.deltas[k]).toString();
                deltaEntries[k] = deltas.entry(part.deltas[k]);
                bytes += bytesToRead(deltaEntries[k], pairs);
            }
            Path located = file != null ? file : new Path(deltaFiles[0]);
            out[i] = new SfcLayerInputPartition(file == null ? null : file.toString(), entry, pairs,
                fs == null ? null : blockHosts(fs, located), deltaFiles, deltaEntries);
        }
        if (out.length > 1 && bytes <= smallScanBytes) {
            return new InputPartition[] {new SfcLayerFilesPartition(out)};
        }
        return out;
    }

    /**
     * A scan expected to read at most this many bytes in all is one task: reading them costs less
     * than a task per file would (~10 ms each here; bench/spark_path.py).
     */
    static final long SMALL_SCAN_BYTES = 4L << 20;

    private final long smallScanBytes = SMALL_SCAN_BYTES;

    /** The file's bytes in proportion to the part of its index span that the ranges {@code pairs} (clipped to it) cover. */
    static long bytesToRead(io.sfclayer.format.DataFileEntry entry, long[] pairs) {
        double span = (double) entry.lastIndex - entry.firstIndex + 1;
        double covered = 0;
        for (int i = 0; i + 1 < pairs.length; i += 2) {
            long lo = Math.max(pairs[i], entry.firstIndex);
            long hi = Math.min(pairs[i + 1], entry.lastIndex);
            covered += Math.max(0, (double) hi - lo + 1);
        }
        return (long) Math.ceil(entry.dataBytes * Math.min(1.0, covered / span));
    }

    /** Asking for block hosts costs one NameNode call per file: done for moderate scans only. */
    static final int MAX_FILES_FOR_LOCALITY = 2000;

    /** The filesystem to ask for block hosts, or null when locality is moot (local files) or too costly. */
    private FileSystem localityFileSystem(int files) {
        if (files == 0 || files > MAX_FILES_FOR_LOCALITY) {
            return null;
        }
        try {
            FileSystem fs = layer.path().getFileSystem(layer.conf());
            // object stores have no locality (S3A answers "localhost" for every block): none asked
            return "file".equals(fs.getScheme()) || io.sfclayer.format.ObjectStores.isObjectStore(fs) ? null : fs;
        } catch (IOException | UnsupportedOperationException e) {
            return null;
        }
    }

    /** Hosts of the data file's (single) block; none if they cannot be had: locality is only a hint. */
    private static String[] blockHosts(FileSystem fs, Path mapFile) {
        try {
            BlockLocation[] blocks = fs.getFileBlockLocations(new Path(mapFile, "data"), 0, 1);
            return blocks.length == 0 ? null : blocks[0].getHosts();
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
        LayerMetadata md = layer.metadata();
        return new SfcLayerPartitionReaderFactory(new SerializableConf(layer.conf()), md.valueSchemaJson,
            md.isSpaceTime(), md.compression, TileGrid.of(md), readSchema, boxes.toArray(new QueryBox[0]),
            onCorrupt);
    }
}
