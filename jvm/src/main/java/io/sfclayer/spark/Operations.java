package io.sfclayer.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sfclayer.SfcLayerException;
import io.sfclayer.layer.Layer;
import io.sfclayer.layer.LayerRepair;
import io.sfclayer.layer.Lease;
import io.sfclayer.layer.ManifestRepair;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The one dispatcher of sfclayer's named driver operations (maintenance, repair, documents, leases,
 * GeoTrellis catalogs): a name, typed arguments by name, one answer shape (a text: JSON mostly, or
 * null). py4j calls {@link #call(SparkSession, String, String)} directly (Python's classic transport,
 * {@code sfclayer._classic}); the Connect plugins wrap {@link #call(SparkSession, String, Map)} (their
 * op {@code "command"}, {@code sfclayer._connect}). The table of operations is the resource
 * {@value #TABLE}: names, arguments and their types, answer kinds, read here to check every call's
 * arguments, and by Python's tests to check that Python's table agrees ({@code tests/test_structure.py}).
 *
 * <p>Look-ups, box queries and counts are not here: they are a reader's requests, answered on the
 * loopback socket ({@code io.sfclayer.lookup.LookupServer}) or by the Connect plugins as records.
 */
public final class Operations {
    /** The table of operations, a resource of the jar. */
    public static final String TABLE = "/io/sfclayer/spark/operations.json";
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Map<String, Operation> OPS = load();

    private Operations() { }

    /** One operation of the table: its arguments in order, and its answer's kind. */
    record Operation(String name, List<Param> params, String answer) { }

    /** One argument: its name, its type ({@code string}, {@code long}, {@code boolean}), whether it may be null. */
    record Param(String name, String type, boolean optional) { }

    private static Map<String, Operation> load() {
        try (InputStream in = Operations.class.getResourceAsStream(TABLE)) {
            if (in == null) {
                throw new IllegalStateException("the sfclayer jar has no " + TABLE);
            }
            Map<String, Operation> out = new LinkedHashMap<>();
            Iterator<Map.Entry<String, JsonNode>> ops = JSON.readTree(in).get("operations").fields();
            while (ops.hasNext()) {
                Map.Entry<String, JsonNode> e = ops.next();
                List<Param> params = new ArrayList<>();
                for (JsonNode p : e.getValue().get("args")) {
                    String type = p.get(1).asText();
                    params.add(new Param(p.get(0).asText(), type.replace("?", ""), type.endsWith("?")));
                }
                out.put(e.getKey(), new Operation(e.getKey(), List.copyOf(params), e.getValue().get("answer").asText()));
            }
            return Collections.unmodifiableMap(out);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The operations' names, in the table's order. */
    public static List<String> names() {
        return List.copyOf(OPS.keySet());
    }

    /** py4j's entry: {@code args} as a JSON object. */
    @SuppressWarnings("unchecked")
    public static String call(SparkSession spark, String name, String args) throws IOException {
        return call(spark, name, (Map<String, Object>) JSON.readValue(args, Map.class));
    }

    /**
     * Runs operation {@code name} with {@code args} (by name; JSON's types: String, Number, Boolean, null).
     *
     * @return its answer: JSON text, plain text (may be null), or "true"/"false", as the table says
     * @throws SfcLayerException.InvalidArgument for an unknown operation, an unknown, missing or mistyped argument
     */
    public static String call(SparkSession spark, String name, Map<String, Object> args) throws IOException {
        Operation op = OPS.get(name);
        if (op == null) {
            throw new SfcLayerException.InvalidArgument("sfclayer operation: unknown operation '" + name
                + "' (is the server's sfclayer jar older than the client's?)");
        }
        return run(spark, op, new Args(op, args));
    }

    private static String run(SparkSession spark, Operation op, Args a) throws IOException {
        String path = op.params().get(0).name().equals("path") ? a.string("path") : null;
        switch (op.name()) {
            case "history":
                return SfcLayerCommands.history(spark, path);
            case "delete":
                return SfcLayerCommands.delete(spark, path, a.string("keys"), a.string("bbox"), a.string("time"));
            case "compact":
                return SfcLayerCommands.compact(spark, path);
            case "vacuum":
                return SfcLayerCommands.vacuum(spark, path, a.number("retainMillis"), a.bool("dryRun"),
                    a.bool("enforceRetention"));
            case "vacuumProgress": {
                long[] p = io.sfclayer.layer.Vacuum.progress(path);
                return p == null ? "null" : "{\"done\": " + p[0] + ", \"total\": " + p[1] + "}";
            }
            case "repair":
                return SfcLayerCommands.repair(spark, path, a.number("version"), a.string("damagedNames"),
                    a.string("dropped"));
            case "deleteKeys":
                return SfcLayerCommands.deleteKeys(spark, path, a.string("keys"));
            case "restore":
                return SfcLayerCommands.restore(spark, path, a.number("version"), a.string("asOf"));
            case "verify":
                return VerifyJob.report(spark, path, a.number("version"));
            case "layerMetadata": {
                long version = a.number("version");
                // format 6: with the files its manifests list (at most "files" of them; -1: all)
                return (version < 0 ? Layer.open(conf(spark), path) : Layer.open(conf(spark), path, version, -1))
                    .documentJson(a.number("files"));
            }
            case "restoreDocument":
                return LayerRepair.restoreDocument(conf(spark), path);
            case "rebuildManifests":
                return ManifestRepair.run(conf(spark), path);
            case "pyramidDocument":
                return SfcLayerCommands.pyramidDocument(spark, path);
            case "publishPyramidDocument":
                return String.valueOf(SfcLayerCommands.publishPyramidDocument(spark, path, a.number("number"),
                    a.string("text")));
            case "takeLease":
                return Lease.take(conf(spark), path, a.string("what"));
            case "releaseLease":
                return String.valueOf(Lease.release(conf(spark), path, a.string("token")));
            case "readText":
                return readText(conf(spark), path);
            case "geotrellisLayers":
                return GeoTrellisCommands.layers(spark, a.string("catalog"));
            case "geotrellisInfo":
                return GeoTrellisCommands.info(spark, a.string("catalog"), a.string("name"), (int) a.number("zoom"));
            default: // OperationsTest checks that every operation of the table has a case
                throw new IllegalStateException("sfclayer operation " + op.name() + " has no implementation");
        }
    }

    private static Configuration conf(SparkSession spark) {
        return HadoopConfs.forOptions(spark, Map.of()); // run-time spark.hadoop.* settings count
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

    /** An operation's arguments, checked against the table: no unknown name, none missing, each of its type. */
    private static final class Args {
        private final Operation op;
        private final Map<String, Object> values;

        Args(Operation op, Map<String, Object> given) {
            this.op = op;
            this.values = given == null ? Map.of() : given;
            for (String name : values.keySet()) {
                if (op.params().stream().noneMatch(p -> p.name().equals(name))) {
                    throw new SfcLayerException.InvalidArgument("sfclayer operation " + op.name()
                        + ": unknown argument " + name);
                }
            }
            for (Param p : op.params()) {
                Object v = values.get(p.name());
                if (v == null) {
                    if (!p.optional()) {
                        throw new SfcLayerException.InvalidArgument("sfclayer operation " + op.name()
                            + ": no argument " + p.name());
                    }
                    continue;
                }
                boolean ok = switch (p.type()) {
                    case "string" -> v instanceof String;
                    case "long" -> v instanceof Number && ((Number) v).doubleValue() == ((Number) v).longValue();
                    case "boolean" -> v instanceof Boolean;
                    default -> throw new IllegalStateException("sfclayer operation " + op.name() + ": argument "
                        + p.name() + " has an unknown type " + p.type());
                };
                if (!ok) {
                    throw new SfcLayerException.InvalidArgument("sfclayer operation " + op.name() + ": argument "
                        + p.name() + " must be a " + p.type() + ", not " + v);
                }
            }
        }

        String string(String name) {
            return (String) values.get(name);
        }

        long number(String name) {
            return ((Number) values.get(name)).longValue();
        }

        boolean bool(String name) {
            return (Boolean) values.get(name);
        }
    }
}
