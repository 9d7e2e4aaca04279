package io.sfclayer.spark;

import io.sfclayer.SfcLayerException;
import io.sfclayer.codec.TileCursor;
import io.sfclayer.curve.QueryBox;
import io.sfclayer.format.DataFileReader;
import io.sfclayer.format.ObjectStores;
import io.sfclayer.format.ValueCompression;
import io.sfclayer.layer.MergedGroups;
import io.sfclayer.layer.QueryPlan;
import io.sfclayer.layer.RangeTraversal;
import io.sfclayer.layer.TileGrid;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.unsafe.types.UTF8String;

import java.io.IOException;

import static io.sfclayer.spark.SfcLayerPartitionReaderFactory.COL;
import static io.sfclayer.spark.SfcLayerPartitionReaderFactory.FILE;
import static io.sfclayer.spark.SfcLayerPartitionReaderFactory.INDEX;
import static io.sfclayer.spark.SfcLayerPartitionReaderFactory.ROW;
import static io.sfclayer.spark.SfcLayerPartitionReaderFactory.TIME;
import static io.sfclayer.spark.SfcLayerPartitionReaderFactory.XMAX;
import static io.sfclayer.spark.SfcLayerPartitionReaderFactory.XMIN;
import static io.sfclayer.spark.SfcLayerPartitionReaderFactory.YMAX;
import static io.sfclayer.spark.SfcLayerPartitionReaderFactory.YMIN;

/**
 * Reads one data file of a scan (the design's executor side): traverses the file's groups in step
 * with the query's ranges ({@link RangeTraversal}), decompresses each group and walks its records,
 * keeping those whose key lies in a query box (refinement: index collisions, curve detours and
 * capped ranges bring in others) and decoding only the value columns the query needs.
 */
final class SfcLayerPartitionReader implements PartitionReader<InternalRow> {
    private final SfcLayerPartitionReaderFactory f;
    private final QueryBox[] boxes;
    private final int[] sources;
    /** The files read: the base file (when there is one), then the deltas to merge, in list order. */
    private final DataFileReader[] files;
    private final UTF8String[] fileNames;
    /** The one file's traversal (no deltas: the path of every layer before format 7), else null. */
    private final DataFileReader file;
    private final RangeTraversal traversal;
    /** The base file and its deltas merged (format 7), else null. */
    private final MergedGroups merged;
    private final TileCursor cursor;
    private final ValueCompression compression;
    private final TileGrid grid;
    private final Object[] values;
    private final GenericInternalRow row;
    private boolean inGroup;
    /** The current record's position in its group (a merged group's records come from several files). */
    private int recordInGroup;
    private final int ranges;
    private long corruptSkipped;
    private long recordsRead;
    private long recordsReturned;

    SfcLayerPartitionReader(SfcLayerPartitionReaderFactory factory, SfcLayerInputPartition partition) throws IOException {
        this.f = factory;
        this.boxes = factory.boxes;
        this.sources = factory.sources;
        this.compression = factory.compression;
        this.grid = factory.grid;
        this.cursor = new TileCursor(factory.tileSchema);
        this.values = new Object[factory.outputWidth];
        this.row = new GenericInternalRow(values);
        this.ranges = partition.ranges.length / 2;
        DataFileReader.DamageSink sink = factory.onCorrupt.any() ? this::damaged : null;
        int base = partition.file == null ? 0 : 1;
        int n = base + partition.deltaFiles.length;
        this.files = new DataFileReader[n];
        this.fileNames = new UTF8String[n];
        try {
            for (int s = 0; s < n; s++) {
                String name = s < base ? partition.file : partition.deltaFiles[s - base];
                io.sfclayer.format.DataFileEntry entry = s < base ? partition.entry : partition.deltaEntries[s - base];
                fileNames[s] = UTF8String.fromString(name);
                files[s] = open(new Path(name), entry, sink);
            }
        } catch (IOException | RuntimeException e) {
            close();
            throw e;
        }
        if (n == 1 && base == 1) {
            this.file = files[0];
            this.traversal = new RangeTraversal(file, partition.ranges);
            this.merged = null;
        } else {
            this.file = null;
            this.traversal = null;
            this.merged = new MergedGroups(files, partition.ranges, compression, factory.tileSchema);
        }
    }

    private DataFileReader open(Path path, io.sfclayer.format.DataFileEntry entry, DataFileReader.DamageSink sink)
            throws IOException {
        DataFileReader r = new DataFileReader(f.conf.get(), path, entry, sink,
            DataFileReader.indexFirst(f.conf.get(), path, entry, sink), ObjectStores.Access.SEQUENTIAL);
        r.scanWithoutIndex(); // a small file on an object store: one GET, not HEAD + GET of its index first
        return r;
    }

    @Override
    public boolean next() throws IOException {
        while (true) {
            if (inGroup) {
                boolean more;
                try {
                    more = cursor.next();
                } catch (SfcLayerException.CorruptLayer e) {
                    throw corrupt(e);
                }
                if (more) {
                    recordInGroup++;
                    recordsRead++;
                    int col = cursor.col(), r = cursor.row();
                    long time = cursor.timeMicros();
                    if (!inBoxes(col, r, time)) {
                        continue;
                    }
                    fill(col, r, time);
                    recordsReturned++;
                    return true;
                }
                inGroup = false;
            }
            recordInGroup = -1;
            if (merged != null) {
                if (!merged.next()) {
                    return false;
                }
                cursor.reset(merged.bytes(), merged.offset(), merged.length()); // decompressed, merged by key
                inGroup = true;
                continue;
            }
            if (!traversal.next()) {
                return false;
            }
            if (compression == ValueCompression.NONE) {
                cursor.reset(file.bytes(), file.offset(), file.length());
            } else {
                byte[] group;
                try {
                    group = compression.decompress(file.bytes(), file.offset(), file.length());
                } catch (SfcLayerException.CorruptLayer e) {
                    throw corrupt(e);
                }
                cursor.reset(group, 0, group.length);
            }
            inGroup = true;
        }
    }

    /** onCorrupt=skip (or Spark's ignore switches): count what is skipped; fail on what is not to be skipped. */
    private void damaged(DataFileReader.Damage d) {
        if (d.missing ? !f.onCorrupt.skipMissing : !f.onCorrupt.skipCorrupt) {
            throw new SfcLayerException.CorruptLayer(d.what + ". " + DataFileReader.advice(
                new Path(d.file).getParent().getParent().toString()));
        }
        corruptSkipped += d.records;
    }

    private boolean inBoxes(int col, int r, long time) {
        return QueryPlan.anyContains(boxes, col, r, time);
    }

    private void fill(int col, int r, long time) {
        for (int i = 0; i < sources.length; i++) {
            switch (sources[i]) {
                case COL: values[i] = col; break;
                case ROW: values[i] = r; break;
                case TIME: values[i] = time; break;
                case XMIN: values[i] = grid.xmin(col); break;
                case YMIN: values[i] = grid.ymin(r); break;
                case XMAX: values[i] = grid.xmax(col); break;
                case YMAX: values[i] = grid.ymax(r); break;
                case INDEX: values[i] = merged != null ? merged.index() : file.index(); break;
                case FILE: values[i] = fileNames[merged != null ? merged.source(recordInGroup) : 0]; break;
                default: break; // a value column, below
            }
        }
        if (f.anyValue) {
            try {
                cursor.readValues(values, f.valueTargets);
            } catch (SfcLayerException.CorruptLayer e) {
                throw corrupt(e);
            }
        }
    }

    private SfcLayerException.CorruptLayer corrupt(SfcLayerException.CorruptLayer e) {
        if (merged != null) {
            return new SfcLayerException.CorruptLayer("data file " + files[merged.source(Math.max(0, recordInGroup))].path()
                + ", group at index " + merged.index() + ": " + SfcLayerException.reason(e), e);
        }
        return new SfcLayerException.CorruptLayer("data file " + file.path() + ", group at index " + file.index()
            + ": " + SfcLayerException.reason(e), e);
    }

    @Override
    public InternalRow get() {
        return row;
    }

    @Override
    public CustomTaskMetric[] currentMetricsValues() {
        if (merged == null) {
            return SfcLayerMetrics.task(1, traversal.rangeCount(), traversal.seeks(), file.groupsRead(), recordsRead,
                recordsReturned, recordsRead - recordsReturned, file.bytesRead(), corruptSkipped);
        }
        long groups = 0, bytes = 0;
        for (DataFileReader r : files) {
            groups += r.groupsRead();
            bytes += r.bytesRead();
        }
        return SfcLayerMetrics.task(files.length, ranges, merged.seeks(), groups, recordsRead, recordsReturned,
            recordsRead - recordsReturned, bytes, corruptSkipped);
    }

    @Override
    public void close() throws IOException {
        IOException first = null;
        for (DataFileReader r : files) {
            if (r != null) {
                try {
                    r.close();
                } catch (IOException e) {
                    first = first == null ? e : first;
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }
}
