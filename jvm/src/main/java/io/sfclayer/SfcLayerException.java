package io.sfclayer;

import java.util.Map;

import org.apache.spark.BreakingChangeInfo;
import org.apache.spark.SparkThrowable;

/**
 * Root of sfclayer's errors. Every error sfclayer raises on purpose is one of these, so callers
 * (and the Python translation layer, which matches on the class name) can tell them from bugs.
 *
 * <p>Each class carries a Spark error condition ({@code SFCLAYER_...}) and a SQLSTATE: Spark shows
 * them to SQL users and sends them to Spark Connect clients, which get no Java class to catch
 * (python/sfclayer/_jvm.py maps the conditions back to sfclayer.errors). The price is that loading
 * these classes needs Spark's {@code SparkThrowable} interface (spark-common-utils) on the class
 * path, though no SparkSession: the core stays free of Spark's engine.
 */
public class SfcLayerException extends RuntimeException implements SparkThrowable {
    private static final long serialVersionUID = 1L;

    /** The condition of errors with no more precise class. */
    @Override
    public String getCondition() { return "SFCLAYER_ERROR"; }

    /** SQLSTATE class HY, general error. */
    @Override
    public String getSqlState() { return "HY000"; }

    // Spark's defaults look these up in its own error table, which has no SFCLAYER_ conditions.
    @Override
    public Map<String, String> getMessageParameters() { return Map.of(); }

    @Override
    public BreakingChangeInfo getBreakingChangeInfo() { return null; }

    @Override
    public boolean isInternalError() { return false; }

    public SfcLayerException(String message) {
        super(message);
    }

    public SfcLayerException(String message, Throwable cause) {
        super(message, cause);
    }

    /** A key (col, row[, time]) that lies outside the layer's key bounds. */
    public static class KeyOutOfBounds extends SfcLayerException {
        private static final long serialVersionUID = 1L;
        @Override public String getCondition() { return "SFCLAYER_KEY_OUT_OF_BOUNDS"; }
        @Override public String getSqlState() { return "22003"; } // numeric value out of range
        public KeyOutOfBounds(String message) { super(message); }
    }

    /** A point look-up found no record for the key. */
    public static class KeyNotFound extends SfcLayerException {
        private static final long serialVersionUID = 1L;
        @Override public String getCondition() { return "SFCLAYER_KEY_NOT_FOUND"; }
        @Override public String getSqlState() { return "02000"; } // no data
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
        @Override public String getCondition() { return "SFCLAYER_INVALID_ARGUMENT"; }
        @Override public String getSqlState() { return "22023"; } // invalid parameter value
        public InvalidArgument(String message) { super(message); }
    }

    /** Input data that cannot be written: null or duplicate keys, unsupported types. */
    public static class InvalidInput extends SfcLayerException {
        private static final long serialVersionUID = 1L;
        @Override public String getCondition() { return "SFCLAYER_INVALID_INPUT"; }
        @Override public String getSqlState() { return "22000"; } // data exception
        public InvalidInput(String message) { super(message); }
    }

    /** No layer at the path (or no committed version of it). */
    public static class LayerNotFound extends SfcLayerException {
        private static final long serialVersionUID = 1L;
        @Override public String getCondition() { return "SFCLAYER_LAYER_NOT_FOUND"; }
        @Override public String getSqlState() { return "42P01"; } // as Spark's TABLE_OR_VIEW_NOT_FOUND
        public LayerNotFound(String message) { super(message); }
    }

    /** A layer already exists where a write in errorifexists mode was asked for. */
    public static class LayerExists extends SfcLayerException {
        private static final long serialVersionUID = 1L;
        @Override public String getCondition() { return "SFCLAYER_LAYER_EXISTS"; }
        @Override public String getSqlState() { return "42P07"; } // as Spark's TABLE_OR_VIEW_ALREADY_EXISTS
        public LayerExists(String message) { super(message); }
    }

    /**
     * The file system failed (permission denied, a DataNode timed out, a block or host unreachable):
     * the message names the file, the cause is the file system's own exception. Not a sign of damage.
     */
    public static class StorageError extends SfcLayerException {
        private static final long serialVersionUID = 1L;
        @Override public String getCondition() { return "SFCLAYER_STORAGE_ERROR"; }
        @Override public String getSqlState() { return "58030"; } // I/O error
        public StorageError(String message, Throwable cause) { super(message, cause); }
    }

    /** Something on disk is not what the format says: bad metadata, bad magic, truncated file. */
    public static class CorruptLayer extends SfcLayerException {
        private static final long serialVersionUID = 1L;
        @Override public String getCondition() { return "SFCLAYER_CORRUPT_LAYER"; }
        @Override public String getSqlState() { return "XX001"; } // data corrupted
        public CorruptLayer(String message) { super(message); }
        public CorruptLayer(String message, Throwable cause) { super(message, cause); }
    }

    /**
     * A layer (or file) in a format version this sfclayer does not read, newer than it knows: nothing is
     * known to be damaged, a newer sfclayer reads it. A {@link CorruptLayer} to callers that do not ask.
     */
    public static class UnsupportedFormat extends CorruptLayer {
        private static final long serialVersionUID = 1L;
        @Override public String getCondition() { return "SFCLAYER_UNSUPPORTED_FORMAT"; }
        @Override public String getSqlState() { return "0A000"; } // feature not supported
        public UnsupportedFormat(String message) { super(message); }
    }

    /**
     * A write lost a race: a version committed since the write read the layer changed what it
     * changed (or replaced the layer). Nothing of the write was published.
     */
    public static class ConcurrentUpdate extends SfcLayerException {
        private static final long serialVersionUID = 1L;
        @Override public String getCondition() { return "SFCLAYER_CONCURRENT_UPDATE"; }
        @Override public String getSqlState() { return "40001"; } // serialization failure
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
        @Override public String getCondition() { return "SFCLAYER_COMMIT_STATE_UNKNOWN"; }
        @Override public String getSqlState() { return "40003"; } // statement completion unknown
        public CommitStateUnknown(String message, Throwable cause) { super(message, cause); }
    }
}
