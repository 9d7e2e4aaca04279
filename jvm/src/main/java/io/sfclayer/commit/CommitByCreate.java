package io.sfclayer.commit;

import io.sfclayer.format.ObjectStores;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

import java.io.IOException;

/**
 * Object stores: the version document is created directly under its final name, without a temporary
 * document (a rename there is a copy). {@code conditional}: S3A's conditional create
 * ({@code createFile(p).overwrite(false).must("fs.option.create.conditional.overwrite", true)}: a PUT
 * with {@code If-None-Match: *}, checked by the store at {@code close()}; a loser gets HTTP 412,
 * S3A's {@code RemoteFileChangedException}). Otherwise {@code create(p, false)}: atomic on GCS
 * ({@code ifGenerationMatch=0}); elsewhere used only when the user declared a single writer.
 * A PUT that failed on the client may still land at the store, so a failed attempt cannot be fenced:
 * the caller reads the document back and otherwise reports the outcome unknown.
 */
final class CommitByCreate extends CommitPublisher {
    private final boolean conditional;
    private final String description;

    CommitByCreate(FileSystem fs, boolean conditional, String description) {
        super(fs);
        this.conditional = conditional;
        this.description = description;
    }

    @Override
    public boolean publish(Path target, byte[] document, String writeId) throws IOException {
        FSDataOutputStream out;
        try {
            if (conditional) {
                // createFile returns a raw builder: build() is typed Object
                // no probes first (S3A's performance create): the store itself refuses a taken name
                out = (FSDataOutputStream) fs.createFile(target).overwrite(false).must(CONDITIONAL_CREATE, true)
                    .opt(ObjectStores.S3A_CREATE_PERFORMANCE, true).build();
            } else {
                out = fs.create(target, false);
            }
        } catch (IOException e) {
            if (nameTaken(e)) {
                return false;
            }
            throw e;
        }
        try {
            out.write(document);
        } catch (IOException | RuntimeException e) {
            abort(out); // closing would publish a partial document
            throw e;
        }
        try {
            out.close();
        } catch (IOException e) {
            if (nameTaken(e)) {
                return false;
            }
            throw e;
        }
        return true;
    }

    private static void abort(FSDataOutputStream out) {
        try {
            out.abort();
        } catch (RuntimeException e) {
            // not abortable: the stream is left unclosed rather than publishing a partial document
        }
    }

    @Override
    public void prepare(Path logDir) {
        // a create makes its parents; a mkdirs on S3A is probes plus a marker PUT
    }

    @Override
    public boolean fence(Path target, String writeId) {
        return false;
    }

    @Override
    public String describe() {
        return description;
    }
}
