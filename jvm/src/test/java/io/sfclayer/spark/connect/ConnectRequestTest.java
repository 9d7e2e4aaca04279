package io.sfclayer.spark.connect;

import io.sfclayer.SfcLayerException;
import org.junit.Test;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

/** The hand-made google.protobuf.Any decoding: what protobuf's own encoder (Python's, here by hand) sends. */
public class ConnectRequestTest {
    private static void varint(ByteArrayOutputStream out, long v) {
        while ((v & ~0x7fL) != 0) {
            out.write((int) (v & 0x7f) | 0x80);
            v >>>= 7;
        }
        out.write((int) v);
    }

    private static byte[] any(String typeUrl, String json, boolean unknownVarint) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] url = typeUrl.getBytes(StandardCharsets.UTF_8);
        byte[] value = json.getBytes(StandardCharsets.UTF_8);
        out.write(0x0a); // field 1, length-delimited
        varint(out, url.length);
        out.write(url, 0, url.length);
        if (unknownVarint) {
            out.write(0x18); // field 3, varint: skipped
            varint(out, 300);
        }
        out.write(0x12); // field 2, length-delimited
        varint(out, value.length);
        out.write(value, 0, value.length);
        return out.toByteArray();
    }

    @Test
    public void readsTheRequestInTheValue() {
        String big = "x".repeat(300); // a length over one varint byte
        ConnectRequest r = ConnectRequest.parse(any(ConnectRequest.TYPE_URL,
            "{\"op\":\"get_many\",\"handle\":7,\"token\":\"" + big + "\",\"keys\":\"AAECAw==\",\"flag\":true}", true));
        assertEquals("get_many", r.op);
        assertEquals(7, r.number("handle"));
        assertEquals(big, r.string("token"));
        assertArrayEquals(new byte[] {0, 1, 2, 3}, r.bytes("keys"));
        assertTrue(r.bool("flag"));
        assertEquals(-1, r.number("version", -1));
        assertNull(r.optionalString("missing"));
    }

    @Test
    public void anotherPluginsRelationIsNotOurs() {
        assertNull(ConnectRequest.parse(any("type.googleapis.com/delta.connect.DeltaRelation", "{}", false)));
    }

    @Test
    public void badRequestsAreNamed() {
        byte[] ok = any(ConnectRequest.TYPE_URL, "{\"op\":\"open\"}", false);
        byte[] truncated = java.util.Arrays.copyOf(ok, ok.length - 3);
        assertTrue(assertThrows(SfcLayerException.InvalidArgument.class, () -> ConnectRequest.parse(truncated))
            .getMessage().contains("field 2 of"));
        assertTrue(assertThrows(SfcLayerException.InvalidArgument.class,
            () -> ConnectRequest.parse(any(ConnectRequest.TYPE_URL, "[1]", false))).getMessage().contains("JSON object"));
        assertTrue(assertThrows(SfcLayerException.InvalidArgument.class,
            () -> ConnectRequest.parse(ok).string("path")).getMessage().contains("no argument path"));
        assertTrue(assertThrows(SfcLayerException.InvalidArgument.class, () -> ConnectRequest.parse(
            any(ConnectRequest.TYPE_URL, "{\"op\":\"open\",\"version\":\"two\"}", false)).number("version"))
            .getMessage().contains("version must be a number"));
    }
}
