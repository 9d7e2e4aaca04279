package io.sfclayer.format;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.FileContext;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Options;
import org.apache.hadoop.fs.Path;

import java.io.IOException;

/**
 * HDFS (and ADLS Gen2 with a hierarchical namespace): the document is written to
 * {@code .tmp-<writeId>.json} and renamed to the version document with {@code Rename.NONE}, which the
 * NameNode applies atomically and refuses when the name exists. A rename whose answer was lost (an RPC
 * timeout, a NameNode failover) may have been applied, or may still be: after a failure the caller
 * reads the version document back, and {@link #fence} deletes the temporary document so that a rename
 * still in flight finds nothing to move.
 */
final class CommitByRename extends CommitPublisher {
    private final Configuration conf;
    private final Path layer;

    CommitByRename(FileSystem fs, Configuration conf, Path layer) {
        super(fs);
        this.conf = conf;
        this.layer = layer;
    }

    @Override
    public boolean publish(Path target, byte[] document, String writeId) throws IOException {
        Path tmp = tempDocument(target, writeId);
        try (FSDataOutputStream out = fs.create(tmp, true)) {
            out.write(document);
        }
        try {
            FileContext.getFileContext(layer.toUri(), conf).rename(tmp, target, Options.Rename.NONE);
        } catch (FileAlreadyExistsException e) {
            deleteQuietly(tmp);
            return false;
        }
        return true;
    }

    @Override
    public boolean fence(Path target, String writeId) {
        return deleteQuietly(tempDocument(target, writeId));
    }

    @Override
    public String describe() {
        return "rename without overwrite";
    }
}
