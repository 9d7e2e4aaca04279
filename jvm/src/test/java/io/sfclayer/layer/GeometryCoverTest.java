package io.sfclayer.layer;

import io.sfclayer.SfcLayerException;
import io.sfclayer.curve.KeyBounds;
import io.sfclayer.curve.QueryBox;
import io.sfclayer.format.LayerMetadata;
import org.junit.Test;
import org.locationtech.jts.geom.Coordinate;
import org.locationtech.jts.geom.Envelope;
import org.locationtech.jts.geom.Geometry;
import org.locationtech.jts.geom.GeometryFactory;
import org.locationtech.jts.io.WKBWriter;

import java.util.List;
import java.util.Random;
import java.util.TreeSet;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

/** The cover holds exactly the tiles whose closed envelope meets the geometry (brute force agrees). */
public class GeometryCoverTest {
    private static final KeyBounds BOUNDS = new KeyBounds(-3, 5, 76, 64);
    private static final TileGrid GRID = new TileGrid(new LayerMetadata.Extent(-0.37, 1.3, 7.63, 7.3), BOUNDS);
    private static final GeometryFactory F = new GeometryFactory();

    private static TreeSet<Long> bruteForce(Geometry g) {
        TreeSet<Long> out = new TreeSet<>();
        for (int c = BOUNDS.colMin; c <= BOUNDS.colMax; c++) {
            for (int r = BOUNDS.rowMin; r <= BOUNDS.rowMax; r++) {
                if (GeometryCover.intersects(g, GRID.xmin(c), GRID.ymin(r), GRID.xmax(c), GRID.ymax(r))) {
                    out.add(key(c, r));
                }
            }
        }
        return out;
    }

    private static TreeSet<Long> tiles(List<QueryBox> boxes) {
        TreeSet<Long> out = new TreeSet<>();
        long n = 0;
        for (QueryBox b : boxes) {
            for (int c = b.colMin; c <= b.colMax; c++) {
                for (int r = b.rowMin; r <= b.rowMax; r++) {
                    out.add(key(c, r));
                    n++;
                }
            }
        }
        assertEquals("boxes overlap", n, out.size());
        return out;
    }

    private static long key(int c, int r) {
        return ((long) c << 32) | (r & 0xffffffffL);
    }

    private static Geometry random(Random rng) {
        double x = -1 + 9 * rng.nextDouble(), y = 1 + 7 * rng.nextDouble();
        switch (rng.nextInt(5)) {
            case 0: {
                Coordinate[] cs = new Coordinate[3 + rng.nextInt(5)];
                for (int i = 0; i < cs.length; i++) {
                    cs[i] = new Coordinate(x + 3 * rng.nextGaussian(), y + 2 * rng.nextGaussian());
                }
                return F.createMultiPoint(cs).convexHull();
            }
            case 1:
                return F.createLineString(new Coordinate[] {new Coordinate(x, y),
                    new Coordinate(x + 4 * rng.nextGaussian(), y + 4 * rng.nextGaussian())});
            case 2: // a point, sometimes on a tile corner
                return rng.nextBoolean() ? F.createPoint(new Coordinate(x, y))
                    : F.createPoint(new Coordinate(GRID.xmin(10 + rng.nextInt(40)), GRID.ymax(10 + rng.nextInt(40))));
            case 3: // a ring: polygon with a hole
                return F.createPoint(new Coordinate(x, y)).buffer(0.5 + 2 * rng.nextDouble())
                    .difference(F.createPoint(new Coordinate(x, y)).buffer(0.3));
            default: // a thin diagonal
                return F.createLineString(new Coordinate[] {new Coordinate(x, y), new Coordinate(x + 5, y + 3)})
                    .buffer(0.005);
        }
    }

    @Test
    public void coverEqualsBruteForceOnRandomGeometries() {
        Random rng = new Random(24);
        for (int i = 0; i < 300; i++) {
            Geometry g = random(rng);
            assertEquals(g.toText(), bruteForce(g), tiles(GeometryCover.boxes(g, GRID)));
        }
    }

    @Test
    public void aTileEdgeCountsAndOutsideIsEmpty() {
        // a vertical line on col 11's left edge meets it, and col 10 when its right edge reaches it
        double x = GRID.xmin(11);
        Geometry line = F.createLineString(new Coordinate[] {new Coordinate(x, GRID.ymin(20)), new Coordinate(x, GRID.ymax(20))});
        TreeSet<Long> got = tiles(GeometryCover.boxes(line, GRID));
        assertTrue(got.contains(key(11, 20)));
        assertEquals(GRID.xmax(10) >= x, got.contains(key(10, 20)));
        assertEquals(bruteForce(line), got);
        assertEquals(List.of(), GeometryCover.boxes(F.toGeometry(new Envelope(100, 101, 100, 101)), GRID));
    }

    @Test
    public void aLargePolygonIsAFewBoxesFoundFromItsBoundary() {
        Geometry big = F.toGeometry(new Envelope(0.01, 7.0, 1.5, 7.0));
        List<QueryBox> boxes = GeometryCover.boxes(big, GRID);
        assertEquals(1, boxes.size());
        assertEquals(bruteForce(big), tiles(boxes));
    }

    @Test
    public void textFormsParseAndBadOnesAreRefused() {
        Geometry g = F.toGeometry(new Envelope(1, 2, 3, 4));
        assertTrue(GeometryCover.parse(g.toText()).equalsExact(g));
        assertTrue(GeometryCover.parse(WKBWriter.toHex(new WKBWriter().write(g))).equalsExact(g));
        for (String bad : new String[] {"", "POLYGON ((0 0, 1 1", "POLYGON ((0 0, 1 1, 1 0, 0 1, 0 0))", "hello"}) {
            assertThrows(bad, SfcLayerException.InvalidArgument.class, () -> GeometryCover.parse(bad));
        }
        assertThrows(SfcLayerException.InvalidArgument.class, () -> GeometryCover.boxes("POINT (1 1)", null,
            new org.apache.hadoop.fs.Path("/x")));
    }
}
