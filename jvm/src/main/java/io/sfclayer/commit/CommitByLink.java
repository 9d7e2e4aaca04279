package io.sfclayer.commit;

import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Paths;

/**
 * Local files: the document is written to {@code .tmp-<writeId>.json}, then hard-linked as the
 * version document. Creating a link fails atomically when the name exists (the local filesystem's
 * rename would replace it). The link is made in this process, so nothing of a failed attempt can
 * land later.
 */
final class CommitByLink extends CommitPublisher {
    CommitByLink(FileSystem fs) {
        super(fs);
    }

    @Override
    public boolean publish(Path target, byte[] document, String writeId) throws IOException {
        boolean published = publishThroughTemp(target, document, writeId,
            (tmp, to) -> Files.createLink(Paths.get(to.toUri().getPath()), Paths.get(tmp.toUri().getPath())));
        if (published) {
            deleteQuietly(tempDocument(target, writeId)); // a leftover temporary document is vacuum's, never an error
        }
        return published;
    }

    @Override
    public boolean fence(Path target, String writeId) {
        deleteQuietly(tempDocument(target, writeId));
        return true;
    }

    @Override
    public String describe() {
        return "hard link";
    }
}
