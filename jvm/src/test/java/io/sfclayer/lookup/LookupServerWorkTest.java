package io.sfclayer.lookup;

import io.sfclayer.format.DataFileListing;
import io.sfclayer.layer.Layer;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.junit.BeforeClass;
import org.junit.ClassRule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

/**
 * The I/O timeout is for clients, not for the server's work: a count or a query whose files take
 * longer than it to open is answered, not closed as "stalled"; the handshake and re-binding a
 * connection to another reader ('A').
 */
public class LookupServerWorkTest {
    @ClassRule
    public static final TemporaryFolder TMP = new TemporaryFolder();
    static final int N = 64;
    static final long IO_TIMEOUT_MILLIS = 200;
    static String layerUri;
    static Configuration conf;

    @BeforeClass
    public static void writeLayer() throws IOException {
        conf = new Configuration();
        conf.set("fs.slowopen.impl", SlowOpenFileSystem.class.getName());
        conf.setBoolean("fs.slowopen.impl.disable.cache", true);
        String dir = TMP.newFolder("layer").getAbsolutePath();
        TestLayers.write(new Configuration(), new Path(dir), N, 8192);
        layerUri = "slowopen://" + dir;
    }

    /** A connection that has passed the handshake. */
    private static final class Client implements AutoCloseable {
        final Socket socket;
        final DataInputStream in;
        final DataOutputStream out;

        Client(LookupServer s, byte[] token) throws IOException {
            socket = new Socket(s.host(), s.port());
            socket.setSoTimeout(30_000);
            in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
            out = new DataOutputStream(socket.getOutputStream());
            out.write(token);
            out.flush();
            assertEquals("handshake", 0, in.readInt());
        }

        void spec(char op, String spec) throws IOException {
            byte[] b = spec.getBytes(StandardCharsets.UTF_8);
            out.write(op);
            out.writeInt(b.length);
            out.write(b);
            out.flush();
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }

    /** Holds the opens of file {@code file}'s directory at the gate for ten I/O timeouts, then lets them go. */
    private static Thread holdOpens(DataFileListing listing, int file) {
        SlowOpenFileSystem.gate = new CountDownLatch(1);
        SlowOpenFileSystem.waiting = new CountDownLatch(1);
        SlowOpenFileSystem.slowDir = listing.name(file);
        Thread t = new Thread(() -> {
            try {
                if (SlowOpenFileSystem.waiting.await(30, TimeUnit.SECONDS)) {
                    Thread.sleep(10 * IO_TIMEOUT_MILLIS);
                }
            } catch (InterruptedException ignored) {
                // let it go now
            } finally {
                SlowOpenFileSystem.gate.countDown();
            }
        });
        t.start();
        return t;
    }

    @Test
    public void countsAndQueriesLongerThanTheIoTimeoutAreAnswered() throws Exception {
        DataFileListing listing = Layer.open(conf, layerUri).listing();
        assertTrue("the test needs several files, got " + listing.size(), listing.size() >= 3);
        try (ValueReader reader = ValueReader.open(conf, layerUri, 16);
             LookupServer s = new LookupServer(reader, 4, 3_000, IO_TIMEOUT_MILLIS);
             Client c = new Client(s, s.token())) {
            Thread gate = holdOpens(listing, 1);
            try {
                c.spec('C', "keys=0,0," + (N - 1) + "," + (N - 1));
                assertEquals(8, c.in.readInt());
                assertEquals((long) N * N, c.in.readLong());
            } finally {
                gate.join();
            }
            // a query: the first batches go out, then the server works on a slow file before the next
            gate = holdOpens(listing, 2);
            long records = 0;
            try {
                c.spec('Q', "keys=0,0," + (N - 1) + "," + (N - 1));
                for (int count = c.in.readInt(); count != 0; count = c.in.readInt()) {
                    assertTrue("a batch, not an error: " + count, count > 0);
                    c.in.readFully(new byte[c.in.readInt()]);
                    records += count;
                }
            } finally {
                gate.join();
                SlowOpenFileSystem.slowDir = null;
            }
            assertEquals((long) N * N, records);
            assertEquals(0, s.timedOutConnections());
        }
    }

    @Test
    public void aConnectionMovesToAnotherReaderWithItsToken() throws Exception {
        try (ValueReader reader = ValueReader.open(conf, layerUri, 16);
             LookupServer s = new LookupServer(null, java.net.InetAddress.getLoopbackAddress(), 4, 3_000, 3_000)) {
            byte[] none = s.register(null);
            byte[] layer = s.register(reader);
            try (Client c = new Client(s, none)) {
                c.out.write('A');
                c.out.write(layer);
                c.out.write('G');
                c.out.writeInt(3);
                c.out.writeInt(5);
                c.out.writeLong(0);
                c.out.flush();
                assertEquals("re-bound", 0, c.in.readInt());
                byte[] record = new byte[c.in.readInt()];
                c.in.readFully(record);
                assertEquals(TestLayers.value(3, 5), ValueReaderTest.valueOf(record));
                c.out.write('A');
                c.out.write(new byte[LookupServer.TOKEN_BYTES]);
                c.out.flush();
                assertEquals(TileAnswers.ERROR, c.in.readInt());
                byte[] message = new byte[c.in.readInt()];
                c.in.readFully(message);
                assertTrue(new String(message, StandardCharsets.UTF_8).contains("wrong look-up token"));
                assertEquals("closed after a wrong token", -1, c.in.read());
            }
        }
    }
}
