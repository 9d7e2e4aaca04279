package io.sfclayer.spark.connect;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.sfclayer.SfcLayerException;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.layer.Layer;
import io.sfclayer.layer.Lease;
import io.sfclayer.layer.LayerRepair;
import io.sfclayer.lookup.PackedKeys;
import io.sfclayer.lookup.ValueReader;
import io.sfclayer.spark.HadoopConfs;
import io.sfclayer.spark.SfcLayerCommands;
import io.sfclayer.spark.VerifyJob;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.connect.planner.SparkConnectPlanner;
import org.apache.spark.sql.connect.plugin.RelationPlugin;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * sfclayer's Spark Connect relation plugin: what {@code sfclayer.open} (get, get_many, query, count) and
 * the maintenance functions do through py4j on a classic session, a Spark Connect client asks for as an
 * extension relation ({@link ConnectRequest}), answered on the server's driver by the same code
 * ({@link ValueReader}, {@link SfcLayerCommands}, {@link VerifyJob}) as a local relation: the rows go
 * to the client as Arrow batches, with no Spark job for look-ups and box queries.
 *
 * <p>Enable it on the Connect server with {@code spark.connect.extensions.relation.classes=}{@value #CLASS}
 * ({@code sfclayer.configure} does for {@code remote("local")}). Answers are one of two shapes: a text
 * ({@code answer STRING}, one row, JSON mostly) or records ({@code count INT, data BINARY}, a row per batch
 * of encoded tile records, as the loopback look-up socket sends them). Relations are read-only in
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
            case "readers": // how many readers Connect clients have open on this server (for tests, monitoring)
                return ConnectAnswer.text(Integer.toString(ConnectLookups.openReaders()));
            case "close":
                ConnectLookups.close(r.number("handle"), r.string("token"));
                return ConnectAnswer.text("{}");
            case "metadata":
                return ConnectAnswer.text(reader(r).metadataJson());
            case "stats":
                return ConnectAnswer.text(stats(reader(r)));
            case "get_many":
                return ConnectAnswer.records().add(0, getMany(reader(r), r.bytes("keys")));
            case "query":
                return query(reader(r), r.string("spec"));
            case "count":
                ValueReader reader = reader(r);
                return ConnectAnswer.text(Long.toString(reader.count(reader.boxQuery(r.string("spec")))));
            case "command":
                return ConnectAnswer.text(command(spark, r));
            default:
                throw new SfcLayerException.InvalidArgument("sfclayer Connect request: unknown op '" + r.op
                    + "' (is the server's sfclayer jar older than the client's?)");
        }
    }

    private static ValueReader reader(ConnectRequest r) {
        return ConnectLookups.reader(r.number("handle"), r.string("token"));
    }

    /** Opens a reader as {@code sfclayer.open} does, with the session's Hadoop configuration. */
    private static String open(SparkSession spark, String sessionId, ConnectRequest r) throws IOException {
        Configuration conf = HadoopConfs.forOptions(spark, Map.of());
        ValueReader reader = ValueReader.open(conf, r.string("path"),
            (int) r.number("cacheSize", ValueReader.DEFAULT_CACHE_SIZE),
            r.number("cacheBytes", ValueReader.DEFAULT_CACHE_BYTES), r.bool("indexInDriver"),
            r.number("version", -1), r.number("asOfMillis", -1));
        try {
            Object[] handle = ConnectLookups.register(reader, sessionId, spark.sparkContext());
            LayerMetadata md = reader.metadata();
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("handle", handle[0]);
            out.put("token", handle[1]);
            out.put("version", md.version);
            out.put("keyIndex", md.keyIndex.toJson());
            out.put("tileSchema", md.tileSchemaJson);
            return JSON.writeValueAsString(out);
        } catch (RuntimeException | IOException e) {
            reader.close();
            throw e;
        }
    }

    private static String stats(ValueReader reader) throws IOException {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("files_opened", reader.filesOpened());
        out.put("cache_hits", reader.cacheHits());
        out.put("open_files", reader.openFiles());
        out.put("cached_bytes", reader.cachedBytes());
        out.put("indexes_kept", reader.indexesKept());
        out.put("bloom_skips", reader.bloomSkips());
        out.put("filters_kept", reader.filtersKept());
        return JSON.writeValueAsString(out);
    }

    /**
     * Look-ups of keys packed as the loopback socket's (int col, int row, long time each), answered in
     * the keys' order: per key an int length and the record, -1 for a miss, or -2, an int length and
     * {@code "ErrorClass\tmessage"} for a key whose look-up failed (the keys after a failure in index
     * order fail with it, as on the socket).
     */
    static byte[] getMany(ValueReader reader, byte[] keys) throws IOException {
        PackedKeys k = PackedKeys.decode(keys);
        int n = k.size();
        byte[][] found = new byte[n][];
        boolean[] answered = new boolean[n];
        byte[] error = null;
        try {
            reader.getMany(k.cols, k.rows, k.times, (i, record) -> {
                found[i] = record;
                answered[i] = true;
            });
        } catch (RuntimeException | IOException e) {
            String cls = e instanceof SfcLayerException ? e.getClass().getName() : SfcLayerException.class.getName();
            String msg = e instanceof SfcLayerException ? SfcLayerException.reason(e) : e.toString();
            error = (cls + "\t" + msg).getBytes(StandardCharsets.UTF_8);
        }
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DataOutputStream out = new DataOutputStream(bytes);
        for (int i = 0; i < n; i++) {
            if (!answered[i]) {
                out.writeInt(-2);
                out.writeInt(error.length);
                out.write(error);
            } else if (found[i] == null) {
                out.writeInt(-1);
            } else {
                out.writeInt(found[i].length);
                out.write(found[i]);
            }
        }
        return bytes.toByteArray();
    }

    /** A box query's records, a row per batch (count, the records back to back). */
    private static ConnectAnswer query(ValueReader reader, String spec) throws IOException {
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

    /** The maintenance calls of the Python facade, by name, with their py4j answers (JSON text mostly). */
    private static String command(SparkSession spark, ConnectRequest r) throws IOException {
        String name = r.string("name");
        String path = r.string("path");
        switch (name) {
            case "vacuum":
                return SfcLayerCommands.vacuum(spark, path, r.number("retainMillis"), r.bool("dryRun"),
                    r.bool("enforceRetention"));
            case "repair":
                return SfcLayerCommands.repair(spark, path, r.number("version"), r.string("damagedNames"),
                    r.string("dropped"));
            case "deleteKeys":
                return SfcLayerCommands.deleteKeys(spark, path, r.string("keys"));
            case "verify":
                return VerifyJob.report(spark, path, r.number("version", 0));
            case "rebuildManifests":
                return io.sfclayer.layer.ManifestRepair.run(HadoopConfs.forOptions(spark, Map.of()), path);
            case "restoreDocument":
                return LayerRepair.restoreDocument(HadoopConfs.forOptions(spark, Map.of()), path);
            case "layerMetadata": {
                Configuration conf = HadoopConfs.forOptions(spark, Map.of());
                long version = r.number("version", -1);
                // format 6: with the files its manifests list (at most "files" of them), as layer_metadata_json gives it
                return (version < 0 ? Layer.open(conf, path) : Layer.open(conf, path, version, -1))
                    .documentJson(r.number("files", -1));
            }
            case "pyramidDocument":
                return SfcLayerCommands.pyramidDocument(spark, path);
            case "publishPyramidDocument":
                return String.valueOf(SfcLayerCommands.publishPyramidDocument(spark, path, r.number("number"),
                    r.string("text")));
            case "restore":
                return SfcLayerCommands.restore(spark, path, r.number("version", -1), r.optionalString("asOf"));
            case "takeLease": // a pyramid run's lease (io.sfclayer.layer.Lease), as the py4j path takes it
                return Lease.take(HadoopConfs.forOptions(spark, Map.of()), path, r.string("what"));
            case "releaseLease":
                return String.valueOf(Lease.release(HadoopConfs.forOptions(spark, Map.of()), path,
                    r.string("token")));
            case "readText":
                return readText(HadoopConfs.forOptions(spark, Map.of()), path);
            default:
                throw new SfcLayerException.InvalidArgument("sfclayer Connect request: unknown command '" + name
                    + "' (is the server's sfclayer jar older than the client's?)");
        }
    }

    /** A small file's UTF-8 text, or null when there is none. */
    private static String readText(Configuration conf, String path) throws IOException {
        Path p = new Path(path);
        FileSystem fs = p.getFileSystem(conf);
        try (FSDataInputStream in = fs.open(p)) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (FileNotFoundException e) {
            return null;
        } catch (org.apache.hadoop.fs.ChecksumException e) { // a filesystem's own checksum found damage
            throw new SfcLayerException.CorruptLayer(path + " is damaged (its filesystem checksum does not match)", e);
        }
    }
}
