package io.sfclayer.lookup;

import java.io.IOException;
import java.util.List;

/** Receives a box query's records ({@link TileSource#query}), a batch at a time. */
@FunctionalInterface
public interface Batches {
    void accept(List<byte[]> records) throws IOException;
}
