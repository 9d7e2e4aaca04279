package io.sfclayer.lookup;

import io.sfclayer.SfcLayerException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.Closeable;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A loopback socket that serves {@link TileSource}s' look-ups ({@link ValueReader}s, GeoTrellis layers) to a local client (sfclayer's Python
 * package) without py4j. py4j moves a tile as base64 text in several socket writes, and Nagle's
 * algorithm against the client's delayed ACKs then costs ~40 ms per tile larger than a few KiB; here a
 * tile is one length-prefixed write on a TCP_NODELAY socket.
 *
 * <p>Over 500 lines on purpose: the whole wire protocol (framing, tokens, every request kind and its
 * answer) is in this one class, so client writers read it in one place.
 *
 * <p>One server serves any number of readers, each {@linkplain #register registered} with a token of
 * its own ({@link LookupSessions} keeps one server for the whole driver, so a second {@code sfclayer.open}
 * starts no server). Protocol (big-endian). The client first sends the 16-byte token of the reader it
 * wants ({@link #register}, {@link #token()}), within {@code authTimeout}; the server answers {@code int 0}
 * (the connection is bound to that reader) or an error answer and closes the connection (a wrong token,
 * or "busy": all connections in use — a client must never pool a connection whose handshake failed);
 * then requests, each answered before the next is read (a client may send the next before reading):
 * <ul>
 * <li>{@code 'A'} ({@link #OP_BIND}), {@code 16-byte token} → {@code int 0}: the connection is bound to that token's reader from now
 *     on (a client's one pool of connections serves all its layers), or an error answer and the
 *     connection is closed;
 * <li>{@code 'G'} ({@link #OP_GET_ONE}) {@code int col, int row, long timeMicros} → one answer;
 * <li>{@code 'M'} ({@link #OP_GET_MANY}) {@code int n, n × (int col, int row, long time)}, {@code 0 <= n <=} {@value #MAX_KEYS} → n ×
 *     ({@code int position}, answer), in index order (position: the key's place in the request);
 * <li>{@code 'Q'} ({@link #OP_QUERY}) {@code int length, length bytes} (a {@link io.sfclayer.layer.BoxQuery} spec, at most {@value #MAX_QUERY_BYTES}
 *     bytes) → batches {@code int count > 0, int bytes, the count records back to back} (a tile record
 *     is self-delimiting for its schema: the client decodes a batch from one buffer), ended by
 *     {@code int 0} or by an error answer;
 * <li>{@code 'C'} ({@link #OP_COUNT}) {@code int length, spec} → one answer of 8 bytes: the count (a long).
 * </ul>
 * An answer is {@code int length, bytes} (an encoded tile record), {@code -1} for a missing key, or
 * {@code -2, int length, UTF-8 "ErrorClass\tmessage"} for an error: {@link TileAnswers}, the framing a
 * Spark Connect client's look-ups are answered in too.
 *
 * <p>Hardened for a hostile local client: only loopback connections; the token compared in constant
 * time; a bounded pool of connection threads (a connection over the limit gets an error answer and is
 * closed, not queued); a connection that has not authenticated within {@code authTimeout}, or stalls
 * for {@code ioTimeout} in the middle of sending its request or while its answer is being written (a
 * client that never reads), is closed by a reaper. The timeout is for the client's I/O only: the
 * server's own work between reading a request and writing (each batch of) its answer — a count or a
 * sparse query over many files — has no deadline; a malformed request (unknown op, a key count or length out of
 * range) gets an error answer and its connection is closed; an error inside a request is answered
 * and the connection goes on; nothing that happens on a connection reaches the accept loop.
 * {@link #close()} closes every open connection.
 */
public final class LookupServer implements Closeable {
    public static final int DEFAULT_MAX_CONNECTIONS = 32;
    public static final long DEFAULT_AUTH_TIMEOUT_MILLIS = 3_000;
    public static final long DEFAULT_IO_TIMEOUT_MILLIS = 30_000;
    /** Most keys one 'M' request may carry (the Python client splits larger batches). */
    public static final int MAX_KEYS = 1 << 16;
    /** Most bytes of a query spec: 1 MiB, room for a query geometry (hex WKB) of some 30,000 vertices. */
    public static final int MAX_QUERY_BYTES = 1 << 20;
    public static final int TOKEN_BYTES = 16;
    /**
     * The requests' opcodes (the first byte of a request, an ASCII letter; the class comment gives each
     * one's form). The Python client ({@code sfclayer._lookup}) has the same table.
     */
    public static final int OP_BIND = 'A';
    public static final int OP_GET_ONE = 'G';
    public static final int OP_GET_MANY = 'M';
    public static final int OP_QUERY = 'Q';
    public static final int OP_COUNT = 'C';
    private static final long IDLE = Long.MAX_VALUE;
    private static final long REAPER_PERIOD_MILLIS = 100;
    private static final Logger LOG = LoggerFactory.getLogger(LookupServer.class);

    private static final SecureRandom RANDOM = new SecureRandom();

    /** A reader served here and the token that reaches it. */
    private static final class Registration {
        final TileSource<?> reader;
        final byte[] token;

        Registration(TileSource<?> reader, byte[] token) {
            this.reader = reader;
            this.token = token;
        }
    }

    private final List<Registration> readers = new CopyOnWriteArrayList<>();
    /** The token of the reader given to the constructor; null for a server started without one. */
    private final byte[] token;
    private final ServerSocket server;
    private final int maxConnections;
    private final long authTimeoutMillis;
    private final long ioTimeoutMillis;
    private final ThreadPoolExecutor pool;
    private final ScheduledExecutorService reaper;
    private final Set<Connection> open = ConcurrentHashMap.newKeySet();
    /** One permit per connection that may be open; taken before {@link #open}'s add, given back after its remove. */
    private final Semaphore slots;
    private final AtomicLong refused = new AtomicLong();
    private final AtomicLong reaped = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();
    private volatile boolean closed;
    /** Run once when no reader is registered and no connection open for idleNanos (see {@link #onIdle}). */
    private volatile Runnable idleAction;
    private volatile long idleNanos;
    private long idleSince = -1;

    public LookupServer(ValueReader reader) throws IOException {
        this(reader, DEFAULT_MAX_CONNECTIONS, DEFAULT_AUTH_TIMEOUT_MILLIS, DEFAULT_IO_TIMEOUT_MILLIS);
    }

    /**
     * @param maxConnections    connections served at once; more are refused with an error answer
     * @param authTimeoutMillis time a new connection has to send its token
     * @param ioTimeoutMillis   longest stall allowed inside a request or while writing an answer
     */
    public LookupServer(ValueReader reader, int maxConnections, long authTimeoutMillis, long ioTimeoutMillis)
            throws IOException {
        this(reader, InetAddress.getLoopbackAddress(), maxConnections, authTimeoutMillis, ioTimeoutMillis);
    }

    /**
     * @param reader a reader to serve (its token is {@link #token()}); null for none yet ({@link #register})
     * @param bind   a loopback address to listen on (e.g. ::1); nothing else is accepted
     */
    public LookupServer(ValueReader reader, InetAddress bind, int maxConnections, long authTimeoutMillis,
                        long ioTimeoutMillis) throws IOException {
        if (!bind.isLoopbackAddress()) {
            throw new SfcLayerException.InvalidArgument("look-up server: " + bind.getHostAddress()
                + " is not a loopback address; the look-up socket listens on loopback only");
        }
        if (maxConnections < 1 || authTimeoutMillis < 1 || ioTimeoutMillis < 1) {
            throw new SfcLayerException.InvalidArgument("look-up server: maxConnections, authTimeout and ioTimeout"
                + " must be positive, got " + maxConnections + ", " + authTimeoutMillis + " ms, " + ioTimeoutMillis + " ms");
        }
        this.maxConnections = maxConnections;
        this.authTimeoutMillis = authTimeoutMillis;
        this.ioTimeoutMillis = ioTimeoutMillis;
        this.token = reader == null ? null : register(reader);
        this.server = new ServerSocket();
        server.bind(new InetSocketAddress(bind, 0), 64);
        String name = "sfclayer-lookup-" + server.getLocalPort();
        AtomicInteger threads = new AtomicInteger();
        this.slots = new Semaphore(maxConnections);
        // Admission is the semaphore, released with the connection; the pool's threads are bounded by the
        // same number but may lag a moment behind it (a thread finishing its connection is not yet idle),
        // so the queue absorbs that lag instead of refusing a connection that a free slot admitted. A
        // connection thread outlives its connection by a second: pooled clients keep theirs open.
        this.pool = new ThreadPoolExecutor(maxConnections, maxConnections, 1, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), r -> {
            Thread t = new Thread(r, name + "-conn-" + threads.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        pool.allowCoreThreadTimeOut(true);
        this.reaper = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, name + "-reaper");
            t.setDaemon(true);
            return t;
        });
        reaper.scheduleWithFixedDelay(this::reap, REAPER_PERIOD_MILLIS, REAPER_PERIOD_MILLIS, TimeUnit.MILLISECONDS);
        Thread acceptor = new Thread(this::acceptLoop, name);
        acceptor.setDaemon(true);
        acceptor.start();
    }

    /** The address to connect to, as the server bound it ("127.0.0.1", or "::1" on an IPv6-only loopback). */
    public String host() {
        return server.getInetAddress().getHostAddress();
    }

    public int port() {
        return server.getLocalPort();
    }

    /** The token of the reader the server was started with. */
    public byte[] token() {
        if (token == null) {
            throw new SfcLayerException.InvalidArgument("this look-up server was started without a reader: "
                + "each registered reader has its own token");
        }
        return token.clone();
    }

    /** Serves {@code reader} too: connections that authenticate with the returned token reach it. */
    public byte[] register(TileSource<?> reader) {
        byte[] t = new byte[TOKEN_BYTES];
        synchronized (RANDOM) {
            RANDOM.nextBytes(t);
        }
        readers.add(new Registration(reader, t));
        return t.clone();
    }

    /**
     * Stops serving the reader registered with {@code token} (the reader stays open): its connections
     * in the middle of a request are closed; idle ones are unbound, for their client to bind to another
     * reader ('A') — a client's pool shares connections between layers, and closing one of its layers
     * must not cut a connection another layer is re-binding.
     */
    public void unregister(byte[] token) {
        for (Registration r : readers) {
            if (MessageDigest.isEqual(r.token, token)) {
                readers.remove(r);
                for (Connection c : open) {
                    boolean cut;
                    synchronized (c) {
                        if (c.registration != r) {
                            continue;
                        }
                        cut = c.busy;
                        c.registration = null;
                    }
                    if (cut) {
                        closeQuietly(c.socket);
                    }
                }
            }
        }
    }

    /** Readers served now. */
    public int registeredReaders() {
        return readers.size();
    }

    /** The registration whose token is {@code given}, comparing every token in constant time; or null. */
    private Registration find(byte[] given) {
        Registration found = null;
        for (Registration r : readers) {
            if (MessageDigest.isEqual(given, r.token) && found == null) {
                found = r;
            }
        }
        return found;
    }

    /** Whether {@link #close()} was called. */
    public boolean isClosed() {
        return closed;
    }

    /** Connections open now (authenticated or not). */
    public int openConnections() {
        return open.size();
    }

    /** Connections refused because all {@code maxConnections} were in use. */
    public long refusedConnections() {
        return refused.get();
    }

    /** Connections closed by a timeout (no token in time, a stall mid-request, an answer never read). */
    public long timedOutConnections() {
        return reaped.get();
    }

    /** Connections ended by a bad token, a malformed request or an unexpected error. */
    public long failedConnections() {
        return failed.get();
    }

    private void acceptLoop() {
        while (!closed) {
            Socket s;
            try {
                s = server.accept();
            } catch (IOException e) {
                if (closed) {
                    return;
                }
                LOG.warn("sfclayer look-up server on port {}: accept failed: {}", port(), e.toString());
                pause(); // e.g. out of file descriptors: don't spin
                continue;
            } catch (Throwable t) {
                LOG.error("sfclayer look-up server on port {}: accept failed", port(), t);
                pause();
                continue;
            }
            if (closed) { // accepted while close() ran (the listening socket closes once accept returns)
                closeQuietly(s);
                return;
            }
            try {
                Connection c = new Connection(s);
                if (!slots.tryAcquire()) {
                    refused.incrementAndGet();
                    c.refuse();
                    continue;
                }
                open.add(c);
                try {
                    pool.execute(c);
                } catch (RejectedExecutionException e) { // the pool is shut down: close() runs
                    open.remove(c);
                    slots.release();
                    closeQuietly(s);
                }
            } catch (Throwable t) {
                LOG.error("sfclayer look-up server on port {}: cannot serve a connection", port(), t);
                closeQuietly(s);
            }
        }
    }

    private static void pause() {
        try {
            Thread.sleep(50);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Runs {@code action} (on the reaper's thread) once the server has had no registered reader and no
     * open connection for {@code millis}: a shared server stops when its last layer is closed.
     */
    public void onIdle(long millis, Runnable action) {
        this.idleNanos = TimeUnit.MILLISECONDS.toNanos(millis);
        this.idleAction = action;
    }

    private void reap() {
        long now = System.nanoTime();
        Runnable action = idleAction;
        if (action != null) {
            if (!readers.isEmpty() || !open.isEmpty()) {
                idleSince = -1;
            } else if (idleSince < 0) {
                idleSince = now;
            } else if (now - idleSince > idleNanos) {
                idleSince = -1;
                try {
                    action.run();
                } catch (RuntimeException e) {
                    LOG.warn("sfclayer look-up server on port {}: idle action failed", port(), e);
                }
            }
        }
        for (Connection c : open) {
            if (now - c.deadline > 0 && c.deadline != IDLE) {
                reaped.incrementAndGet();
                LOG.debug("sfclayer look-up server on port {}: closing a connection that timed out ({})", port(), c.stage);
                closeQuietly(c.socket);
            }
        }
    }

    /** The client stopped reading or went away while an answer was being written. */
    private static final class ClientGone extends RuntimeException {
        private static final long serialVersionUID = 1L;

        ClientGone(IOException cause) {
            super(cause);
        }
    }

    /** A request that breaks the protocol: answered with an error, then the connection is closed. */
    private static final class ProtocolError extends Exception {
        private static final long serialVersionUID = 1L;

        ProtocolError(String message) {
            super(message);
        }
    }

    private final class Connection implements Runnable {
        final Socket socket;
        /** System.nanoTime() by which the current stage must progress; IDLE between requests. */
        volatile long deadline;
        volatile String stage = "authentication";
        /** The reader this connection's token reaches (after authentication). */
        /** The reader this connection's token reaches; null once unregistered. Under the connection's lock. */
        Registration registration;
        /** Serving a request (not 'A') for {@link #registration}. Under the connection's lock. */
        boolean busy;
        /** The reader of the request being served. */
        TileSource<?> reader;
        DataInputStream in;
        DataOutputStream out;

        Connection(Socket socket) {
            this.socket = socket;
            this.deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(authTimeoutMillis);
        }

        void refuse() {
            try (Socket s = socket) {
                DataOutputStream o = new DataOutputStream(s.getOutputStream());
                TileAnswers.writeError(o, SfcLayerException.class.getName(), "sfclayer look-up server busy: all " + maxConnections
                    + " connections are in use; retry later");
                o.flush();
            } catch (IOException ignored) {
                // the client is gone already
            }
        }

        /** Client I/O (reading a request, writing an answer): must progress within ioTimeout. */
        void progress(String what) {
            stage = what;
            deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ioTimeoutMillis);
        }

        /** The server's own work on a request: no deadline (a long count is not a stalled client). */
        void working(String what) {
            stage = what;
            deadline = IDLE;
        }

        /** Binds the connection to the reader of {@code given}; false if that reader was unregistered meanwhile. */
        private boolean bind(byte[] given) throws ProtocolError {
            Registration r = find(given);
            if (r == null) {
                throw new ProtocolError("wrong look-up token");
            }
            synchronized (this) {
                registration = r;
            }
            return readers.contains(r);
        }

        @Override
        public void run() {
            try {
                serve();
            } catch (ClientGone | IOException e) {
                LOG.debug("sfclayer look-up connection ended: {}", e.toString());
            } catch (ProtocolError e) {
                failed.incrementAndGet();
                LOG.info("sfclayer look-up server on port {}: closing a connection: {}", port(), e.getMessage());
                try {
                    TileAnswers.writeError(out, SfcLayerException.InvalidArgument.class.getName(), SfcLayerException.reason(e));
                    out.flush();
                } catch (IOException ignored) {
                    // closing anyway
                }
            } catch (Throwable t) {
                failed.incrementAndGet();
                LOG.warn("sfclayer look-up server on port {}: a connection failed", port(), t);
            } finally {
                closeQuietly(socket);
                open.remove(this);
                slots.release();
            }
        }

        private void serve() throws IOException, ProtocolError {
            socket.setTcpNoDelay(true);
            in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
            out = new DataOutputStream(new BufferedOutputStream(socket.getOutputStream(), 1 << 16));
            if (closed) {
                return;
            }
            byte[] given = new byte[TOKEN_BYTES];
            in.readFully(given);
            if (!bind(given)) {
                return; // unregistered meanwhile: its connections are closed
            }
            out.writeInt(0);
            out.flush();
            while (!closed) {
                stage = "idle";
                deadline = IDLE; // an authenticated, pooled connection may wait for its next request
                int op = in.read();
                if (op < 0) {
                    return;
                }
                progress("request '" + (char) op + "'");
                synchronized (this) {
                    busy = op != OP_BIND;
                    reader = registration == null ? null : registration.reader;
                }
                if (reader == null && op != OP_BIND) {
                    throw new ProtocolError("the layer this connection was bound to is closed (bind another with 'A')");
                }
                switch (op) {
                    case OP_BIND:
                        byte[] other = new byte[TOKEN_BYTES];
                        in.readFully(other);
                        if (!bind(other)) {
                            return;
                        }
                        out.writeInt(0);
                        break;
                    case OP_GET_ONE:
                        get(in.readInt(), in.readInt(), in.readLong());
                        break;
                    case OP_GET_MANY:
                        many();
                        break;
                    case OP_QUERY:
                        query(spec());
                        break;
                    case OP_COUNT:
                        count(spec());
                        break;
                    default:
                        throw new ProtocolError("unknown look-up request " + op);
                }
                progress("answer");
                synchronized (this) { // before the flush: once the client has its answer, its reader may go
                    busy = false;
                }
                out.flush();
            }
        }

        private void get(int col, int row, long time) throws IOException {
            byte[] record;
            working("look-up");
            try {
                record = reader.getOrNull(col, row, time);
            } catch (RuntimeException | IOException e) {
                progress("answer");
                TileAnswers.writeError(out, e);
                return;
            }
            progress("answer");
            TileAnswers.writeRecord(out, record);
        }

        private String spec() throws IOException, ProtocolError {
            int n = in.readInt();
            if (n < 0 || n > MAX_QUERY_BYTES) {
                throw new ProtocolError("a box query of " + n + " bytes: give 0 to " + MAX_QUERY_BYTES + " bytes");
            }
            byte[] b = new byte[n];
            in.readFully(b);
            return new String(b, StandardCharsets.UTF_8);
        }

        private void query(String spec) throws IOException {
            query(reader, spec);
        }

        private <Q> void query(TileSource<Q> source, String spec) throws IOException {
            working("query");
            try {
                source.query(source.boxQuery(spec), batch -> {
                    try {
                        progress("answer");
                        long bytes = 0;
                        for (byte[] r : batch) {
                            bytes += r.length;
                        }
                        out.writeInt(batch.size());
                        out.writeInt(Math.toIntExact(bytes)); // a batch holds at most ~1 MiB and one group
                        for (byte[] r : batch) {
                            out.write(r);
                        }
                        out.flush();
                        working("query");
                    } catch (IOException e) {
                        throw new ClientGone(e);
                    }
                });
            } catch (ClientGone e) {
                throw e;
            } catch (RuntimeException | IOException e) {
                progress("answer");
                TileAnswers.writeError(out, e); // in place of the next batch count: ends the answer
                return;
            }
            progress("answer");
            out.writeInt(0);
        }

        private void count(String spec) throws IOException {
            count(reader, spec);
        }

        private <Q> void count(TileSource<Q> source, String spec) throws IOException {
            long n;
            working("count");
            try {
                n = source.count(source.boxQuery(spec));
            } catch (RuntimeException | IOException e) {
                progress("answer");
                TileAnswers.writeError(out, e);
                return;
            }
            progress("answer");
            out.writeInt(8);
            out.writeLong(n);
        }

        private void many() throws IOException, ProtocolError {
            int n = in.readInt();
            if (n < 0 || n > MAX_KEYS) {
                throw new ProtocolError("a look-up request for " + n + " keys: give 0 to " + MAX_KEYS
                    + " keys per request");
            }
            int[] cols = new int[n];
            int[] rows = new int[n];
            long[] times = new long[n];
            for (int i = 0; i < n; i++) {
                cols[i] = in.readInt();
                rows[i] = in.readInt();
                times[i] = in.readLong();
            }
            working("look-ups");
            TileAnswers.writeMany(reader, cols, rows, times, out, new TileAnswers.Pacing() {
                @Override
                public void writing() {
                    progress("answer");
                }

                @Override
                public void working() {
                    Connection.this.working("look-ups");
                }
            });
        }
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException | RuntimeException ignored) {
            // closing anyway
        }
    }

    @Override
    public void close() {
        closed = true;
        try {
            server.close();
        } catch (IOException ignored) {
            // closing anyway
        }
        for (Connection c : open) {
            closeQuietly(c.socket);
        }
        pool.shutdownNow();
        reaper.shutdownNow();
    }
}
