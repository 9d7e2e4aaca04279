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
        return String.format("v%08d.json", version);
    }

    /** Committed versions of the layer at {@code layer}, ascending. Empty when there is no layer. */
    public static List<Long> versions(Configuration conf, Path layer) throws IOException {
        FileSystem fs = layer.getFileSystem(conf);
        return versions(fs, new Path(fs.makeQualified(layer), NAME));
    }

    /** Committed versions in the log directory {@code logDir}, ascending; empty when it does not exist. */
    public static List<Long> versions(FileSystem fs, Path logDir) throws IOException {
        List<Long> out = new ArrayList<>();
        FileStatus[] entries;
        try {
            entries = fs.listStatus(logDir);
        } catch (FileNotFoundException e) {
            return out;
        }
        for (FileStatus st : entries) {
            java.util.regex.Matcher m = VERSION_FILE.matcher(st.getPath().getName());
            if (m.matches()) {
                out.add(Long.parseLong(m.group(1)));
            }
        }
        out.sort(null);
        return out;
    }

    /** A list of versions for a message: whole when short, else its ends and its size. */
    public static String describe(List<Long> vs) {
        if (vs.size() <= 12) {
            return vs.toString();
        }
        return "[" + vs.get(0) + ", " + vs.get(1) + ", ... " + vs.get(vs.size() - 1) + "] (" + vs.size() + " versions)";
    }
}
