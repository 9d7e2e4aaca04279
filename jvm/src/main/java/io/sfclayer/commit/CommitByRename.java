package io.sfclayer.commit;

import org.apache.hadoop.conf.Configuration;
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
    private final FileContext files;

    CommitByRename(FileSystem fs, Configuration conf, Path layer) throws IOException {
        super(fs);
        this.files = FileContext.getFileContext(layer.toUri(), conf);
    }

    @Override
    public boolean publish(Path target, byte[] document, String writeId) throws IOException {
        return publishThroughTemp(target, document, writeId, (tmp, to) -> files.rename(tmp, to, Options.Rename.NONE));
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
