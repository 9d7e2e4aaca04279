package io.sfclayer;

import java.util.Map;

import org.apache.spark.BreakingChangeInfo;
import org.apache.spark.QueryContext;
import org.apache.spark.SparkException;
import org.apache.spark.SparkRuntimeException;

/**
 * Root of sfclayer's errors. Every error sfclayer raises on purpose is one of these, so callers
 * (and the Python translation layer, which matches on the class name) can tell them from bugs.
 *
 * <p>Each class carries a Spark error condition ({@code SFCLAYER_...}) and a SQLSTATE, listed in the
 * jar's {@code io/sfclayer/error-conditions.json} (read by {@link ErrorConditions}, in the format of
 * Spark's own table): Spark shows them to SQL users and sends them to Spark Connect clients, which
 * get no Java class to catch (python/sfclayer/_jvm.py maps the conditions back to sfclayer.errors).
 *
 * <p>Why a {@link SparkRuntimeException}: pyspark turns a Java error into its own short captured
 * exception (one line, no Java frames) only for the Spark classes it knows, and Spark's scheduler
 * rethrows a task's SparkThrowable as it is, not wrapped in "Job aborted". So a user's own
 * {@code df.collect()} or SQL that fails in sfclayer shows {@code [SFCLAYER_INVALID_ARGUMENT] bbox: ...}
 * on one line, without a patch to pyspark. Spark's constructor formats a message from Spark's own
 * table, which has no SFCLAYER_ entries; it is given {@code USER_RAISED_EXCEPTION} (the condition of
 * SQL's {@code raise_error}, the message as its only parameter) and every accessor is overridden.
 * {@link #getMessage()} is {@code [CONDITION] reason}, as Spark's own errors read; {@link #reason()} is
 * the reason alone, for messages that quote another error.
 *
 * <p>Loading these classes needs Spark's spark-common-utils on the class path, though no SparkSession:
 * the core stays free of Spark's engine.
 */
public class SfcLayerException extends SparkRuntimeException {
    private static final long serialVersionUID = 1L;
    private static final QueryContext[] NO_CONTEXT = new QueryContext[0];

    private final String reason;

    /** The condition of errors with no more precise class. */
    @Override
    public String getCondition() { return "SFCLAYER_ERROR"; }

    /** The condition's SQLSTATE, from the jar's error table. */
    @Override
    public String getSqlState() { return ErrorConditions.sqlState(getCondition()); }

    @SuppressWarnings("deprecation")
    @Override
    public String getErrorClass() { return getCondition(); }

    // Spark's defaults look these up in its own error table, which has no SFCLAYER_ conditions.
    @Override
    public Map<String, String> getMessageParameters() { return Map.of(); }

    @Override
    public String getDefaultMessageTemplate() { return ErrorConditions.template(getCondition()); }

    @Override
    public QueryContext[] getQueryContext() { return NO_CONTEXT; }

    @Override
    public BreakingChangeInfo getBreakingChangeInfo() { return null; }

    @Override
    public boolean isInternalError() { return false; }

    /** {@code [SFCLAYER_...] reason}: what pyspark, Spark SQL and logs show on one line. */
    @Override
    public String getMessage() { return "[" + getCondition() + "] " + reason; }

    /** The message without its condition. */
    public String reason() { return reason; }

    /** {@code t}'s message without an sfclayer condition in front: for messages quoting another error. */
    public static String reason(Throwable t) {
        return t instanceof SfcLayerException ? ((SfcLayerException) t).reason() : t.getMessage();
    }

    public SfcLayerException(String message) {
        this(message, null);
    }

    public SfcLayerException(String message, Throwable cause) {
        super("USER_RAISED_EXCEPTION", SparkException.constructMessageParams(
            Map.of("errorMessage", String.valueOf(message))), cause, NO_CONTEXT, "");
        this.reason = message;
    }

    /** A key (col, row[, time]) that lies outside the layer's key bounds. */
    public static class KeyOutOfBounds extends SfcLayerException {
        private static final long serialVersionUID = 1L;
        @Override public String getCondition() { return "SFCLAYER_KEY_OUT_OF_BOUNDS"; }
        public KeyOutOfBounds(String message) { super(message); }
    }

    /** A point look-up found no record for the key. */
    public static class KeyNotFound extends SfcLayerException {
        private static final long serialVersionUID = 1L;
        @Override public String getCondition() { return "SFCLAYER_KEY_NOT_FOUND"; }
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
        public InvalidArgument(String message) { super(message); }
    }

    /** Input data that cannot be written: null or duplicate keys, unsupported types. */
    public static class InvalidInput extends SfcLayerException {
        private static final long serialVersionUID = 1L;
        @Override public String getCondition() { return "SFCLAYER_INVALID_INPUT"; }
        public InvalidInput(String message) { super(message); }
    }

    /** No layer at the path (or no committed version of it). */
    public static class LayerNotFound extends SfcLayerException {
        private static final long serialVersionUID = 1L;
        @Override public String getCondition() { return "SFCLAYER_LAYER_NOT_FOUND"; }
        public LayerNotFound(String message) { super(message); }
        public LayerNotFound(String message, Throwable cause) { super(message, cause); }
    }

    /** A layer already exists where a write in errorifexists mode was asked for. */
    public static class LayerExists extends SfcLayerException {
        private static final long serialVersionUID = 1L;
        @Override public String getCondition() { return "SFCLAYER_LAYER_EXISTS"; }
        public LayerExists(String message) { super(message); }
    }

    /**
     * The file system failed (permission denied, a DataNode timed out, a block or host unreachable):
     * the message names the file, the cause is the file system's own exception. Not a sign of damage.
     */
    public static class StorageError extends SfcLayerException {
        private static final long serialVersionUID = 1L;
        @Override public String getCondition() { return "SFCLAYER_STORAGE_ERROR"; }
        public StorageError(String message, Throwable cause) { super(message, cause); }
    }

    /** Something on disk is not what the format says: bad metadata, bad magic, truncated file. */
    public static class CorruptLayer extends SfcLayerException {
        private static final long serialVersionUID = 1L;
        @Override public String getCondition() { return "SFCLAYER_CORRUPT_LAYER"; }
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
        public UnsupportedFormat(String message) { super(message); }
    }

    /**
     * A write lost a race: a version committed since the write read the layer changed what it
     * changed (or replaced the layer). Nothing of the write was published.
     */
    public static class ConcurrentUpdate extends SfcLayerException {
        private static final long serialVersionUID = 1L;
        @Override public String getCondition() { return "SFCLAYER_CONCURRENT_UPDATE"; }
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
        public CommitStateUnknown(String message, Throwable cause) { super(message, cause); }
    }
}
