package io.sfclayer.spark.connect;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.sfclayer.SfcLayerException;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Map;

/**
 * One request of the Python facade to {@link SfcLayerRelationPlugin}: a serialized
 * {@code google.protobuf.Any} (what Spark Connect hands a relation plugin) whose {@code type_url} is
 * {@link #TYPE_URL} and whose {@code value} is a JSON object ({@code op} and its arguments).
 *
 * <p>The {@code Any} is decoded by hand (field 1, the type URL, and field 2, the value, both
 * length-delimited): pyspark's jars carry protobuf-java only shaded inside Spark's own classes, and
 * two fields do not earn a dependency.
 */
final class ConnectRequest {
    /** The type URL of sfclayer's requests (the Python side, sfclayer._connect, sends the same). */
    static final String TYPE_URL = "type.googleapis.com/sfclayer.connect.Request";
    private static final ObjectMapper JSON = new ObjectMapper();

    final String op;
    final Map<String, Object> args;

    private ConnectRequest(String op, Map<String, Object> args) {
        this.op = op;
        this.args = args;
    }

    /** The request in {@code any}, or null when the {@code Any} is another plugin's (another type URL). */
    @SuppressWarnings("unchecked")
    static ConnectRequest parse(byte[] any) {
        String typeUrl = "";
        byte[] value = new byte[0];
        int[] pos = {0};
        while (pos[0] < any.length) {
            long tag = varint(any, pos);
            int field = (int) (tag >>> 3);
            int wire = (int) (tag & 7);
            if (wire == 0) {
                varint(any, pos);
                continue;
            }
            if (wire != 2) {
                throw new SfcLayerException.InvalidArgument("sfclayer Connect request: a google.protobuf.Any with "
                    + "field " + field + " of wire type " + wire + " (only length-delimited fields expected)");
            }
            long n = varint(any, pos);
            if (n < 0 || n > any.length - pos[0]) {
                throw new SfcLayerException.InvalidArgument("sfclayer Connect request: field " + field + " of "
                    + n + " bytes in a message of " + any.length);
            }
            byte[] bytes = java.util.Arrays.copyOfRange(any, pos[0], pos[0] + (int) n);
            pos[0] += (int) n;
            if (field == 1) {
                typeUrl = new String(bytes, StandardCharsets.UTF_8);
            } else if (field == 2) {
                value = bytes;
            }
        }
        if (!TYPE_URL.equals(typeUrl)) {
            return null;
        }
        Map<String, Object> args;
        try {
            args = JSON.readValue(value, Map.class);
        } catch (IOException e) {
            throw new SfcLayerException.InvalidArgument("sfclayer Connect request: its value is not a JSON object: "
                + SfcLayerException.reason(e));
        }
        Object op = args.get("op");
        if (!(op instanceof String)) {
            throw new SfcLayerException.InvalidArgument("sfclayer Connect request: no \"op\" in " + args.keySet());
        }
        return new ConnectRequest((String) op, args);
    }

    private static long varint(byte[] b, int[] pos) {
        long v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (pos[0] >= b.length) {
                throw new SfcLayerException.InvalidArgument("sfclayer Connect request: a truncated varint");
            }
            byte x = b[pos[0]++];
            v |= (long) (x & 0x7f) << shift;
            if (x >= 0) {
                return v;
            }
        }
        throw new SfcLayerException.InvalidArgument("sfclayer Connect request: a varint over 10 bytes");
    }

    private Object required(String name) {
        Object v = args.get(name);
        if (v == null) {
            throw new SfcLayerException.InvalidArgument("sfclayer Connect request " + op + ": no argument " + name);
        }
        return v;
    }

    String string(String name) {
        return String.valueOf(required(name));
    }

    /** A string argument, or null when absent (JSON null). */
    String optionalString(String name) {
        Object v = args.get(name);
        return v == null ? null : String.valueOf(v);
    }

    long number(String name) {
        Object v = required(name);
        if (!(v instanceof Number)) {
            throw new SfcLayerException.InvalidArgument("sfclayer Connect request " + op + ": argument " + name
                + " must be a number, not " + v);
        }
        return ((Number) v).longValue();
    }

    long number(String name, long otherwise) {
        return args.get(name) == null ? otherwise : number(name);
    }

    boolean bool(String name) {
        Object v = required(name);
        if (!(v instanceof Boolean)) {
            throw new SfcLayerException.InvalidArgument("sfclayer Connect request " + op + ": argument " + name
                + " must be true or false, not " + v);
        }
        return (Boolean) v;
    }

    /** A JSON object argument, as a map. */
    @SuppressWarnings("unchecked")
    Map<String, Object> object(String name) {
        Object v = required(name);
        if (!(v instanceof Map)) {
            throw new SfcLayerException.InvalidArgument("sfclayer Connect request " + op + ": argument " + name
                + " must be a JSON object, not " + v);
        }
        return (Map<String, Object>) v;
    }

    byte[] bytes(String name) {
        try {
            return Base64.getDecoder().decode(string(name));
        } catch (IllegalArgumentException e) {
            throw new SfcLayerException.InvalidArgument("sfclayer Connect request " + op + ": argument " + name
                + " is not base64: " + e.getMessage());
        }
    }
}
