package io.sfclayer.layer;

import java.io.Serializable;

/**
 * What a merge did to tiles ({@link MergeWriter}): inserted (new keys), replaced, kept (the new tile
 * dropped by {@code onExisting=keep}) and deleted; a write's history entry records the sums.
 */
public record TileCounts(long inserted, long replaced, long kept, long deleted) implements Serializable {
    public static final TileCounts NONE = new TileCounts(0, 0, 0, 0);

    /** The sums of this and {@code o} (a write's tasks' counts added up). */
    public TileCounts plus(TileCounts o) {
        return new TileCounts(inserted + o.inserted, replaced + o.replaced, kept + o.kept, deleted + o.deleted);
    }
}
