package io.sfclayer.spark;

import io.sfclayer.commit.FaultyCommitFs;
import io.sfclayer.commit.VersionLog;
import io.sfclayer.curve.TimeText;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.layer.LayerVerifier;
import io.sfclayer.layer.Vacuum;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.After;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

import java.io.File;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

/**
 * Issue 35's three ways committed data was lost, each reproduced through the real write path (Spark
 * local) on local files that hook a call ({@link FaultyCommitFs}): a vacuum racing a commit, a
 * rebased commit keeping the stamp taken before its retry, a java.lang.Error after the publish.
 * After each, every version the log holds must read whole and verify clean.
 */
public class CommittedDataLossTest {
    private static SparkSession spark;

    @Rule
    public TemporaryFolder tmp = new TemporaryFolder();

    @BeforeClass
    public static void start() {
        spark = SparkSession.builder().master("local[2]").appName("committed-data-loss")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.hadoop.fs.file.impl", FaultyCommitFs.Local.class.getName())
            .config("spark.hadoop.fs.file.impl.disable.cache", "true")
            .getOrCreate();
    }

    @AfterClass
    public static void stop() {
        spark.stop();
    }

    @After
    public void reset() {
        FaultyCommitFs.reset();
    }

    private static Configuration conf() {
        return spark.sparkContext().hadoopConfiguration();
    }

    /** Tiles (col, row) in [c0, c0 + 4) x [0, 4) with value v = col * 100 + row + add. */
    private static Dataset<Row> tiles(int c0, int add) {
        return spark.range(16).selectExpr("int(id % 4) + " + c0 + " AS col", "int(id DIV 4) AS row",
            "(int(id % 4) + " + c0 + ") * 100 + int(id DIV 4) + " + add + " AS v");
    }

    private static void write(Dataset<Row> d, String path, String mode) {
        d.write().format(SfcLayerSource.class.getName()).mode(mode).option("bounds", "0,0,15,15")
            .option("partitions", "2").save(path);
    }

    /** Sum of v over version {@code version} of the layer (every tile read). */
    private static long sum(String path, long version) {
        Row r = spark.read().format(SfcLayerSource.class.getName()).option("versionAsOf", version).load(path)
            .selectExpr("count(*)", "sum(v)").first();
        return r.getLong(0) * 1_000_000L + r.getLong(1);
    }

    private static long expected(int tiles, long sumV) {
        return tiles * 1_000_000L + sumV;
    }

    /** Sum of v over the 16 tiles {@link #tiles}(c0, add) writes. */
    private static long tileSum(int c0, int add) {
        long s = 0;
        for (int c = c0; c < c0 + 4; c++) {
            for (int r = 0; r < 4; r++) {
                s += c * 100L + r + add;
            }
        }
        return s;
    }

    /** Every version in the log verifies clean (no file it lists is missing or damaged). */
    private static void assertAllVersionsVerify(String path) throws IOException {
        for (long v : new VersionLog(conf(), new Path(path)).versions()) {
            String report = LayerVerifier.run(conf(), path, v);
            assertTrue("version " + v + ": " + report, report.contains("\"problems\":[]"));
        }
    }

    /**
     * Loss 1. An append whose files were written before the vacuum started commits between the
     * vacuum's reading of the history and its walk of the data directories (and removes its pending
     * marker): the vacuum must not delete the files of the version just committed.
     */
    @Test
    public void aVacuumRacingACommitKeepsTheNewVersionsFiles() throws Exception {
        File dir = new File(tmp.getRoot(), "layer");
        String path = dir.getAbsolutePath();
        write(tiles(0, 0), path, "error");
        CountDownLatch stalled = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        FaultyCommitFs.beforePublish = () -> {
            stalled.countDown();
            await(release);
        };
        AtomicReference<Throwable> appendFailed = new AtomicReference<>();
        Thread append = new Thread(() -> {
            try {
                write(tiles(8, 0), path, "append"); // a long job: its files are older than the vacuum
            } catch (Throwable t) {
                appendFailed.set(t);
            }
        });
        append.start();
        assertTrue("the append reached its publish", stalled.await(120, TimeUnit.SECONDS));
        Thread.sleep(20); // its files are older than the vacuum's horizon (retention 0)
        // the vacuum reads the history (version 1), then, as it lists the layer, the append commits
        FaultyCommitFs.listHookDir = path;
        FaultyCommitFs.beforeList = () -> {
            release.countDown();
            try {
                append.join(120_000);
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        };
        Vacuum.run(conf(), path, 0, false, false);
        append.join();
        if (appendFailed.get() != null) {
            throw new AssertionError("the append failed", appendFailed.get());
        }
        LayerMetadata newest = new VersionLog(conf(), new Path(path)).current();
        assertEquals("the append committed during the vacuum", 2, newest.version);
        assertEquals(expected(32, tileSum(0, 0) + tileSum(8, 0)), sum(path, 2));
        assertAllVersionsVerify(path);
        Vacuum.run(conf(), path, 0, false, false); // a vacuum afterwards still keeps the newest version whole
        assertEquals(expected(32, tileSum(0, 0) + tileSum(8, 0)), sum(path, 2));
    }

    /**
     * Loss 2. A commit that loses its version number to another writer is rebased and published as
     * the next one: its stamp must be taken then, after the version it follows, so stamps increase
     * with the version and {@code as_of} the other writer's time does not return it.
     */
    @Test
    public void aRebasedCommitIsStampedAfterTheVersionItFollows() throws Exception {
        String path = new File(tmp.getRoot(), "layer").getAbsolutePath();
        write(tiles(0, 0), path, "error");
        // the first append is about to publish version 2 when the second one takes it
        FaultyCommitFs.beforePublish = () -> {
            sleep(30);
            write(tiles(8, 0), path, "append");
        };
        write(tiles(4, 0), path, "append");
        VersionLog log = new VersionLog(conf(), new Path(path));
        List<LayerMetadata> h = log.history();
        assertEquals(3, h.size());
        long previous = Long.MIN_VALUE;
        for (LayerMetadata md : h) {
            long at = TimeText.parseInstantMicros("createdAt", md.createdAt);
            assertTrue("version " + md.version + " at " + md.createdAt + " is stamped after the one before", at > previous);
            previous = at;
        }
        long v2At = Math.floorDiv(TimeText.parseInstantMicros("createdAt", h.get(1).createdAt), 1000L);
        assertEquals("as_of version 2's time is version 2", 2, log.asOf(v2At).version);
        assertEquals(expected(32, tileSum(0, 0) + tileSum(8, 0)), sum(path, 2));
        assertEquals(expected(48, tileSum(0, 0) + tileSum(4, 0) + tileSum(8, 0)), sum(path, 3));
    }

    /**
     * Loss 3. A java.lang.Error thrown by a filesystem call after the version document is published
     * (writing the hint {@code _last_version}) reaches the write's cleanup: the published version's
     * data directory must stay.
     */
    @Test
    public void anErrorAfterThePublishKeepsTheData() throws Exception {
        String path = new File(tmp.getRoot(), "layer").getAbsolutePath();
        write(tiles(0, 0), path, "error");
        FaultyCommitFs.inject(FaultyCommitFs.Fault.HINT_ERROR);
        Throwable t = assertThrows(Throwable.class, () -> write(tiles(4, 7), path, "append"));
        Throwable error = t;
        while (error != null && !(error instanceof NoClassDefFoundError)) {
            error = error.getCause();
        }
        assertNotNull("the injected Error reaches the caller: " + t, error);
        FaultyCommitFs.reset();
        LayerMetadata newest = new VersionLog(conf(), new Path(path)).current();
        assertEquals("the append was published", 2, newest.version);
        assertTrue("its data directory is kept", new File(path, newest.dataDir).isDirectory());
        assertEquals(expected(32, tileSum(0, 0) + tileSum(4, 7)), sum(path, 2));
        assertAllVersionsVerify(path);
        write(tiles(8, 0), path, "append"); // the next write works
        assertEquals(expected(48, tileSum(0, 0) + tileSum(4, 7) + tileSum(8, 0)), sum(path, 3));
    }

    /**
     * Two vacuums at once: the second removes (between the first's listing and its walk) the data
     * directories the first listed. Neither fails (no raw FileNotFoundException), the layer reads whole.
     */
    @Test
    public void twoVacuumsAtOnceTolerateEachOther() throws Exception {
        String path = new File(tmp.getRoot(), "layer").getAbsolutePath();
        write(tiles(0, 0), path, "error");
        write(tiles(4, 0), path, "append");
        write(tiles(8, 1), path, "overwrite"); // versions 1 and 2 and their files go
        Thread.sleep(20);
        FaultyCommitFs.listHookDir = path;
        FaultyCommitFs.beforeList = () -> vacuumNow(path);
        Vacuum.run(conf(), path, 0, false, false);
        assertEquals(List.of(3L), new VersionLog(conf(), new Path(path)).versions());
        assertEquals(expected(16, tileSum(8, 1)), sum(path, 3));
        assertAllVersionsVerify(path);
        File[] dirs = new File(path).listFiles((d, n) -> n.startsWith("data-"));
        assertEquals("only the newest version's data directory is left", 1, dirs.length);
    }

    /**
     * Two vacuums and a commit (issue 35, RacesTest seed 596104770): vacuum A lists versions 1..2; as it
     * reads version 2's document, an append publishes version 3 and vacuum B (retention 0) removes
     * versions 1 and 2. A's newest listed version is gone although the layer is not: A must read the
     * log again (it failed with LayerNotFound "has no version 2") and keep everything version 3 reads.
     */
    @Test
    public void aVacuumWhoseNewestListedVersionIsVacuumedMeanwhileReadsTheLogAgain() throws Exception {
        String path = new File(tmp.getRoot(), "layer").getAbsolutePath();
        write(tiles(0, 0), path, "error");
        write(tiles(4, 0), path, "overwrite"); // version 1's files are garbage once version 1 goes
        Thread.sleep(20);
        FaultyCommitFs.openHookName = VersionLog.versionFileName(2);
        FaultyCommitFs.beforeOpen = () -> { // vacuum A has listed 1..2 and read version 1
            write(tiles(8, 0), path, "append");
            sleep(20);
            vacuumNow(path); // vacuum B
        };
        Map<String, Object> a = Vacuum.run(conf(), path, 0, false, false);
        assertNull("the hook ran: vacuum A read version 2 after the append and vacuum B", FaultyCommitFs.beforeOpen);
        assertEquals("vacuum B removed versions 1 and 2, A none", List.of(), a.get("versionsRemoved"));
        assertEquals(List.of(3L), new VersionLog(conf(), new Path(path)).versions());
        assertEquals(expected(32, tileSum(4, 0) + tileSum(8, 0)), sum(path, 3));
        assertAllVersionsVerify(path);
        File[] dirs = new File(path).listFiles((d, n) -> n.startsWith("data-"));
        assertEquals("version 1's data directory went, versions 2's and 3's stay", 2, dirs.length);
    }

    /**
     * A commit lists the log (version 1 the newest) and is about to publish version 2; meanwhile two appends
     * publish versions 2 and 3 and a vacuum (retention 0) runs. Version 2 is not the newest: the vacuum removed
     * its document, and the commit's exclusive create of version 2 then succeeded: a second version 2 below the
     * newest, its writer told it committed, its tiles in no newer version (RacesTest: two appends acknowledged
     * as one version). The vacuum now keeps every version published since a commit in progress began
     * (CommitMarker): the publish finds version 2 taken and the commit rebases on version 3.
     */
    @Test
    public void aVacuumNeverFreesAVersionNumberACommitInProgressMayPublish() throws Exception {
        String path = new File(tmp.getRoot(), "layer").getAbsolutePath();
        write(tiles(0, 0), path, "error");
        FaultyCommitFs.beforePublish = () -> { // the commit below has listed the log: version 1 is the newest
            write(tiles(8, 0), path, "append");
            write(tiles(12, 0), path, "append");
            sleep(20);
            vacuumNow(path);
        };
        write(tiles(4, 0), path, "append");
        assertNull("the hook ran", FaultyCommitFs.beforePublish);
        List<Long> versions = new VersionLog(conf(), new Path(path)).versions();
        long newest = versions.get(versions.size() - 1);
        assertEquals("the commit rebased on version 3: " + versions, 4, newest);
        assertEquals("the newest version holds every acknowledged append",
            expected(64, tileSum(0, 0) + tileSum(4, 0) + tileSum(8, 0) + tileSum(12, 0)), sum(path, newest));
        assertEquals("no commit marker is left", 0, new File(path, "_sfclayer")
            .listFiles((d, n) -> n.startsWith(io.sfclayer.commit.CommitMarker.PREFIX)).length);
        assertAllVersionsVerify(path);
    }

    /**
     * A reader pinned on a version that a vacuum removes between its stat of a data file and its open of it (the
     * race model's read-back hit this): LayerNotFound saying the version was removed by vacuum, as when the stat
     * already misses it; it was a StorageError ("cannot open data file"), which reads as a storage fault.
     */
    @Test
    public void aDataFileVacuumedBetweenItsStatAndItsOpenSaysTheVersionWasVacuumed() throws Exception {
        vacuumedAtTheOpenOf("data");
    }

    /**
     * The same at the open of the data file's index: a copy-on-write append folding deltas of a version a vacuum
     * removed while it ran failed with CorruptLayer "index file is damaged: it is missing" and advice to repair (race
     * model, RacesTest seed 277228045); the append now sees LayerNotFound and reports ConcurrentUpdate.
     */
    @Test
    public void anIndexVacuumedBeforeItsOpenSaysTheVersionWasVacuumed() throws Exception {
        vacuumedAtTheOpenOf("index");
    }

    private void vacuumedAtTheOpenOf(String name) throws Exception {
        String path = new File(tmp.getRoot(), "layer-" + name).getAbsolutePath();
        write(tiles(0, 0), path, "error");
        write(tiles(4, 0), path, "overwrite"); // version 1's files are garbage once version 1 goes
        Thread.sleep(20);
        try (io.sfclayer.lookup.ValueReader reader = io.sfclayer.lookup.ValueReader.open(conf(), path, 8, 1, -1)) {
            FaultyCommitFs.openHookName = name;
            FaultyCommitFs.beforeOpen = () -> vacuumNow(path);
            io.sfclayer.SfcLayerException.LayerNotFound e = assertThrows(
                io.sfclayer.SfcLayerException.LayerNotFound.class, () -> reader.getOrNull(0, 0, 0L));
            assertNull("the vacuum ran at the data file's open", FaultyCommitFs.beforeOpen);
            assertTrue(e.getMessage(), e.getMessage().contains("version 1 of layer")
                && e.getMessage().contains("was removed by vacuum while it was being read"));
        }
        assertEquals(List.of(2L), new VersionLog(conf(), new Path(path)).versions());
        assertAllVersionsVerify(path);
    }

    /**
     * Durability on HDFS-type streams (issue 35): every data file, index, bloom sidecar and temporary
     * version document a version references is hsync'ed before it is closed (hdfs://faulty/ streams
     * declare hsync and record it); local files are forced through FileChannel (Durable), which no
     * filesystem call shows.
     */
    @Test
    public void filesAVersionReferencesAreSyncedBeforeTheyAreClosed() throws Exception {
        Configuration c = conf();
        c.set("fs.hdfs.impl", FaultyCommitFs.Hdfs.class.getName());
        c.setBoolean("fs.hdfs.impl.disable.cache", true);
        c.set("fs.AbstractFileSystem.hdfs.impl", FaultyCommitFs.RenameAfs.class.getName());
        try {
            FaultyCommitFs.SYNC_EVENTS.clear();
            String local = new File(tmp.getRoot(), "synced").getAbsolutePath();
            String path = "hdfs://faulty" + local;
            spark.range(16).selectExpr("int(id % 4) AS col", "int(id DIV 4) AS row", "id AS v").write()
                .format(SfcLayerSource.class.getName()).option("bounds", "0,0,15,15").option("partitions", "2")
                .option("bloomFilter", "true").save(path);
            List<String> events = new java.util.ArrayList<>(FaultyCommitFs.SYNC_EVENTS);
            int checked = 0;
            for (String e : events) {
                if (!e.startsWith("close ")) {
                    continue;
                }
                String p = e.substring("close ".length());
                String name = new File(p).getName();
                if (name.equals("data") || name.equals("index") || name.equals("bloom") || name.startsWith(".tmp-")) {
                    int closedAt = events.indexOf(e);
                    assertTrue(p + " is synced before it is closed: " + events,
                        events.subList(0, closedAt).contains("hsync " + p));
                    checked++;
                }
            }
            assertTrue("data files and the document were written: " + events, checked >= 4);
            assertEquals(expected(16, 120), sum(path, 1));
        } finally {
            c.unset("fs.hdfs.impl");
            c.unset("fs.hdfs.impl.disable.cache");
            c.unset("fs.AbstractFileSystem.hdfs.impl");
        }
    }

    private static void await(CountDownLatch l) {
        try {
            l.await(120, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A vacuum with no retention, run from a filesystem hook (which cannot throw IOException). */
    private static void vacuumNow(String path) {
        try {
            Vacuum.run(conf(), path, 0, false, false);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }
}
