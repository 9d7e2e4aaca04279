package io.sfclayer.lookup;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.sfclayer.format.LayerMetadata;
import org.apache.hadoop.conf.Configuration;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The driver's look-up endpoint for {@code sfclayer.open}: one {@link LookupServer} for the whole JVM,
 * started by the first open, and the open readers registered on it by handle. Opening a layer is one
 * py4j call ({@link #open}) whose answer carries all Python needs to look tiles up (the socket, the
 * reader's token, the version, key index and tile schema); the version document as a whole (every
 * file and its statistics) crosses only when asked for ({@link #metadataJson}). The server stops
 * {@value #IDLE_MILLIS} ms after its last reader is closed (no thread is left behind once a session's
 * layers are closed) and starts again with the next open.
 */
public final class LookupSessions {
    /** Connections of the shared server (the Python client pools 16 for all the layers of a process). */
    public static final int MAX_CONNECTIONS = 256;
    /** How long the shared server stays up with no layer open. */
    public static final long IDLE_MILLIS = 2_000;
    private static final ObjectMapper JSON = new ObjectMapper();
    /** The open readers, each with its token on the shared server. */
    private static final OpenSources<ValueReader> OPEN = new OpenSources<>("look-up handle");
    private static LookupServer server;

    private LookupSessions() { }

    /** The shared server, started on first use (again once stopped). Under the class lock. */
    static LookupServer server() throws IOException {
        if (server == null || server.isClosed()) {
            LookupServer s = new LookupServer(null, java.net.InetAddress.getLoopbackAddress(), MAX_CONNECTIONS,
                LookupServer.DEFAULT_AUTH_TIMEOUT_MILLIS, LookupServer.DEFAULT_IO_TIMEOUT_MILLIS);
            s.onIdle(IDLE_MILLIS, () -> stopIfIdle(s));
            server = s;
        }
        return server;
    }

    /**
     * Stops the shared server if it is still {@code s} and no reader has been opened on it meanwhile
     * (readers registered by {@link GtLookupSessions} count through {@code registeredReaders}).
     */
    private static synchronized void stopIfIdle(LookupServer s) {
        if (server == s && OPEN.isEmpty() && s.registeredReaders() == 0) {
            s.close();
            server = null;
        }
    }

    /**
     * Opens a reader on a layer version (arguments as {@link ValueReader#open(Configuration, String, int, long,
     * boolean, long, long)}; the Hadoop configuration is the opener's: {@code io.sfclayer.spark.SparkLookups}
     * hands in a Spark session's) and registers it on the shared server.
     *
     * @return JSON: {@code handle, host, port, token} (hex), {@code version, keyIndex, tileSchema} (text)
     */
    public static String open(Configuration conf, String path, int cacheSize, long cacheBytes, boolean indexInDriver,
                              long version, long asOfMillis) throws IOException {
        ValueReader reader = ValueReader.open(conf, path, cacheSize, cacheBytes, indexInDriver, version, asOfMillis);
        OpenSources.Entry<ValueReader> entry = null;
        try {
            LookupServer s;
            synchronized (LookupSessions.class) { // not between an idle server's check and its stop
                s = server();
                entry = OPEN.add(reader, s.register(reader), null);
            }
            LayerMetadata md = reader.metadata();
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("handle", entry.handle());
            out.put("host", s.host());
            out.put("port", s.port());
            out.put("token", entry.tokenHex());
            out.put("version", md.version);
            out.put("keyIndex", md.keyIndex.toJson());
            out.put("tileSchema", md.tileSchemaJson);
            return JSON.writeValueAsString(out);
        } catch (IOException | RuntimeException e) {
            if (entry != null) {
                close(entry.handle());
            } else {
                reader.close();
            }
            throw e;
        }
    }

    /** The reader behind a handle; InvalidArgument once it is closed. */
    public static ValueReader reader(long handle) {
        return OPEN.get(handle).source();
    }

    /** The whole version document of a handle's reader (files, statistics), as JSON text. */
    public static String metadataJson(long handle) {
        return reader(handle).metadataJson();
    }

    /** A handle's reader's look-up counters, as JSON ({@link #statsJson}). */
    public static String stats(long handle) throws IOException {
        return statsJson(reader(handle));
    }

    /**
     * A reader's look-up counters as one JSON object (what {@code Layer.stats()} answers, on the loopback
     * socket's sessions and on Spark Connect's alike).
     */
    public static String statsJson(ValueReader reader) throws IOException {
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

    /** Unregisters and closes a handle's reader (its connections are closed); nothing if already closed. */
    public static void close(long handle) throws IOException {
        OpenSources.Entry<ValueReader> o = OPEN.remove(handle);
        if (o == null) {
            return;
        }
        try {
            unregister(o.token());
        } finally {
            o.source().close();
        }
    }

    /** Takes a source's token off the shared server (the source stays open). */
    static synchronized void unregister(byte[] token) {
        if (server != null) {
            server.unregister(token);
        }
    }

    /** Connections open now to the shared server (0 when it is stopped). */
    public static synchronized int openConnections() {
        return server == null ? 0 : server.openConnections();
    }

    /** Readers open through this endpoint now. */
    public static int openReaders() {
        return OPEN.size();
    }

}
