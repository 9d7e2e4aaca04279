package io.sfclayer.layer;

import io.sfclayer.SfcLayerException;
import io.sfclayer.commit.CommitPublisher;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A raster layer's pyramid documents (docs/FORMAT.md section 8): {@code _pyramid/pyramid-<N>.json}, one
 * per change, published as a version document is (atomic create-if-absent of the next number with the
 * layer's {@link CommitPublisher}, never replacing a document), so a reader finds the newest whole and
 * two runs that started from the same document cannot both publish the next one. The single
 * {@code pyramid.json} of earlier writers (replaced by delete-then-rename on local files and S3A) is
 * still read when no numbered document exists, and removed once one is published. A publisher keeps
 * the newest {@link #KEPT} documents; a reader that lost the race with that clean-up lists again.
 */
public final class PyramidDocuments {
    /** The document of writers before numbered documents (pyramid formatVersion 3 and earlier). */
    public static final String LEGACY = "pyramid.json";
    private static final Pattern NAME = Pattern.compile("pyramid-(\\d{8,})\\.json");
    /** Documents a publisher keeps (older ones are deleted): a reader would have to lag that many runs behind. */
    static final int KEPT = 8;
    private static final int READ_ATTEMPTS = 5;

    private PyramidDocuments() {
    }

    /** The name of document {@code number}. */
    public static String name(long number) {
        return String.format("pyramid-%08d.json", number);
    }

    /**
     * The newest document in {@code dir} ({@code <layer>/_pyramid}): {@code number} (0 for the legacy
     * {@code pyramid.json}, -1 when there is none), {@code name} and {@code text} (null when there is none).
     */
    public static Map<String, Object> newest(Configuration conf, String dir) throws IOException {
        Path d = new Path(dir);
        FileSystem fs = d.getFileSystem(conf);
        for (int attempt = 0; attempt < READ_ATTEMPTS; attempt++) {
            long n = newestNumber(fs, d);
            String name = n > 0 ? name(n) : LEGACY;
            String text = read(fs, new Path(d, name));
            if (text == null && n > 0) {
                continue; // removed by a publisher's clean-up after this listing: a newer one exists
            }
            if (text == null && attempt == 0) {
                // none at all: list once more before saying so. A listing made while a publisher creates and
                // deletes documents came back without any (S3Proxy, about 1 read in 300 during 60 publishes;
                // the store's cause not pinned down); a second listing costs one request on layers without
                // a pyramid and keeps "no pyramid" from being reported for one that has one.
                continue;
            }
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("number", text == null ? -1 : n);
            out.put("name", name);
            out.put("text", text);
            return out;
        }
        throw new SfcLayerException.StorageError("the pyramid documents in " + d + " kept disappearing between "
            + "listing and reading (" + READ_ATTEMPTS + " attempts): are pyramid runs publishing without pause?", null);
    }

    /**
     * The version of level {@code zoom} the newest document in {@code dir} pins ({@code levelVersions}), or null
     * when there is no document or it pins none (formats 1 and 2). A document that does not parse is damaged:
     * {@link SfcLayerException.CorruptLayer} (a vacuum of the level then fails rather than guess what readers need).
     */
    public static Long pinnedLevelVersion(Configuration conf, String dir, String zoom) throws IOException {
        Map<String, Object> newest = newest(conf, dir);
        String text = (String) newest.get("text");
        if (text == null) {
            return null;
        }
        com.fasterxml.jackson.databind.JsonNode v;
        try {
            v = new com.fasterxml.jackson.databind.ObjectMapper().readTree(text).path("levelVersions").path(zoom);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new SfcLayerException.CorruptLayer("pyramid document " + new Path(dir, (String) newest.get("name"))
                + " is damaged (not JSON): " + e.getOriginalMessage(), e);
        }
        return v.canConvertToLong() ? v.asLong() : null;
    }

    /**
     * Publishes {@code text} as document {@code number} unless that name is taken: true when published, false
     * when another document holds it (another run published first). Then, best effort, removes the documents
     * older than the newest {@link #KEPT} and the legacy {@code pyramid.json}.
     */
    public static boolean publish(Configuration conf, String dir, long number, String text) throws IOException {
        if (number < 1) {
            throw new SfcLayerException.InvalidArgument("pyramid document number " + number + " (1, 2, ...)");
        }
        Path given = new Path(dir);
        FileSystem fs = given.getFileSystem(conf);
        Path d = fs.makeQualified(given);
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        String id = sha256(bytes);
        CommitPublisher publisher = CommitPublisher.forLayer(fs, conf, d);
        publisher.prepare(d);
        Path target = new Path(d, name(number));
        CommitPublisher.Documents docs = new CommitPublisher.Documents() {
            @Override
            public String idAt(Path p) throws IOException {
                String there = read(fs, p);
                return there == null ? null : sha256(there.getBytes(StandardCharsets.UTF_8));
            }

            @Override
            public SfcLayerException unknown(Path t, String why, Throwable cause) {
                return new SfcLayerException.CommitStateUnknown("cannot tell whether pyramid document " + t
                    + " was published: it " + why + "; the levels were written. Run sfclayer pyramid again", cause);
            }
        };
        if (!publisher.publishDecided(target, bytes, id, docs)) {
            return false;
        }
        cleanUp(fs, d, number);
        return true;
    }

    private static void cleanUp(FileSystem fs, Path d, long published) {
        try {
            for (FileStatus st : fs.listStatus(d)) {
                Matcher m = NAME.matcher(st.getPath().getName());
                if (m.matches() && Long.parseLong(m.group(1)) <= published - KEPT) {
                    fs.delete(st.getPath(), false);
                }
            }
            fs.delete(new Path(d, LEGACY), false);
        } catch (IOException | RuntimeException e) {
            // best effort: the next publish tries again; readers take the newest anyway
        }
    }

    private static long newestNumber(FileSystem fs, Path d) throws IOException {
        long n = 0;
        FileStatus[] entries;
        try {
            entries = fs.listStatus(d);
        } catch (FileNotFoundException e) {
            return 0;
        }
        for (FileStatus st : entries) {
            Matcher m = NAME.matcher(st.getPath().getName());
            if (m.matches()) {
                n = Math.max(n, Long.parseLong(m.group(1)));
            }
        }
        return n;
    }

    private static String read(FileSystem fs, Path p) throws IOException {
        try (FSDataInputStream in = fs.open(p)) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (FileNotFoundException e) {
            return null;
        } catch (org.apache.hadoop.fs.ChecksumException e) { // a filesystem's own checksum found damage
            throw new SfcLayerException.CorruptLayer(p + " is damaged (its filesystem checksum does not match)", e);
        }
    }

    private static String sha256(byte[] bytes) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JVM has SHA-256", e);
        }
    }
}
