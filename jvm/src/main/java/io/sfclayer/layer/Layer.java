package io.sfclayer.layer;

import io.sfclayer.format.DataFileListing;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.format.VersionLog;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;

import java.io.IOException;

/**
 * One committed version of a layer, pinned: its metadata and (listed once, on first use) its data
 * files. Everything read through one Layer comes from that version even if the layer is rewritten.
 */
public final class Layer {
    private final Path path;
    private final LayerMetadata metadata;
    private final Path dataDir;
    private final Configuration conf;
    private DataFileListing listing;
    private java.util.Map<String, io.sfclayer.format.DataFileEntry> entries;

    private Layer(Configuration conf, Path path, LayerMetadata metadata, Path dataDir) {
        this.conf = conf;
        this.path = path;
        this.metadata = metadata;
        this.dataDir = dataDir;
    }

    /** Opens the newest version of the layer at {@code path}. */
    public static Layer open(Configuration conf, String path) throws IOException {
        VersionLog log = new VersionLog(conf, new Path(path));
        LayerMetadata md = log.current();
        return new Layer(conf, log.layerPath(), md, log.dataDir(md.dataDir));
    }

    /** Opens one version of the layer at {@code path}. */
    public static Layer open(Configuration conf, String path, long version) throws IOException {
        VersionLog log = new VersionLog(conf, new Path(path));
        LayerMetadata md = log.read(version);
        return new Layer(conf, log.layerPath(), md, log.dataDir(md.dataDir));
    }

    /** What the version document says about a data file (checked by readers). */
    public synchronized io.sfclayer.format.DataFileEntry entry(String name) {
        if (entries == null) {
            entries = metadata.fileEntries(path.toString());
        }
        io.sfclayer.format.DataFileEntry e = entries.get(name);
        return e != null ? e : io.sfclayer.format.DataFileEntry.unknown(name, path.toString());
    }

    public Path path() {
        return path;
    }

    public Path dataDir() {
        return dataDir;
    }

    public LayerMetadata metadata() {
        return metadata;
    }

    public Configuration conf() {
        return conf;
    }

    /** The version's data files: listed on the first call only. */
    public synchronized DataFileListing listing() throws IOException {
        if (listing == null) {
            if (io.sfclayer.format.RecordFrame.checked(metadata.formatVersion)) {
                entry("");
                listing = DataFileListing.fromEntries(dataDir, entries.values());
                if (listing.size() != metadata.fileCount) {
                    throw new io.sfclayer.SfcLayerException.CorruptLayer("version " + metadata.version + " of layer "
                        + path + " lists " + listing.size() + " data files but says fileCount " + metadata.fileCount);
                }
            } else {
                listing = DataFileListing.list(dataDir.getFileSystem(conf), dataDir, metadata.fileCount);
            }
        }
        return listing;
    }
}
