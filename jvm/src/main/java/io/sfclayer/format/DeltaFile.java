package io.sfclayer.format;

import io.sfclayer.SfcLayerException;

import java.io.Serializable;
import java.util.List;
import java.util.Map;

/**
 * One delta file of a version (format 7, docs/FORMAT.md section 11): a data file an append wrote
 * beside the base files instead of rewriting them, and the version that added it. A file cannot
 * know its version (the number is fixed only when the document is published), so the document
 * says it: {@code addedIn} is negative for a version's own new deltas until it is serialised,
 * where it becomes that document's {@code version}.
 */
public final class DeltaFile implements Serializable {
    private static final long serialVersionUID = 1L;

    /** The entry's field naming the version that added the file. */
    public static final String ADDED_IN = "addedIn";

    public final DataFile file;
    /** The version that added it; negative: the version being built (its number is set at publish). */
    public final long addedIn;

    public DeltaFile(DataFile file, long addedIn) {
        this.file = file;
        this.addedIn = addedIn;
    }

    /** The entry as the document lists it: a {@code files} entry plus {@code addedIn}. */
    public Map<String, Object> toJson(long documentVersion) {
        Map<String, Object> m = file.toJson();
        m.put(ADDED_IN, addedIn < 0 ? documentVersion : addedIn);
        return m;
    }

    /** An entry of a document's {@code deltas}. */
    public static DeltaFile fromJson(Map<String, Object> m, String source) {
        Object added = m.get(ADDED_IN);
        if (!(added instanceof Number) || ((Number) added).longValue() < 1) {
            throw new SfcLayerException.CorruptLayer("deltas entry " + m.get("name") + " in " + source
                + ": field '" + ADDED_IN + "' is missing or not a version number");
        }
        return new DeltaFile(DataFile.fromJson(m, null), ((Number) added).longValue());
    }

    /**
     * Checks the order rules of a document's deltas: {@code addedIn} never decreases along the list
     * and is at most the document's version, and the files one version added are sorted by first index
     * with disjoint spans. Null when they hold, else what is wrong.
     */
    public static String checkOrder(List<DeltaFile> deltas, long documentVersion) {
        DeltaFile prev = null;
        for (DeltaFile d : deltas) {
            long added = d.addedIn < 0 ? documentVersion : d.addedIn;
            if (d.file.lastIndex < d.file.firstIndex) {
                return "delta " + d.file.id() + " ends (" + d.file.lastIndex + ") before it starts";
            }
            if (added > documentVersion) {
                return "delta " + d.file.id() + " says it was added in version " + added
                    + ", after the document's version " + documentVersion;
            }
            if (prev != null) {
                long prevAdded = prev.addedIn < 0 ? documentVersion : prev.addedIn;
                if (added < prevAdded) {
                    return "deltas " + prev.file.id() + " and " + d.file.id() + " are not in the order they were added";
                }
                if (added == prevAdded && d.file.firstIndex <= prev.file.lastIndex) {
                    return "deltas " + prev.file.id() + " and " + d.file.id()
                        + " of one version are not sorted and disjoint";
                }
            }
            prev = d;
        }
        return null;
    }

    public String id() {
        return file.id();
    }

    @Override
    public String toString() {
        return file.id() + "@" + addedIn;
    }
}
