package io.sfclayer.spark.procedures;

import io.sfclayer.SfcLayerException;
import io.sfclayer.spark.SfcLayerCommands;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter;
import org.apache.spark.sql.types.DataTypes;

import java.io.IOException;
import java.util.List;

/**
 * {@code CALL sfclayer.system.restore(path => '...', version => 3)} or {@code (path => '...', as_of =>
 * '2026-11-27T20:00:00Z')}: {@code sfclayer.restore} in SQL (Delta's {@code RESTORE TABLE ... TO VERSION AS OF}).
 * Answers one row, the new version (operation {@code restore}, {@code metrics['restoredVersion']}), or the
 * newest one unchanged when it already is the version asked for.
 */
public final class RestoreProcedure extends BaseProcedure {
    public static final String NAME = "restore";
    private static final ProcedureParameter[] PARAMETERS = {
        PATH,
        ProcedureParameter.in("version", DataTypes.LongType).defaultValue("NULL")
            .comment("the version to restore").build(),
        ProcedureParameter.in("as_of", DataTypes.StringType).defaultValue("NULL")
            .comment("restore the newest version committed at or before this time (ISO-8601 or epoch"
                + " microseconds)").build(),
    };

    public RestoreProcedure() {
        super(NAME, "Commit a new version whose content is an older version's (given by version or as_of); refused"
            + " when that version's files were vacuumed; answers the newest version", PARAMETERS);
    }

    @Override
    Result call(SparkSession spark, InternalRow args) throws IOException {
        String path = string(args, 0);
        boolean hasVersion = !args.isNullAt(1);
        long version = hasVersion ? args.getLong(1) : -1;
        if (hasVersion && version < 1) {
            throw new SfcLayerException.InvalidArgument("argument version: " + version + " is not a version (1, 2, ...)");
        }
        String asOf = args.isNullAt(2) ? null : args.getUTF8String(2).toString();
        return new Result(VERSION_ROW, List.of(versionRow(SfcLayerCommands.restoreVersion(spark, path, version, asOf))));
    }
}
