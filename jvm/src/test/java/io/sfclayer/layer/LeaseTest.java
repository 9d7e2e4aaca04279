package io.sfclayer.layer;

import io.sfclayer.SfcLayerException;
import io.sfclayer.commit.CommitPublisher;
import io.sfclayer.commit.FaultyCommitFs;
import org.apache.hadoop.conf.Configuration;
import org.junit.After;
import org.junit.Before;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.List;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

/**
 * A pyramid run's lease takes the commit's primitive on each kind of store ({@link FaultyCommitFs}'s
 * schemes: local hard link, HDFS rename, an object store's conditional create, a store with neither):
 * of two jobs exactly one holds it, a lost answer is decided by reading it back, and a store that
 * cannot create atomically is refused unless a single writer is declared.
 */
public class LeaseTest {
    private static final List<String> SCHEMES = List.of("file", "hdfs", "objfs");

    @Rule
    public TemporaryFolder tmp = new TemporaryFolder();

    private final Configuration conf = FaultyCommitFs.conf();

    @Before
    public void setUp() {
        FaultyCommitFs.reset();
        FaultyCommitFs.ObjectStore.resetOnce();
    }

    @After
    public void tearDown() {
        FaultyCommitFs.reset();
    }

    /** A lease path in a fresh layer directory under {@code scheme}, and the local file behind it. */
    private String leasePath(String scheme, File layer) {
        String prefix = scheme.equals("file") ? "file://" : scheme + "://faulty";
        return prefix + new File(layer, "_pyramid/.lease").getAbsolutePath();
    }

    private String fresh(String scheme) throws IOException {
        return leasePath(scheme, tmp.newFolder());
    }

    @Test
    public void ofTwoJobsExactlyOneHoldsTheLeaseOnEveryStore() throws IOException {
        for (String scheme : SCHEMES) {
            String lease = fresh(scheme);
            // the other job takes it between this one's decision to take it and its publish
            String[] other = new String[1];
            FaultyCommitFs.beforePublish = () -> other[0] = take(lease, "the other run");
            SfcLayerException.ConcurrentUpdate e = assertThrows(scheme, SfcLayerException.ConcurrentUpdate.class,
                () -> Lease.take(conf, lease, "this run"));
            assertTrue(scheme + ": " + e.getMessage(), e.getMessage().contains(".lease")
                && e.getMessage().contains("the other run") && e.getMessage().contains("nothing was changed"));
            assertFalse(scheme, Lease.release(conf, lease, "not the holder's token"));
            assertTrue(scheme, Lease.release(conf, lease, other[0]));
            String mine = Lease.take(conf, lease, "this run");
            assertThrows(scheme, SfcLayerException.ConcurrentUpdate.class, () -> Lease.take(conf, lease, "a third run"));
            assertTrue(scheme, Lease.release(conf, lease, mine));
            File dir = new File(lease.substring(lease.indexOf("/", scheme.length() + 3))).getParentFile();
            String[] left = dir.list((d, n) -> !n.endsWith(".crc"));
            assertEquals(scheme + ": no lease and no temporary document left", 0, left.length);
        }
    }

    @Test
    public void aLostAnswerToTheConditionalCreateIsOurLease() throws IOException {
        String lease = fresh("objfs");
        FaultyCommitFs.inject(FaultyCommitFs.Fault.CLOSE_AFTER_RETRY_412);
        String token = Lease.take(conf, lease, "this run");
        FaultyCommitFs.reset();
        assertTrue(token, token.split("\n")[0].endsWith("this run"));
        assertThrows(SfcLayerException.ConcurrentUpdate.class, () -> Lease.take(conf, lease, "another run"));
        assertTrue(Lease.release(conf, lease, token));
    }

    @Test
    public void aConditionalCreateThatKeepsFailingHasAnUnknownOutcomeNamingTheLease() throws IOException {
        String lease = fresh("objfs");
        FaultyCommitFs.inject(FaultyCommitFs.Fault.CLOSE_BEFORE_ALWAYS);
        SfcLayerException.CommitStateUnknown e = assertThrows(SfcLayerException.CommitStateUnknown.class,
            () -> Lease.take(conf, lease, "build a pyramid"));
        assertTrue(e.getMessage(), e.getMessage().contains(".lease") && e.getMessage().contains("delete"));
    }

    @Test
    public void aStoreWithoutAtomicCreateIsRefusedUnlessASingleWriterIsDeclared() throws IOException {
        String lease = fresh("plainfs");
        SfcLayerException.InvalidArgument e = assertThrows(SfcLayerException.InvalidArgument.class,
            () -> Lease.take(conf, lease, "build a pyramid"));
        assertTrue(e.getMessage(), e.getMessage().contains(CommitPublisher.SINGLE_WRITER));
        conf.setBoolean(CommitPublisher.SINGLE_WRITER, true);
        String token = Lease.take(conf, lease, "build a pyramid");
        assertTrue(Lease.release(conf, lease, token));
    }

    /** Local files whose deletes of a lease fail {@link #failures} more times (a fault at the release). */
    public static class FailingReleaseFs extends org.apache.hadoop.fs.LocalFileSystem {
        static volatile int failures;

        @Override
        public boolean delete(org.apache.hadoop.fs.Path f, boolean recursive) throws IOException {
            if (f.getName().equals(".lease") && failures > 0) {
                failures--;
                throw new IOException("injected: cannot delete " + f);
            }
            return super.delete(f, recursive);
        }
    }

    /** Local files whose next {@code failures} deletes of a lease fail. */
    private Configuration failingRelease(int failures) {
        FailingReleaseFs.failures = failures;
        Configuration c = new Configuration(false);
        c.set("fs.file.impl", FailingReleaseFs.class.getName());
        c.setBoolean("fs.file.impl.disable.cache", true);
        return c;
    }

    /** A lease path (no scheme: local files) in a fresh layer directory. */
    private String localLease() throws IOException {
        return new File(tmp.newFolder(), "_pyramid/.lease").getAbsolutePath();
    }

    /** The heartbeat file of the lease {@code token} holds. */
    private static File heartbeatOf(String lease, String token) {
        return new File(new File(lease).getParentFile(), ".lease-" + token.split(" ", 2)[0] + ".alive");
    }

    private static String[] leftIn(String lease) {
        return new File(lease).getParentFile().list((d, n) -> !n.endsWith(".crc"));
    }

    @Test
    public void aReleaseFailingOnceIsRetried() throws IOException {
        Configuration c = failingRelease(1);
        String lease = localLease();
        String token = Lease.take(c, lease, "build a pyramid");
        assertTrue(Lease.release(c, lease, token));
        assertEquals("the fault happened", 0, FailingReleaseFs.failures);
        assertEquals("neither the lease nor its heartbeat is left", 0, leftIn(lease).length);
    }

    @Test
    public void aLeaseAFailedReleaseLeftIsReportedAsLeftByAFinishedRun() throws IOException {
        Configuration c = failingRelease(2);
        String lease = localLease();
        String token = Lease.take(c, lease, "build a pyramid");
        SfcLayerException.StorageError e = assertThrows(SfcLayerException.StorageError.class,
            () -> Lease.release(c, lease, token));
        assertTrue(e.getMessage(), e.getMessage().contains(lease) && e.getMessage().contains("delete")
            && e.getMessage().contains("owner " + ProcessHandle.current().pid() + "@"));
        assertEquals("the lease alone is left (its heartbeat deleted first)", List.of(".lease"),
            List.of(leftIn(lease)));
        SfcLayerException.ConcurrentUpdate next = assertThrows(SfcLayerException.ConcurrentUpdate.class,
            () -> Lease.take(c, lease, "the next run"));
        assertTrue(next.getMessage(), next.getMessage().contains("left by a run that finished or died")
            && next.getMessage().contains("owner " + ProcessHandle.current().pid() + "@")
            && next.getMessage().contains("delete " + new org.apache.hadoop.fs.Path("file://" + lease)));
        new File(lease).delete();
        assertTrue(Lease.release(c, lease, Lease.take(c, lease, "the next run")));
    }

    @Test
    public void aLiveHoldersHeartbeatKeepsItsLeaseLive() throws Exception {
        Configuration c = new Configuration(false);
        c.setLong(Lease.HEARTBEAT_MS, 50);
        String lease = localLease();
        String token = Lease.take(c, lease, "build a pyramid");
        File beat = heartbeatOf(lease, token);
        assertTrue(beat.setLastModified(System.currentTimeMillis() - 60_000));
        Thread.sleep(500);
        assertTrue("the holder touched its heartbeat", System.currentTimeMillis() - beat.lastModified() < 5_000);
        c.setLong(Lease.STALE_MS, 10_000);
        SfcLayerException.ConcurrentUpdate e = assertThrows(SfcLayerException.ConcurrentUpdate.class,
            () -> Lease.take(c, lease, "another run"));
        assertTrue(e.getMessage(), e.getMessage().contains("held by a live run")
            && e.getMessage().contains("retry when it is done"));
        assertTrue(Lease.release(c, lease, token));
        assertEquals(0, leftIn(lease).length);
    }

    @Test
    public void aLeaseWhoseHeartbeatStoppedOrWhoseProcessIsGoneIsReportedDead() throws Exception {
        Configuration c = new Configuration(false);
        c.setLong(Lease.HEARTBEAT_MS, 3_600_000); // no beat during the test
        String lease = localLease();
        String token = Lease.take(c, lease, "build a pyramid");
        File beat = heartbeatOf(lease, token);
        assertTrue(beat.setLastModified(System.currentTimeMillis() - 3_600_000));
        c.setLong(Lease.STALE_MS, 60_000);
        SfcLayerException.ConcurrentUpdate stale = assertThrows(SfcLayerException.ConcurrentUpdate.class,
            () -> Lease.take(c, lease, "another run"));
        assertTrue(stale.getMessage(), stale.getMessage().contains("left by a run that died")
            && stale.getMessage().contains("last heartbeat was 3600 s ago") && stale.getMessage().contains(beat.getName()));
        assertTrue(Lease.release(c, lease, token));

        // a lease whose owner is a process of this host that has exited (its heartbeat fresh)
        Process p = new ProcessBuilder("true").start();
        p.waitFor();
        String host = java.net.InetAddress.getLocalHost().getHostName();
        new File(lease).getParentFile().mkdirs();
        Files.writeString(new File(lease).toPath(), "0000 2026-01-01T00:00:00Z build a pyramid\nowner " + p.pid() + "@"
            + host + "\nheartbeat .lease-0000.alive every 30000 ms\n");
        Files.writeString(new File(new File(lease).getParentFile(), ".lease-0000.alive").toPath(), "0000");
        SfcLayerException.ConcurrentUpdate gone = assertThrows(SfcLayerException.ConcurrentUpdate.class,
            () -> Lease.take(c, lease, "another run"));
        assertTrue(gone.getMessage(), gone.getMessage().contains("process " + p.pid() + "@" + host
            + " no longer runs on this host"));
    }

    private String take(String lease, String what) {
        try {
            return Lease.take(conf, lease, what);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
