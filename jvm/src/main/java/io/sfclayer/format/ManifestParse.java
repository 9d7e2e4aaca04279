package io.sfclayer.format;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.type.TypeReference;
import io.sfclayer.SfcLayerException;

import java.io.IOException;
import java.util.AbstractList;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.RandomAccess;

/**
 * Parsing a manifest's checked bytes ({@link Manifest#fromJsonBytes}): Jackson's streaming parser
 * over the whole manifest (inner manifests' references; leaves that {@link ManifestLeafScan} does
 * not take), and the lazily parsed files of a leaf ({@link LazyFiles}).
 */
final class ManifestParse {
    private ManifestParse() {
    }

    /**
     * One pass of a streaming parser over a manifest. Inner manifests' references are parsed whole; a
     * leaf's file entries only as far as their spans and totals (name, lastIndex, records, indexes,
     * dataBytes), each entry's bytes kept for {@link LazyFiles} to parse whole when it is asked for.
     */
    static Manifest parse(JsonParser p, byte[] bytes, ManifestRef ref, String source) throws IOException {
        if (p.nextToken() != JsonToken.START_OBJECT) {
            throw new SfcLayerException.CorruptLayer("manifest " + source + " is damaged: not a JSON object");
        }
        Object format = null;
        Object formatVersion = null;
        String entriesField = ref.level == 0 ? "files" : "manifests";
        List<ManifestRef> children = null;
        LeafEntries leaf = null;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String field = p.currentName();
            JsonToken t = p.nextToken();
            if (field.equals("format")) {
                format = t == JsonToken.VALUE_STRING ? p.getText() : t.toString();
            } else if (field.equals("formatVersion")) {
                formatVersion = t == JsonToken.VALUE_NUMBER_INT ? (Object) p.getLongValue() : t.toString();
            } else if (field.equals(entriesField) && t == JsonToken.START_ARRAY) {
                if (ref.level == 0) {
                    leaf = leafEntries(p, bytes, source);
                } else {
                    children = new ArrayList<>();
                    JsonToken e;
                    while ((e = p.nextToken()) == JsonToken.START_OBJECT) {
                        children.add(refEntry(p, bytes, "manifest " + source));
                    }
                    if (e != JsonToken.END_ARRAY) {
                        throw new SfcLayerException.CorruptLayer("manifest " + source
                            + ": its manifests are not a list of objects");
                    }
                }
            } else {
                p.skipChildren();
            }
        }
        if (p.currentToken() != JsonToken.END_OBJECT || p.nextToken() != null) {
            throw new SfcLayerException.CorruptLayer("manifest " + source + " is damaged: not one JSON object");
        }
        return built(format, formatVersion, ref, children, leaf, bytes, source);
    }

    /** The manifest a parse found, once its format and entries are checked. */
    static Manifest built(Object format, Object formatVersion, ManifestRef ref, List<ManifestRef> children,
                                  LeafEntries leaf, byte[] bytes, String source) {
        if (!Manifest.FORMAT.equals(format) || !(formatVersion instanceof Long)
                || (Long) formatVersion > LayerMetadata.MAX_FORMAT_VERSION) {
            throw new SfcLayerException.CorruptLayer("manifest " + source + " is not an sfclayer manifest this"
                + " sfclayer reads (format " + format + ", formatVersion " + formatVersion + ")");
        }
        if (ref.level == 0 ? leaf == null || leaf.count == 0 : children == null || children.isEmpty()) {
            throw new SfcLayerException.CorruptLayer("manifest " + source + " lists nothing");
        }
        if (ref.level > 0) {
            return new Manifest(ref.level, List.of(), children);
        }
        int n = leaf.count;
        long[] firsts = Arrays.copyOf(leaf.firsts, n);
        long[] lasts = Arrays.copyOf(leaf.lasts, n);
        return Manifest.leaf(new LazyFiles(bytes, Arrays.copyOf(leaf.starts, n), Arrays.copyOf(leaf.ends, n), firsts,
            lasts, source), firsts, lasts, leaf.records, leaf.indexes, leaf.dataBytes);
    }

    private static final TypeReference<Map<String, Object>> ENTRY = new TypeReference<Map<String, Object>>() { };

    private static final String[] REF_FIELDS = {"level", "firstIndex", "lastIndex", "fileCount", "records", "indexes",
        "dataBytes"};

    /**
     * One entry of an inner manifest's {@code manifests} (the parser on its START_OBJECT), read field by
     * field; an entry that is not plainly well formed is read again as {@link ManifestRef#fromJson}
     * does, which says what is wrong.
     */
    private static ManifestRef refEntry(JsonParser p, byte[] bytes, String source) throws IOException {
        int start = (int) p.currentTokenLocation().getByteOffset();
        String path = null, sum = null;
        long[] v = new long[REF_FIELDS.length];
        int seen = 0;
        boolean plain = true;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String field = p.currentName();
            JsonToken t = p.nextToken();
            int k = -1;
            for (int j = 0; j < REF_FIELDS.length && k < 0; j++) {
                k = REF_FIELDS[j].equals(field) ? j : -1;
            }
            if (k >= 0) {
                plain &= t == JsonToken.VALUE_NUMBER_INT;
                if (t == JsonToken.VALUE_NUMBER_INT) {
                    v[k] = p.getLongValue();
                    seen |= 1 << k;
                }
            } else if (field.equals("path")) {
                plain &= t == JsonToken.VALUE_STRING;
                path = t == JsonToken.VALUE_STRING ? p.getText() : null;
            } else if (field.equals("checksum")) {
                plain &= t == JsonToken.VALUE_STRING;
                sum = t == JsonToken.VALUE_STRING ? p.getText() : null;
            }
            p.skipChildren();
        }
        if (!plain || path == null || sum == null || seen != (1 << REF_FIELDS.length) - 1 || v[0] != (int) v[0]) {
            int end = (int) p.currentTokenLocation().getByteOffset() + 1;
            return ManifestRef.fromJson(LayerMetadata.json().readValue(bytes, start, end - start, ENTRY), source);
        }
        return ManifestRef.checked(path, (int) v[0], v[1], v[2], v[3], v[4], v[5], v[6], sum, source);
    }

    /** What a first pass over a leaf keeps of its entries. */
    static final class LeafEntries {
        int count;
        int[] starts = new int[32];
        int[] ends = new int[32];
        long[] firsts = new long[32];
        long[] lasts = new long[32];
        long records;
        long indexes;
        long dataBytes;

        void add(int start, int end, long first, long last) {
            if (count == starts.length) {
                starts = Arrays.copyOf(starts, 2 * count);
                ends = Arrays.copyOf(ends, 2 * count);
                firsts = Arrays.copyOf(firsts, 2 * count);
                lasts = Arrays.copyOf(lasts, 2 * count);
            }
            starts[count] = start;
            ends[count] = end;
            firsts[count] = first;
            lasts[count] = last;
            count++;
        }
    }

    /** The entries of a leaf's {@code files} array (the parser on its START_ARRAY). */
    private static LeafEntries leafEntries(JsonParser p, byte[] bytes, String source) throws IOException {
        LeafEntries out = new LeafEntries();
        JsonToken t;
        while ((t = p.nextToken()) == JsonToken.START_OBJECT) {
            int start = (int) p.currentTokenLocation().getByteOffset();
            String name = null;
            long last = 0, records = 0, indexes = 0, dataBytes = 0;
            int seen = 0;
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String field = p.currentName();
                JsonToken v = p.nextToken();
                int bit = field.equals("lastIndex") ? 1 : field.equals("records") ? 2 : field.equals("indexes") ? 4
                    : field.equals("dataBytes") ? 8 : 0;
                if (field.equals("name") && v == JsonToken.VALUE_STRING) {
                    name = p.getText();
                } else if (bit != 0 && v == JsonToken.VALUE_NUMBER_INT) {
                    long x = p.getLongValue();
                    seen |= bit;
                    if (bit == 1) {
                        last = x;
                    } else if (bit == 2) {
                        records = x;
                    } else if (bit == 4) {
                        indexes = x;
                    } else {
                        dataBytes = x;
                    }
                } else {
                    p.skipChildren();
                }
            }
            int end = (int) p.currentTokenLocation().getByteOffset() + 1;
            if (name == null || seen != 15) {
                // the entry as DataFile reads it says what is missing
                DataFile.fromJson(LayerMetadata.json().readValue(bytes, start, end - start, ENTRY), null);
                throw new SfcLayerException.CorruptLayer("manifest " + source + ": files entry " + out.count
                    + " lacks its name, lastIndex, records, indexes or dataBytes");
            }
            out.add(start, end, DataFileName.parse(name).firstIndex, last);
            out.records += records;
            out.indexes += indexes;
            out.dataBytes += dataBytes;
        }
        if (t != JsonToken.END_ARRAY) {
            throw new SfcLayerException.CorruptLayer("manifest " + source + ": its files are not a list of objects");
        }
        return out;
    }

    /**
     * A leaf's files, each parsed whole (statistics and all, as {@link DataFile#fromJson}) when first
     * asked for, from the bytes of its entry in the checked manifest. Parsed files are kept; the
     * bytes are kept until every file has been parsed.
     */
    static final class LazyFiles extends AbstractList<DataFile> implements RandomAccess {
        private byte[] bytes;
        private final int[] starts;
        private final int[] ends;
        private final DataFile[] parsed;
        private int left;
        private final long[] firsts;
        private final long[] lasts;
        private final String source;

        LazyFiles(byte[] bytes, int[] starts, int[] ends, long[] firsts, long[] lasts, String source) {
            this.bytes = bytes;
            this.starts = starts;
            this.ends = ends;
            this.firsts = firsts;
            this.lasts = lasts;
            this.parsed = new DataFile[starts.length];
            this.left = starts.length;
            this.source = source;
        }

        @Override
        public int size() {
            return parsed.length;
        }

        synchronized int parsed() {
            return parsed.length - left;
        }

        @Override
        public synchronized DataFile get(int i) {
            DataFile f = parsed[i];
            if (f != null) {
                return f;
            }
            try {
                Map<String, Object> entry = LayerMetadata.json().readValue(bytes, starts[i], ends[i] - starts[i], ENTRY);
                f = DataFile.fromJson(entry, null);
            } catch (IOException e) {
                throw new SfcLayerException.CorruptLayer("manifest " + source + " is damaged: files entry " + i + ": "
                    + e.getMessage(), e);
            }
            if (f.firstIndex != firsts[i] || f.lastIndex != lasts[i]) { // the first pass read these bytes otherwise
                throw new SfcLayerException.CorruptLayer("manifest " + source + ": files entry " + i + " spans ["
                    + f.firstIndex + ", " + f.lastIndex + "] read whole but [" + firsts[i] + ", " + lasts[i]
                    + "] at first");
            }
            parsed[i] = f;
            if (--left == 0) {
                bytes = null;
            }
            return f;
        }
    }
}
