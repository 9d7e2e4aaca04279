package io.sfclayer.lookup;

import org.junit.Test;

import java.net.InetAddress;
import java.net.Socket;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

/** A shared server's idle action (LookupSessions stops the server with it) runs only with no reader and no connection. */
public class LookupServerIdleTest {
    private static LookupServer server() throws Exception {
        return new LookupServer(null, InetAddress.getLoopbackAddress(), 4, 3_000, 3_000);
    }

    @Test
    public void idleActionRunsOnlyWhenNoReaderIsRegisteredAndNoConnectionOpen() throws Exception {
        try (LookupServer s = server()) {
            CountDownLatch idle = new CountDownLatch(1);
            byte[] token = s.register(null);
            s.onIdle(50, idle::countDown);
            assertFalse("a registered reader keeps the server busy", idle.await(600, TimeUnit.MILLISECONDS));
            try (Socket c = new Socket(s.host(), s.port())) {
                s.unregister(token);
                assertEquals(0, s.registeredReaders());
                assertFalse("an open connection keeps the server busy", idle.await(600, TimeUnit.MILLISECONDS));
            }
            assertTrue("idle once the reader and the connection are gone", idle.await(5, TimeUnit.SECONDS));
        }
    }

    @Test
    public void readersHaveTokensOfTheirOwn() throws Exception {
        try (LookupServer s = server()) {
            byte[] a = s.register(null);
            byte[] b = s.register(null);
            assertEquals(LookupServer.TOKEN_BYTES, a.length);
            assertFalse(java.util.Arrays.equals(a, b));
            assertEquals(2, s.registeredReaders());
            s.unregister(a);
            s.unregister(a); // twice: nothing more
            assertEquals(1, s.registeredReaders());
        }
    }
}
