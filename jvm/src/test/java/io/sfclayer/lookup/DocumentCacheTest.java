package io.sfclayer.lookup;

import io.sfclayer.SfcLayerException;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.layer.Layer;
import org.apache.commons.io.FileUtils;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

/**
 * The JVM's caches of version documents and their listings are keyed by the documents' content (issue
 * 26), not by path, length and modification time: bytes changed in place under the same length and
 * time are read again, and a copy of a layer shares the parsed document but lists its own files.
 */
public class DocumentCacheTest {
    @Rule
    public final TemporaryFolder tmp = new TemporaryFolder();

    private static File document(File layer) {
        return new File(new File(layer, "_sfclayer"), "v00000001.json");
    }

    @Test
    public void aDocumentChangedInPlaceUnderTheSameLengthAndTimeIsReadAgain() throws IOException {
        Configuration conf = new Configuration();
        File dir = tmp.newFolder("layer");
        TestLayers.write(conf, new Path(dir.getAbsolutePath()), 8, 4096);
        assertNotNull(Layer.open(conf, dir.getAbsolutePath()).metadata()); // parsed and cached

        File doc = document(dir);
        long mtime = doc.lastModified();
        String text = Files.readString(doc.toPath(), StandardCharsets.UTF_8);
        int at = text.indexOf("\"createdAt\" : \"") + "\"createdAt\" : \"".length();
        char digit = text.charAt(at + 3); // a digit of the year
        String changed = text.substring(0, at + 3) + (digit == '9' ? '0' : (char) (digit + 1)) + text.substring(at + 4);
        Files.writeString(doc.toPath(), changed, StandardCharsets.UTF_8);
        new File(doc.getParentFile(), "." + doc.getName() + ".crc").delete();
        assertTrue(doc.setLastModified(mtime));
        assertEquals(text.length(), doc.length());

        try {
            Layer.open(conf, dir.getAbsolutePath());
            fail("the changed document was not read: the cache answered by path, length and time");
        } catch (SfcLayerException.CorruptLayer e) {
            assertTrue(e.getMessage(), e.getMessage().contains(doc.getName()));
        }
    }

    @Test
    public void aCopySharesTheParsedDocumentButListsItsOwnFiles() throws IOException {
        Configuration conf = new Configuration();
        File dir = tmp.newFolder("original");
        TestLayers.write(conf, new Path(dir.getAbsolutePath()), 8, 4096);
        File copy = new File(tmp.getRoot(), "copy");
        FileUtils.copyDirectory(dir, copy);

        Layer a = Layer.open(conf, dir.getAbsolutePath());
        Layer b = Layer.open(conf, copy.getAbsolutePath());
        LayerMetadata md = a.metadata();
        assertSame("one parse for the same bytes", md, b.metadata());
        assertNotNull(md.digest);
        assertTrue(a.listing().path(0).toString(), a.listing().path(0).toString().contains("/original/"));
        assertTrue(b.listing().path(0).toString(), b.listing().path(0).toString().contains("/copy/"));
    }
}
