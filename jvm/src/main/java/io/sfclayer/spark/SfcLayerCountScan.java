package io.sfclayer.spark;

import io.sfclayer.curve.QueryBox;
import io.sfclayer.format.DataFile;
import io.sfclayer.format.FileStats;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.layer.TileGrid;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.aggregate.AggregateFunc;
import org.apache.spark.sql.connector.expressions.aggregate.Aggregation;
import org.apache.spark.sql.connector.expressions.aggregate.Count;
import org.apache.spark.sql.connector.expressions.aggregate.CountStar;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

import java.io.IOException;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;

/**
 * A {@code count(*)} pushed down to the layer (Spark's {@code SupportsPushDownAggregates}, partial):
 * files whose statistics put every key inside a query box are counted from the version document
 * without being opened (a whole-layer count opens no file at all); the other selected files are read
 * keys only, values skipped undecoded, each task returning its partial count, which Spark sums.
 * The files read are checked as any read checks them (every record's CRC32C, format 3; onCorrupt
 * applies); files counted from the document are not opened, so not checked: a count says nothing
 * about damage (verify does). When a read option lets damaged or missing files be skipped (onCorrupt=skip,
 * Spark's ignoreCorruptFiles / ignoreMissingFiles), every selected file is read: the count then agrees
 * with the rows the same read returns (issue 35).
 */
final class SfcLayerCountScan implements Scan, Batch {
    private static final StructType SCHEMA = new StructType().add("count", DataTypes.LongType, false);

    private final SfcLayerScan scan;
    private long fromMetadata;
    private long filesCounted;
    private List<SfcLayerScan.Part> toRead;

    SfcLayerCountScan(SfcLayerScan scan) {
        this.scan = scan;
    }

    /** Whether the aggregation is a count of rows (count(*), count(1) or count of a key column), ungrouped. */
    static boolean isCount(Aggregation aggregation) {
        if (aggregation.groupByExpressions().length != 0 || aggregation.aggregateExpressions().length != 1) {
            return false;
        }
        AggregateFunc f = aggregation.aggregateExpressions()[0];
        if (f instanceof CountStar) {
            return true;
        }
        if (f instanceof Count && !((Count) f).isDistinct() && ((Count) f).column() instanceof NamedReference) {
            String[] name = ((NamedReference) ((Count) f).column()).fieldNames();
            return name.length == 1 && (name[0].equals("col") || name[0].equals("row"));
        }
        return false;
    }

    /** Whether the boxes are the layer's whole key bounds at any time (every tile lies in them). */
    static boolean isWholeLayer(LayerMetadata md, List<QueryBox> boxes) {
        return boxes.size() == 1 && boxes.get(0).equals(QueryBox.of(md.keyIndex.bounds()));
    }

    private synchronized void plan() {
        if (toRead != null) {
            return;
        }
        LayerMetadata md = scan.layer().metadata();
        List<QueryBox> boxes = scan.boxes();
        toRead = new ArrayList<>();
        // the document's counts hold only when every file is read whole, and (format 7) count base
        // files only: a version with deltas is counted by merging (a delta's tile may replace a base one)
        boolean trustDocument = !scan.onCorrupt().any() && scan.layer().deltas().isEmpty();
        if (trustDocument && isWholeLayer(md, boxes)) {
            // every key of the layer lies in its bounds: the document's total is the answer
            fromMetadata = md.recordCount;
            filesCounted = md.fileCount;
            return;
        }
        for (SfcLayerScan.Part p : scan.parts()) {
            DataFile f = p.file;
            if (trustDocument && f != null && inOneBox(f.stats, boxes)) {
                fromMetadata += f.records;
                filesCounted++;
            } else {
                toRead.add(p);
            }
        }
    }

    /** Whether the statistics put every key of the file inside one of {@code boxes}. */
    private static boolean inOneBox(FileStats s, List<QueryBox> boxes) {
        if (s == null) {
            return false;
        }
        long[] c = range(s, "col"), r = range(s, "row"), t = range(s, "time");
        if (c == null || r == null) {
            return false;
        }
        for (QueryBox b : boxes) {
            boolean time = b.timeMin == Long.MIN_VALUE && b.timeMax == Long.MAX_VALUE
                || (t != null && b.timeMin <= t[0] && t[1] <= b.timeMax);
            if (time && b.colMin <= c[0] && c[1] <= b.colMax && b.rowMin <= r[0] && r[1] <= b.rowMax) {
                return true;
            }
        }
        return false;
    }

    private static long[] range(FileStats s, String column) {
        FileStats.Column c = s.column(column);
        if (c == null || !(c.min instanceof BigDecimal) || !(c.max instanceof BigDecimal)) {
            return null;
        }
        return new long[] {((BigDecimal) c.min).longValue(), ((BigDecimal) c.max).longValue()};
    }

    @Override
    public StructType readSchema() {
        return SCHEMA;
    }

    @Override
    public String description() {
        plan();
        return scan.description() + " count(*): " + filesCounted + " files counted from the version document ("
            + fromMetadata + " tiles), " + toRead.size() + " read keys only";
    }

    @Override
    public Batch toBatch() {
        return this;
    }

    @Override
    public InputPartition[] planInputPartitions() {
        plan();
        InputPartition[] reads = new SfcLayerBatch(scan.layer(), new StructType(), scan.boxes(), toRead, scan.onCorrupt())
            .planInputPartitions();
        InputPartition[] out = new InputPartition[reads.length + 1];
        out[0] = new Counted(fromMetadata);
        System.arraycopy(reads, 0, out, 1, reads.length);
        return out;
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
        LayerMetadata md = scan.layer().metadata();
        return new Factory(new SfcLayerPartitionReaderFactory(new SerializableConf(scan.layer().conf()),
            md.valueSchemaJson, md.isSpaceTime(), md.compression, TileGrid.of(md), new StructType(),
            scan.boxes().toArray(new QueryBox[0]), scan.onCorrupt()));
    }

    @Override
    public CustomMetric[] supportedCustomMetrics() {
        return SfcLayerMetrics.supported();
    }

    @Override
    public CustomTaskMetric[] reportDriverMetrics() {
        plan();
        return scan.planning().withCountedFromStats(filesCounted).report();
    }

    /** The part of the count the version document answers. */
    static final class Counted implements InputPartition {
        private static final long serialVersionUID = 1L;
        final long count;

        Counted(long count) {
            this.count = count;
        }
    }

    private static final class Factory implements PartitionReaderFactory {
        private static final long serialVersionUID = 1L;
        private final SfcLayerPartitionReaderFactory keysOnly;

        Factory(SfcLayerPartitionReaderFactory keysOnly) {
            this.keysOnly = keysOnly;
        }

        @Override
        public PartitionReader<InternalRow> createReader(InputPartition partition) {
            if (partition instanceof Counted) {
                return new CountReader(null, ((Counted) partition).count);
            }
            return new CountReader(keysOnly.createReader(partition), 0);
        }
    }

    /** One row: a partial count, from the document or by reading one file's keys. */
    private static final class CountReader implements PartitionReader<InternalRow> {
        private final PartitionReader<InternalRow> keys;
        private long count;
        private boolean done;

        CountReader(PartitionReader<InternalRow> keys, long count) {
            this.keys = keys;
            this.count = count;
        }

        @Override
        public boolean next() throws IOException {
            if (done) {
                return false;
            }
            if (keys != null) {
                while (keys.next()) {
                    count++;
                }
            }
            done = true;
            return true;
        }

        @Override
        public InternalRow get() {
            return new GenericInternalRow(new Object[] {count});
        }

        @Override
        public CustomTaskMetric[] currentMetricsValues() {
            return keys == null ? new CustomTaskMetric[0] : keys.currentMetricsValues();
        }

        @Override
        public void close() throws IOException {
            if (keys != null) {
                keys.close();
            }
        }
    }
}
