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
 * ranges select files by name alone, with no file opened (the design's driver-side pruning). The
 * files come from the version document (format version 2) or a listing of the version's data
 * directory (format version 1).
 */
public final class DataFileListing implements Serializable {
    private static final long serialVersionUID = 1L;

    /** A file a query must read, with the query's ranges clipped to what the file covers. */
    public static final class Selection implements Serializable {
        private static final long serialVersionUID = 1L;
        public final String name;
        /** The file's full path. */
        public final String path;
        public final long firstIndex;
        public final List<IndexRange> ranges;

        Selection(String name, String path, long firstIndex, List<IndexRange> ranges) {
            this.name = name;
            this.path = path;
            this.firstIndex = firstIndex;
            this.ranges = ranges;
        }
    }

    private final String[] paths;
    private final String[] names;
    private final long[] starts;
    /** Format 6: the files come from the version's manifests, read on demand (then the arrays are null). */
    private final transient ManifestFiles manifests;
    private final String layer;

    private DataFileListing(String[] paths, String[] names, long[] starts) {
        this.paths = paths;
        this.names = names;
        this.starts = starts;
        this.manifests = null;
        this.layer = null;
    }

    private DataFileListing(Path layer, ManifestFiles manifests) {
        this.paths = null;
        this.names = null;
        this.starts = null;
        this.manifests = manifests;
        this.layer = layer.toString();
    }

    /** The files of a format 6 version, through its manifests: nothing is read until a file is asked for. */
    public static DataFileListing of(Path layer, ManifestFiles manifests) {
        return new DataFileListing(layer, manifests);
    }

    /** The document's entry of file {@code i} when the files come from manifests, else null. */
    public DataFile file(int i) {
        return manifests == null ? null : manifests.at(i);
    }

    private Path pathOf(DataFile f) {
        return new Path(new Path(new Path(layer), f.dir), f.name);
    }

    /**
     * The files a format version 2 document lists (each in its own directory under {@code layer}):
     * no directory is listed. Two files sharing a first index make the document corrupt.
     */
    public static DataFileListing of(Path layer, List<DataFile> files, String source) {
        List<DataFile> sorted = new ArrayList<>(files);
        sorted.sort(null);
        String[] paths = new String[sorted.size()];
        String[] names = new String[sorted.size()];
        long[] starts = new long[sorted.size()];
        for (int i = 0; i < paths.length; i++) {
            DataFile f = sorted.get(i);
            if (i > 0 && f.firstIndex <= sorted.get(i - 1).lastIndex) {
                throw new SfcLayerException.CorruptLayer(source + " lists overlapping data files "
                    + sorted.get(i - 1) + " and " + f);
            }
            paths[i] = new Path(new Path(layer, f.dir), f.name).toString();
            names[i] = f.name;
            starts[i] = f.firstIndex;
        }
        return new DataFileListing(paths, names, starts);
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
        String[] paths = new String[names.length];
        for (int i = 0; i < names.length; i++) {
            paths[i] = new Path(dataDir, names[i]).toString();
        }
        return new DataFileListing(paths, names, starts);
    }

    public int size() {
        return manifests != null ? (int) manifests.size() : names.length;
    }

    public String name(int i) {
        return manifests != null ? manifests.at(i).name : names[i];
    }

    public long start(int i) {
        return manifests != null ? manifests.at(i).firstIndex : starts[i];
    }

    public Path path(int i) {
        return manifests != null ? pathOf(manifests.at(i)) : new Path(paths[i]);
    }

    /** The file that would hold {@code index}: greatest first index ≤ index; -1 if none. */
    public int fileFor(long index) {
        if (manifests != null) {
            return manifests.position(index);
        }
        int pos = Arrays.binarySearch(starts, index);
        return pos >= 0 ? pos : -pos - 2;
    }

    /** Files whose covered index span meets any of the sorted, disjoint {@code ranges}. */
    public List<Selection> select(List<IndexRange> ranges) {
        List<Selection> out = new ArrayList<>();
        if (manifests != null) {
            manifests.meeting(ranges, (position, f, coversTo) -> {
                List<IndexRange> mine = new ArrayList<>();
                for (int k = ManifestFiles.firstEnding(ranges, f.firstIndex); k < ranges.size()
                        && ranges.get(k).lo <= coversTo; k++) {
                    IndexRange r = ranges.get(k);
                    mine.add(new IndexRange(Math.max(r.lo, f.firstIndex), Math.min(r.hi, coversTo)));
                }
                out.add(new Selection(f.name, pathOf(f).toString(), f.firstIndex, mine));
            });
            return out;
        }
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
                out.add(new Selection(names[i], paths[i], lo, mine));
            }
        }
        return out;
    }
}
