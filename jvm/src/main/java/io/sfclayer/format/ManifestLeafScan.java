package io.sfclayer.format;

import java.nio.charset.StandardCharsets;

/**
 * A fast first pass over a leaf manifest's bytes (docs/FORMAT.md, section 10), for what a reader
 * needs before any file is asked for: each entry's byte span, name (its first index), lastIndex,
 * records, indexes and dataBytes, and the manifest's format fields. Everything else (statistics
 * above all, most of a leaf's bytes) is skipped by bracket counting, never tokenized. It accepts
 * only what it plainly understands (no escapes in the names and fields it reads, integers as
 * integers, each field once); on anything else it gives up and {@link Manifest} parses the leaf
 * with Jackson instead, which says what is wrong. The bytes have passed their CRC check first; each
 * entry is parsed whole by Jackson when it is asked for, and checked against what this pass found.
 */
final class ManifestLeafScan {
    private final byte[] b;
    private int i;
    /** The top-level {@code format} and {@code formatVersion} (null / -1 when absent). */
    String format;
    long formatVersion = -1;
    final ManifestParse.LeafEntries entries = new ManifestParse.LeafEntries();

    private ManifestLeafScan(byte[] bytes) {
        this.b = bytes;
    }

    /** The scan of a leaf manifest's bytes, or null when they are not plainly as sfclayer writes them. */
    static ManifestLeafScan of(byte[] bytes) {
        ManifestLeafScan s = new ManifestLeafScan(bytes);
        try {
            return s.document() ? s : null;
        } catch (RuntimeException e) { // out of bounds, a bad name, an overflow: let Jackson's parse say
            return null;
        }
    }

    private boolean document() {
        ws();
        if (b[i++] != '{') {
            return false;
        }
        boolean files = false;
        boolean formatSeen = false;
        boolean versionSeen = false;
        ws();
        if (b[i] == '}') {
            return false;
        }
        while (true) {
            String key = key();
            if (key == null) {
                return false;
            }
            if (key.equals("format")) {
                if (formatSeen || (format = string()) == null) {
                    return false;
                }
                formatSeen = true;
            } else if (key.equals("formatVersion")) {
                if (versionSeen || (formatVersion = integer()) < 0) {
                    return false;
                }
                versionSeen = true;
            } else if (key.equals("files")) {
                if (files || !files()) {
                    return false;
                }
                files = true;
            } else if (key.equals("manifests")) {
                return false;
            } else {
                skipValue();
            }
            ws();
            byte c = b[i++];
            if (c == '}') {
                break;
            }
            if (c != ',') {
                return false;
            }
        }
        ws();
        return i == b.length && files && entries.count > 0;
    }

    /** The entries of the {@code files} array (at its '['). */
    private boolean files() {
        if (b[i++] != '[') {
            return false;
        }
        ws();
        if (b[i] == ']') {
            i++;
            return true;
        }
        while (true) {
            ws();
            if (!entry()) {
                return false;
            }
            ws();
            byte c = b[i++];
            if (c == ']') {
                return true;
            }
            if (c != ',') {
                return false;
            }
        }
    }

    private static final String[] NUMBERS = {"lastIndex", "records", "indexes", "dataBytes"};

    private boolean entry() {
        int start = i;
        if (b[i++] != '{') {
            return false;
        }
        String name = null;
        long[] v = new long[NUMBERS.length];
        int seen = 0;
        ws();
        if (b[i] == '}') {
            return false;
        }
        while (true) {
            String key = key();
            if (key == null) {
                return false;
            }
            int k = -1;
            for (int j = 0; j < NUMBERS.length && k < 0; j++) {
                k = NUMBERS[j].equals(key) ? j : -1;
            }
            if (k >= 0) {
                if ((seen & (1 << k)) != 0) {
                    return false;
                }
                long x = signedInteger();
                if (x == Long.MIN_VALUE) {
                    return false;
                }
                v[k] = x;
                seen |= 1 << k;
            } else if (key.equals("name")) {
                if (name != null || (name = string()) == null) {
                    return false;
                }
            } else {
                skipValue();
            }
            ws();
            byte c = b[i++];
            if (c == '}') {
                break;
            }
            if (c != ',') {
                return false;
            }
        }
        if (name == null || seen != (1 << NUMBERS.length) - 1) {
            return false;
        }
        entries.add(start, i, DataFileName.parse(name).firstIndex, v[0]);
        entries.records += v[1];
        entries.indexes += v[2];
        entries.dataBytes += v[3];
        return true;
    }

    /** A key and its ':' (the position then at the value), or null when it is not a plain string. */
    private String key() {
        ws();
        String k = string();
        if (k == null) {
            return null;
        }
        ws();
        if (b[i++] != ':') {
            return null;
        }
        ws();
        return k;
    }

    /** A string without escapes (at its opening quote), or null. */
    private String string() {
        if (b[i] != '"') {
            return null;
        }
        int from = ++i;
        while (b[i] != '"') {
            if (b[i] == '\\') {
                return null;
            }
            i++;
        }
        return new String(b, from, i++ - from, StandardCharsets.UTF_8);
    }

    /** A non-negative integer, or -1 when the value is not one. */
    private long integer() {
        if (b[i] == '-') {
            return -1;
        }
        long x = signedInteger();
        return x == Long.MIN_VALUE ? -1 : x;
    }

    /** An integer (no fraction or exponent, no overflow), or Long.MIN_VALUE when the value is not one. */
    private long signedInteger() {
        boolean negative = b[i] == '-';
        if (negative) {
            i++;
        }
        int from = i;
        long x = 0;
        while (b[i] >= '0' && b[i] <= '9') {
            int d = b[i++] - '0';
            if (x > (Long.MAX_VALUE - d) / 10) {
                return Long.MIN_VALUE;
            }
            x = 10 * x + d;
        }
        byte c = b[i];
        if (i == from || (b[from] == '0' && i - from > 1) || c == '.' || c == 'e' || c == 'E') {
            return Long.MIN_VALUE;
        }
        return negative ? -x : x;
    }

    /** Skips a value of any kind: strings to their closing quote, objects and arrays by bracket counting. */
    private void skipValue() {
        byte c = b[i];
        if (c == '"') {
            skipString();
        } else if (c == '{' || c == '[') {
            int depth = 0;
            do {
                c = b[i];
                if (c == '"') {
                    skipString();
                    continue;
                }
                if (c == '{' || c == '[') {
                    depth++;
                } else if (c == '}' || c == ']') {
                    depth--;
                }
                i++;
            } while (depth > 0);
        } else {
            while (c != ',' && c != '}' && c != ']' && c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                c = b[++i];
            }
        }
    }

    private void skipString() {
        i++;
        while (b[i] != '"') {
            i += b[i] == '\\' ? 2 : 1;
        }
        i++;
    }

    private void ws() {
        while (i < b.length && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r')) {
            i++;
        }
    }
}
