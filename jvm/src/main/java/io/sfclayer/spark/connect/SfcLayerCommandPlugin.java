package io.sfclayer.spark.connect;

import io.sfclayer.SfcLayerException;
import org.apache.spark.connect.proto.ExecutePlanResponse;
import org.apache.spark.sql.connect.planner.SparkConnectPlanner;
import org.apache.spark.sql.connect.plugin.CommandPlugin;
import org.apache.spark.sql.connect.service.ExecuteHolder;
import org.sparkproject.connect.protobuf.ByteString;

import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * sfclayer's Spark Connect command plugin: the short way for a Connect client's look-ups and box
 * queries. It answers the same requests as {@link SfcLayerRelationPlugin}, by the same code, but as a
 * command: it writes the answer's Arrow batches ({@link ConnectAnswer#toArrow}) to the client's response
 * stream itself, where a relation's rows go through Spark's analysis, optimisation, physical planning,
 * SQL execution events and Arrow conversion first (a 1-row relation's round trip costs about 2.5
 * times a bare command's on the same server: bench/RESULTS.md, "Spark Connect"). The client
 * (sfclayer._connect) reads the batches as it reads a relation's, and falls back to the relation
 * plugin when a server has no command plugin.
 *
 * <p>Enable it with {@code spark.connect.extensions.command.classes=}{@value #CLASS} ({@code
 * sfclayer.configure} does for {@code remote("local")}).
 */
public final class SfcLayerCommandPlugin implements CommandPlugin {
    /** The class to name in {@code spark.connect.extensions.command.classes}. */
    public static final String CLASS = "io.sfclayer.spark.connect.SfcLayerCommandPlugin";
    /** Most bytes of records per Arrow batch sent (as Spark's spark.connect.grpc.arrow.maxBatchSize, 4 MiB). */
    static final long MAX_BATCH_BYTES = 4L << 20;

    @Override
    public boolean process(byte[] command, SparkConnectPlanner planner) {
        ConnectRequest request = ConnectRequest.parse(command);
        if (request == null) {
            return false; // another plugin's command
        }
        if (planner.executeHolderOpt().isEmpty()) {
            throw new SfcLayerException.InvalidArgument("sfclayer Connect request " + request.op
                + ": a command with nowhere to answer (no execution)");
        }
        ExecuteHolder execution = planner.executeHolderOpt().get();
        ConnectAnswer answer;
        try {
            answer = SfcLayerRelationPlugin.answer(planner.session(), planner.sessionId(), request);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        long offset = 0;
        for (ConnectAnswer.ArrowBatch batch : answer.toArrow(MAX_BATCH_BYTES)) {
            long rows = batch.rows();
            execution.responseObserver().onNext(ExecutePlanResponse.newBuilder()
                .setSessionId(execution.sessionHolder().sessionId())
                .setServerSideSessionId(execution.sessionHolder().serverSessionId())
                .setOperationId(execution.operationId())
                .setArrowBatch(ExecutePlanResponse.ArrowBatch.newBuilder().setRowCount(rows).setStartOffset(offset)
                    .setData(ByteString.copyFrom(batch.stream())))
                .build());
            offset += rows;
        }
        return true;
    }
}
