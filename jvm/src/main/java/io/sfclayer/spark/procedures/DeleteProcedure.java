package io.sfclayer.spark.procedures;

import io.sfclayer.spark.SfcLayerCommands;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter;
import org.apache.spark.sql.types.DataTypes;

import java.io.IOException;
import java.util.List;

/**
 * {@code CALL sfclayer.system.delete(path => '...', keys => '0,0,9,9', bbox => NULL, time => NULL)}:
 * {@code sfclayer.delete} in SQL (a Spark Connect session's {@code sfclayer.delete} runs it), with its box
 * arguments as text. Answers one row, the new version (or the newest one unchanged when no tile was in
 * the box), as {@code compact} does.
 */
public final class DeleteProcedure extends BaseProcedure {
    public static final String NAME = "delete";
    private static final ProcedureParameter[] PARAMETERS = {
        PATH,
        ProcedureParameter.in("keys", DataTypes.StringType).defaultValue("NULL")
            .comment("the key box 'colMin,rowMin,colMax,rowMax', inclusive").build(),
        ProcedureParameter.in("bbox", DataTypes.StringType).defaultValue("NULL")
            .comment("the box 'xmin,ymin,xmax,ymax' in map units: tiles whose envelope meets it").build(),
        ProcedureParameter.in("time", DataTypes.StringType).defaultValue("NULL")
            .comment("the time range 'start,end' (epoch microseconds or ISO-8601), inclusive").build(),
    };

    public DeleteProcedure() {
        super(NAME, "Delete the tiles in a box (keys, bbox and time intersect) as a new version; answers the"
            + " newest version", PARAMETERS);
    }

    @Override
    Result call(SparkSession spark, InternalRow args) throws IOException {
        return new Result(VERSION_ROW, List.of(versionRow(SfcLayerCommands.deleteVersion(spark, string(args, 0),
            optional(args, 1), optional(args, 2), optional(args, 3)))));
    }

    private static String optional(InternalRow args, int i) {
        return args.isNullAt(i) ? null : args.getUTF8String(i).toString();
    }
}
