package io.sfclayer.spark.connect;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.sfclayer.SfcLayerException;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.geotrellis.GtLayer;
import io.sfclayer.geotrellis.GtValueReader;
import io.sfclayer.lookup.GtTileSource;
import io.sfclayer.lookup.LookupSessions;
import io.sfclayer.lookup.TileAnswers;
import io.sfclayer.lookup.TileSource;
import io.sfclayer.lookup.ValueReader;
import io.sfclayer.spark.GeoTrellisCommands;
import io.sfclayer.spark.HadoopConfs;
import io.sfclayer.spark.Operations;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.connect.planner.SparkConnectPlanner;
import org.apache.spark.sql.connect.plugin.RelationPlugin;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * sfclayer's Spark Connect relation plugin: what {@code sfclayer.open} (get, get_many, query, count) and
 * the maintenance functions do through py4j on a classic session, a Spark Connect client asks for as an
 * extension relation ({@link ConnectRequest}), answered on the server's driver by the same code
 * ({@link TileSource}s for a reader's requests, the one dispatcher {@link Operations} for the named
 * operations, op {@code "command"}) as a local relation: the rows go
 * to the client as Arrow batches, with no Spark job for look-ups and box queries.
 *
 * <p>Enable it on the Connect server with {@code spark.connect.extensions.relation.classes=}{@value #CLASS}
 * ({@code sfclayer.configure} does for {@code remote("local")}). Answers are one of two shapes: a text
 * ({@code answer STRING}, one row, JSON mostly) or records ({@code count INT, data BINARY}, a row per batch
 * of encoded tile records, as the loopback look-up socket sends them; a look-up's one row holds the
 * socket's answer to it, {@link TileAnswers}). Relations are read-only in
 * spirit, but a command plugin cannot answer rows, so maintenance runs here too: each request carries
 * a nonce, so no plan cache ever answers one twice.
 */
public final class SfcLayerRelationPlugin implements RelationPlugin {
    /** The class to name in {@code spark.connect.extensions.relation.classes}. */
    public static final String CLASS = "io.sfclayer.spark.connect.SfcLayerRelationPlugin";
    /** Most bytes of records one box query answers (a local relation is built whole on the driver). */
    public static final long MAX_ANSWER_BYTES = 256L << 20;
    private static final ObjectMapper JSON = new ObjectMapper();

    @Override
    public Optional<LogicalPlan> transform(byte[] relation, SparkConnectPlanner planner) {
        ConnectRequest request = ConnectRequest.parse(relation);
        if (request == null) {
            return Optional.empty(); // another plugin's relation
        }
        SparkSession spark = planner.session();
        try {
            return Optional.of(answer(spark, planner.sessionId(), request).toRelation());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The answer to a request of Connect session {@code sessionId} (the command plugin's too). */
    static ConnectAnswer answer(SparkSession spark, String sessionId, ConnectRequest r) throws IOException {
        switch (r.op) {
            case "open":
                return ConnectAnswer.text(open(spark, sessionId, r));
            case "geotrellisOpen":
                return ConnectAnswer.text(openGeoTrellis(spark, sessionId, r));
            case "readers": // how many readers Connect clients have open on this server (for tests, monitoring)
                return ConnectAnswer.text(Integer.toString(ConnectLookups.openReaders()));
            case "close":
                ConnectLookups.close(r.number("handle"), r.string("token"));
                return ConnectAnswer.text("{}");
            case "metadata":
                return ConnectAnswer.text(layerReader(r).metadataJson());
            case "stats":
                return ConnectAnswer.text(LookupSessions.statsJson(layerReader(r)));
            case "geotrellisIndex":
                return ConnectAnswer.text(Long.toString(geoTrellisReader(r).reader().index((int) r.number("col"),
                    (int) r.number("row"), r.number("millis"))));
            case "get_many":
                return ConnectAnswer.records().add(0, TileAnswers.many(reader(r), r.bytes("keys")));
            case "query":
                return query(reader(r), r.string("spec"));
            case "count":
                return ConnectAnswer.text(Long.toString(count(reader(r), r.string("spec"))));
            case "command": // a named operation of the one dispatcher (its table: io/sfclayer/spark/operations.json)
                return ConnectAnswer.text(Operations.call(spark, r.string("operation"), r.object("args")));
            default:
                throw new SfcLayerException.InvalidArgument("sfclayer Connect request: unknown op '" + r.op
                    + "' (is the server's sfclayer jar older than the client's?)");
        }
    }

    private static TileSource<?> reader(ConnectRequest r) {
        return ConnectLookups.reader(r.number("handle"), r.string("token"));
    }

    private static ValueReader layerReader(ConnectRequest r) {
        if (!(reader(r) instanceof ValueReader v)) {
            throw new SfcLayerException.InvalidArgument("sfclayer Connect request " + r.op + ": handle "
                + r.number("handle") + " is not an sfclayer layer's");
        }
        return v;
    }

    private static GtTileSource geoTrellisReader(ConnectRequest r) {
        if (!(reader(r) instanceof GtTileSource g)) {
            throw new SfcLayerException.InvalidArgument("sfclayer Connect request " + r.op + ": handle "
                + r.number("handle") + " is not a GeoTrellis layer's");
        }
        return g;
    }

    /** Opens a reader as {@code sfclayer.open} does, with the session's Hadoop configuration. */
    private static String open(SparkSession spark, String sessionId, ConnectRequest r) throws IOException {
        Configuration conf = HadoopConfs.forOptions(spark, Map.of());
        ValueReader reader = ValueReader.open(conf, r.string("path"),
            (int) r.number("cacheSize", ValueReader.DEFAULT_CACHE_SIZE),
            r.number("cacheBytes", ValueReader.DEFAULT_CACHE_BYTES), r.bool("indexInDriver"),
            r.number("version", -1), r.number("asOfMillis", -1));
        try {
            ConnectLookups.Handle handle = ConnectLookups.register(reader, sessionId, spark.sparkContext());
            LayerMetadata md = reader.metadata();
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("handle", handle.handle());
            out.put("token", handle.token());
            out.put("version", md.version);
            out.put("keyIndex", md.keyIndex.toJson());
            out.put("tileSchema", md.tileSchemaJson);
            return JSON.writeValueAsString(out);
        } catch (RuntimeException | IOException e) {
            reader.close();
            throw e;
        }
    }

    /** Opens a GeoTrellis layer as {@code sfclayer.geotrellis.open} does: its handle, token and attributes. */
    private static String openGeoTrellis(SparkSession spark, String sessionId, ConnectRequest r) throws IOException {
        Configuration conf = HadoopConfs.forOptions(spark, Map.of());
        GtLayer layer = GtLayer.open(r.string("catalog"), r.string("name"), (int) r.number("zoom"), conf);
        Map<String, Object> info = GeoTrellisCommands.infoOf(layer);
        GtTileSource source = new GtTileSource(new GtValueReader(layer, conf, (int) r.number("cacheSize")));
        try {
            ConnectLookups.Handle handle = ConnectLookups.register(source, sessionId, spark.sparkContext());
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("handle", handle.handle());
            out.put("token", handle.token());
            out.put("info", info);
            return JSON.writeValueAsString(out);
        } catch (RuntimeException e) {
            source.close();
            throw e;
        }
    }

    /** A box query's records, a row per batch (count, the records back to back). */
    private static <Q> ConnectAnswer query(TileSource<Q> reader, String spec) throws IOException {
        ConnectAnswer out = ConnectAnswer.records();
        long[] total = {0};
        reader.query(reader.boxQuery(spec), batch -> {
            ByteArrayOutputStream data = new ByteArrayOutputStream();
            for (byte[] record : batch) {
                data.write(record);
            }
            total[0] += data.size();
            if (total[0] > MAX_ANSWER_BYTES) {
                throw new SfcLayerException.InvalidArgument("a box query answering over " + MAX_ANSWER_BYTES
                    + " bytes of tiles to a Spark Connect client (built whole on the server's driver): give a "
                    + "limit or a smaller box, or read it as a DataFrame (sfclayer.read)");
            }
            out.add(batch.size(), data.toByteArray());
        });
        return out;
    }

    private static <Q> long count(TileSource<Q> reader, String spec) throws IOException {
        return reader.count(reader.boxQuery(spec));
    }
}
