package io.sfclayer.lookup;

import io.sfclayer.SfcLayerException;

import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Open tile sources by handle: the one registry behind {@link LookupSessions} (sfclayer layers on the
 * loopback socket), {@link GtLookupSessions} (GeoTrellis layers on the same socket) and Spark Connect's
 * {@code ConnectLookups}. A handle is a counter, easy to guess, so each entry keeps a token: the
 * socket's registration token, or a random one a Connect client must send back ({@link #get(long, String)}).
 * Closing a source is the caller's, after it took the entry out (it may first unregister it elsewhere).
 *
 * @param <S> the kind of source
 */
public final class OpenSources<S extends TileSource<?>> {
    /**
     * One open source.
     *
     * @param owner who opened it, for closing all of an owner's at once (a Connect session id), or null
     */
    public record Entry<S>(long handle, S source, byte[] token, String owner) {
        /** The token in lower-case hex, as clients send it back. */
        public String tokenHex() {
            return HexFormat.of().formatHex(token);
        }
    }

    private final String what;
    private final AtomicLong handles = new AtomicLong();
    private final Map<Long, Entry<S>> open = new ConcurrentHashMap<>();

    /** @param what how errors name a handle ("look-up handle", "GeoTrellis look-up handle") */
    public OpenSources(String what) {
        this.what = what;
    }

    /** Registers {@code source} under a new handle. */
    public Entry<S> add(S source, byte[] token, String owner) {
        Entry<S> e = new Entry<>(handles.incrementAndGet(), source, token, owner);
        open.put(e.handle(), e);
        return e;
    }

    /** The entry of an open handle; InvalidArgument once it is closed. */
    public Entry<S> get(long handle) {
        Entry<S> e = open.get(handle);
        if (e == null) {
            throw closed(handle);
        }
        return e;
    }

    /** The entry of an open handle whose token is {@code tokenHex}; InvalidArgument otherwise (closed, or not the caller's). */
    public Entry<S> get(long handle, String tokenHex) {
        Entry<S> e = open.get(handle);
        if (e == null || !matches(e, tokenHex)) {
            throw closed(handle);
        }
        return e;
    }

    /** Takes a handle's entry out; null when it is closed already. */
    public Entry<S> remove(long handle) {
        return open.remove(handle);
    }

    /** Takes a handle's entry out if its token is {@code tokenHex}; null when closed already or not the caller's. */
    public Entry<S> remove(long handle, String tokenHex) {
        Entry<S> e = open.get(handle);
        return e != null && matches(e, tokenHex) && open.remove(handle, e) ? e : null;
    }

    /** Takes out every entry {@code owner} opened. */
    public List<Entry<S>> removeOwner(String owner) {
        List<Entry<S>> out = new ArrayList<>();
        for (Map.Entry<Long, Entry<S>> e : open.entrySet()) {
            if (owner.equals(e.getValue().owner()) && open.remove(e.getKey(), e.getValue())) {
                out.add(e.getValue());
            }
        }
        return out;
    }

    /** Sources open now. */
    public int size() {
        return open.size();
    }

    public boolean isEmpty() {
        return open.isEmpty();
    }

    private SfcLayerException.InvalidArgument closed(long handle) {
        return new SfcLayerException.InvalidArgument(what + " " + handle + " is closed");
    }

    /** Constant-time comparison: a wrong token tells nothing of the right one. */
    private static boolean matches(Entry<?> e, String tokenHex) {
        byte[] given;
        try {
            given = HexFormat.of().parseHex(tokenHex == null ? "" : tokenHex);
        } catch (IllegalArgumentException x) {
            return false;
        }
        return MessageDigest.isEqual(e.token(), given);
    }
}
