package io.sfclayer.commit;

import io.sfclayer.SfcLayerException;
import io.sfclayer.format.Durable;
import io.sfclayer.format.ObjectStores;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

import java.io.IOException;
import java.util.Locale;
import java.util.Set;

/**
 * How a version document is published on one filesystem: made visible under its final name
 * {@code _sfclayer/v<N>.json} only if no document has that name yet, atomically (docs/FORMAT.md,
 * section 6). The primitive is a capability of the filesystem, so it is chosen once per layer path
 * by {@link #forLayer}: a hard link on local files, a rename without overwrite on HDFS and ADLS Gen2
 * ({@link CommitByRename}), a conditional create on S3A with conditional writes and on GCS
 * ({@link CommitByCreate}). A store without any of these is refused for writes unless the user
 * declares a single writer ({@link #SINGLE_WRITER}).
 *
 * <p>Contract of {@link #publish}: {@code true} when the document is published; {@code false} when
 * another document holds the name (which may still be ours, if an earlier attempt's answer was lost:
 * the caller reads it back); an exception when anything else happened, after which the document may or
 * may not be published: the caller reads it back, and if it is absent asks {@link #fence} to make sure
 * the failed attempt cannot publish it later. After a successful publish nothing here throws.
 * {@link #publishDecided} is that caller's side, in one place for every document published this way
 * (version documents, a pyramid run's lease).
 */
public abstract class CommitPublisher {
    /**
     * Hadoop setting (or the write option {@code singleWriter}) declaring that only one writer at a
     * time writes the layer: commits on a store without atomic create-if-absent are then allowed (a
     * plain create without overwrite), at the user's word. Spark: {@code spark.hadoop.sfclayer.singleWriter=true}.
     */
    public static final String SINGLE_WRITER = "sfclayer.singleWriter";
    /** The path capability (and builder option) of S3A's conditional create (Hadoop 3.4.2+/3.5, HADOOP-19256). */
    public static final String CONDITIONAL_CREATE = "fs.option.create.conditional.overwrite";
    /** Filesystems whose rename without overwrite is atomic on the server. */
    private static final Set<String> ATOMIC_RENAME = Set.of("hdfs", "viewfs", "webhdfs", "swebhdfs", "abfs", "abfss");
    /** Filesystems whose create without overwrite is an atomic create-if-absent (GCS: ifGenerationMatch=0). */
    private static final Set<String> ATOMIC_CREATE = Set.of("gs");

    protected final FileSystem fs;

    protected CommitPublisher(FileSystem fs) {
        this.fs = fs;
    }

    /** Publishes {@code document} as {@code target} unless a document holds that name (see the class comment). */
    public abstract boolean publish(Path target, byte[] document, String writeId) throws IOException;

    /**
     * Called after {@link #publish} threw and {@code target} was found absent: makes sure that
     * attempt can no longer publish (e.g. deletes the temporary document a delayed rename would
     * move). True when it is sure; false when it cannot tell (the commit's outcome is then unknown).
     */
    public abstract boolean fence(Path target, String writeId);

    /** Makes the log directory where the primitive needs it (not on object stores: a create makes its parents). */
    public void prepare(Path logDir) throws IOException {
        fs.mkdirs(logDir);
    }

    /** A short name for messages and FORMAT.md: "hard link", "rename", "conditional create", ... */
    public abstract String describe();

    /**
     * The publisher for the layer at {@code layer} (qualified, on {@code fs}). Checks the S3A capability
     * first (its rename and plain create are not atomic), then the scheme. Refuses, naming the
     * setting, a store that cannot publish atomically unless {@link #SINGLE_WRITER} is set.
     */
    public static CommitPublisher forLayer(FileSystem fs, Configuration conf, Path layer) throws IOException {
        String scheme = fs.getScheme().toLowerCase(Locale.ROOT);
        if ("file".equals(scheme)) {
            return new CommitByLink(fs);
        }
        if (hasCapability(fs, layer, CONDITIONAL_CREATE)) {
            return new CommitByCreate(fs, true, "conditional create (If-None-Match)");
        }
        if (ATOMIC_RENAME.contains(scheme)) {
            return new CommitByRename(fs, conf, layer);
        }
        if (ATOMIC_CREATE.contains(scheme)) {
            return new CommitByCreate(fs, false, "create without overwrite (atomic on " + scheme + ")");
        }
        if (conf.getBoolean(SINGLE_WRITER, false)) {
            return new CommitByCreate(fs, false, "create without overwrite (single writer declared by "
                + SINGLE_WRITER + ")");
        }
        String how = scheme.startsWith("s3")
            ? "on S3A, conditional writes must be on (fs.s3a.create.conditional.enabled=true, the default of"
              + " Hadoop 3.4.2+, on a store that supports If-None-Match)"
            : "no atomic create-if-absent or no-overwrite rename is known for scheme '" + scheme + "'";
        throw new SfcLayerException.InvalidArgument("layer " + layer + ": this filesystem cannot publish a version"
            + " document atomically, so two writers could both commit one version and one commit would be lost ("
            + how + "); if only one writer at a time ever writes this layer, say so with the write option"
            + " singleWriter=true or the Hadoop setting " + SINGLE_WRITER + "=true");
    }

    private static boolean hasCapability(FileSystem fs, Path p, String capability) {
        try {
            return fs.hasPathCapability(p, capability);
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    /** What a caller of {@link #publishDecided} knows of its documents. */
    public interface Documents {
        /** The identity (a writeId, a lease's token) of the document at {@code p}; null when there is none. */
        String idAt(Path p) throws IOException;

        /** The error for an outcome that cannot be decided: the document may or may not be published. */
        SfcLayerException unknown(Path target, String why, Throwable cause);
    }

    /**
     * One attempt to publish {@code document} (whose identity is {@code id}) as {@code target}, its
     * outcome decided by reading the name back: true when it is published (by this attempt, or by an
     * earlier one whose answer was lost), false when another document holds the name. When publishing
     * fails, the identity found at the name decides: ours is published, another's is a lost race;
     * absent, the attempt is fenced off (not published: StorageError) or, when it cannot be, tried once
     * more; what cannot be decided is {@link Documents#unknown}.
     */
    public final boolean publishDecided(Path target, byte[] document, String id, Documents docs) throws IOException {
        boolean published;
        try {
            published = publish(target, document, id);
        } catch (IOException | RuntimeException e) {
            return afterFailure(target, document, id, docs, e);
        }
        if (published) {
            return true;
        }
        // the name is taken: by another writer, or by us if an earlier answer was lost (S3: a retried PUT got 412)
        String holder;
        try {
            holder = docs.idAt(target);
        } catch (IOException | RuntimeException e) {
            throw docs.unknown(target, "exists but could not be read back", e);
        }
        return id.equals(holder);
    }

    private boolean afterFailure(Path target, byte[] document, String id, Documents docs, Exception failure)
            throws IOException {
        String holder;
        try {
            holder = docs.idAt(target);
            if (holder == null && fence(target, id)) {
                holder = docs.idAt(target); // a rename may have landed before the fence
                if (holder == null) {
                    throw new SfcLayerException.StorageError("could not publish " + target + " (" + describe() + "): "
                        + failure + "; nothing was published", failure);
                }
            } else if (holder == null) {
                // cannot fence (an object store's PUT): try once more; 412 or success then decide
                boolean again = publish(target, document, id);
                holder = again ? id : docs.idAt(target);
            }
        } catch (SfcLayerException.StorageError e) {
            throw e;
        } catch (IOException | RuntimeException e) {
            e.addSuppressed(failure);
            throw docs.unknown(target, "could not be published (" + failure + ") and reading it back failed too", e);
        }
        if (holder == null) {
            throw docs.unknown(target, "could not be published (" + failure + ") and is absent", failure);
        }
        return id.equals(holder);
    }

    /** Moves a written temporary document to its final name, failing when the name is taken. */
    protected interface Move {
        void move(Path tmp, Path target) throws IOException;
    }

    /**
     * The publish of primitives that move a complete temporary document into place (a link, a rename):
     * writes {@code document} as the write's temporary document beside {@code target}, then moves it;
     * false (the temporary document deleted) when the name was taken.
     */
    protected final boolean publishThroughTemp(Path target, byte[] document, String writeId, Move move)
            throws IOException {
        Path tmp = tempDocument(target, writeId);
        // the document's bytes are on stable storage before any name links to them (Durable)
        try (FSDataOutputStream out = Durable.onClose(fs, tmp, ObjectStores.create(fs, tmp, true))) {
            out.write(document);
        }
        try {
            move.move(tmp, target);
        } catch (IOException e) {
            if (nameTaken(e)) {
                deleteQuietly(tmp);
                return false;
            }
            throw e;
        }
        try {
            Durable.directory(fs, target.getParent()); // the new name itself (local files)
        } catch (IOException | RuntimeException e) {
            // published: nothing may throw now; the name is durable at the directory's next sync
        }
        return true;
    }

    /** Whether {@code e} says the name was taken: FileAlreadyExistsException, or S3A's 412 (RemoteFileChangedException). */
    static boolean nameTaken(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof FileAlreadyExistsException || t instanceof java.nio.file.FileAlreadyExistsException
                    || t.getClass().getName().equals("org.apache.hadoop.fs.s3a.RemoteFileChangedException")) {
                return true;
            }
        }
        return false;
    }

    /** Best effort, never throws: deletes {@code p}; whether it is gone afterwards (false if unknown). */
    protected boolean deleteQuietly(Path p) {
        try {
            fs.delete(p, false);
            return !fs.exists(p);
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    /** The temporary document of a write, beside the version documents (readers ignore it). */
    static Path tempDocument(Path target, String writeId) {
        return new Path(target.getParent(), ".tmp-" + writeId + ".json");
    }
}
