package io.sfclayer.lookup;

import java.io.Closeable;
import java.io.IOException;

/**
 * What {@link LookupServer} serves: look-ups, box queries and counts answering encoded tile records.
 * {@link ValueReader} is one (sfclayer layers); {@link GtTileSource} another (GeoTrellis layers read in
 * place), so both reach Python through the same socket and client.
 *
 * @param <Q> the source's parsed box query (from the text the client sends)
 */
public interface TileSource<Q> extends Closeable {
    /** The record at a key, or null (time in microseconds; ignored by spatial sources). */
    byte[] getOrNull(int col, int row, long timeMicros) throws IOException;

    /** Many look-ups, answered in any order with each key's position in the request. */
    void getMany(int[] cols, int[] rows, long[] timesMicros, Answers answers) throws IOException;

    /** A box query from the text form the source's client sends. */
    Q boxQuery(String spec);

    /** The records in a box, a batch at a time; returns how many. Each record is self-delimiting. */
    long query(Q q, Batches batches) throws IOException;

    /** How many records {@link #query} would hand out. */
    long count(Q q) throws IOException;

    @Override
    void close();
}
