package io.sfclayer.spark.procedures;

import io.sfclayer.format.LayerMetadata;
import io.sfclayer.spark.SfcLayerCommands;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.catalog.procedures.ProcedureParameter;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/** {@code CALL sfclayer.system.history(path => '...')}: {@code sfclayer.history} in SQL, a row per retained version. */
public final class HistoryProcedure extends BaseProcedure {
    public static final String NAME = "history";
    private static final ProcedureParameter[] PARAMETERS = {PATH};

    public HistoryProcedure() {
        super(NAME, "The layer's retained versions, oldest first: number, commit time, operation, totals and metrics", PARAMETERS);
    }

    @Override
    Result call(SparkSession spark, InternalRow args) throws IOException {
        List<InternalRow> rows = new ArrayList<>();
        for (LayerMetadata md : SfcLayerCommands.versions(spark, string(args, 0))) {
            rows.add(versionRow(md));
        }
        return new Result(VERSION_ROW, rows);
    }
}
