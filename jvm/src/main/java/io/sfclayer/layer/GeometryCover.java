package io.sfclayer.layer;

import io.sfclayer.SfcLayerException;
import io.sfclayer.curve.QueryBox;
import org.apache.hadoop.fs.Path;
import org.locationtech.jts.geom.Envelope;
import org.locationtech.jts.geom.Geometry;
import org.locationtech.jts.geom.GeometryFactory;
import org.locationtech.jts.geom.prep.PreparedGeometry;
import org.locationtech.jts.geom.prep.PreparedGeometryFactory;
import org.locationtech.jts.io.ParseException;
import org.locationtech.jts.io.WKBReader;
import org.locationtech.jts.io.WKTReader;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The tiles a geometry meets, as key boxes: its own tile cover on the layer's grid (GeoTrellis'
 * {@code multiPolygonToKeys} idea), so a thin diagonal polygon reads the tiles it crosses, not its
 * bounding box. Exact: a tile is in the cover iff its closed envelope, with the very doubles
 * {@link TileGrid} gives the scan's envelope columns, intersects the geometry (touching counts).
 *
 * <p>The cover is found by quadtree descent over the grid: a block of tiles the geometry misses is
 * dropped whole, a block it contains is taken whole, others split down to single tiles. So the work
 * follows the geometry's boundary, not its area. The tiles become row runs, and runs repeated on
 * consecutive rows merge into rectangles. JTS comes with Spark (its geospatial types), so this adds no
 * dependency to the connector.
 */
public final class GeometryCover {
    private static final GeometryFactory FACTORY = new GeometryFactory();

    private GeometryCover() {
    }

    /**
     * A geometry from its text: WKT ({@code POLYGON((...))}) or WKB as hexadecimal (what the Python side
     * sends: exact doubles).
     *
     * @throws SfcLayerException.InvalidArgument naming the text when it is neither, or is empty
     */
    public static Geometry parse(String text) {
        String t = text == null ? "" : text.trim();
        if (t.isEmpty()) {
            throw new SfcLayerException.InvalidArgument("geometry: '' is empty (WKT, or WKB as hexadecimal)");
        }
        Geometry g;
        try {
            if (t.chars().allMatch(c -> Character.digit(c, 16) >= 0)) {
                g = new WKBReader(FACTORY).read(WKBReader.hexToBytes(t));
            } else {
                g = new WKTReader(FACTORY).read(t);
            }
        } catch (ParseException | RuntimeException e) {
            String shown = t.length() > 80 ? t.substring(0, 80) + "..." : t;
            throw new SfcLayerException.InvalidArgument("geometry: '" + shown + "' is not a geometry ("
                + "WKT, or WKB as hexadecimal: " + SfcLayerException.reason(e) + ")");
        }
        if (!g.isValid() && g.getDimension() == 2) {
            // Intersection tests on an invalid polygon (self-crossing ring) have no defined answer.
            throw new SfcLayerException.InvalidArgument("geometry: '" + (t.length() > 80 ? t.substring(0, 80) + "..." : t)
                + "' is not a valid polygon (" + new org.locationtech.jts.operation.valid.IsValidOp(g).getValidationError()
                + "; repair it, e.g. with shapely.make_valid)");
        }
        return g;
    }

    /** The read option / box-query form: the geometry's cover on the layer's grid. */
    public static List<QueryBox> boxes(String geometry, TileGrid grid, Path layer) {
        if (grid == null) {
            throw new SfcLayerException.InvalidArgument("option geometry: the layer at " + layer
                + " has no extent, so it has no map coordinates; write it with the extent option, or filter on"
                + " col and row");
        }
        return boxes(parse(geometry), grid);
    }

    /** The key boxes holding exactly the tiles whose closed envelope meets {@code g}; empty when none does. */
    public static List<QueryBox> boxes(Geometry g, TileGrid grid) {
        if (g.isEmpty()) {
            return List.of();
        }
        Envelope e = g.getEnvelopeInternal();
        int[] k = grid.keyBox(e.getMinX(), e.getMinY(), e.getMaxX(), e.getMaxY());
        if (k == null) {
            return List.of();
        }
        Cover cover = new Cover(PreparedGeometryFactory.prepare(g), grid, k[1], k[3] - k[1] + 1);
        cover.descend(k[0], k[1], k[2], k[3]);
        return cover.boxes();
    }

    /** Whether the closed box {@code xmin..xmax, ymin..ymax} meets {@code g} (the SQL predicate's rule). */
    public static boolean intersects(Geometry g, double xmin, double ymin, double xmax, double ymax) {
        return !g.isEmpty() && g.intersects(FACTORY.toGeometry(new Envelope(xmin, xmax, ymin, ymax)));
    }

    /** Tiles are collected as column runs per row, then merged. */
    private static final class Cover {
        final PreparedGeometry g;
        final TileGrid grid;
        final int row0;
        /** Per row (from row0): runs as {@code c0, c1} pairs, in discovery order. */
        final int[][] runs;
        final int[] sizes;

        Cover(PreparedGeometry g, TileGrid grid, int row0, int rows) {
            this.g = g;
            this.grid = grid;
            this.row0 = row0;
            this.runs = new int[rows][];
            this.sizes = new int[rows];
        }

        void descend(int c0, int r0, int c1, int r1) {
            Geometry block = FACTORY.toGeometry(new Envelope(grid.xmin(c0), grid.xmax(c1), grid.ymin(r1), grid.ymax(r0)));
            if (!g.intersects(block)) {
                return;
            }
            if ((c0 == c1 && r0 == r1) || g.contains(block)) {
                for (int r = r0; r <= r1; r++) {
                    add(r, c0, c1);
                }
                return;
            }
            int cm = (int) (((long) c0 + c1) >> 1), rm = (int) (((long) r0 + r1) >> 1);
            if (c1 - c0 >= r1 - r0) { // split the longer side: blocks stay squarish
                descend(c0, r0, cm, r1);
                descend(cm + 1, r0, c1, r1);
            } else {
                descend(c0, r0, c1, rm);
                descend(c0, rm + 1, c1, r1);
            }
        }

        void add(int row, int c0, int c1) {
            int i = row - row0;
            if (runs[i] == null) {
                runs[i] = new int[8];
            } else if (sizes[i] + 2 > runs[i].length) {
                runs[i] = Arrays.copyOf(runs[i], runs[i].length * 2);
            }
            runs[i][sizes[i]++] = c0;
            runs[i][sizes[i]++] = c1;
        }

        /** Each row's runs sorted and joined; equal runs on consecutive rows become one box. */
        List<QueryBox> boxes() {
            List<QueryBox> out = new ArrayList<>();
            List<long[]> open = new ArrayList<>(); // {c0, c1, firstRow} of runs still growing downwards
            for (int i = 0; i <= runs.length; i++) {
                List<long[]> rowRuns = i < runs.length ? joined(i) : List.of();
                List<long[]> next = new ArrayList<>();
                for (long[] run : rowRuns) {
                    long first = row0 + i;
                    for (long[] o : open) {
                        if (o[0] == run[0] && o[1] == run[1]) {
                            first = o[2];
                            o[2] = Long.MAX_VALUE; // continued, not closed
                            break;
                        }
                    }
                    next.add(new long[] {run[0], run[1], first});
                }
                for (long[] o : open) {
                    if (o[2] != Long.MAX_VALUE) {
                        out.add(QueryBox.of((int) o[0], (int) o[2], (int) o[1], row0 + i - 1));
                    }
                }
                open = next;
            }
            return out;
        }

        private List<long[]> joined(int i) {
            if (runs[i] == null) {
                return List.of();
            }
            int n = sizes[i] / 2;
            long[][] rs = new long[n][];
            for (int j = 0; j < n; j++) {
                rs[j] = new long[] {runs[i][2 * j], runs[i][2 * j + 1]};
            }
            Arrays.sort(rs, (a, b) -> Long.compare(a[0], b[0]));
            List<long[]> out = new ArrayList<>();
            for (long[] r : rs) {
                long[] last = out.isEmpty() ? null : out.get(out.size() - 1);
                if (last != null && r[0] <= last[1] + 1) {
                    last[1] = Math.max(last[1], r[1]);
                } else {
                    out.add(r);
                }
            }
            return out;
        }
    }

    /**
     * The tiles in both unions of boxes: pairwise intersections, uncapped (a cover's boxes must stay
     * exact: nothing after the scan evaluates the geometry again).
     */
    public static List<QueryBox> intersect(List<QueryBox> a, List<QueryBox> b) {
        List<QueryBox> out = new ArrayList<>();
        for (QueryBox x : a) {
            for (QueryBox y : b) {
                QueryBox z = x.intersect(y);
                if (z != null) {
                    out.add(z);
                }
            }
        }
        return out;
    }
}
