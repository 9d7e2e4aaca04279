package io.sfclayer.spark.connect;

import io.sfclayer.SfcLayerException;
import io.sfclayer.lookup.ValueReader;

import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The readers Spark Connect clients have open on this server's driver ({@code sfclayer.open} on a
 * Connect session), by handle. Each handle has a random token that every request must carry, so a
 * client reaches only the readers it opened (a handle is a counter, easy to guess). The loopback
 * look-up server's registry ({@code io.sfclayer.lookup.LookupSessions}) is not used: a Connect client
 * is not on the driver's host, and answers travel as Connect relations instead.
 */
final class ConnectLookups {
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final AtomicLong HANDLES = new AtomicLong();
    private static final Map<Long, Open> OPEN = new ConcurrentHashMap<>();

    private ConnectLookups() { }

    private static final class Open {
        final ValueReader reader;
        final byte[] token;

        Open(ValueReader reader, byte[] token) {
            this.reader = reader;
            this.token = token;
        }
    }

    /** Registers an open reader; returns {handle, token (hex)}. */
    static Object[] register(ValueReader reader) {
        byte[] token = new byte[16];
        RANDOM.nextBytes(token);
        long handle = HANDLES.incrementAndGet();
        OPEN.put(handle, new Open(reader, token));
        return new Object[] {handle, HexFormat.of().formatHex(token)};
    }

    /** The reader of a handle whose token matches; InvalidArgument otherwise (closed, or not the caller's). */
    static ValueReader reader(long handle, String token) {
        Open o = OPEN.get(handle);
        if (o == null || !matches(o, token)) {
            throw new SfcLayerException.InvalidArgument("look-up handle " + handle + " is closed");
        }
        return o.reader;
    }

    /** Closes a handle's reader; nothing if it is closed already (or the token is not its own). */
    static void close(long handle, String token) {
        Open o = OPEN.get(handle);
        if (o != null && matches(o, token) && OPEN.remove(handle, o)) {
            o.reader.close();
        }
    }

    /** Readers open through Spark Connect now. */
    static int openReaders() {
        return OPEN.size();
    }

    private static boolean matches(Open o, String token) {
        byte[] given;
        try {
            given = HexFormat.of().parseHex(token == null ? "" : token);
        } catch (IllegalArgumentException e) {
            return false;
        }
        return MessageDigest.isEqual(o.token, given);
    }
}
