package io.sfclayer.format;

import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
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
        Path tmp = tempDocument(target, writeId);
        try (FSDataOutputStream out = fs.create(tmp, true)) {
            out.write(document);
        }
        try {
            Files.createLink(Paths.get(target.toUri().getPath()), Paths.get(tmp.toUri().getPath()));
        } catch (FileAlreadyExistsException e) {
            deleteQuietly(tmp);
            return false;
        }
        deleteQuietly(tmp); // published: a leftover temporary document is vacuum's, never an error
        return true;
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
