package io.sfclayer.format;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * Where a layer's versions are on disk (docs/FORMAT.md, section 6): the directory
 * {@code <layer>/_sfclayer/} of version documents {@code v<8-digit version>.json}. The names and the
 * listing only; reading and publishing documents is {@code commit.VersionLog}'s, which the on-disk
 * readers here cannot use (it sits above them): they list the versions to tell a vacuumed file from
 * a lost one.
 */
public final class LogDirectory {
    /** The log's directory in the layer. */
    public static final String NAME = "_sfclayer";
    /** A version document's name. */
    public static final Pattern VERSION_FILE = Pattern.compile("v(\\d{8,})\\.json");

    private LogDirectory() {
    }

    public static String versionFileName(long version) {
        // by hand, not String.format: a commit and an open name several versions (String.format was 4 % of a small
        // driver-side append's CPU)
        String digits = Long.toString(version);
        if (version < 0) {
            return String.format("v%08d.json", version);
        }
        return digits.length() >= 8 ? "v" + digits + ".json" : "v" + "00000000".substring(digits.length()) + digits + ".json";
    }

    /** Committed versions of the layer at {@code layer}, ascending. Empty when there is no layer. */
    public static List<Long> versions(Configuration conf, Path layer) throws IOException {
        FileSystem fs = layer.getFileSystem(conf);
        return versions(fs, new Path(fs.makeQualified(layer), NAME));
    }

    /** Committed versions in the log directory {@code logDir}, ascending; empty when it does not exist. */
    public static List<Long> versions(FileSystem fs, Path logDir) throws IOException {
        return new ArrayList<>(versionLengths(fs, logDir).keySet());
    }

    /**
     * The versions in the log directory {@code logDir} with their documents' lengths (-1 when the listing did not
     * stat them); empty when it does not exist. On plain local files the names alone, through {@code java.nio}
     * (Hadoop's listing stats every entry, ~5 calls each: a commit's cost grew with its log).
     */
    public static java.util.TreeMap<Long, Long> versionLengths(FileSystem fs, Path logDir) throws IOException {
        java.util.TreeMap<Long, Long> out = new java.util.TreeMap<>();
        if (LocalFiles.applies(fs)) {
            java.nio.file.Path local = java.nio.file.Paths.get(fs.makeQualified(logDir).toUri().getPath());
            try (java.nio.file.DirectoryStream<java.nio.file.Path> names = java.nio.file.Files.newDirectoryStream(local)) {
                for (java.nio.file.Path p : names) {
                    java.util.regex.Matcher m = VERSION_FILE.matcher(p.getFileName().toString());
                    if (m.matches()) {
                        out.put(Long.parseLong(m.group(1)), -1L);
                    }
                }
            } catch (java.nio.file.NoSuchFileException e) {
                return out;
            }
            return out;
        }
        FileStatus[] entries;
        try {
            entries = fs.listStatus(logDir);
        } catch (FileNotFoundException e) {
            return out;
        }
        for (FileStatus st : entries) {
            java.util.regex.Matcher m = VERSION_FILE.matcher(st.getPath().getName());
            if (m.matches()) {
                out.put(Long.parseLong(m.group(1)), st.getLen());
            }
        }
        return out;
    }

    /**
     * The {@code version} a document's bytes say they are (its top-level field), or 0 when they are no
     * JSON object with one: how a reader learns which version a copy of a document holds before it
     * checks the copy against the log.
     */
    public static long versionOf(byte[] document) {
        try {
            com.fasterxml.jackson.databind.JsonNode v = new com.fasterxml.jackson.databind.ObjectMapper()
                .readTree(document).get("version");
            return v != null && v.isIntegralNumber() && v.canConvertToLong() ? Math.max(0, v.asLong()) : 0;
        } catch (IOException | RuntimeException e) {
            return 0;
        }
    }

    /**
     * Whether a listing of the documents after {@code v<n-1>.json} (S3's start-after, byte order) may
     * have missed some: names longer than {@code n}'s sort by their leading digits ({@code
     * v100000000.json} before {@code v99999999.json}). Versions are taken one after another, so a longer
     * name exists only once the last name of {@code n}'s length ({@code v99999999.json}) was committed,
     * and vacuum, which removes documents oldest first, cannot have removed it while {@code v<n>.json}
     * is listed: if it is not among {@code listed}, nothing was missed.
     */
    public static boolean mayMissLongerNames(java.util.Collection<Long> listed, long n) {
        int digits = Math.max(8, Long.toString(n).length());
        if (digits >= 18) {
            return true;
        }
        long last = 1;
        for (int i = 0; i < digits; i++) {
            last *= 10;
        }
        return listed.contains(last - 1);
    }

    /** A list of versions for a message: whole when short, else its ends and its size. */
    public static String describe(List<Long> vs) {
        if (vs.size() <= 12) {
            return vs.toString();
        }
        return "[" + vs.get(0) + ", " + vs.get(1) + ", ... " + vs.get(vs.size() - 1) + "] (" + vs.size() + " versions)";
    }
}
