package io.sfclayer.bench;

import io.sfclayer.codec.TileSchema;
import io.sfclayer.format.DataFile;
import io.sfclayer.format.DataFileReader;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.format.RasterLayout;
import io.sfclayer.format.ValueCompression;
import io.sfclayer.layer.Layer;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Benchmark helper (bench/codecs.py), not part of the connector: the codec's own speed on a layer's
 * groups, inside the JVM, with no file reads in the timed part.
 */
public final class CodecTiming {
    private CodecTiming() { }

    /**
     * Reads the stored groups of the layer at {@code path} (at most {@code maxGroups}, from its first
     * files), then times decoding them all and encoding their plain forms again with the layer's
     * compression, {@code repeats} times each (the best run), after a warm-up.
     * Returns {groups, plain bytes, stored bytes, best decode nanos, best encode nanos}.
     */
    public static long[] time(Configuration conf, String path, int maxGroups, int repeats) throws IOException {
        Layer layer = Layer.open(conf, path);
        LayerMetadata md = layer.metadata();
        ValueCompression c = ValueCompression.parse(md.compression);
        RasterLayout raster = RasterLayout.of(TileSchema.fromJson(md.valueSchemaJson, md.isSpaceTime()));
        List<byte[]> stored = new ArrayList<>();
        for (DataFile f : md.files) {
            try (DataFileReader r = new DataFileReader(conf, new Path(new Path(layer.path(), f.dir), f.name))) {
                while (stored.size() < maxGroups && r.next()) {
                    stored.add(Arrays.copyOfRange(r.bytes(), r.offset(), r.offset() + r.length()));
                }
            }
        }
        List<byte[]> plain = new ArrayList<>();
        long plainBytes = 0, storedBytes = 0;
        for (byte[] s : stored) {
            byte[] p = c.decompress(s, 0, s.length);
            plain.add(p);
            plainBytes += p.length;
            storedBytes += s.length;
        }
        long bestDecode = Long.MAX_VALUE, bestEncode = Long.MAX_VALUE;
        long sink = 0;
        // warm-up: the JIT compiles the codec before anything is timed (at least 64 MB each way)
        for (long done = 0, rounds = 0; done < 64L << 20 && rounds < 1000; done += Math.max(1, plainBytes), rounds++) {
            for (byte[] s : stored) sink += c.decompress(s, 0, s.length).length;
            for (byte[] p : plain) sink += c.compress(p, 0, p.length, raster).length;
        }
        for (int k = 0; k < repeats; k++) {
            long t0 = System.nanoTime();
            for (byte[] s : stored) sink += c.decompress(s, 0, s.length).length;
            long t1 = System.nanoTime();
            for (byte[] p : plain) sink += c.compress(p, 0, p.length, raster).length;
            long t2 = System.nanoTime();
            bestDecode = Math.min(bestDecode, t1 - t0);
            bestEncode = Math.min(bestEncode, t2 - t1);
        }
        if (sink == 42) System.out.print(""); // keeps the work observable
        return new long[]{stored.size(), plainBytes, storedBytes, bestDecode, bestEncode};
    }
}
