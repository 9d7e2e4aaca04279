package io.sfclayer.geotrellis;

/**
 * One tile of a GeoTrellis layer in sfclayer's raster convention (python/sfclayer/raster.py): pixels
 * band-sequential, row-major, little-endian; {@code nodata} null for GeoTrellis' raw cell types, NaN for
 * float ConstantNoData.
 */
public final class GtTile {
    public final int col, row;
    /** Epoch milliseconds of a space-time key; 0 for spatial keys. */
    public final long millis;
    /** The MapFile index the tile was stored under. */
    public final long index;
    public final byte[] pixels;
    public final int width, height, bands;
    public final String dtype;
    public final Double nodata;

    GtTile(int col, int row, long millis, long index, GtPixels p) {
        this.col = col;
        this.row = row;
        this.millis = millis;
        this.index = index;
        this.pixels = p.pixels;
        this.width = p.width;
        this.height = p.height;
        this.bands = p.bands;
        this.dtype = p.dtype;
        this.nodata = p.nodata;
    }

    @Override
    public String toString() {
        return "tile (" + col + ", " + row + (millis != 0 ? ", " + millis + " ms" : "") + ") " + bands + " × "
            + height + " × " + width + " " + dtype;
    }
}
