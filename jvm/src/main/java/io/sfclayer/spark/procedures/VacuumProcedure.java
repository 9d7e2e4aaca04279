package io.sfclayer.spark.procedures;

import io.sfclayer.curve.TimeText;
import io.sfclayer.layer.Vacuum;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

import java.io.IOException;
import java.util.List;
import java.util.Map;

/**
 * {@code CALL sfclayer.system.vacuum(path => '...', retain => '7d', dry_run => false, force => false)}:
 * {@code sfclayer.vacuum} in SQL, with its defaults and its refusal of a retention under 7 days unless
 * {@code force => true} ({@link Vacuum}). Answers one row: what was (in a dry run, would be) removed.
 */
public final class VacuumProcedure extends BaseProcedure {
    public static final String NAME = "vacuum";
    private static final ProcedureParameter[] PARAMETERS = {
        PATH,
        ProcedureParameter.in("retain", DataTypes.StringType).defaultValue("'7d'")
            .comment("a duration such as '7d', '12h', '0s' or ISO-8601 'P7D'").build(),
        ProcedureParameter.in("dry_run", DataTypes.BooleanType).defaultValue("false")
            .comment("only list what would be removed").build(),
        ProcedureParameter.in("force", DataTypes.BooleanType).defaultValue("false")
            .comment("allow a retention under 7 days").build(),
    };

    public VacuumProcedure() {
        super(NAME, "Delete what no version newer than the retention needs: older version documents (never the"
            + " newest), unreferenced data files and leftovers of killed writes older than it", PARAMETERS);
    }

    /** The fields of Python's vacuum report. */
    static final StructType ROW = new StructType()
        .add("dry_run", DataTypes.BooleanType, false)
        .add("versions_removed", arrayOf(DataTypes.LongType), false)
        .add("files_removed", arrayOf(DataTypes.StringType), false)
        .add("bytes_freed", DataTypes.LongType, false);

    @Override
    Result call(SparkSession spark, InternalRow args) throws IOException {
        String path = string(args, 0);
        String retain = string(args, 1);
        boolean dryRun = bool(args, 2);
        boolean force = bool(args, 3);
        long retainMillis = TimeText.parseDurationMicros("retain", retain, "argument ") / 1000;
        Vacuum.checkRetention(retainMillis, !force, "argument retain: '" + retain + "'", "pass force => true");
        Map<String, Object> report = Vacuum.run(conf(spark), path, retainMillis, dryRun, !force);
        List<?> versions = (List<?>) report.get("versionsRemoved");
        List<?> files = (List<?>) report.get("filesRemoved");
        return new Result(ROW, List.of(new GenericInternalRow(new Object[] {
            report.get("dryRun"),
            new GenericArrayData(versions.stream().map(v -> ((Number) v).longValue()).toArray()),
            new GenericArrayData(files.stream().map(f -> UTF8String.fromString((String) f)).toArray()),
            ((Number) report.get("bytesFreed")).longValue(),
        })));
    }
}
