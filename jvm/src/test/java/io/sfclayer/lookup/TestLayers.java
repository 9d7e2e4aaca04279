package io.sfclayer.lookup;

import io.sfclayer.codec.TileSchema;
import io.sfclayer.codec.TileWriter;
import io.sfclayer.commit.VersionLog;
import io.sfclayer.curve.KeyBounds;
import io.sfclayer.curve.KeyIndex;
import io.sfclayer.format.DataFile;
import io.sfclayer.format.DataFileWriter;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.format.ValueCompression;
import io.sfclayer.layer.GroupWriter;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

import java.io.IOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/** Writes small spatial layers without Spark: an n × n grid whose long value {@code v} is col * 1000 + row. */
final class TestLayers {
    private TestLayers() {
    }

    static long value(int col, int row) {
        return col * 1000L + row;
    }

    static void write(Configuration conf, Path layer, int n, long blockSize) throws IOException {
        write(conf, layer, n, blockSize, (c, r) -> true, 0);
    }

    /**
     * The n × n grid's tiles for which {@code present} holds, with bloom filters at {@code bloomFpp}
     * (0: none), recorded in the version document as a write with the bloomFilter option does.
     */
    static void write(Configuration conf, Path layer, int n, long blockSize,
                      java.util.function.BiPredicate<Integer, Integer> present, double bloomFpp) throws IOException {
        KeyIndex keyIndex = KeyIndex.z(new KeyBounds(0, 0, n - 1, n - 1));
        StructType valueSchema = new StructType().add("v", DataTypes.LongType, false);
        TileSchema schema = TileSchema.fromSpark(valueSchema, false);
        TileWriter tiles = new TileWriter(schema, 0, 1, -1, new int[] {2});
        List<long[]> keys = new ArrayList<>();
        for (int c = 0; c < n; c++) {
            for (int r = 0; r < n; r++) {
                if (!present.test(c, r)) {
                    continue;
                }
                keys.add(new long[] {keyIndex.index(c, r), c, r});
            }
        }
        keys.sort((a, b) -> Long.compare(a[0], b[0]));
        VersionLog log = new VersionLog(conf, layer);
        String writeId = VersionLog.newWriteId();
        String dirName = VersionLog.DATA_DIR_PREFIX + writeId;
        Path dataDir = log.dataDir(dirName);
        GroupWriter groups = new GroupWriter(new DataFileWriter(conf, dataDir, 0, blockSize, 4, writeId)
                .withBloomFilter(bloomFpp),
            ValueCompression.NONE, keyIndex);
        for (long[] k : keys) {
            int c = (int) k[1], r = (int) k[2];
            groups.add(k[0], tiles.encodeRecord(new GenericInternalRow(new Object[] {c, r, value(c, r)})));
        }
        groups.close();
        LayerMetadata md = new LayerMetadata();
        md.writeId = writeId;
        md.createdAt = Instant.now().toString();
        md.dataDir = dirName;
        md.keyIndex = keyIndex;
        md.valueSchemaJson = valueSchema.json();
        md.tileSchemaJson = schema.avroSchemaJson();
        md.blockSize = blockSize;
        md.indexInterval = 4;
        List<DataFile> files = new ArrayList<>();
        for (DataFile f : groups.files()) {
            files.add(f);
            md.recordCount += f.records;
            md.indexCount += f.indexes;
            md.dataBytes += f.dataBytes;
        }
        md.files = files;
        md.fileCount = files.size();
        io.sfclayer.format.BloomFilter.setLayerFpp(md, bloomFpp);
        log.commit(md, files);
    }
}
