package io.sfclayer.layer;

import io.sfclayer.curve.KeyIndex;
import io.sfclayer.curve.QueryBox;
import io.sfclayer.format.LayerMetadata;
import io.sfclayer.format.ValueCompression;

import java.io.Serializable;
import java.util.List;
import java.util.Set;

/**
 * What every task of one write is told, whole and immutable: where it writes, the layer's shape, and
 * how existing files are merged ({@link MergeWriter}). Built by {@link #of} with what every write
 * has, the rest set by the {@code with} methods (each a new description); shipped to the tasks.
 *
 * @param layer           the layer's path
 * @param dataDirName     the write's data directory (each task attempt writes in its own under it)
 * @param writeId         the write's id, recorded in its files
 * @param blockSize       bytes a data file rolls at
 * @param indexInterval   the data files' index interval
 * @param compression     how values are compressed
 * @param keyIndex        the layer's key index
 * @param valueSchemaJson the layer's value schema
 * @param rewrite         ids of existing files rewritten even if no new record falls in them
 * @param onExisting      what an append does with a key the layer holds
 * @param deleteBoxes     tiles of rewritten files whose keys lie in one of these are dropped
 * @param formatVersion   the format of the files written (the current one; write option formatVersion may ask for 2)
 * @param maxGroupBytes   the largest group of tiles sharing an index (write option maxGroupBytes)
 * @param baseFormat      the format version of the document listing the tasks' existing files (0: none,
 *                        a whole-layer write)
 * @param skipDamage      a repair's: damaged records of the files it rewrites are skipped (a verify listed
 *                        them), not fatal
 * @param bloomFpp        bloom filters' false-positive probability for the files written; 0: none
 * @param spans           a shuffled append to a version with manifests: each partition's span of new
 *                        indexes {lo, hi} (null: none), which its files were chosen by; a record outside it
 *                        is refused (an input recomputed differently after its cache was lost). Null: no check.
 *                        Not copied: the caller hands it over.
 */
public record TaskSpec(String layer, String dataDirName, String writeId, long blockSize, int indexInterval,
                       ValueCompression compression, KeyIndex keyIndex, String valueSchemaJson, Set<String> rewrite,
                       MergeWriter.OnExisting onExisting, List<QueryBox> deleteBoxes, int formatVersion,
                       long maxGroupBytes, int baseFormat, boolean skipDamage, double bloomFpp, long[][] spans)
        implements Serializable {

    /** A write of new records (no file rewritten, none deleted, keys replaced), in the current format. */
    public static TaskSpec of(String layer, String dataDirName, String writeId, long blockSize, int indexInterval,
                              ValueCompression compression, KeyIndex keyIndex, String valueSchemaJson) {
        return new TaskSpec(layer, dataDirName, writeId, blockSize, indexInterval, compression, keyIndex,
            valueSchemaJson, Set.of(), MergeWriter.OnExisting.REPLACE, List.of(), LayerMetadata.FORMAT_VERSION,
            GroupWriter.DEFAULT_MAX_GROUP_BYTES, 0, false, 0, null);
    }

    /** The same with how existing files are merged: those rewritten, what a key held becomes, what is deleted. */
    public TaskSpec withMerge(Set<String> rewrite, MergeWriter.OnExisting onExisting, List<QueryBox> deleteBoxes) {
        return new TaskSpec(layer, dataDirName, writeId, blockSize, indexInterval, compression, keyIndex,
            valueSchemaJson, rewrite, onExisting, deleteBoxes, formatVersion, maxGroupBytes, baseFormat, skipDamage,
            bloomFpp, spans);
    }

    /** The same writing files of format {@code v} (2: no checksums, for compatibility tests and benchmarks). */
    public TaskSpec withFormatVersion(int v) {
        return new TaskSpec(layer, dataDirName, writeId, blockSize, indexInterval, compression, keyIndex,
            valueSchemaJson, rewrite, onExisting, deleteBoxes, v, maxGroupBytes, baseFormat, skipDamage, bloomFpp,
            spans);
    }

    public TaskSpec withMaxGroupBytes(long bytes) {
        return new TaskSpec(layer, dataDirName, writeId, blockSize, indexInterval, compression, keyIndex,
            valueSchemaJson, rewrite, onExisting, deleteBoxes, formatVersion, bytes, baseFormat, skipDamage, bloomFpp,
            spans);
    }

    public TaskSpec withBaseFormat(int format) {
        return new TaskSpec(layer, dataDirName, writeId, blockSize, indexInterval, compression, keyIndex,
            valueSchemaJson, rewrite, onExisting, deleteBoxes, formatVersion, maxGroupBytes, format, skipDamage,
            bloomFpp, spans);
    }

    public TaskSpec withSkipDamage(boolean skip) {
        return new TaskSpec(layer, dataDirName, writeId, blockSize, indexInterval, compression, keyIndex,
            valueSchemaJson, rewrite, onExisting, deleteBoxes, formatVersion, maxGroupBytes, baseFormat, skip,
            bloomFpp, spans);
    }

    public TaskSpec withBloomFpp(double fpp) {
        return new TaskSpec(layer, dataDirName, writeId, blockSize, indexInterval, compression, keyIndex,
            valueSchemaJson, rewrite, onExisting, deleteBoxes, formatVersion, maxGroupBytes, baseFormat, skipDamage,
            fpp, spans);
    }

    public TaskSpec withSpans(long[][] partitionSpans) {
        return new TaskSpec(layer, dataDirName, writeId, blockSize, indexInterval, compression, keyIndex,
            valueSchemaJson, rewrite, onExisting, deleteBoxes, formatVersion, maxGroupBytes, baseFormat, skipDamage,
            bloomFpp, partitionSpans);
    }
}
