package io.sfclayer.spark.procedures;

import io.sfclayer.SfcLayerException;
import io.sfclayer.curve.TimeText;
import io.sfclayer.format.LayerMetadata;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.ArrayBasedMapData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter;
import org.apache.spark.sql.connector.catalog.procedures.SimpleProcedure;
import org.apache.spark.sql.connector.read.LocalScan;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * What sfclayer's procedures share: their arguments (Spark hands them in {@link #parameters()} order,
 * named ones rearranged and defaults filled in), the Hadoop configuration of the session, and the
 * result as one local result set. Each procedure only calls the Java the Python API calls.
 */
abstract class BaseProcedure implements SimpleProcedure {
    /** Every procedure's first argument: the layer. */
    static final ProcedureParameter PATH = ProcedureParameter.in("path", DataTypes.StringType)
        .comment("the layer's path or URI").build();

    /** One version, as history lists it and compact answers (the fields of Python's sfclayer.Version). */
    static final StructType VERSION_ROW = new StructType()
        .add("version", DataTypes.LongType, false)
        .add("created_at", DataTypes.TimestampType, false)
        .add("operation", DataTypes.StringType, false)
        .add("read_version", DataTypes.LongType, true)
        .add("records", DataTypes.LongType, false)
        .add("files", DataTypes.LongType, false)
        .add("data_bytes", DataTypes.LongType, false)
        .add("metrics", DataTypes.createMapType(DataTypes.StringType, DataTypes.LongType), false)
        .add("write_id", DataTypes.StringType, true)
        .add("delta_files", DataTypes.LongType, false)
        .add("delta_records", DataTypes.LongType, false)
        .add("transaction", new StructType().add("app_id", DataTypes.StringType, false)
            .add("txn_version", DataTypes.LongType, false), true);

    private final String name;
    private final String description;
    private final ProcedureParameter[] parameters;

    BaseProcedure(String name, String description, ProcedureParameter... parameters) {
        this.name = name;
        this.description = description;
        this.parameters = parameters;
    }

    @Override
    public final String name() {
        return name;
    }

    @Override
    public final String description() {
        return description;
    }

    @Override
    public final ProcedureParameter[] parameters() {
        return parameters;
    }

    @Override
    public boolean isDeterministic() {
        return false; // it changes (or reads the changing state of) a layer
    }

    @Override
    public final Iterator<Scan> call(InternalRow args) {
        try {
            return Collections.<Scan>singleton(call(SparkSession.active(), args)).iterator();
        } catch (IOException e) {
            throw new SfcLayerException.StorageError(name() + ": " + e, e);
        }
    }

    /** The procedure itself: its rows, in {@link Result}'s schema. */
    abstract Result call(SparkSession spark, InternalRow args) throws IOException;

    static Configuration conf(SparkSession spark) {
        return io.sfclayer.spark.HadoopConfs.forOptions(spark, Map.of()); // run-time spark.hadoop.* count
    }

    /** Argument {@code i}, a string that must be given (not NULL). */
    String string(InternalRow args, int i) {
        String name = parameters()[i].name();
        if (args.isNullAt(i)) {
            throw new SfcLayerException.InvalidArgument("argument " + name + ": NULL is not allowed (give "
                + parameters()[i].comment() + ")");
        }
        String s = args.getUTF8String(i).toString();
        if (s.isBlank()) {
            throw new SfcLayerException.InvalidArgument("argument " + name + ": '" + s + "' is empty (give "
                + parameters()[i].comment() + ")");
        }
        return s;
    }

    /** Argument {@code i}, a boolean that must be given (not NULL). */
    boolean bool(InternalRow args, int i) {
        if (args.isNullAt(i)) {
            throw new SfcLayerException.InvalidArgument("argument " + parameters()[i].name()
                + ": NULL is not allowed (true or false)");
        }
        return args.getBoolean(i);
    }

    /** A procedure's answer: rows of one schema (Spark shows them as the CALL's result). */
    static final class Result implements LocalScan {
        private final StructType schema;
        private final InternalRow[] rows;

        Result(StructType schema, List<InternalRow> rows) {
            this.schema = schema;
            this.rows = rows.toArray(new InternalRow[0]);
        }

        @Override
        public StructType readSchema() {
            return schema;
        }

        @Override
        public InternalRow[] rows() {
            return rows;
        }
    }

    /** A {@link #VERSION_ROW}: the version document's summary; metrics that are counts. */
    static InternalRow versionRow(LayerMetadata md) {
        List<UTF8String> keys = new ArrayList<>();
        List<Long> values = new ArrayList<>();
        for (Map.Entry<String, Object> e : md.metrics.entrySet()) {
            // a repair's list of what it dropped is not a count; a delta append's tilesInserted is an unknown one (null)
            if (e.getValue() == null || e.getValue() instanceof Number) {
                keys.add(UTF8String.fromString(e.getKey()));
                values.add(e.getValue() == null ? null : ((Number) e.getValue()).longValue());
            }
        }
        return new GenericInternalRow(new Object[] {
            md.version,
            TimeText.parseInstantMicros("createdAt", md.createdAt),
            UTF8String.fromString(md.operation),
            md.readVersion < 0 ? null : md.readVersion,
            md.recordCount,
            md.fileCount,
            md.dataBytes,
            new ArrayBasedMapData(new GenericArrayData(keys.toArray()), new GenericArrayData(values.toArray())),
            md.writeId == null ? null : UTF8String.fromString(md.writeId),
            (long) md.deltas.size(),
            md.deltas.stream().mapToLong(d -> d.file.records).sum(),
            md.txn == null ? null : new GenericInternalRow(new Object[] {UTF8String.fromString(md.txn.appId), md.txn.version}),
        });
    }

    static DataType arrayOf(DataType t) {
        return DataTypes.createArrayType(t, false);
    }
}
