package io.sfclayer.format;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

import java.io.FileNotFoundException;
import java.nio.file.Files;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

/**
 * {@link ObjectStores#filesUnder}, what restore checks a version's files with and repair finds data files by: every
 * file at any depth, as Hadoop's recursive {@code listFiles} answers (the reference), without its per-file
 * {@code LocatedFileStatus} (on local files a child process per file; bench/RESULTS.md "Restore").
 */
public class FilesUnderTest {
    @Rule
    public TemporaryFolder tmp = new TemporaryFolder();

    private static Set<String> relative(Path dir, Iterable<? extends FileStatus> files) {
        String prefix = dir.toUri().getPath() + "/";
        Set<String> out = new TreeSet<>();
        for (FileStatus st : files) {
            String p = st.getPath().toUri().getPath();
            assertTrue(p + " under " + prefix, p.startsWith(prefix));
            assertTrue(p + " is a file", st.isFile());
            out.add(p.substring(prefix.length()));
        }
        return out;
    }

    @Test
    public void everyFileAtAnyDepthAsHadoopsRecursiveListingHasIt() throws Exception {
        java.nio.file.Path root = tmp.getRoot().toPath().resolve("data-w1");
        for (String f : List.of("0000000000000000-a/data", "0000000000000000-a/index", "0000000000000000-a/bloom",
                "00000000000000ff-b/data", "00000000000000ff-b/index", "deep/er/still/x", "top")) {
            java.nio.file.Path p = root.resolve(f);
            Files.createDirectories(p.getParent());
            Files.write(p, new byte[] {1, 2, 3});
        }
        Files.createDirectories(root.resolve("empty/too"));
        FileSystem fs = FileSystem.getLocal(new Configuration());
        Path dir = fs.makeQualified(new Path(root.toString()));
        List<FileStatus> got = ObjectStores.filesUnder(fs, dir);

        Set<String> reference = new TreeSet<>();
        org.apache.hadoop.fs.RemoteIterator<org.apache.hadoop.fs.LocatedFileStatus> it = fs.listFiles(dir, true);
        java.util.List<FileStatus> all = new java.util.ArrayList<>();
        while (it.hasNext()) {
            all.add(it.next());
        }
        reference.addAll(relative(dir, all));
        assertEquals(reference, relative(dir, got));
        assertEquals(7, reference.size());
    }

    @Test
    public void aMissingDirectoryIsFileNotFound() {
        FileSystem fs;
        try {
            fs = FileSystem.getLocal(new Configuration());
        } catch (java.io.IOException e) {
            throw new AssertionError(e);
        }
        Path gone = fs.makeQualified(new Path(tmp.getRoot().getAbsolutePath(), "data-gone"));
        assertThrows(FileNotFoundException.class, () -> ObjectStores.filesUnder(fs, gone));
    }
}
