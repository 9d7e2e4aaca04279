package io.sfclayer.format;

import io.sfclayer.SfcLayerException;
import io.sfclayer.curve.IndexRange;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The data files of one layer version, sorted by the first index their names carry. File i covers
 * indexes from its first index up to the next file's first index minus one, so a query's index
 * ranges select files by name alone, with no file opened (the design's driver-side pruning).
 */
public final class DataFileListing implements Serializable {
    private static final long serialVersionUID = 1L;

    /** A file a query must read, with the query's ranges clipped to what the file covers. */
    public static final class Selection implements Serializable {
        private static final long serialVersionUID = 1L;
        public final String name;
        public final long firstIndex;
        public final List<IndexRange> ranges;

        Selection(String name, long firstIndex, List<IndexRange> ranges) {
            this.name = name;
            this.firstIndex = firstIndex;
            this.ranges = ranges;
        }
    }

    private final String dir;
    private final String[] names;
    private final long[] starts;

    private DataFileListing(String dir, String[] names, long[] starts) {
        this.dir = dir;
        this.names = names;
        this.starts = starts;
    }

    /**
     * Lists {@code dataDir}; {@code expectedFiles} (from the metadata, or -1) is checked so a lost
     * file is an error rather than silently missing tiles.
     */
    public static DataFileListing list(FileSystem fs, Path dataDir, long expectedFiles) throws IOException {
        FileStatus[] entries;
        try {
            entries = fs.listStatus(dataDir);
        } catch (FileNotFoundException e) {
            throw new SfcLayerException.CorruptLayer("layer data directory " + dataDir + " is missing");
        }
        List<DataFileName> found = new ArrayList<>();
        for (FileStatus st : entries) {
            String name = st.getPath().getName();
            if (DataFileName.looksLikeDataFile(name)) {
                found.add(DataFileName.parse(name));
            }
        }
        found.sort(null);
        for (int i = 1; i < found.size(); i++) {
            if (found.get(i).firstIndex == found.get(i - 1).firstIndex) {
                throw new SfcLayerException.CorruptLayer("two data files in " + dataDir + " start at index "
                    + found.get(i).firstIndex + ": " + found.get(i - 1) + " and " + found.get(i));
            }
        }
        if (expectedFiles >= 0 && found.size() != expectedFiles) {
            throw new SfcLayerException.CorruptLayer("layer data directory " + dataDir + " holds " + found.size()
                + " data files but the layer's metadata lists " + expectedFiles);
        }
        String[] names = new String[found.size()];
        long[] starts = new long[found.size()];
        for (int i = 0; i < names.length; i++) {
            names[i] = found.get(i).name();
            starts[i] = found.get(i).firstIndex;
        }
        return new DataFileListing(dataDir.toString(), names, starts);
    }

    /**
     * The files a version document lists (format 3: the document, not the directory, is the
     * truth, so a lost file is named when it is opened rather than silently missing).
     */
    public static DataFileListing fromEntries(Path dataDir, java.util.Collection<DataFileEntry> entries) {
        List<DataFileEntry> sorted = new ArrayList<>(entries);
        sorted.sort((a, b) -> Long.compare(a.firstIndex, b.firstIndex));
        String[] names = new String[sorted.size()];
        long[] starts = new long[sorted.size()];
        for (int i = 0; i < names.length; i++) {
            names[i] = sorted.get(i).name;
            starts[i] = sorted.get(i).firstIndex;
            if (i > 0 && starts[i] == starts[i - 1]) {
                throw new SfcLayerException.CorruptLayer("two data files listed for " + dataDir + " start at index "
                    + starts[i] + ": " + names[i - 1] + " and " + names[i]);
            }
        }
        return new DataFileListing(dataDir.toString(), names, starts);
    }

    public int size() {
        return names.length;
    }

    public String dir() {
        return dir;
    }

    public String name(int i) {
        return names[i];
    }

    public long start(int i) {
        return starts[i];
    }

    public Path path(int i) {
        return new Path(dir, names[i]);
    }

    /** The file that would hold {@code index}: greatest first index ≤ index; -1 if none. */
    public int fileFor(long index) {
        int pos = Arrays.binarySearch(starts, index);
        return pos >= 0 ? pos : -pos - 2;
    }

    /** Files whose covered index span meets any of the sorted, disjoint {@code ranges}. */
    public List<Selection> select(List<IndexRange> ranges) {
        List<Selection> out = new ArrayList<>();
        int j = 0;
        int n = ranges.size();
        for (int i = 0; i < starts.length && j < n; i++) {
            long lo = starts[i];
            long hi = i + 1 < starts.length ? starts[i + 1] - 1 : Long.MAX_VALUE;
            while (j < n && ranges.get(j).hi < lo) {
                j++;
            }
            List<IndexRange> mine = null;
            for (int k = j; k < n && ranges.get(k).lo <= hi; k++) {
                IndexRange r = ranges.get(k);
                if (mine == null) {
                    mine = new ArrayList<>();
                }
                mine.add(new IndexRange(Math.max(r.lo, lo), Math.min(r.hi, hi)));
            }
            if (mine != null) {
                out.add(new Selection(names[i], lo, mine));
            }
        }
        return out;
    }
}
