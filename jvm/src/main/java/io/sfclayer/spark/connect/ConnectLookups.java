package io.sfclayer.spark.connect;

import io.sfclayer.lookup.OpenSources;
import io.sfclayer.lookup.TileSource;

import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.sql.connect.service.SparkListenerConnectSessionClosed;

import java.security.SecureRandom;
import java.util.Collections;
import java.util.Set;
import java.util.WeakHashMap;

/**
 * The readers Spark Connect clients have open on this server's driver ({@code sfclayer.open} and
 * {@code sfclayer.geotrellis.open} on a Connect session: any {@link TileSource}), by handle, in an
 * {@link OpenSources} of their own. Each handle has a random token that every request must carry, so a
 * client reaches only the readers it opened (a handle is a counter, easy to guess). The loopback
 * look-up server's registry ({@code io.sfclayer.lookup.LookupSessions}) is not used: a Connect client
 * is not on the driver's host, and answers travel as Connect relations instead.
 *
 * <p>A client that goes away without closing its layers does not leave their readers (open files,
 * cached indexes) behind for the server's lifetime: they are closed when its Connect session is
 * (stopped, or expired by the server), on Spark's {@code SparkListenerConnectSessionClosed} event.
 */
final class ConnectLookups {
    private static final SecureRandom RANDOM = new SecureRandom();
    /** The open readers, each with its random token and its Connect session. */
    private static final OpenSources<TileSource<?>> OPEN = new OpenSources<>("look-up handle");

    private ConnectLookups() { }

    private static final Set<SparkContext> LISTENING = Collections.newSetFromMap(new WeakHashMap<>());

    /** Closes the readers of Connect sessions as they close. */
    private static final class SessionCloser extends SparkListener {
        @Override
        public void onOtherEvent(SparkListenerEvent event) {
            if (event instanceof SparkListenerConnectSessionClosed) {
                closeSession(((SparkListenerConnectSessionClosed) event).sessionId());
            }
        }
    }

    /** A registered reader's handle and its token (hex). */
    record Handle(long handle, String token) { }

    /** Registers an open reader of Connect session {@code sessionId}. */
    static Handle register(TileSource<?> reader, String sessionId, SparkContext sc) {
        synchronized (LISTENING) {
            if (LISTENING.add(sc)) {
                sc.addSparkListener(new SessionCloser());
            }
        }
        byte[] token = new byte[16];
        RANDOM.nextBytes(token);
        OpenSources.Entry<TileSource<?>> e = OPEN.add(reader, token, sessionId);
        return new Handle(e.handle(), e.tokenHex());
    }

    /** Closes every reader a Connect session opened. */
    static void closeSession(String sessionId) {
        for (OpenSources.Entry<TileSource<?>> e : OPEN.removeOwner(sessionId)) {
            e.source().close();
        }
    }

    /** The reader of a handle whose token matches; InvalidArgument otherwise (closed, or not the caller's). */
    static TileSource<?> reader(long handle, String token) {
        return OPEN.get(handle, token).source();
    }

    /** Closes a handle's reader; nothing if it is closed already (or the token is not its own). */
    static void close(long handle, String token) {
        OpenSources.Entry<TileSource<?>> e = OPEN.remove(handle, token);
        if (e != null) {
            e.source().close();
        }
    }

    /** Readers open through Spark Connect now. */
    static int openReaders() {
        return OPEN.size();
    }
}
