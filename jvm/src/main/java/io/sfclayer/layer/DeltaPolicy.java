package io.sfclayer.layer;

import io.sfclayer.SfcLayerException;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.format.RecordFrame;

import java.io.Serializable;
import java.util.Locale;

/**
 * When an append writes delta files instead of rewriting base files (docs/FORMAT.md section 11), and
 * when an append compacts afterwards: write options {@code appendMode}, {@code deltaRewriteRatio} and
 * {@code compactAfterDeltas}. No Spark, no storage.
 *
 * @param mode               auto (by the rule below), delta (always, where allowed) or rewrite (never)
 * @param ratio              auto writes deltas when the bytes a copy-on-write append would rewrite exceed
 *                           this many times the bytes it adds
 * @param compactAfterDeltas an append that leaves this many delta versions or more compacts; 0: never
 * @param estimatedBytes     Spark's estimate of the input's bytes (Long.MAX_VALUE: none)
 */
public record DeltaPolicy(Mode mode, double ratio, int compactAfterDeltas, long estimatedBytes)
        implements Serializable {
    public enum Mode { AUTO, DELTA, REWRITE }

    public static final double DEFAULT_RATIO = 4;
    public static final int DEFAULT_COMPACT_AFTER_DELTAS = 10;
    public static final DeltaPolicy DEFAULT = new DeltaPolicy(Mode.AUTO, DEFAULT_RATIO, DEFAULT_COMPACT_AFTER_DELTAS,
        Long.MAX_VALUE);

    public static Mode parseMode(String v) {
        switch (v.trim().toLowerCase(Locale.ROOT)) {
            case "auto": return Mode.AUTO;
            case "delta": return Mode.DELTA;
            case "rewrite": return Mode.REWRITE;
            default:
                throw new SfcLayerException.InvalidArgument("option appendMode: '" + v
                    + "' is unknown (auto, delta or rewrite)");
        }
    }

    public DeltaPolicy withEstimatedBytes(long bytes) {
        return new DeltaPolicy(mode, ratio, compactAfterDeltas, bytes);
    }

    /**
     * Whether an append to {@code md} may write deltas: not with {@code appendMode=rewrite}, and only
     * with {@code onExisting=replace} (keep and error must read the keys the base holds, so they rewrite
     * anyway) to a layer of checked records (format 3 or later; format 7 documents carry checksums).
     */
    public boolean mayWriteDelta(LayerMetadata md, MergeWriter.OnExisting onExisting) {
        return mode != Mode.REWRITE && onExisting == MergeWriter.OnExisting.REPLACE && RecordFrame.checked(md.formatVersion);
    }

    /**
     * Whether auto needs the new records' index ranges and bytes (a first pass) to choose: not when the
     * whole layer is at most {@code ratio} times Spark's estimate of the input (no rewrite can exceed it).
     */
    public boolean needsFirstPass(LayerMetadata md) {
        if (mode != Mode.AUTO) {
            return false;
        }
        return estimatedBytes == Long.MAX_VALUE || md.dataBytes > ratio * estimatedBytes;
    }

    /** The rule of auto: deltas when the bytes rewritten would exceed {@code ratio} × the bytes added. */
    public boolean prefersDelta(long rewriteBytes, long addedBytes) {
        return mode == Mode.DELTA || (mode == Mode.AUTO && rewriteBytes > ratio * addedBytes);
    }
}
