package io.sfclayer.spark;

import io.sfclayer.codec.TileSchema;
import io.sfclayer.curve.QueryBox;
import io.sfclayer.format.DataFileReader;
import io.sfclayer.format.ValueCompression;
import io.sfclayer.layer.TileGrid;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

import java.io.IOException;

/**
 * What every task of a scan shares: the Hadoop configuration, the tile codec, the query boxes and
 * where each output column comes from (worked out once, on the driver).
 */
final class SfcLayerPartitionReaderFactory implements PartitionReaderFactory {
    private static final long serialVersionUID = 1L;

    /** Sources of output columns other than value columns (which are their index, >= 0). */
    static final int COL = -1, ROW = -2, TIME = -3, XMIN = -4, YMIN = -5, XMAX = -6, YMAX = -7, INDEX = -8, FILE = -9;
    private static final int VALUE = Integer.MIN_VALUE;

    final SerializableConf conf;
    final TileSchema tileSchema;
    final ValueCompression compression;
    final TileGrid grid;
    final QueryBox[] boxes;
    final int outputWidth;
    /** The source of each output column: a value column index or one of COL .. FILE. */
    final int[] sources;
    /** For each value column, its output position or -1 (the cursor's targetIndex). */
    final int[] valueTargets;
    final boolean anyValue;
    final OnCorrupt onCorrupt;

    SfcLayerPartitionReaderFactory(SerializableConf conf, String valueSchemaJson, boolean spaceTime, String compression,
                                   TileGrid grid, StructType readSchema, QueryBox[] boxes, OnCorrupt onCorrupt) {
        this.conf = conf;
        this.onCorrupt = onCorrupt;
        this.tileSchema = TileSchema.fromJson(valueSchemaJson, spaceTime);
        this.compression = ValueCompression.parse(compression);
        this.grid = grid;
        this.boxes = boxes;
        StructField[] fields = readSchema.fields();
        StructType values = tileSchema.valueSchema();
        this.outputWidth = fields.length;
        this.sources = new int[fields.length];
        this.valueTargets = new int[values.fields().length];
        java.util.Arrays.fill(valueTargets, -1);
        boolean any = false;
        for (int i = 0; i < fields.length; i++) {
            String name = fields[i].name();
            int source = keySource(name, spaceTime, grid != null);
            if (source == VALUE) {
                int j = java.util.Arrays.asList(values.fieldNames()).indexOf(name);
                if (j < 0) {
                    throw new IllegalStateException("column " + name + " is not in the layer (" + readSchema + ")");
                }
                valueTargets[j] = i;
                any = true;
                source = j;
            }
            sources[i] = source;
        }
        this.anyValue = any;
    }

    /** The source of a key, envelope or metadata column, or {@link #VALUE} for a value column. */
    private static int keySource(String name, boolean spaceTime, boolean hasGrid) {
        switch (name) {
            case "col": return COL;
            case "row": return ROW;
            case "time": return spaceTime ? TIME : VALUE;
            case SfcLayerTable.INDEX_COLUMN: return INDEX;
            case SfcLayerTable.FILE_COLUMN: return FILE;
            default:
        }
        if (hasGrid) {
            switch (name) {
                case TileGrid.XMIN: return XMIN;
                case TileGrid.YMIN: return YMIN;
                case TileGrid.XMAX: return XMAX;
                case TileGrid.YMAX: return YMAX;
                default:
            }
        }
        return VALUE;
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
        if (partition instanceof SfcLayerFilesPartition) {
            return new SfcLayerFilesReader(this, (SfcLayerFilesPartition) partition);
        }
        try {
            return open((SfcLayerInputPartition) partition);
        } catch (IOException e) {
            throw DataFileReader.failure("cannot open data file " + ((SfcLayerInputPartition) partition).file, e);
        }
    }

    /** The reader of one data file of a scan. */
    SfcLayerPartitionReader open(SfcLayerInputPartition file) throws IOException {
        try {
            return new SfcLayerPartitionReader(this, file);
        } catch (IOException e) {
            throw DataFileReader.failure("cannot open data file " + file.file, e);
        }
    }
}
