package io.sfclayer.format;

import io.sfclayer.SfcLayerException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.security.AccessControlException;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.net.SocketTimeoutException;
import java.net.URI;

import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

/**
 * I/O errors are reported as what they are (issue 12): a permission error or a DataNode timeout is a
 * StorageError naming the file with the file system's exception as its cause; CorruptLayer is kept
 * for bad bytes.
 */
public class IoErrorsTest {
    @Rule
    public TemporaryFolder tmp = new TemporaryFolder();

    /** What the file system throws on open; set by each test. */
    static volatile IOException failure;
    /** The one file name whose open fails (null: every open); set by each test. */
    static volatile String failing;

    /** The local file system under the scheme "faulty", failing every open with {@link #failure}. */
    public static class FaultyFs extends RawLocalFileSystem {
        @Override
        public URI getUri() {
            return URI.create("faulty:///");
        }

        @Override
        public String getScheme() {
            return "faulty";
        }

        @Override
        public FSDataInputStream open(Path f, int bufferSize) throws IOException {
            if (failing == null || failing.equals(f.getName())) {
                throw failure;
            }
            return super.open(f, bufferSize);
        }
    }

    private static File mapFileDir(File root) {
        File[] found = root.listFiles();
        for (File f : found) {
            if (f.isDirectory() && f.getName().startsWith("part-r-")) return f;
            if (f.isDirectory()) {
                File inner = mapFileDir(f);
                if (inner != null) return inner;
            }
        }
        return null;
    }

    private File written() throws IOException {
        File dir = tmp.newFolder();
        DataFileWriter w = new DataFileWriter(new Configuration(), new Path(dir.toURI()), 0, 1 << 20, 4, "w");
        byte[] group = {2, 2, 4, 0};
        w.append(7, group, 0, group.length, 1);
        w.close();
        return mapFileDir(dir);
    }

    private static Configuration faultyConf() {
        Configuration conf = new Configuration();
        conf.set("fs.faulty.impl", FaultyFs.class.getName());
        conf.setBoolean("fs.faulty.impl.disable.cache", true);
        return conf;
    }

    private void assertStorageError(IOException cause) throws IOException {
        failure = cause;
        failing = null;
        File mapFile = written();
        Path p = new Path("faulty://" + mapFile.getAbsolutePath());
        try {
            new DataFileReader(faultyConf(), p).close();
            fail("opened");
        } catch (SfcLayerException.StorageError e) {
            assertTrue(e.getMessage(), e.getMessage().contains(mapFile.getAbsolutePath()));
            assertTrue(e.getMessage(), e.getMessage().contains(cause.getMessage()));
            Throwable c = e;
            while (c != null && c != cause) c = c.getCause();
            assertSame("the file system's exception is kept as the cause", cause, c);
        }
    }

    @Test
    public void aPermissionErrorIsAStorageErrorNamingTheFile() throws IOException {
        assertStorageError(new AccessControlException("Permission denied: user=alice, access=READ"));
    }

    @Test
    public void aDataNodeTimeoutIsAStorageErrorNamingTheFile() throws IOException {
        assertStorageError(new SocketTimeoutException("60000 millis timeout while waiting for channel to be ready"
            + " for read. ch : java.nio.channels.SocketChannel[connected local=/127.0.0.1:1 remote=/127.0.0.1:9866]"));
    }

    @Test
    public void badBytesAreCorruptLayer() throws IOException {
        File mapFile = written();
        try (RandomAccessFile f = new RandomAccessFile(new File(mapFile, "data"), "rw")) {
            f.seek(0);
            f.write(new byte[] {'X', 'Y', 'Z'}); // not a SequenceFile any more
        }
        new File(mapFile, ".data.crc").delete();
        try {
            new DataFileReader(new Configuration(), new Path(mapFile.toURI())).close();
            fail("opened");
        } catch (SfcLayerException.CorruptLayer e) {
            assertTrue(e.getMessage(), e.getMessage().contains(mapFile.getName()));
            assertTrue("cause kept", e.getCause() != null);
        }
    }

    @Test
    public void aMissingFileIsCorruptLayer() throws IOException {
        File mapFile = written();
        new File(mapFile, "data").delete();
        try {
            new DataFileReader(new Configuration(), new Path(mapFile.toURI())).close();
            fail("opened");
        } catch (SfcLayerException.CorruptLayer e) {
            assertTrue(e.getMessage(), e.getMessage().contains("missing"));
        }
    }

    @Test
    public void aTimeoutReadingTheIndexIsAStorageErrorNotADamagedIndex() throws IOException {
        SocketTimeoutException cause = new SocketTimeoutException("60000 millis timeout while waiting for channel");
        failure = cause;
        failing = "index";
        File mapFile = written();
        try {
            DataFileIndex.read(faultyConf(), new Path("faulty://" + mapFile.getAbsolutePath()));
            fail("read");
        } catch (SfcLayerException.StorageError e) {
            assertTrue(e.getMessage(), e.getMessage().contains(new File(mapFile, "index").getAbsolutePath()));
            assertSame(cause, e.getCause());
        }
    }

    @Test
    public void indexBytesThatAreNotASequenceFileAreABadIndex() throws IOException {
        File mapFile = written();
        try (RandomAccessFile f = new RandomAccessFile(new File(mapFile, "index"), "rw")) {
            f.seek(0);
            f.write(new byte[] {'X', 'Y', 'Z'});
        }
        new File(mapFile, ".index.crc").delete();
        Path index = new Path(new Path(mapFile.toURI()), "index");
        Configuration conf = new Configuration();
        try {
            DataFileIndex.read(conf, index.getFileSystem(conf), index, null, 0, Long.MAX_VALUE);
            fail("read");
        } catch (DataFileIndex.BadIndex e) {
            assertTrue(DataFileReader.failure("f", e) instanceof SfcLayerException.CorruptLayer);
        }
    }

    @Test
    public void failureSortsCausesByClassNotByMessage() {
        // Hadoop's words in a message are no evidence of damage: a file system may say anything
        assertTrue(DataFileReader.failure("f", new IOException("x is not a SequenceFile"))
            instanceof SfcLayerException.StorageError);
    }

    @Test
    public void failureSortsCauses() {
        assertTrue(DataFileReader.failure("f", new java.io.EOFException("end")) instanceof SfcLayerException.CorruptLayer);
        assertTrue(DataFileReader.failure("f", new org.apache.hadoop.fs.ChecksumException("crc", 3))
            instanceof SfcLayerException.CorruptLayer);
        assertTrue(DataFileReader.failure("f", new IOException("Could not obtain block"))
            instanceof SfcLayerException.StorageError);
    }
}
