package io.sfclayer.spark;

import io.sfclayer.curve.IndexRange;
import io.sfclayer.curve.QueryBox;
import io.sfclayer.geotrellis.GtFileScan;
import io.sfclayer.geotrellis.GtLayer;
import io.sfclayer.geotrellis.GtMapFile;
import io.sfclayer.geotrellis.GtRecordCodec;
import io.sfclayer.geotrellis.GtTile;
import io.sfclayer.layer.TileGrid;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/** Reads one GeoTrellis MapFile's ranges into rows of the raster convention (the columns asked for). */
final class GeoTrellisReaderFactory implements PartitionReaderFactory {
    private static final long serialVersionUID = 1L;
    private final SerializableConf conf;
    private final GtLayer layer;
    private final String[] columns;
    private final QueryBox[] boxes;
    private final TileGrid grid;

    GeoTrellisReaderFactory(SerializableConf conf, GtLayer layer, StructType readSchema, QueryBox[] boxes, TileGrid grid) {
        this.conf = conf;
        this.layer = layer;
        this.columns = readSchema.fieldNames();
        this.boxes = boxes;
        this.grid = grid;
    }

    /** Whether a key is in one of the boxes (times in the boxes are microseconds). */
    static boolean wanted(QueryBox[] boxes, int col, int row, long millis, boolean spaceTime) {
        long micros = spaceTime ? millis * 1000L : 0;
        for (QueryBox b : boxes) {
            if (col >= b.colMin && col <= b.colMax && row >= b.rowMin && row <= b.rowMax
                    && (!spaceTime || (micros >= b.timeMin && micros <= b.timeMax))) {
                return true;
            }
        }
        return false;
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
        GeoTrellisPartition p = (GeoTrellisPartition) partition;
        Path dir = new Path(p.dir);
        GtMapFile file;
        try {
            file = GtMapFile.open(dir.getFileSystem(conf.get()), dir);
        } catch (IOException e) {
            throw new io.sfclayer.SfcLayerException.StorageError("opening " + dir + ": " + e, e);
        }
        List<IndexRange> ranges = new ArrayList<>(p.ranges.length / 2);
        for (int i = 0; i < p.ranges.length; i += 2) ranges.add(new IndexRange(p.ranges[i], p.ranges[i + 1]));
        GtRecordCodec codec = new GtRecordCodec(layer.schemaJson, layer.toString());
        boolean st = layer.spaceTime;
        GtFileScan scan = new GtFileScan(file, ranges, codec, (c, r, t) -> wanted(boxes, c, r, t, st));
        return new PartitionReader<InternalRow>() {
            private GtTile tile;

            @Override
            public boolean next() {
                tile = scan.next();
                return tile != null;
            }

            @Override
            public InternalRow get() {
                Object[] v = new Object[columns.length];
                for (int i = 0; i < columns.length; i++) v[i] = value(columns[i], tile);
                return new GenericInternalRow(v);
            }

            @Override
            public CustomTaskMetric[] currentMetricsValues() {
                return SfcLayerMetrics.task(1, scan.rangeCount(), scan.seeks(), scan.groupsRead(), scan.recordsRead(),
                    scan.recordsReturned(), scan.recordsDiscarded(), scan.bytesRead(), 0);
            }

            @Override
            public void close() throws IOException {
                scan.close();
            }
        };
    }

    private Object value(String column, GtTile t) {
        switch (column) {
            case "col": return t.col;
            case "row": return t.row;
            case "time": return t.millis * 1000L;
            case "pixels": return t.pixels;
            case "width": return t.width;
            case "height": return t.height;
            case "bands": return t.bands;
            case "dtype": return UTF8String.fromString(t.dtype);
            case "nodata": return t.nodata;
            case "mask": return null;
            case TileGrid.XMIN: return grid.xmin(t.col);
            case TileGrid.YMIN: return grid.ymin(t.row);
            case TileGrid.XMAX: return grid.xmax(t.col);
            case TileGrid.YMAX: return grid.ymax(t.row);
            default: throw new IllegalStateException("column " + column + " is not a GeoTrellis layer's");
        }
    }
}
