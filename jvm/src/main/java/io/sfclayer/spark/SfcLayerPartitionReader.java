package io.sfclayer.spark;

import io.sfclayer.SfcLayerException;
import io.sfclayer.curve.QueryBox;
import io.sfclayer.format.DataFileReader;
import io.sfclayer.format.ObjectStores;
import io.sfclayer.format.TileCursor;
import io.sfclayer.format.ValueCompression;
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
    private final DataFileReader file;
    private final RangeTraversal traversal;
    private final TileCursor cursor;
    private final ValueCompression compression;
    private final TileGrid grid;
    private final UTF8String fileName;
    private final Object[] values;
    private final GenericInternalRow row;
    private boolean inGroup;
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
        this.fileName = UTF8String.fromString(partition.file);
        this.values = new Object[factory.outputWidth];
        this.row = new GenericInternalRow(values);
        Path path = new Path(partition.file);
        DataFileReader.DamageSink sink = factory.onCorrupt.any() ? this::damaged : null;
        this.file = new DataFileReader(factory.conf.get(), path, partition.entry, sink,
            DataFileReader.indexFirst(factory.conf.get(), path, partition.entry, sink), ObjectStores.Access.SEQUENTIAL);
        this.file.scanWithoutIndex(); // a small file on an object store: one GET, not HEAD + GET of its index first
        this.traversal = new RangeTraversal(file, partition.ranges);
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
                case INDEX: values[i] = file.index(); break;
                case FILE: values[i] = fileName; break;
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
        return new SfcLayerException.CorruptLayer("data file " + file.path() + ", group at index " + file.index()
            + ": " + SfcLayerException.reason(e), e);
    }

    @Override
    public InternalRow get() {
        return row;
    }

    @Override
    public CustomTaskMetric[] currentMetricsValues() {
        return SfcLayerMetrics.task(1, traversal.rangeCount(), traversal.seeks(), file.groupsRead(), recordsRead,
            recordsReturned, recordsRead - recordsReturned, file.bytesRead(), corruptSkipped);
    }

    @Override
    public void close() throws IOException {
        file.close();
    }
}
