package io.sfclayer.commit;

import io.sfclayer.curve.KeyBounds;
import io.sfclayer.curve.KeyIndex;
import io.sfclayer.format.DataFile;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.format.Transactions;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

/**
 * Idempotent commits (docs/FORMAT.md, "Application transactions"): a batch already in the layer is
 * refused inside the commit's decision, whether the version holding it is the one the write read or
 * one committed since (a concurrent duplicate); every version carries the newest batch of each
 * application forward, whatever other writers commit in between.
 */
public class TransactionsTest {
    @Rule
    public TemporaryFolder tmp = new TemporaryFolder();

    private VersionLog log() throws IOException {
        return new VersionLog(new Configuration(), new Path("file://" + tmp.getRoot().getAbsolutePath() + "/layer"));
    }

    private static DataFile file(String writeId, long first, long last) {
        return new DataFile("data-" + writeId + "/attempt-0", "part-r-00000-" + first, first, last, 1, 1, 100);
    }

    /** An append (or, with readVersion -1, a first write) by {@code writeId} adding one file at [lo, hi]. */
    private static LayerMetadata doc(String writeId, LayerMetadata base, long lo, long hi, Transactions.Txn txn) {
        LayerMetadata md = base == null ? new LayerMetadata() : base.copy();
        if (base == null) {
            md.keyIndex = KeyIndex.z(new KeyBounds(0, 0, 15, 15));
            md.valueSchemaJson = "{\"type\":\"struct\",\"fields\":[]}";
            md.tileSchemaJson = "{\"type\":\"record\",\"name\":\"Tile\",\"fields\":[]}";
            md.blockSize = 1 << 20;
            md.indexInterval = 4;
        }
        md.createdAt = "2026-01-01T00:00:00Z";
        md.writeId = writeId;
        md.dataDir = "data-" + writeId;
        md.operation = base == null ? "write" : "append";
        md.readVersion = base == null ? -1 : base.version;
        List<DataFile> files = new ArrayList<>(base == null ? List.of() : base.files);
        files.add(file(writeId, lo, hi));
        md.setFiles(files);
        md.removedFiles = new ArrayList<>();
        md.changedRanges = List.of(new long[] {lo, hi});
        md.txn = txn;
        return md;
    }

    private static LayerMetadata commit(VersionLog log, LayerMetadata md) throws IOException {
        return log.commit(md, List.of(md.files.get(md.files.size() - 1)));
    }

    @Test
    public void aBatchTheReadVersionHoldsIsRefused() throws IOException {
        VersionLog log = log();
        LayerMetadata v1 = commit(log, doc("w1", null, 0, 3, new Transactions.Txn("q", 0)));
        assertEquals(Map.of("q", 0L), log.read(1).transactions);
        assertEquals("q", log.read(1).txn.appId);
        Transactions.AlreadyCommitted e = assertThrows(Transactions.AlreadyCommitted.class,
            () -> commit(log, doc("w2", v1, 8, 11, new Transactions.Txn("q", 0))));
        assertEquals(1, e.newest.version);
        assertTrue(e.getMessage(), e.getMessage().contains("already holds batch 0 of application q"));
        assertEquals(1, log.versions().size());
        assertEquals(2, commit(log, doc("w3", v1, 8, 11, new Transactions.Txn("q", 1))).version);
    }

    @Test
    public void aConcurrentDuplicateLosesInsideTheDecision() throws IOException {
        // both read version 1 and wrote batch 1 of q into disjoint ranges (which would rebase): the
        // second finds the first's batch in the version committed since and publishes nothing
        VersionLog log = log();
        LayerMetadata v1 = commit(log, doc("w1", null, 0, 3, new Transactions.Txn("q", 0)));
        LayerMetadata a = doc("a", v1, 4, 7, new Transactions.Txn("q", 1));
        LayerMetadata b = doc("b", v1, 12, 15, new Transactions.Txn("q", 1));
        assertEquals(2, commit(log, a).version);
        assertThrows(Transactions.AlreadyCommitted.class, () -> commit(log, b));
        assertEquals(2, log.versions().size());
        // another application's batch 1 rebases over it as any append does
        LayerMetadata c = doc("c", v1, 12, 15, new Transactions.Txn("other", 1));
        LayerMetadata v3 = commit(log, c);
        assertEquals(3, v3.version);
        assertEquals(Map.of("q", 1L, "other", 1L), log.read(3).transactions);
    }

    @Test
    public void pairsAreCarriedThroughOtherWritersVersions() throws IOException {
        VersionLog log = log();
        LayerMetadata v1 = commit(log, doc("w1", null, 0, 3, new Transactions.Txn("q", 7)));
        LayerMetadata v2 = commit(log, doc("w2", v1, 4, 5, null)); // a plain append on v1
        assertNull(log.read(2).txn);
        assertEquals(Map.of("q", 7L), log.read(2).transactions);
        // a plain append based on v1 that rebases over v2 keeps them too
        commit(log, doc("w3", v1, 8, 9, null));
        assertEquals(Map.of("q", 7L), log.read(3).transactions);
        // the newest document alone says batch 7 is in: older documents may be vacuumed
        assertTrue(Transactions.holds(log.current(), new Transactions.Txn("q", 7)));
        assertTrue(Transactions.holds(log.current(), new Transactions.Txn("q", 3)));
        assertEquals(-1, Transactions.lastVersion(log.current(), "r"));
        assertEquals(3, v2.version + 1);
    }

    @Test
    public void aLayerWithoutTransactionsWritesNoField() throws IOException {
        VersionLog log = log();
        commit(log, doc("w1", null, 0, 3, null));
        String json = new String(java.nio.file.Files.readAllBytes(java.nio.file.Paths.get(tmp.getRoot().getAbsolutePath(),
            "layer", VersionLog.LOG_DIR, VersionLog.versionFileName(1))), java.nio.charset.StandardCharsets.UTF_8);
        assertTrue(!json.contains("transaction"));
    }

    @Test
    public void badOptionsAreNamed() {
        io.sfclayer.SfcLayerException e = assertThrows(io.sfclayer.SfcLayerException.InvalidArgument.class,
            () -> new Transactions.Txn("q", -1));
        assertTrue(e.getMessage(), e.getMessage().contains("txnVersion"));
        e = assertThrows(io.sfclayer.SfcLayerException.InvalidArgument.class,
            () -> io.sfclayer.layer.LayerWriteOptions.parse(Map.of("txnAppId", "q")));
        assertTrue(e.getMessage(), e.getMessage().contains("txnAppId and txnVersion go together"));
        e = assertThrows(io.sfclayer.SfcLayerException.InvalidArgument.class,
            () -> io.sfclayer.layer.LayerWriteOptions.parse(Map.of("txnAppId", "q", "txnVersion", "x")));
        assertTrue(e.getMessage(), e.getMessage().contains("option txnVersion: 'x'"));
    }
}
