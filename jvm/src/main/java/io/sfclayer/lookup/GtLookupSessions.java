package io.sfclayer.lookup;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.sfclayer.SfcLayerException;
import io.sfclayer.geotrellis.GtValueReader;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * GeoTrellis layers opened for look-ups from Python ({@code sfclayer.geotrellis.open}): each reader
 * registered, as a {@link GtTileSource}, on {@link LookupSessions}' shared server, so GeoTrellis and
 * sfclayer layers share one socket, one protocol and the Python client's one pool of connections.
 * The shared server stays up while any reader is registered on it.
 */
public final class GtLookupSessions {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final AtomicLong HANDLES = new AtomicLong();
    private static final Map<Long, Open> OPEN = new ConcurrentHashMap<>();

    private GtLookupSessions() { }

    private static final class Open {
        final GtTileSource source;
        final LookupServer server;
        final byte[] token;

        Open(GtTileSource source, LookupServer server, byte[] token) {
            this.source = source;
            this.server = server;
            this.token = token;
        }
    }

    /**
     * Registers {@code reader} on the shared server (closed with the handle, or here if registering fails).
     *
     * @param extra further fields of the answer (the layer's attributes), or null
     * @return JSON: {@code handle, host, port, token} (hex), then {@code extra}'s fields
     */
    public static String open(GtValueReader reader, Map<String, Object> extra) throws IOException {
        long handle = HANDLES.incrementAndGet();
        GtTileSource source = new GtTileSource(reader);
        try {
            LookupServer s;
            byte[] token;
            synchronized (LookupSessions.class) { // not between an idle server's check and its stop
                s = LookupSessions.server();
                token = s.register(source);
                OPEN.put(handle, new Open(source, s, token));
            }
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("handle", handle);
            out.put("host", s.host());
            out.put("port", s.port());
            out.put("token", LookupSessions.hex(token));
            if (extra != null) out.putAll(extra);
            return JSON.writeValueAsString(out);
        } catch (IOException | RuntimeException e) {
            if (OPEN.containsKey(handle)) {
                close(handle);
            } else {
                source.close();
            }
            throw e;
        }
    }

    /** The reader behind a handle; InvalidArgument once it is closed. */
    public static GtValueReader reader(long handle) {
        Open o = OPEN.get(handle);
        if (o == null) {
            throw new SfcLayerException.InvalidArgument("GeoTrellis look-up handle " + handle + " is closed");
        }
        return o.source.reader();
    }

    /** Unregisters and closes a handle's reader; nothing if already closed. */
    public static void close(long handle) {
        Open o = OPEN.remove(handle);
        if (o == null) {
            return;
        }
        try {
            synchronized (LookupSessions.class) {
                o.server.unregister(o.token);
            }
        } finally {
            o.source.close();
        }
    }

    /** GeoTrellis readers open through this endpoint now. */
    public static int openReaders() {
        return OPEN.size();
    }
}
