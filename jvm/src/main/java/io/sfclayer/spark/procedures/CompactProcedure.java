package io.sfclayer.spark.procedures;

import io.sfclayer.spark.SfcLayerUpdate;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter;

import java.io.IOException;
import java.util.List;

/**
 * {@code CALL sfclayer.system.compact(path => '...')}: {@code sfclayer.compact} in SQL. Answers one row,
 * the newest version (the new one, or the unchanged newest when there was nothing to compact;
 * {@code metrics['filesRemoved']} small files became {@code metrics['filesAdded']}).
 */
public final class CompactProcedure extends BaseProcedure {
    public static final String NAME = "compact";
    private static final ProcedureParameter[] PARAMETERS = {PATH};

    public CompactProcedure() {
        super(NAME, "Rewrite runs of adjacent small data files (under a quarter of the block size) into block-sized"
            + " ones, as a new version; answers the newest version", PARAMETERS);
    }

    @Override
    Result call(SparkSession spark, InternalRow args) throws IOException {
        return new Result(VERSION_ROW, List.of(versionRow(SfcLayerUpdate.compact(spark, string(args, 0)))));
    }
}
