package io.sfclayer.geotrellis;

import org.apache.avro.Schema;
import org.apache.avro.SchemaBuilder;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.EncoderFactory;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BigIntWritable;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.MapFile;
import org.apache.hadoop.io.SequenceFile;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.zip.DeflaterOutputStream;

/**
 * Writes a small GeoTrellis-layout catalog the way GeoTrellis' HadoopLayerWriter does (attributes JSON,
 * MapFiles of BigIntWritable → deflated Avro KeyValueRecord, index interval 4, files named
 * part-r-<p>-<first index>), with GeoTrellis' codec schemas: the reader's plumbing tested without
 * GeoTrellis (tests/test_geotrellis.py checks against layers GeoTrellis itself wrote).
 */
final class GtTestCatalog {
    static final String NS = "geotrellis.raster";

    static Schema arrayTile(String name, Schema cells, Schema nodata) {
        SchemaBuilder.FieldAssembler<Schema> f = SchemaBuilder.record(name).namespace(NS).fields()
            .name("cols").type().intType().noDefault()
            .name("rows").type().intType().noDefault()
            .name("cells").type(cells).noDefault();
        if (nodata != null) f = f.name("noDataValue").type(nodata).noDefault();
        return f.endRecord();
    }

    static final Schema INT_UNION = Schema.createUnion(Schema.create(Schema.Type.INT), Schema.create(Schema.Type.NULL));
    static final Schema FLOAT_UNION = Schema.createUnion(Schema.create(Schema.Type.BOOLEAN), Schema.create(Schema.Type.FLOAT));
    static final Schema SHORT_TILE = arrayTile("ShortArrayTile", Schema.createArray(Schema.create(Schema.Type.INT)), INT_UNION);
    static final Schema UBYTE_TILE = arrayTile("UByteArrayTile", Schema.create(Schema.Type.BYTES), INT_UNION);
    static final Schema FLOAT_TILE = arrayTile("FloatArrayTile", Schema.createArray(Schema.create(Schema.Type.FLOAT)), FLOAT_UNION);
    static final Schema BIT_TILE = arrayTile("BitArrayTile", Schema.create(Schema.Type.BYTES), null);
    static final Schema INT_CONST = SchemaBuilder.record("IntConstantTile").namespace(NS).fields()
        .name("cols").type().intType().noDefault().name("rows").type().intType().noDefault()
        .name("cell").type().intType().noDefault().name("noDataValue").type(INT_UNION).noDefault().endRecord();
    static final Schema SIMPLE = Schema.createUnion(SHORT_TILE, UBYTE_TILE, FLOAT_TILE, BIT_TILE, INT_CONST);
    static final Schema PADDED = SchemaBuilder.record("PaddedTile").namespace(NS).fields()
        .name("chunk").type(SIMPLE).noDefault()
        .name("colOffset").type().intType().noDefault().name("rowOffset").type().intType().noDefault()
        .name("cols").type().intType().noDefault().name("rows").type().intType().noDefault().endRecord();
    static final Schema TILE = Schema.createUnion(SHORT_TILE, UBYTE_TILE, FLOAT_TILE, BIT_TILE, INT_CONST, PADDED);
    static final Schema MULTIBAND = SchemaBuilder.record("ArrayMultibandTile").namespace(NS).fields()
        .name("bands").type(Schema.createArray(TILE)).noDefault().endRecord();

    static Schema key(boolean spaceTime) {
        SchemaBuilder.FieldAssembler<Schema> f = SchemaBuilder.record(spaceTime ? "SpaceTimeKey" : "SpatialKey")
            .namespace("geotrellis.layer").fields()
            .name("col").type().intType().noDefault().name("row").type().intType().noDefault();
        if (spaceTime) f = f.name("instant").type().longType().noDefault();
        return f.endRecord();
    }

    static Schema kvr(boolean spaceTime, Schema value) {
        Schema pair = SchemaBuilder.record("Tuple2").namespace("scala").fields()
            .name("_1").type(key(spaceTime)).noDefault().name("_2").type(value).noDefault().endRecord();
        return SchemaBuilder.record("KeyValueRecord").namespace("geotrellis.spark.io").fields()
            .name("pairs").type(Schema.createArray(pair)).noDefault().endRecord();
    }

    static GenericRecord shortTile(int cols, int rows, short[] cells, Integer nodata) {
        GenericRecord r = new GenericData.Record(SHORT_TILE);
        r.put("cols", cols);
        r.put("rows", rows);
        List<Integer> c = new ArrayList<>();
        for (short s : cells) c.add((int) s);
        r.put("cells", c);
        r.put("noDataValue", nodata);
        return r;
    }

    /** One tile at a key: {col, row, millis} → tile record. */
    static final class Entry {
        final int col, row;
        final long millis;
        final GenericRecord tile;

        Entry(int col, int row, long millis, GenericRecord tile) {
            this.col = col;
            this.row = row;
            this.millis = millis;
            this.tile = tile;
        }
    }

    /**
     * Writes layer {@code name/zoom} into {@code catalog} with {@code index}'s toIndex, {@code perFile}
     * records per MapFile.
     */
    static void write(File catalog, String name, int zoom, String keyIndexJson, GtKeyIndex index, boolean spaceTime,
                      Schema value, String cellType, List<Entry> entries, int perFile) throws IOException {
        Schema schema = kvr(spaceTime, value);
        TreeMap<Long, List<Entry>> byIndex = new TreeMap<>();
        for (Entry e : entries) byIndex.computeIfAbsent(index.toIndex(e.col, e.row, e.millis), k -> new ArrayList<>()).add(e);
        File dir = new File(catalog, name + "/" + zoom);
        dir.mkdirs();
        Configuration conf = new Configuration();
        MapFile.Writer w = null;
        int n = 0, part = 0;
        for (Map.Entry<Long, List<Entry>> g : byIndex.entrySet()) {
            if (w == null || n == perFile) {
                if (w != null) w.close();
                w = new MapFile.Writer(conf, new Path(dir.toURI().toString(), String.format("part-r-%05d-%d", part++, g.getKey())),
                    MapFile.Writer.keyClass(BigIntWritable.class), MapFile.Writer.valueClass(BytesWritable.class),
                    MapFile.Writer.compression(SequenceFile.CompressionType.NONE));
                w.setIndexInterval(4);
                n = 0;
            }
            GenericRecord rec = new GenericData.Record(schema);
            List<GenericRecord> pairs = new ArrayList<>();
            for (Entry e : g.getValue()) {
                GenericRecord k = new GenericData.Record(key(spaceTime));
                k.put("col", e.col);
                k.put("row", e.row);
                if (spaceTime) k.put("instant", e.millis);
                GenericRecord p = new GenericData.Record(schema.getField("pairs").schema().getElementType());
                p.put("_1", k);
                p.put("_2", e.tile);
                pairs.add(p);
            }
            rec.put("pairs", pairs);
            ByteArrayOutputStream raw = new ByteArrayOutputStream();
            BinaryEncoder enc = EncoderFactory.get().binaryEncoder(raw, null);
            new GenericDatumWriter<GenericRecord>(schema).write(rec, enc);
            enc.flush();
            ByteArrayOutputStream z = new ByteArrayOutputStream();
            try (DeflaterOutputStream d = new DeflaterOutputStream(z)) {
                d.write(raw.toByteArray());
            }
            w.append(new BigIntWritable(BigInteger.valueOf(g.getKey()).toByteArray()), new BytesWritable(z.toByteArray()));
            n++;
        }
        if (w != null) w.close();
        String keyClass = spaceTime ? "geotrellis.layer.SpaceTimeKey" : "geotrellis.layer.SpatialKey";
        String bounds = "{\"minKey\":{\"col\":" + index.colMin + ",\"row\":" + index.rowMin
            + (spaceTime ? ",\"instant\":" + index.timeMin : "") + "},\"maxKey\":{\"col\":" + index.colMax + ",\"row\":"
            + index.rowMax + (spaceTime ? ",\"instant\":" + index.timeMax : "") + "}}";
        String json = "[{\"name\":\"" + name + "\",\"zoom\":" + zoom + "},{"
            + "\"header\":{\"format\":\"hdfs\",\"keyClass\":\"" + keyClass + "\",\"valueClass\":\"geotrellis.raster."
            + (value == MULTIBAND ? "MultibandTile" : "Tile") + "\",\"path\":\"file:/elsewhere/" + name + "/" + zoom
            + "\",\"layerType\":\"AvroLayer\"},"
            + "\"metadata\":{\"cellType\":\"" + cellType + "\",\"layoutDefinition\":{\"extent\":{\"xmin\":0,\"ymin\":0,"
            + "\"xmax\":64,\"ymax\":64},\"tileLayout\":{\"layoutCols\":64,\"layoutRows\":64,\"tileCols\":4,\"tileRows\":4}},"
            + "\"extent\":{\"xmin\":0,\"ymin\":0,\"xmax\":64,\"ymax\":64},\"crs\":\"+proj=longlat +datum=WGS84 +no_defs \","
            + "\"bounds\":" + bounds + "},"
            + "\"keyIndex\":" + keyIndexJson + ",\"schema\":" + schema.toString() + "}]";
        File attrs = new File(catalog, "_attributes");
        attrs.mkdirs();
        Files.write(new File(attrs, name + "___" + zoom + "___metadata.json").toPath(), json.getBytes(StandardCharsets.UTF_8));
    }

    /** Writes a small spatial Z layer {@code dem/3} (int16, 4 × 4 tiles, 5 records per file) into {@code args[0]}: for trying the reader by hand. */
    public static void main(String[] args) throws Exception {
        File catalog = new File(args[0]);
        String json = "{\"type\":\"zorder\",\"properties\":{\"keyBounds\":{\"minKey\":{\"col\":2,\"row\":3},"
            + "\"maxKey\":{\"col\":9,\"row\":8}}}}";
        GtKeyIndex index = GtKeyIndex.fromJson(new com.fasterxml.jackson.databind.ObjectMapper().readTree(json), false, "main");
        List<Entry> entries = new ArrayList<>();
        for (int r = 3; r <= 8; r++) {
            for (int c = 2; c <= 9; c++) {
                short[] cells = new short[16];
                for (int i = 0; i < 16; i++) cells[i] = (short) (c * 100 + r * 10 + i);
                entries.add(new Entry(c, r, 0, shortTile(4, 4, cells, -32768)));
            }
        }
        write(catalog, "dem", 3, json, index, false, TILE, "int16", entries, 5);
    }
}
