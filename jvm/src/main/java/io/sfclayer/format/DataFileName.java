package io.sfclayer.format;

import io.sfclayer.SfcLayerException;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The name of a data file (a MapFile directory): {@code part-r-<partition, 5 digits>-<first index>}.
 * The first index in the name is what lets readers prune files without opening them.
 */
public final class DataFileName implements Comparable<DataFileName>, java.io.Serializable {
    private static final long serialVersionUID = 1L;
    private static final Pattern NAME = Pattern.compile("part-r-(\\d{5,})-(\\d+)");

    public final int partition;
    public final long firstIndex;

    public DataFileName(int partition, long firstIndex) {
        if (partition < 0 || firstIndex < 0) {
            throw new IllegalArgumentException("negative partition or index: " + partition + ", " + firstIndex);
        }
        this.partition = partition;
        this.firstIndex = firstIndex;
    }

    public String name() {
        return String.format("part-r-%05d-%d", partition, firstIndex);
    }

    /** Whether a directory entry is meant to be a data file (the rest is ignored, or an error). */
    public static boolean looksLikeDataFile(String name) {
        return name.startsWith("part-");
    }

    public static DataFileName parse(String name) {
        Matcher m = NAME.matcher(name);
        if (!m.matches()) {
            throw new SfcLayerException.CorruptLayer("not an sfclayer data file name: '" + name
                + "' (expected part-r-<partition>-<first index>)");
        }
        try {
            return new DataFileName(Integer.parseInt(m.group(1)), Long.parseLong(m.group(2)));
        } catch (NumberFormatException e) {
            throw new SfcLayerException.CorruptLayer("data file name out of range: '" + name + "'");
        }
    }

    @Override
    public int compareTo(DataFileName o) {
        return Long.compare(firstIndex, o.firstIndex);
    }

    @Override
    public String toString() {
        return name();
    }
}
