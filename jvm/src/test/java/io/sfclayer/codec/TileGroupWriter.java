package io.sfclayer.codec;

import org.apache.spark.sql.catalyst.InternalRow;

import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.List;

/**
 * For tests: a group of tile records (all sharing one SFC index) in the format's group encoding, the
 * Avro array {@code record count, records..., 0} (a single 0 when empty), built from
 * {@link TileWriter#encodeRecord} as {@link io.sfclayer.layer.GroupWriter} builds it when writing.
 */
final class TileGroupWriter {
    private final TileWriter writer;
    private final List<byte[]> records = new ArrayList<>();

    TileGroupWriter(TileWriter writer) {
        this.writer = writer;
    }

    /** Starts a new (empty) group, discarding anything added since the last one. */
    void beginGroup() {
        records.clear();
    }

    /** Appends one record; on failure the group is left as it was. */
    void add(InternalRow row) {
        records.add(writer.encodeRecord(row));
    }

    int recordCount() {
        return records.size();
    }

    byte[] encodeRecord(InternalRow row) {
        return writer.encodeRecord(row);
    }

    /** The group's encoding. */
    byte[] endGroup() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        if (!records.isEmpty()) {
            byte[] count = new byte[10];
            out.write(count, 0, Varint.writeLong(count, 0, records.size()));
            for (byte[] r : records) {
                out.write(r, 0, r.length);
            }
        }
        out.write(0);
        return out.toByteArray();
    }
}
