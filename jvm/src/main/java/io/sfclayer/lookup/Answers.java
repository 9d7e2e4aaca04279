package io.sfclayer.lookup;

import java.io.IOException;

/** Receives look-up answers ({@link TileSource#getMany}): the key's position in the request, and its record or null. */
@FunctionalInterface
public interface Answers {
    void accept(int position, byte[] record) throws IOException;
}
