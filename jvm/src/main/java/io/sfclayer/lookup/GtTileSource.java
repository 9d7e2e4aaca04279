package io.sfclayer.lookup;

import io.sfclayer.SfcLayerException;
import io.sfclayer.geotrellis.GtTile;
import io.sfclayer.geotrellis.GtValueReader;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * A GeoTrellis layer read in place ({@link GtValueReader}) as a {@link LookupServer} source, so its
 * warm look-ups cost a socket round trip, not a py4j call. Its records are tiles in sfclayer's raster
 * convention, big-endian: {@code int col, int row, long millis, int width, int height, int bands, int
 * dtypeLength, dtype (ASCII), byte hasNodata, double nodata, int pixelBytes, pixels} (self-delimiting;
 * python/sfclayer/geotrellis.py decodes them). Key times arrive in microseconds, as for every source,
 * and are floored to GeoTrellis' milliseconds.
 *
 * <p>Box queries are UTF-8 lines {@code name=value} with every one of {@code c0, r0, c1, r1} (keys,
 * inclusive), {@code t0, t1} (epoch ms, inclusive) and {@code limit} (negative: all).
 */
public final class GtTileSource implements TileSource<GtTileSource.Box> {
    /** An inclusive box of keys and times (ms) and a limit. */
    public static final class Box {
        final int c0, r0, c1, r1;
        final long t0, t1, limit;

        Box(int c0, int r0, int c1, int r1, long t0, long t1, long limit) {
            this.c0 = c0;
            this.r0 = r0;
            this.c1 = c1;
            this.r1 = r1;
            this.t0 = t0;
            this.t1 = t1;
            this.limit = limit;
        }
    }

    private final GtValueReader reader;

    public GtTileSource(GtValueReader reader) {
        this.reader = reader;
    }

    public GtValueReader reader() {
        return reader;
    }

    @Override
    public byte[] getOrNull(int col, int row, long timeMicros) {
        GtTile t = reader.get(col, row, Math.floorDiv(timeMicros, 1000));
        return t == null ? null : record(t);
    }

    @Override
    public void getMany(int[] cols, int[] rows, long[] timesMicros, Answers answers) throws IOException {
        for (int i = 0; i < cols.length; i++) {
            answers.accept(i, getOrNull(cols[i], rows[i], timesMicros[i]));
        }
    }

    @Override
    public Box boxQuery(String spec) {
        long[] v = new long[7];
        boolean[] seen = new boolean[7];
        List<String> names = List.of("c0", "r0", "c1", "r1", "t0", "t1", "limit");
        for (String line : spec.split("\n")) {
            if (line.isEmpty()) continue;
            int eq = line.indexOf('=');
            int at = eq < 0 ? -1 : names.indexOf(line.substring(0, eq));
            if (at < 0) {
                throw new SfcLayerException.InvalidArgument("GeoTrellis box query: " + line + " is not one of "
                    + String.join(", ", names) + " as name=value");
            }
            try {
                v[at] = Long.parseLong(line.substring(eq + 1).trim());
            } catch (NumberFormatException e) {
                throw new SfcLayerException.InvalidArgument("GeoTrellis box query: " + line + " is not a whole number");
            }
            seen[at] = true;
        }
        for (int i = 0; i < 4; i++) {
            if (!seen[i] || v[i] != (int) v[i]) {
                throw new SfcLayerException.InvalidArgument("GeoTrellis box query: give " + names.get(i)
                    + " as a 32-bit whole number");
            }
        }
        return new Box((int) v[0], (int) v[1], (int) v[2], (int) v[3], seen[4] ? v[4] : Long.MIN_VALUE,
            seen[5] ? v[5] : Long.MAX_VALUE, seen[6] ? v[6] : -1);
    }

    @Override
    public long query(Box q, Batches batches) throws IOException {
        List<byte[]> batch = new ArrayList<>();
        long[] bytes = {0};
        long n;
        try {
            n = reader.query(q.c0, q.r0, q.c1, q.r1, q.t0, q.t1, q.limit, t -> {
                byte[] r = record(t);
                batch.add(r);
                bytes[0] += r.length;
                if (batch.size() >= ValueReader.BATCH_RECORDS || bytes[0] >= ValueReader.BATCH_BYTES) {
                    flush(batch, batches);
                    bytes[0] = 0;
                }
            });
        } catch (UncheckedIOException e) {
            throw e.getCause();
        }
        if (!batch.isEmpty()) {
            batches.accept(batch);
        }
        return n;
    }

    private static void flush(List<byte[]> batch, Batches batches) {
        try {
            batches.accept(new ArrayList<>(batch));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        batch.clear();
    }

    @Override
    public long count(Box q) {
        return reader.count(q.c0, q.r0, q.c1, q.r1, q.t0, q.t1);
    }

    /** A tile as this source's record (see the class comment). */
    static byte[] record(GtTile t) {
        byte[] d = t.dtype.getBytes(StandardCharsets.US_ASCII);
        ByteBuffer b = ByteBuffer.allocate(4 + 4 + 8 + 12 + 4 + d.length + 1 + 8 + 4 + t.pixels.length);
        b.putInt(t.col).putInt(t.row).putLong(t.millis).putInt(t.width).putInt(t.height).putInt(t.bands);
        b.putInt(d.length).put(d);
        b.put((byte) (t.nodata == null ? 0 : 1)).putDouble(t.nodata == null ? 0 : t.nodata);
        b.putInt(t.pixels.length).put(t.pixels);
        return b.array();
    }

    @Override
    public void close() {
        reader.close();
    }
}
