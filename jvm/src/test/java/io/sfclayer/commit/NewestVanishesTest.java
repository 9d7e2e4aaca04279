package io.sfclayer.commit;

import io.sfclayer.curve.KeyBounds;
import io.sfclayer.curve.KeyIndex;
import io.sfclayer.format.DataFile;
import io.sfclayer.format.LayerMetadata;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.junit.After;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.List;

import static org.junit.Assert.assertEquals;

/**
 * The newest version a reader found is gone when it reads it: a writer committed a newer one and a
 * vacuum removed the found one in between (the race model, issue 35: an append failed with
 * LayerNotFound "has no version 7" while version 8 was there). The reader must answer the newer one.
 */
public class NewestVanishesTest {
    @Rule
    public TemporaryFolder tmp = new TemporaryFolder();

    /** Local files where opening the document named {@link #trigger} first runs {@link #meanwhile}, once. */
    public static class MeanwhileFs extends LocalFileSystem {
        static volatile String trigger;
        static volatile Runnable meanwhile;

        @Override
        public FSDataInputStream open(Path f, int bufferSize) throws IOException {
            Runnable r = meanwhile;
            if (r != null && f.getName().equals(trigger)) {
                meanwhile = null;
                r.run();
            }
            return super.open(f, bufferSize);
        }
    }

    @After
    public void reset() {
        MeanwhileFs.meanwhile = null;
    }

    private static LayerMetadata doc(String writeId, long readVersion, List<DataFile> files) {
        LayerMetadata md = new LayerMetadata();
        md.keyIndex = KeyIndex.z(new KeyBounds(0, 0, 15, 15));
        md.valueSchemaJson = "{\"type\":\"struct\",\"fields\":[]}";
        md.tileSchemaJson = "{\"type\":\"record\",\"name\":\"Tile\",\"fields\":[]}";
        md.createdAt = "2026-01-01T00:00:00Z";
        md.writeId = writeId;
        md.dataDir = "data-" + writeId;
        md.blockSize = 1 << 20;
        md.indexInterval = 4;
        md.operation = readVersion < 0 ? "write" : "append";
        md.readVersion = readVersion;
        md.setFiles(files);
        return md;
    }

    @Test
    public void theNewestFoundThenVacuumedIsLookedForAgain() throws IOException {
        File dir = tmp.newFolder("layer");
        Configuration conf = new Configuration();
        conf.set("fs.file.impl", MeanwhileFs.class.getName());
        conf.setBoolean("fs.file.impl.disable.cache", true);
        VersionLog log = new VersionLog(conf, new Path("file://" + dir.getAbsolutePath()));
        DataFile f1 = new DataFile("data-w1/attempt-0", "part-r-00000-0", 0, 15, 1, 1, 100);
        DataFile f2 = new DataFile("data-w2/attempt-0", "part-r-00000-32", 32, 47, 1, 1, 100);
        log.commit(doc("w1", -1, List.of(f1)), List.of(f1));
        log.commit(doc("w2", 1, List.of(f1, f2)), List.of(f2));
        // version 2 is set aside: the log is as a reader finds it before the writer's commit
        java.nio.file.Path logDir = dir.toPath().resolve(VersionLog.LOG_DIR);
        java.nio.file.Path v1 = logDir.resolve(VersionLog.versionFileName(1));
        java.nio.file.Path v2 = logDir.resolve(VersionLog.versionFileName(2));
        java.nio.file.Path aside = tmp.getRoot().toPath().resolve("v2.json");
        Files.move(v2, aside);
        Files.writeString(logDir.resolve(VersionLog.HINT_FILE), "1");
        // as the reader opens version 1, the writer publishes version 2 and a vacuum removes version 1
        MeanwhileFs.trigger = v1.getFileName().toString();
        MeanwhileFs.meanwhile = () -> {
            try {
                Files.move(aside, v2, StandardCopyOption.ATOMIC_MOVE);
                Files.delete(v1);
                Files.deleteIfExists(logDir.resolve("." + v1.getFileName() + ".crc"));
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        };
        LayerMetadata newest = log.current();
        assertEquals(2, newest.version);
        assertEquals("w2", newest.writeId);
    }

    @Test
    public void aCommitWhoseNewerVersionWasVacuumedIsRefusedAndPublishesNothing() throws IOException {
        File dir = tmp.newFolder("layer");
        Configuration conf = new Configuration();
        conf.set("fs.file.impl", MeanwhileFs.class.getName());
        conf.setBoolean("fs.file.impl.disable.cache", true);
        VersionLog log = new VersionLog(conf, new Path("file://" + dir.getAbsolutePath()));
        DataFile f1 = new DataFile("data-w1/attempt-0", "part-r-00000-0", 0, 15, 1, 1, 100);
        DataFile f2 = new DataFile("data-w2/attempt-0", "part-r-00000-32", 32, 47, 1, 1, 100);
        DataFile f3 = new DataFile("data-w3/attempt-0", "part-r-00000-64", 64, 79, 1, 1, 100);
        DataFile f4 = new DataFile("data-w4/attempt-0", "part-r-00000-96", 96, 111, 1, 1, 100);
        log.commit(doc("w1", -1, List.of(f1)), List.of(f1));
        log.commit(doc("w2", 1, List.of(f1, f2)), List.of(f2));
        log.commit(doc("w3", 2, List.of(f1, f2, f3)), List.of(f3));
        // w4 read version 1; as its commit reads version 2 (committed since), a vacuum removes it
        java.nio.file.Path logDir = dir.toPath().resolve(VersionLog.LOG_DIR);
        java.nio.file.Path v2 = logDir.resolve(VersionLog.versionFileName(2));
        MeanwhileFs.trigger = v2.getFileName().toString();
        MeanwhileFs.meanwhile = () -> {
            try {
                Files.delete(v2);
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        };
        io.sfclayer.SfcLayerException.ConcurrentUpdate e = org.junit.Assert.assertThrows(
            io.sfclayer.SfcLayerException.ConcurrentUpdate.class,
            () -> log.commit(doc("w4", 1, List.of(f1, f4)), List.of(f4)));
        org.junit.Assert.assertTrue(e.getMessage(), e.getMessage().contains("removed by a vacuum")
            && e.getMessage().contains("nothing was published"));
        assertEquals(List.of(1L, 3L), log.versions());
        assertEquals("w3", log.current().writeId);
    }

    @Test
    public void timeTravelWhoseVersionsAreVacuumedMidScanLooksAgain() throws IOException {
        File dir = tmp.newFolder("layer");
        Configuration conf = new Configuration();
        conf.set("fs.file.impl", MeanwhileFs.class.getName());
        conf.setBoolean("fs.file.impl.disable.cache", true);
        VersionLog log = new VersionLog(conf, new Path("file://" + dir.getAbsolutePath()));
        DataFile f1 = new DataFile("data-w1/attempt-0", "part-r-00000-0", 0, 15, 1, 1, 100);
        DataFile f2 = new DataFile("data-w2/attempt-0", "part-r-00000-32", 32, 47, 1, 1, 100);
        DataFile f3 = new DataFile("data-w3/attempt-0", "part-r-00000-64", 64, 79, 1, 1, 100);
        log.commit(doc("w1", -1, List.of(f1)), List.of(f1));
        log.commit(doc("w2", 1, List.of(f1, f2)), List.of(f2));
        LayerMetadata third = log.commit(doc("w3", 2, List.of(f1, f2, f3)), List.of(f3));
        long at3 = Math.floorDiv(io.sfclayer.curve.TimeText.parseInstantMicros("createdAt", third.createdAt), 1000L);
        // as the scan opens version 2, a vacuum removes versions 1 and 2 (in that order)
        java.nio.file.Path logDir = dir.toPath().resolve(VersionLog.LOG_DIR);
        MeanwhileFs.trigger = VersionLog.versionFileName(2);
        MeanwhileFs.meanwhile = () -> {
            try {
                for (int v = 1; v <= 2; v++) {
                    Files.delete(logDir.resolve(VersionLog.versionFileName(v)));
                    Files.deleteIfExists(logDir.resolve("." + VersionLog.versionFileName(v) + ".crc"));
                }
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        };
        assertEquals("w3", log.asOf(at3 + 1000).writeId);
    }
}
