package io.sfclayer.format;

import io.sfclayer.SfcLayerException;

import java.io.Serializable;
import java.util.Map;

/**
 * Idempotent writes (docs/FORMAT.md, "Application transactions"): a write may carry an application id
 * and a batch number (a streaming query's id and batch id, or the write options {@code txnAppId} and
 * {@code txnVersion}, as Delta's SetTransaction). Every version document carries forward the newest
 * batch number committed for each application ({@code transactions}), so whether a batch is already
 * in the layer is read from the newest document alone, whatever vacuum removed. The check is part of
 * the commit's decision ({@code commit.VersionLog#commit}, which calls {@link #check} and {@link #record}):
 * of two commits of the same batch, the one that loses the race for the version number finds the
 * other's entry when it tries again, and publishes nothing. The fields are the document's (format/);
 * the decision is the commit protocol's, which sits above.
 */
public final class Transactions {
    private Transactions() {
    }

    /** One write's application id and batch number (the document's {@code operation.transaction}). */
    public static final class Txn implements Serializable {
        private static final long serialVersionUID = 1L;
        public final String appId;
        public final long version;

        public Txn(String appId, long version) {
            if (appId == null || appId.isEmpty()) {
                throw new SfcLayerException.InvalidArgument("option txnAppId: an application id must not be empty");
            }
            if (version < 0) {
                throw new SfcLayerException.InvalidArgument("option txnVersion: " + version + " is negative;"
                    + " batch numbers are 0, 1, 2, ...");
            }
            this.appId = appId;
            this.version = version;
        }

        @Override
        public String toString() {
            return "(" + appId + ", " + version + ")";
        }
    }

    /**
     * Thrown by a commit whose batch a version of the layer already holds: nothing was published, and
     * nothing should be (the write's data may go). Not an error for the writer: its batch is in the layer.
     */
    public static final class AlreadyCommitted extends RuntimeException {
        private static final long serialVersionUID = 1L;
        /** The newest version, whose {@code transactions} hold the batch. */
        public final transient LayerMetadata newest;

        AlreadyCommitted(String message, LayerMetadata newest) {
            super(message, null, false, false);
            this.newest = newest;
        }
    }

    /** The newest batch number {@code md} records for {@code appId}; -1 when none. */
    public static long lastVersion(LayerMetadata md, String appId) {
        Long v = md == null ? null : md.transactions.get(appId);
        return v == null ? -1 : v;
    }

    /** Whether {@code md} already holds {@code txn}'s batch (or a later one of the same application). */
    public static boolean holds(LayerMetadata md, Txn txn) {
        return txn != null && lastVersion(md, txn.appId) >= txn.version;
    }

    /** Throws {@link AlreadyCommitted} when {@code newest} already holds {@code mine}'s batch. */
    public static void check(String layer, LayerMetadata mine, LayerMetadata newest) {
        if (holds(newest, mine.txn)) {
            throw new AlreadyCommitted("layer " + layer + " version " + newest.version + " already holds batch "
                + lastVersion(newest, mine.txn.appId) + " of application " + mine.txn.appId + " (this write is batch "
                + mine.txn.version + "); nothing was published", newest);
        }
    }

    /** Records {@code candidate}'s own batch in its carried-forward {@code transactions}. */
    public static void record(LayerMetadata candidate) {
        if (candidate.txn != null) {
            Map<String, Long> t = candidate.transactions;
            t.put(candidate.txn.appId, Math.max(lastVersion(candidate, candidate.txn.appId), candidate.txn.version));
        }
    }
}
