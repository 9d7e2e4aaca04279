package io.sfclayer.geotrellis;

import io.sfclayer.SfcLayerException;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.DecoderFactory;

import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.DataFormatException;
import java.util.zip.Inflater;

/**
 * A GeoTrellis MapFile value: zlib-deflated Avro (GeoTrellis' AvroEncoder) of a {@code KeyValueRecord
 * {pairs: [{_1: key, _2: tile}]}} in the layer's stored writer schema; several keys may share an index.
 * One instance per reader thread (it reuses its inflater and Avro objects).
 */
public final class GtRecordCodec {
    private final GenericDatumReader<GenericRecord> reader;
    private final Inflater inflater = new Inflater();
    private final ByteArrayOutputStream inflated = new ByteArrayOutputStream(1 << 16);
    private final byte[] chunk = new byte[1 << 16];
    private BinaryDecoder decoder;
    private GenericRecord reuse;

    /**
     * Parsed writer schemas by their text: a layer opened again (a cold look-up per request) does not parse
     * GeoTrellis' large tile-union schema again (a third of a cold look-up's JVM time). Keyed by the text
     * itself, so a rewritten layer with another schema is parsed anew; a Schema is immutable once parsed,
     * and sharing it also shares Avro's per-schema resolver cache.
     */
    private static final int SCHEMAS_KEPT = 32;
    private static final Map<String, Schema> SCHEMAS = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Schema> eldest) {
            return size() > SCHEMAS_KEPT;
        }
    };

    /**
     * @throws SfcLayerException.CorruptLayer if the schema does not parse
     */
    public GtRecordCodec(String schemaJson, String where) {
        this.reader = new GenericDatumReader<>(schema(schemaJson, where));
    }

    private static Schema schema(String json, String where) {
        synchronized (SCHEMAS) {
            Schema s = SCHEMAS.get(json);
            if (s != null) return s;
        }
        Schema schema;
        try {
            schema = new Schema.Parser().setValidateDefaults(false).parse(json);
        } catch (RuntimeException e) {
            throw new SfcLayerException.CorruptLayer(where + ": the stored Avro schema does not parse: " + SfcLayerException.reason(e), e);
        }
        synchronized (SCHEMAS) {
            SCHEMAS.put(json, schema);
        }
        return schema;
    }

    /** Schemas parsed and kept now. */
    public static int schemasKept() {
        synchronized (SCHEMAS) {
            return SCHEMAS.size();
        }
    }

    /** Forgets every kept schema (the benchmark's cold look-ups start from nothing parsed). */
    public static void clearSchemas() {
        synchronized (SCHEMAS) {
            SCHEMAS.clear();
        }
    }

    /**
     * The tiles of one value.
     *
     * @param index the MapFile key it was stored under (kept on each tile)
     * @throws SfcLayerException.CorruptLayer if the bytes do not inflate or decode
     */
    public List<GtTile> decode(byte[] value, int off, int len, long index, String where) {
        byte[] raw;
        int rawLen;
        try {
            inflater.reset();
            inflater.setInput(value, off, len);
            inflated.reset();
            while (!inflater.finished()) {
                int n = inflater.inflate(chunk);
                if (n == 0 && (inflater.needsInput() || inflater.needsDictionary())) {
                    throw new DataFormatException("truncated deflate stream");
                }
                inflated.write(chunk, 0, n);
            }
            raw = inflated.toByteArray();
            rawLen = raw.length;
        } catch (DataFormatException e) {
            throw new SfcLayerException.CorruptLayer(where + ": the value of index " + index + " does not inflate: "
                + e.getMessage(), e);
        }
        GenericRecord rec;
        try {
            decoder = DecoderFactory.get().binaryDecoder(raw, 0, rawLen, decoder);
            rec = reader.read(reuse, decoder);
            reuse = null; // tiles keep references into it
            if (!decoder.isEnd()) throw new java.io.IOException("bytes after the record");
        } catch (java.io.IOException | RuntimeException e) {
            throw new SfcLayerException.CorruptLayer(where + ": the value of index " + index
                + " does not decode with the layer's Avro schema: " + e, e);
        }
        Object pairs = rec.getSchema().getField("pairs") == null ? null : rec.get("pairs");
        if (!(pairs instanceof List)) throw new SfcLayerException.CorruptLayer(where + ": index " + index + ": not a KeyValueRecord");
        List<GtTile> out = new ArrayList<>(((List<?>) pairs).size());
        for (Object o : (List<?>) pairs) {
            GenericRecord pair = (GenericRecord) o;
            GenericRecord key = (GenericRecord) pair.get("_1");
            Object col = key.get("col"), row = key.get("row");
            Object t = key.getSchema().getField("instant") != null ? key.get("instant")
                : key.getSchema().getField("millis") != null ? key.get("millis") : null;
            if (!(col instanceof Integer) || !(row instanceof Integer)) {
                throw new SfcLayerException.CorruptLayer(where + ": index " + index + ": a key without col and row");
            }
            GtPixels p = GtPixels.decode((GenericRecord) pair.get("_2"), where + ", index " + index);
            out.add(new GtTile((Integer) col, (Integer) row, t == null ? 0 : (Long) t, index, p));
        }
        return out;
    }
}
