package io.sfclayer.lookup;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.sfclayer.geotrellis.GtValueReader;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * GeoTrellis layers opened for look-ups from Python ({@code sfclayer.geotrellis.open}): each reader
 * registered, as a {@link GtTileSource}, on {@link LookupSessions}' shared server, so GeoTrellis and
 * sfclayer layers share one socket, one protocol and the Python client's one pool of connections.
 * The shared server stays up while any reader is registered on it.
 */
public final class GtLookupSessions {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** The open readers, each with its token on the shared server. */
    private static final OpenSources<GtTileSource> OPEN = new OpenSources<>("GeoTrellis look-up handle");

    private GtLookupSessions() { }

    /**
     * Registers {@code reader} on the shared server (closed with the handle, or here if registering fails).
     *
     * @param extra further fields of the answer (the layer's attributes), or null
     * @return JSON: {@code handle, host, port, token} (hex), then {@code extra}'s fields
     */
    public static String open(GtValueReader reader, Map<String, Object> extra) throws IOException {
        GtTileSource source = new GtTileSource(reader);
        OpenSources.Entry<GtTileSource> entry = null;
        try {
            LookupServer s;
            synchronized (LookupSessions.class) { // not between an idle server's check and its stop
                s = LookupSessions.server();
                entry = OPEN.add(source, s.register(source), null);
            }
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("handle", entry.handle());
            out.put("host", s.host());
            out.put("port", s.port());
            out.put("token", entry.tokenHex());
            if (extra != null) out.putAll(extra);
            return JSON.writeValueAsString(out);
        } catch (IOException | RuntimeException e) {
            if (entry != null) {
                close(entry.handle());
            } else {
                source.close();
            }
            throw e;
        }
    }

    /** The reader behind a handle; InvalidArgument once it is closed. */
    public static GtValueReader reader(long handle) {
        return OPEN.get(handle).source().reader();
    }

    /**
     * Unregisters and closes a handle's reader; nothing if already closed. (The shared server it was
     * registered on is still the shared one: a server with a registered reader is never stopped.)
     */
    public static void close(long handle) {
        OpenSources.Entry<GtTileSource> o = OPEN.remove(handle);
        if (o == null) {
            return;
        }
        try {
            LookupSessions.unregister(o.token());
        } finally {
            o.source().close();
        }
    }

    /** GeoTrellis readers open through this endpoint now. */
    public static int openReaders() {
        return OPEN.size();
    }
}
