package io.sfclayer.layer;

import io.sfclayer.curve.KeyBounds;
import io.sfclayer.format.LayerMetadata;
import org.junit.Test;

import java.util.Random;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;

public class TileGridTest {
    private static final KeyBounds BOUNDS = new KeyBounds(10, -3, 29, 6); // 20 cols, 10 rows
    private static final TileGrid GRID = new TileGrid(new LayerMetadata.Extent(100, 50, 300, 150), BOUNDS);

    @Test
    public void envelopeFollowsTheRasterConvention() {
        // tiles are 10 x 10 map units; row rowMin is at the top
        assertArrayEquals(new double[] {100, 140, 110, 150}, GRID.envelope(10, -3), 0);
        assertArrayEquals(new double[] {290, 50, 300, 60}, GRID.envelope(29, 6), 0);
        assertArrayEquals(new double[] {150, 110, 160, 120}, GRID.envelope(15, 0), 0);
        assertEquals(10.0, GRID.tileWidth(), 0);
        assertEquals(10.0, GRID.tileHeight(), 0);
    }

    @Test
    public void keyBoxCountsTouchingTiles() {
        // exactly tile (15, 0): its four neighbours touch it
        assertArrayEquals(new int[] {14, -1, 16, 1}, GRID.keyBox(150, 110, 160, 120));
        // inside one tile
        assertArrayEquals(new int[] {15, 0, 15, 0}, GRID.keyBox(151, 111, 159, 119));
        // a point on a corner touches four tiles
        assertArrayEquals(new int[] {14, 0, 15, 1}, GRID.keyBox(150, 110, 150, 110));
        // larger than the extent: clipped to the bounds
        assertArrayEquals(new int[] {10, -3, 29, 6}, GRID.keyBox(-1e9, -1e9, 1e9, 1e9));
        // beside the extent
        assertNull(GRID.keyBox(301, 60, 400, 70));
        assertNull(GRID.keyBox(200, 0, 210, 49.99));
    }

    @Test
    public void keyBoxMatchesBruteForce() {
        Random rnd = new Random(7);
        TileGrid g = new TileGrid(new LayerMetadata.Extent(-0.3, 1.7, 9.1, 4.4), new KeyBounds(-5, 2, 31, 12));
        for (int t = 0; t < 2000; t++) {
            double x0 = -1 + rnd.nextDouble() * 11, x1 = x0 + rnd.nextDouble() * 3;
            double y0 = 1 + rnd.nextDouble() * 4, y1 = y0 + rnd.nextDouble() * 2;
            if (rnd.nextInt(4) == 0) { // on tile edges exactly
                x0 = g.xmin(-5 + rnd.nextInt(37));
                y1 = g.ymax(2 + rnd.nextInt(11));
                x1 = Math.max(x0, x1);
                y0 = Math.min(y0, y1);
            }
            int c0 = Integer.MAX_VALUE, c1 = Integer.MIN_VALUE, r0 = Integer.MAX_VALUE, r1 = Integer.MIN_VALUE;
            for (int c = -5; c <= 31; c++) {
                for (int r = 2; r <= 12; r++) {
                    double[] e = g.envelope(c, r);
                    if (e[2] >= x0 && e[0] <= x1 && e[3] >= y0 && e[1] <= y1) {
                        c0 = Math.min(c0, c);
                        c1 = Math.max(c1, c);
                        r0 = Math.min(r0, r);
                        r1 = Math.max(r1, r);
                    }
                }
            }
            int[] k = g.keyBox(x0, y0, x1, y1);
            if (c0 == Integer.MAX_VALUE) {
                assertNull(k);
            } else {
                assertArrayEquals("box " + x0 + "," + y0 + "," + x1 + "," + y1, new int[] {c0, r0, c1, r1}, k);
            }
        }
    }

    @Test
    public void keysWhereIsExactForEveryColumnAndBound() {
        Random rnd = new Random(11);
        TileGrid g = new TileGrid(new LayerMetadata.Extent(0.1, 0.2, 0.7, 1.3), new KeyBounds(0, 0, 12, 7));
        String[] columns = {TileGrid.XMIN, TileGrid.YMIN, TileGrid.XMAX, TileGrid.YMAX};
        for (int t = 0; t < 4000; t++) {
            String column = columns[rnd.nextInt(4)];
            boolean x = column.startsWith("x");
            int n = x ? 13 : 8;
            double lo = rnd.nextInt(3) == 0 ? g.coordinate(column, rnd.nextInt(13), rnd.nextInt(8)) : rnd.nextDouble() * 1.6 - 0.1;
            double hi = rnd.nextInt(3) == 0 ? g.coordinate(column, rnd.nextInt(13), rnd.nextInt(8)) : rnd.nextDouble() * 1.6 - 0.1;
            if (rnd.nextInt(5) == 0) lo = Double.NEGATIVE_INFINITY;
            if (rnd.nextInt(5) == 0) hi = Double.POSITIVE_INFINITY;
            boolean loIn = rnd.nextBoolean(), hiIn = rnd.nextBoolean();
            int first = Integer.MAX_VALUE, last = Integer.MIN_VALUE;
            for (int k = 0; k < n; k++) {
                double v = g.coordinate(column, x ? k : 0, x ? 0 : k);
                if ((loIn ? v >= lo : v > lo) && (hiIn ? v <= hi : v < hi)) {
                    first = Math.min(first, k);
                    last = Math.max(last, k);
                }
            }
            int[] run = g.keysWhere(column, lo, loIn, hi, hiIn);
            if (first == Integer.MAX_VALUE) {
                assertNull(run);
            } else {
                assertArrayEquals(column + " in " + lo + ".." + hi, new int[] {first, last}, run);
            }
        }
    }

    @Test
    public void noExtentNoGrid() {
        LayerMetadata md = new LayerMetadata();
        md.keyIndex = io.sfclayer.curve.KeyIndex.z(BOUNDS);
        assertNull(TileGrid.of(md));
        md.extent = new LayerMetadata.Extent(0, 0, 1, 1);
        assertEquals(1.0 / 20, TileGrid.of(md).tileWidth(), 0);
    }
}
