package io.sfclayer.layer;

import io.sfclayer.SfcLayerException;
import io.sfclayer.curve.QueryBox;
import io.sfclayer.format.LayerMetadata;
import org.apache.hadoop.fs.Path;

import java.util.List;

/**
 * A box query answered on the driver ({@code io.sfclayer.lookup.ValueReader#query}): the key boxes of a {@code bbox} (map
 * units, the read option's rule), a {@code keys} box and a {@code time} range, intersected, plus a limit.
 *
 * <p>Its text form, one {@code name=value} per line (what the look-up socket carries):
 * {@code bbox=xmin,ymin,xmax,ymax}, {@code keys=colMin,rowMin,colMax,rowMax} (inclusive),
 * {@code time=start,end} (inclusive, epoch microseconds), {@code geometry=<WKT or hex WKB>} (the
 * read option's rule: its tile cover), {@code limit=n}; each optional. Ranges are
 * capped as a Spark read's are by default (a superset; refinement keeps the answer exact).
 */
public final class BoxQuery {
    /** The most SFC ranges a query's boxes decompose into unless told otherwise (Spark's maxRanges option too). */
    public static final int DEFAULT_MAX_RANGES = 20000;

    /** The boxes (an empty list when nothing can match). */
    public final List<QueryBox> boxes;
    /** Most records to return; -1 for all. */
    public final long limit;
    public final int maxRanges;

    private BoxQuery(List<QueryBox> boxes, long limit, int maxRanges) {
        this.boxes = boxes;
        this.limit = limit;
        this.maxRanges = maxRanges;
    }

    /** Parses the text form against a layer's metadata. */
    public static BoxQuery parse(String spec, LayerMetadata md, Path layer) {
        QueryBox box = QueryBox.of(md.keyIndex.bounds());
        long limit = -1;
        List<QueryBox> cover = null;
        for (String line : spec.split("\n")) {
            if (line.isBlank()) {
                continue;
            }
            int eq = line.indexOf('=');
            String name = eq < 0 ? line.trim() : line.substring(0, eq).trim();
            String value = eq < 0 ? "" : line.substring(eq + 1).trim();
            switch (name) {
                case "bbox": {
                    List<QueryBox> b = QueryPlan.bbox(value, TileGrid.of(md), layer);
                    box = b.isEmpty() ? null : intersect(box, b.get(0));
                    break;
                }
                case "keys": {
                    long[] k = numbers(name, value, 4);
                    box = intersect(box, QueryBox.of(toInt(name, k[0]), toInt(name, k[1]), toInt(name, k[2]),
                        toInt(name, k[3])));
                    break;
                }
                case "time": {
                    if (!md.isSpaceTime()) {
                        throw new SfcLayerException.InvalidArgument("time: the layer at " + layer
                            + " is spatial: its keys have no time");
                    }
                    long[] t = numbers(name, value, 2);
                    box = intersect(box, new QueryBox(Integer.MIN_VALUE, Integer.MIN_VALUE, Integer.MAX_VALUE,
                        Integer.MAX_VALUE, t[0], t[1]));
                    break;
                }
                case "geometry":
                    cover = GeometryCover.boxes(value, TileGrid.of(md), layer);
                    break;
                case "limit":
                    limit = numbers(name, value, 1)[0];
                    if (limit < 0) {
                        throw new SfcLayerException.InvalidArgument("limit must be >= 0, got " + limit);
                    }
                    break;
                default:
                    throw new SfcLayerException.InvalidArgument("box query: unknown part '" + name
                        + "' (known: bbox, keys, time, geometry, limit)");
            }
        }
        List<QueryBox> boxes = box == null ? List.of() : List.of(box);
        if (cover != null) {
            boxes = GeometryCover.intersect(boxes, cover);
        }
        return new BoxQuery(boxes, limit, DEFAULT_MAX_RANGES);
    }

    /**
     * A cap on SFC ranges as text (Spark's {@code maxRanges} read option): a whole number >= 0, 0 for no
     * cap; null for the default.
     */
    public static int parseMaxRanges(String value) {
        if (value == null) {
            return DEFAULT_MAX_RANGES;
        }
        try {
            int n = Integer.parseInt(value.trim());
            if (n >= 0) {
                return n;
            }
        } catch (NumberFormatException e) {
            // below
        }
        throw new SfcLayerException.InvalidArgument("option maxRanges: '" + value
            + "' must be a whole number >= 0 (0: no cap)");
    }

    private static QueryBox intersect(QueryBox a, QueryBox b) {
        return a == null ? null : a.intersect(b);
    }

    private static int toInt(String name, long v) {
        if (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE) {
            throw new SfcLayerException.InvalidArgument(name + ": " + v + " is not a 32-bit key");
        }
        return (int) v;
    }

    private static long[] numbers(String name, String value, int n) {
        String[] parts = value.split(",");
        if (parts.length != n) {
            throw new SfcLayerException.InvalidArgument(name + ": expected " + n + " whole numbers, got '" + value + "'");
        }
        long[] out = new long[n];
        for (int i = 0; i < n; i++) {
            try {
                out[i] = Long.parseLong(parts[i].trim());
            } catch (NumberFormatException e) {
                throw new SfcLayerException.InvalidArgument(name + ": '" + parts[i].trim() + "' is not a whole number");
            }
        }
        return out;
    }
}
