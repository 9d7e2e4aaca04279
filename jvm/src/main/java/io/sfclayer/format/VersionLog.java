package io.sfclayer.format;

import io.sfclayer.SfcLayerException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.FileContext;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Options;
import org.apache.hadoop.fs.Path;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A layer's commit log, the directory {@code <layer>/_sfclayer/} of version documents
 * {@code v<8-digit version>.json}. The highest version present is the layer; publishing a version
 * is one atomic, non-overwriting rename of a fully written temporary document, so a reader sees
 * the old layer or the new one and never a partial one (docs/FORMAT.md, "Commit protocol").
 */
public final class VersionLog {
    public static final String LOG_DIR = "_sfclayer";
    public static final String DATA_DIR_PREFIX = "data-";
    private static final Pattern VERSION_FILE = Pattern.compile("v(\\d{8,})\\.json");
    private static final DateTimeFormatter WRITE_ID_TIME = DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss");

    private final Configuration conf;
    private final Path layer;
    private final FileSystem fs;

    public VersionLog(Configuration conf, Path layer) throws IOException {
        this.conf = conf;
        this.fs = layer.getFileSystem(conf);
        this.layer = fs.makeQualified(layer);
    }

    public Path layerPath() {
        return layer;
    }

    public FileSystem fileSystem() {
        return fs;
    }

    private Path logDir() {
        return new Path(layer, LOG_DIR);
    }

    public static String versionFileName(long version) {
        return String.format("v%08d.json", version);
    }

    /** A fresh id for a write; it names the write's data directory. */
    public static String newWriteId() {
        return ZonedDateTime.now(ZoneOffset.UTC).format(WRITE_ID_TIME) + "-"
            + UUID.randomUUID().toString().substring(0, 8);
    }

    /** Committed versions, ascending. Empty when there is no layer. */
    public List<Long> versions() throws IOException {
        List<Long> out = new ArrayList<>();
        FileStatus[] entries;
        try {
            entries = fs.listStatus(logDir());
        } catch (FileNotFoundException e) {
            return out;
        }
        for (FileStatus st : entries) {
            Matcher m = VERSION_FILE.matcher(st.getPath().getName());
            if (m.matches()) {
                out.add(Long.parseLong(m.group(1)));
            }
        }
        out.sort(null);
        return out;
    }

    /** Whether anything is at the layer's path at all (an sfclayer layer or not). */
    public boolean pathExists() throws IOException {
        return fs.exists(layer);
    }

    public boolean isLayer() throws IOException {
        return !versions().isEmpty();
    }

    /** The metadata of the newest version; LayerNotFound naming the path if there is none. */
    public LayerMetadata current() throws IOException {
        List<Long> vs = versions();
        if (vs.isEmpty()) {
            if (!fs.exists(layer)) {
                throw new SfcLayerException.LayerNotFound("no sfclayer layer at " + layer + ": path does not exist");
            }
            throw new SfcLayerException.LayerNotFound("no sfclayer layer at " + layer
                + ": no committed version in " + logDir() + " (not an sfclayer layer, or never committed)");
        }
        return read(vs.get(vs.size() - 1));
    }

    public LayerMetadata read(long version) throws IOException {
        Path p = new Path(logDir(), versionFileName(version));
        byte[] bytes;
        try (FSDataInputStream in = fs.open(p)) {
            bytes = in.readAllBytes();
        } catch (FileNotFoundException e) {
            throw new SfcLayerException.LayerNotFound("layer " + layer + " has no version " + version + " (" + p + ")");
        }
        LayerMetadata md;
        try {
            md = LayerMetadata.fromJsonBytes(bytes, p.toString());
        } catch (SfcLayerException.CorruptLayer e) {
            if (e.getMessage().contains("upgrade sfclayer")) {
                throw e;
            }
            throw new SfcLayerException.CorruptLayer(e.getMessage() + ". Other versions of the layer are not affected"
                + (version > 1 ? " (read version " + (version - 1) + " explicitly)" : "")
                + "; `sfclayer verify " + layer + "` checks the whole layer", e);
        }
        if (md.version != version) {
            throw new SfcLayerException.CorruptLayer("bad layer metadata in " + p + ": it says version " + md.version);
        }
        return md;
    }

    public Path dataDir(String dirName) {
        return new Path(layer, dirName);
    }

    /**
     * Publishes {@code md} (whose data directory is fully written) as the next version and returns
     * it. Never overwrites a version: if another writer took the number first, takes the next one.
     */
    public long commit(LayerMetadata md) throws IOException {
        fs.mkdirs(logDir());
        FileContext fc = FileContext.getFileContext(layer.toUri(), conf);
        Path tmp = new Path(logDir(), ".tmp-" + md.writeId + ".json");
        for (int attempt = 0; attempt < 20; attempt++) {
            List<Long> vs = versions();
            long next = vs.isEmpty() ? 1 : vs.get(vs.size() - 1) + 1;
            md.version = next;
            try (FSDataOutputStream out = fs.create(tmp, true)) {
                out.write(md.toJsonBytes());
            }
            try {
                fc.rename(tmp, new Path(logDir(), versionFileName(next)), Options.Rename.NONE);
                return next;
            } catch (FileAlreadyExistsException e) {
                // a concurrent writer published this number first: take the next one
            }
        }
        fs.delete(tmp, false);
        throw new SfcLayerException("could not commit a new version of " + layer + ": too many concurrent commits");
    }

    /**
     * Removes what no retained version needs: version documents older than the newest
     * {@code retain}, their data directories, and data directories no version names that are
     * older than {@code graceMillis} (leftovers of killed writes; younger ones may be writes in
     * progress). Failures here never fail the write that already committed.
     */
    public void cleanup(int retain, long graceMillis) {
        try {
            List<Long> vs = versions();
            Set<String> keep = new HashSet<>();
            int firstKept = Math.max(0, vs.size() - retain);
            for (int i = firstKept; i < vs.size(); i++) {
                keep.add(read(vs.get(i)).dataDir);
            }
            Set<String> retired = new HashSet<>();
            for (int i = 0; i < firstKept; i++) {
                try {
                    retired.add(read(vs.get(i)).dataDir);
                } catch (SfcLayerException e) {
                    // unreadable old version: its data directory is left to the grace rule
                }
                fs.delete(new Path(logDir(), versionFileName(vs.get(i))), false);
            }
            long now = System.currentTimeMillis();
            for (FileStatus st : fs.listStatus(layer)) {
                String name = st.getPath().getName();
                if (st.isDirectory() && name.startsWith(DATA_DIR_PREFIX) && !keep.contains(name)
                    && (retired.contains(name) || now - st.getModificationTime() > graceMillis)) {
                    fs.delete(st.getPath(), true);
                }
            }
        } catch (IOException | SfcLayerException e) {
            // best effort: what is left is ignored by readers and removed by a later write
        }
    }
}
