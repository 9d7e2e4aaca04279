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
        assertTrue(token.endsWith("this run"));
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

    private String take(String lease, String what) {
        try {
            return Lease.take(conf, lease, what);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
