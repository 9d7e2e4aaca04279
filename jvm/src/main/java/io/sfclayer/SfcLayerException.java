package io.sfclayer;

/**
 * Root of sfclayer's errors. Every error sfclayer raises on purpose is one of these, so callers
 * (and the Python translation layer, which matches on the class name) can tell them from bugs.
 */
public class SfcLayerException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public SfcLayerException(String message) {
        super(message);
    }

    public SfcLayerException(String message, Throwable cause) {
        super(message, cause);
    }

    /** A key (col, row[, time]) that lies outside the layer's key bounds. */
    public static class KeyOutOfBounds extends SfcLayerException {
        private static final long serialVersionUID = 1L;
        public KeyOutOfBounds(String message) { super(message); }
    }

    /** A point look-up found no record for the key. */
    public static class KeyNotFound extends SfcLayerException {
        private static final long serialVersionUID = 1L;
        public KeyNotFound(String message) { super(message); }
    }

    /**
     * A bad option, bound or argument given by the caller. Messages name the value and what is
     * allowed, in one pattern, {@code <name>: <value> <why> (<allowed>)} (python/sfclayer/_args.py
     * writes it down): {@code option <name>: '<value>' ...} for options (tests/test_tables.py pins
     * them), and e.g. {@code z2 x: -1 is out of range (0..2^31-1)} for arguments of the API (shared
     * with Python through tests/vectors/curves.json; CurveMessagesTest checks the shape).
     */
    public static class InvalidArgument extends SfcLayerException {
        private static final long serialVersionUID = 1L;
        public InvalidArgument(String message) { super(message); }
    }

    /** Input data that cannot be written: null or duplicate keys, unsupported types. */
    public static class InvalidInput extends SfcLayerException {
        private static final long serialVersionUID = 1L;
        public InvalidInput(String message) { super(message); }
    }

    /** No layer at the path (or no committed version of it). */
    public static class LayerNotFound extends SfcLayerException {
        private static final long serialVersionUID = 1L;
        public LayerNotFound(String message) { super(message); }
    }

    /** A layer already exists where a write in errorifexists mode was asked for. */
    public static class LayerExists extends SfcLayerException {
        private static final long serialVersionUID = 1L;
        public LayerExists(String message) { super(message); }
    }

    /**
     * The file system failed (permission denied, a DataNode timed out, a block or host unreachable):
     * the message names the file, the cause is the file system's own exception. Not a sign of damage.
     */
    public static class StorageError extends SfcLayerException {
        private static final long serialVersionUID = 1L;
        public StorageError(String message, Throwable cause) { super(message, cause); }
    }

    /** Something on disk is not what the format says: bad metadata, bad magic, truncated file. */
    public static class CorruptLayer extends SfcLayerException {
        private static final long serialVersionUID = 1L;
        public CorruptLayer(String message) { super(message); }
        public CorruptLayer(String message, Throwable cause) { super(message, cause); }
    }

    /**
     * A layer (or file) in a format version this sfclayer does not read, newer than it knows: nothing is
     * known to be damaged, a newer sfclayer reads it. A {@link CorruptLayer} to callers that do not ask.
     */
    public static class UnsupportedFormat extends CorruptLayer {
        private static final long serialVersionUID = 1L;
        public UnsupportedFormat(String message) { super(message); }
    }

    /**
     * A write lost a race: a version committed since the write read the layer changed what it
     * changed (or replaced the layer). Nothing of the write was published.
     */
    public static class ConcurrentUpdate extends SfcLayerException {
        private static final long serialVersionUID = 1L;
        public ConcurrentUpdate(String message) { super(message); }
    }

    /**
     * A commit whose outcome could not be decided: publishing the version document failed in a way
     * that may or may not have taken effect, and reading the document back did not tell (docs/FORMAT.md,
     * section 6). The write's data is kept (the version may reference it); the message names the
     * version document to look at. As Iceberg's CommitStateUnknownException: do not retry blindly.
     */
    public static class CommitStateUnknown extends SfcLayerException {
        private static final long serialVersionUID = 1L;
        public CommitStateUnknown(String message, Throwable cause) { super(message, cause); }
    }
}
