package io.sfclayer.lookup;

import io.sfclayer.SfcLayerException;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.Closeable;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;

/**
 * A loopback socket that serves a {@link ValueReader}'s look-ups to a local client (sfclayer's Python
 * package) without py4j. py4j moves a tile as base64 text in several socket writes, and Nagle's
 * algorithm against the client's delayed ACKs then costs ~40 ms per tile larger than a few KiB; here a
 * tile is one length-prefixed write on a TCP_NODELAY socket.
 *
 * <p>Protocol (big-endian): the client first sends the 16-byte token ({@link #token()}); then
 * requests: {@code 'G' int col, int row, long timeMicros} → one response; {@code 'M' int n, n × (int col,
 * int row, long time)} → n responses. A response is {@code int length, bytes} (the encoded tile record),
 * {@code -1} for a missing key, or {@code -2, int length, UTF-8 "ErrorClass\tmessage"} for an error.
 * Only loopback connections are accepted.
 */
public final class LookupServer implements Closeable {
    private final ValueReader reader;
    private final ServerSocket server;
    private final byte[] token = new byte[16];
    private volatile boolean closed;

    public LookupServer(ValueReader reader) throws IOException {
        this.reader = reader;
        new SecureRandom().nextBytes(token);
        this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread acceptor = new Thread(this::acceptLoop, "sfclayer-lookup-" + server.getLocalPort());
        acceptor.setDaemon(true);
        acceptor.start();
    }

    public int port() {
        return server.getLocalPort();
    }

    public byte[] token() {
        return token.clone();
    }

    private void acceptLoop() {
        while (!closed) {
            try {
                Socket s = server.accept();
                Thread t = new Thread(() -> serve(s), "sfclayer-lookup-conn");
                t.setDaemon(true);
                t.start();
            } catch (IOException e) {
                if (closed) {
                    return;
                }
            }
        }
    }

    private void serve(Socket s) {
        try (Socket socket = s) {
            socket.setTcpNoDelay(true);
            DataInputStream in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
            DataOutputStream out = new DataOutputStream(new BufferedOutputStream(socket.getOutputStream(), 1 << 16));
            byte[] given = new byte[16];
            in.readFully(given);
            if (!MessageDigest.isEqual(given, token)) {
                return;
            }
            while (!closed) {
                int op;
                try {
                    op = in.readUnsignedByte();
                } catch (EOFException e) {
                    return;
                }
                if (op == 'G') {
                    answer(out, in.readInt(), in.readInt(), in.readLong());
                } else if (op == 'M') {
                    int n = in.readInt();
                    byte[] keys = new byte[Math.multiplyExact(n, 16)];
                    in.readFully(keys);
                    byte[] packed;
                    try {
                        packed = reader.getMany(keys);
                    } catch (RuntimeException | IOException e) {
                        for (int i = 0; i < n; i++) {
                            error(out, e);
                        }
                        out.flush();
                        continue;
                    }
                    out.write(packed);
                } else {
                    return; // not our protocol: drop the connection
                }
                out.flush();
            }
        } catch (IOException e) {
            // the client went away
        }
    }

    private void answer(DataOutputStream out, int col, int row, long time) throws IOException {
        byte[] record;
        try {
            record = reader.getOrNull(col, row, time);
        } catch (RuntimeException | IOException e) {
            error(out, e);
            return;
        }
        if (record == null) {
            out.writeInt(-1);
        } else {
            out.writeInt(record.length);
            out.write(record);
        }
    }

    private static void error(DataOutputStream out, Exception e) throws IOException {
        String cls = e instanceof SfcLayerException ? e.getClass().getName() : SfcLayerException.class.getName();
        byte[] msg = (cls + "\t" + e.getMessage()).getBytes(StandardCharsets.UTF_8);
        out.writeInt(-2);
        out.writeInt(msg.length);
        out.write(msg);
    }

    @Override
    public void close() {
        closed = true;
        try {
            server.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }
}
