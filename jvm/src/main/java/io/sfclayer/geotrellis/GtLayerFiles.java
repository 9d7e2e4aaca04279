package io.sfclayer.geotrellis;

import io.sfclayer.SfcLayerException;
import io.sfclayer.curve.IndexRange;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A GeoTrellis layer's MapFiles in index order, as GeoTrellis' FilterMapFileInputFormat sees them: each
 * {@code part-r-<partition>-<first index>} directory holds the indexes from its first up to the next
 * file's first minus one (the last file: to the end). The first index comes from the name (one listing,
 * no file opened); a directory named otherwise has its index file's first key read, as GeoTrellis does.
 */
public final class GtLayerFiles implements Serializable {
    private static final long serialVersionUID = 1L;
    private static final Pattern NAME = Pattern.compile(".*part-r-([0-9]+)-([0-9]+)$");

    private final String[] paths;
    private final long[] firsts;

    private GtLayerFiles(String[] paths, long[] firsts) {
        this.paths = paths;
        this.firsts = firsts;
    }

    /** A MapFile of the data directory: its first index and its path. */
    private record Found(long first, String path) {
    }

    /** Lists the layer's data directory. */
    public static GtLayerFiles list(GtLayer layer, Configuration conf) {
        Path dir = new Path(layer.dataPath);
        List<Found> found = new ArrayList<>();
        try {
            FileSystem fs = dir.getFileSystem(conf);
            FileStatus[] all;
            try {
                all = fs.listStatus(dir);
            } catch (FileNotFoundException e) {
                throw new SfcLayerException.CorruptLayer(layer.id() + ": its data directory " + dir + " does not exist");
            }
            for (FileStatus st : all) {
                if (!st.isDirectory()) continue;
                String n = st.getPath().getName();
                if (n.startsWith("_") || n.startsWith(".")) continue;
                Matcher m = NAME.matcher(n);
                long first;
                if (m.matches()) {
                    try {
                        first = Long.parseLong(m.group(2));
                    } catch (NumberFormatException e) {
                        throw new SfcLayerException.UnsupportedFormat(st.getPath() + ": first index " + m.group(2)
                            + " does not fit 63 bits");
                    }
                } else {
                    try (GtMapFile f = GtMapFile.open(fs, st.getPath())) {
                        f.seekFloor(0);
                        if (!f.next()) continue; // an empty MapFile holds nothing
                        first = f.key();
                    }
                }
                found.add(new Found(first, st.getPath().toString()));
            }
        } catch (IOException e) {
            throw new SfcLayerException.StorageError("listing " + dir + ": " + e, e);
        }
        found.sort((a, b) -> Long.compare(a.first(), b.first()));
        String[] paths = new String[found.size()];
        long[] firsts = new long[found.size()];
        for (int i = 0; i < paths.length; i++) {
            firsts[i] = found.get(i).first();
            paths[i] = found.get(i).path();
        }
        return new GtLayerFiles(paths, firsts);
    }

    public int size() {
        return paths.length;
    }

    public String path(int i) {
        return paths[i];
    }

    public long first(int i) {
        return firsts[i];
    }

    /** The last index file {@code i} may hold. */
    public long last(int i) {
        return i + 1 < firsts.length ? firsts[i + 1] - 1 : Long.MAX_VALUE;
    }

    /** The file that may hold {@code index}, or -1 when it comes before the first file. */
    public int fileOf(long index) {
        int i = Arrays.binarySearch(firsts, index);
        if (i >= 0) {
            while (i + 1 < firsts.length && firsts[i + 1] == index) i++; // empty files share a first index
            return i;
        }
        return -i - 2;
    }

    /**
     * For each file, the parts of {@code ranges} (sorted, disjoint) within its span; null for files none
     * meets (pruned by name).
     */
    public List<List<IndexRange>> split(List<IndexRange> ranges) {
        List<List<IndexRange>> out = new ArrayList<>(paths.length);
        int r = 0;
        for (int i = 0; i < paths.length; i++) {
            long lo = firsts[i], hi = last(i);
            List<IndexRange> mine = null;
            while (r < ranges.size() && ranges.get(r).hi < lo) r++;
            for (int k = r; k < ranges.size() && ranges.get(k).lo <= hi; k++) {
                IndexRange x = ranges.get(k);
                if (mine == null) mine = new ArrayList<>();
                mine.add(new IndexRange(Math.max(lo, x.lo), Math.min(hi, x.hi)));
            }
            out.add(mine);
        }
        return out;
    }
}
