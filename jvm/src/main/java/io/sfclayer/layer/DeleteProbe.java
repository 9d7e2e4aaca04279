package io.sfclayer.layer;

import io.sfclayer.codec.TileCursor;
import io.sfclayer.codec.TileSchema;
import io.sfclayer.curve.QueryBox;
import io.sfclayer.format.DataFile;
import io.sfclayer.format.DataFileEntry;
import io.sfclayer.format.DataFileReader;
import io.sfclayer.format.ValueCompression;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;

import java.io.IOException;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Which of a delete's candidate files hold a tile it deletes. A delete selects files by their index
 * spans, which can meet a box without holding any tile in it; rewriting those would make new files with
 * the same tiles (and count as changes for the conflict rules). A file is read until its first tile in
 * a box, so a file that is rewritten is read once more than before and one that is kept is only read.
 */
public final class DeleteProbe {
    private DeleteProbe() {
    }

    /**
     * The ids among {@code candidates} (of {@code files}) of files holding a tile inside one of {@code boxes}.
     * Each file is read as the version document lists it ({@code baseFormat}: its length and checksums checked, a
     * missing or damaged one named with its layer and index span, as the rewrite reads it); {@code skip} receives
     * the damage of a write that skips it (null: damage fails the probe).
     */
    public static Set<String> holdingDeleted(Configuration conf, Path layer, List<DataFile> files, Set<String> candidates,
                                             List<QueryBox> boxes, TileSchema schema, ValueCompression compression,
                                             int baseFormat, DataFileReader.DamageSink skip) throws IOException {
        Set<String> out = new HashSet<>();
        TileCursor cursor = new TileCursor(schema);
        for (DataFile f : files) {
            // the file's entry, not one guessed from its path: the guess took <layer>/<dataDir> for the layer (files
            // lie in <dataDir>/<attempt>/), so a missing file was reported as damage to "layer <dataDir>" with
            // `sfclayer verify <dataDir>` as advice, and no index span (the race model, RacesTest seed 759317643)
            if (candidates.contains(f.id()) && holds(conf, new Path(new Path(layer, f.dir), f.name),
                    DataFileEntry.of(f, baseFormat, layer.toString()), skip, boxes, cursor, compression)) {
                out.add(f.id());
            }
        }
        return out;
    }

    private static boolean holds(Configuration conf, Path file, DataFileEntry entry, DataFileReader.DamageSink skip,
                                 List<QueryBox> boxes, TileCursor cursor, ValueCompression compression)
            throws IOException {
        try (DataFileReader r = new DataFileReader(conf, file, entry, skip)) {
            while (r.next()) {
                byte[] group = compression.decompress(r.bytes(), r.offset(), r.length());
                cursor.reset(group, 0, group.length);
                while (cursor.next()) {
                    for (QueryBox b : boxes) {
                        if (b.contains(cursor.col(), cursor.row(), cursor.timeMicros())) {
                            return true;
                        }
                    }
                }
            }
        }
        return false;
    }
}
