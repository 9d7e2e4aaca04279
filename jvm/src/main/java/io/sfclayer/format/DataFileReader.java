package io.sfclayer.format;

// Over 500 lines on purpose: the record walk (seek, next, get) and the damage handling it relies on
// (checked lengths, resynchronising past a damaged record, the index check) are one reader; split,
// each half would be read without the invariants the other keeps.

import io.sfclayer.SfcLayerException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ChecksumException;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.Closeable;
import java.io.EOFException;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.Serializable;
import java.util.Arrays;
import java.util.List;

/**
 * Reads one data file (a MapFile): seeks through its index to the first group at or after an
 * index, then walks groups in order, checking every record it reads ({@link RecordFrame}).
 *
 * <p>It parses the SequenceFile records itself rather than through {@code MapFile.Reader}, because
 * Hadoop's reader trusts a record's length (a damaged one allocates gigabytes or reads into the
 * next record) and cannot go on past damage. Here every length is checked against the file before
 * it is used, and the file's length and its index against the version document (format 3).
 *
 * <p>What damage does depends on the {@link DamageSink}: none (the default) turns it into
 * {@link SfcLayerException.CorruptLayer} naming the layer, the file, the SFC index or byte offset and
 * what to do next; a sink is told of it and the reader goes on with the next intact record: after a
 * record whose lengths hold but whose checksum fails, right behind it; after damaged lengths, at the
 * next offset where a whole record checks (or a sync marker, for unchecked formats). A file whose
 * header is unreadable or that is missing reads as empty; a damaged index is not used (the file is
 * read from its start). Not thread-safe; callers that share one synchronize on it.
 *
 * <p>Given the file's {@link DataFileIndex} read (and checked) earlier, a reader opens only the
 * {@code data} file: look-ups keep each file's index so reopening an evicted file is cheap.
 */
public final class DataFileReader implements Closeable {
    private static final Logger LOG = LoggerFactory.getLogger(DataFileReader.class);
    /** Most bytes searched for the next intact record after damaged lengths (files stay under a block). */
    private static final int RESYNC_WINDOW = 256 << 20;
    /** The record buffer's starting size: what an open reader holds at least. */
    public static final int WINDOW_BYTES = 64 * 1024;

    /** One damaged stretch of a data file. */
    public static final class Damage implements Serializable {
        private static final long serialVersionUID = 1L;
        public final String file;
        /** Byte offset in {@code data} where the damage was found; -1 for the whole file or the index. */
        public final long offset;
        /** The SFC index the damaged record claims (unverified), or null when unknown. */
        public final Long index;
        /** The last intact index before the damage, or null. */
        public final Long after;
        /** Where reading went on (byte offset), or -1 when nothing after it was readable. */
        public final long resumedAt;
        /** Records known lost (an estimate when lengths were damaged). */
        public final long records;
        public final String what;
        /** Whether the file is missing (Spark's ignoreMissingFiles), rather than damaged. */
        public final boolean missing;

        public Damage(String file, long offset, Long index, Long after, long resumedAt, long records, String what) {
            this(file, offset, index, after, resumedAt, records, what, false);
        }

        Damage(String file, long offset, Long index, Long after, long resumedAt, long records, String what,
               boolean missing) {
            this.missing = missing;
            this.file = file;
            this.offset = offset;
            this.index = index;
            this.after = after;
            this.resumedAt = resumedAt;
            this.records = records;
            this.what = what;
        }

        @Override
        public String toString() {
            return file + (offset >= 0 ? " at byte " + offset : "") + (index != null ? " (SFC index " + index + ")" : "")
                + ": " + what;
        }
    }

    /** Receives damage instead of an exception (onCorrupt=skip, verify). */
    public interface DamageSink {
        void damaged(Damage d);
    }

    private final Path path;
    private final Path dataPath;
    private final DataFileEntry entry;
    private final Configuration conf;
    private final FileSystem fs;
    private final DamageSink sink;
    private FSDataInputStream in;
    private DataFileHeader header;
    private boolean checked;
    /** Where records end: the recorded length, or the file's, whichever is smaller. */
    private long end;
    private DataFileIndex index;
    private boolean indexLoaded;
    private long streamPos = -1;
    /** Positioned reads' window ({@link #usePositionedReads}): {@code data} bytes from windowStart; null: stream reads. */
    private byte[] window;
    private long windowStart = -1;
    private int windowLength;
    private long pos;
    private final byte[] prefix = new byte[RecordFrame.PREFIX_BYTES];
    private byte[] buf = new byte[WINDOW_BYTES];
    private int groupLength;
    private long key;
    private boolean haveLast;
    private long lastKey;
    private long recordOffset = -1;
    private int seekEntry = -1;
    private boolean positioned;
    private long bytesRead;
    private long groupsRead;
    private long damaged;
    private String tailDamage;
    /** While {@link #verifyIndex()} reads records: their damage is reported by the pass that follows. */
    private boolean quietRecords;
    private long quietHits;

    public DataFileReader(Configuration conf, Path path) throws IOException {
        this(conf, path, DataFileEntry.unknown(path.getName(), String.valueOf(layerOf(path))), null);
    }

    /**
     * @param entry what the version document says about the file
     * @param sink  where damage goes; null to fail on it
     */
    public DataFileReader(Configuration conf, Path path, DataFileEntry entry, DamageSink sink) throws IOException {
        this(conf, path, entry, sink, null);
    }

    /** A file unknown to any version document, opened with its index read before. */
    public DataFileReader(Configuration conf, Path path, DataFileIndex index) throws IOException {
        this(conf, path, DataFileEntry.unknown(path.getName(), String.valueOf(layerOf(path))), null, index);
    }

    /**
     * @param entry what the version document says about the file
     * @param sink  where damage goes; null to fail on it
     * @param index the file's index as read (and checked) by an earlier reader of it, so that this one
     *              opens only the data file; null to read it when first needed
     */
    public DataFileReader(Configuration conf, Path path, DataFileEntry entry, DamageSink sink, DataFileIndex index)
            throws IOException {
        this(conf, path, entry, sink, index, ObjectStores.Access.SEQUENTIAL);
    }

    /**
     * @param access how the file will be read: {@link ObjectStores.Access#RANDOM} for look-ups. On an
     *               object store, a file whose length the version document records is opened with that
     *               length and this read policy and no status call (one request fewer); a file shorter
     *               than recorded then fails at the read that passes its end, as damage. With a sink
     *               (verify, onCorrupt=skip) the length is always checked first, to report it exactly.
     */
    public DataFileReader(Configuration conf, Path path, DataFileEntry entry, DamageSink sink, DataFileIndex index,
                          ObjectStores.Access access) throws IOException {
        if (index != null) {
            this.index = index;
            this.indexLoaded = true;
        }
        this.path = path;
        this.dataPath = new Path(path, "data");
        this.entry = entry;
        this.conf = conf;
        this.sink = sink;
        this.fs = path.getFileSystem(conf);
        boolean trustLength = entry.dataBytes >= 0 && sink == null && ObjectStores.isObjectStore(fs);
        long length;
        if (trustLength) {
            length = entry.dataBytes;
        } else {
            try {
                length = fs.getFileStatus(dataPath).getLen();
            } catch (FileNotFoundException e) {
                wholeFile(fs.exists(path) ? "its data file is missing" : "the listed data file is missing", true, e);
                return;
            } catch (IOException e) {
                throw failure("cannot open data file " + path, e);
            }
        }
        if (trustLength && this.index != null && this.index.size() > 0 && RecordFrame.checked(entry.formatVersion)) {
            // On an object store, with the length and the checked index known, nothing is asked until a
            // record is read: a look-up is one ranged GET. The header is read when something needs it
            // (a sync marker, a key before the first entry); the records are checked (RecordFrame) either way.
            in = ObjectStores.open(fs, dataPath, access, length);
            checked = true;
            end = length;
            pos = this.index.position(0);
            return;
        }
        try {
            in = ObjectStores.open(fs, dataPath, access, trustLength ? length : -1);
            streamPos = 0;
            header = DataFileHeader.read(in, () -> streamPos = positionOf(in));
        } catch (FileNotFoundException e) {
            closeQuietly();
            if (trustLength) { // no status call was made: this is where a missing file shows
                wholeFile("the listed data file is missing", true, e);
                return;
            }
            if (!existsQuietly(dataPath)) {
                // stat saw it a moment ago and it is gone: deleted in between (a vacuum of the version: the race
                // model's read-back found this reported as a storage error)
                wholeFile("the listed data file is missing", true, e);
                return;
            }
            // it exists: Java reports "Permission denied" on a local open this way
            throw new SfcLayerException.StorageError("cannot open data file " + path + ": " + e, e);
        } catch (IOException | RuntimeException e) {
            closeQuietly();
            if (failure("", e) instanceof SfcLayerException.StorageError && !(e instanceof DataFileHeader.BadHeader)) {
                throw failure("cannot open data file " + path, e);
            }
            wholeFile("its header is unreadable (" + e.getMessage() + ")", false, e);
            return;
        }
        if (RecordFrame.checked(entry.formatVersion) && !RecordFrame.checked(header.formatVersion)) {
            // a checked file must not be read unchecked: its header is damaged
            closeQuietly();
            wholeFile("its header says format version " + header.formatVersion + " but the layer's version document "
                + "lists it as a format " + entry.formatVersion + " file", false, null);
            return;
        }
        checked = RecordFrame.checked(header.formatVersion);
        end = length;
        pos = header.dataStart;
        if (index != null && index.size() > 0 && index.position(0) < header.dataStart) {
            // an index read alone (DataFileIndex.readAlone) is checked against the header here: read it again
            this.index = null;
            this.indexLoaded = false;
        }
        if (entry.dataBytes >= 0 && entry.dataBytes != end) {
            String what = end < entry.dataBytes
                ? "truncated: " + end + " bytes, the version records " + entry.dataBytes
                : "longer than recorded: " + end + " bytes, the version records " + entry.dataBytes;
            if (sink == null) {
                throw corrupt("data file " + dataPath + " is " + what);
            }
            if (end < entry.dataBytes) {
                tailDamage = what;
            }
            end = Math.min(end, entry.dataBytes);
        }
    }

    /**
     * The file's header, read now if the open deferred it: checked as the constructor checks it (a
     * checked file whose header says otherwise, an index pointing into the header, are damage).
     */
    private DataFileHeader header() throws IOException {
        if (header != null) {
            return header;
        }
        DataFileHeader h;
        try {
            seekStream(0);
            h = DataFileHeader.read(in, () -> streamPos = positionOf(in));
        } catch (FileNotFoundException e) {
            vacuumed(e);
            throw corrupt("data file " + path + " (" + entry.indexRange() + ") is unreadable: the listed data file is missing", e);
        } catch (IOException | RuntimeException e) {
            streamPos = -1;
            if (failure("", e) instanceof SfcLayerException.StorageError && !(e instanceof DataFileHeader.BadHeader)) {
                throw failure("cannot read the header of data file " + path, e);
            }
            throw corrupt("data file " + path + " (" + entry.indexRange() + ") is unreadable: its header is unreadable ("
                + e.getMessage() + ")", e);
        }
        if (!RecordFrame.checked(h.formatVersion)) {
            throw corrupt("data file " + path + " (" + entry.indexRange() + ") is unreadable: its header says format version "
                + h.formatVersion + " but the layer's version document lists it as a format " + entry.formatVersion + " file");
        }
        header = h;
        if (index != null && index.size() > 0 && index.position(0) < h.dataStart) {
            indexDamaged("its first entry points at byte " + index.position(0) + ", inside the header (records start at "
                + h.dataStart + ")");
        }
        return h;
    }

    private static long positionOf(FSDataInputStream in) {
        try {
            return in.getPos();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static Path layerOf(Path mapFile) {
        Path dir = mapFile.getParent();
        return dir == null || dir.getParent() == null ? mapFile : dir.getParent();
    }

    /** Whether {@code p} exists; true when that cannot be told (the caller then reports what it saw). */
    private boolean existsQuietly(Path p) {
        try {
            return fs.exists(p);
        } catch (IOException | RuntimeException e) {
            return true;
        }
    }

    /** The whole file is lost: fail, or report it and read as empty. */
    private void wholeFile(String why, boolean missing, Throwable cause) {
        if (missing) {
            vacuumed(cause); // a version vacuum removed is no damage to skip
        }
        String what = "data file " + path + " (" + entry.indexRange() + ") is unreadable: " + why;
        if (sink == null) {
            throw corrupt(what, cause);
        }
        report(new Damage(path.toString(), -1, null, null, -1, Math.max(1, entry.indexes), what + "; skipped whole",
            missing));
        in = null;
    }

    private SfcLayerException.CorruptLayer corrupt(String what) {
        return corrupt(what, null);
    }

    /**
     * A listed file is missing: when the version that listed it is no longer in the layer's log,
     * vacuum removed that version (and its files), which is no damage: LayerNotFound saying so, not
     * advice to repair or skip. Returns when the version is still there (or unknown): the file is lost.
     */
    private void vacuumed(Throwable cause) {
        if (entry.version < 1) {
            return;
        }
        List<Long> versions;
        try {
            versions = LogDirectory.versions(conf, new Path(entry.layer));
        } catch (IOException | RuntimeException e) {
            return; // cannot tell: reported as a missing file
        }
        if (!versions.isEmpty() && !versions.contains(entry.version)) {
            SfcLayerException.LayerNotFound e = new SfcLayerException.LayerNotFound("version " + entry.version
                + " of layer " + entry.layer + " was removed by vacuum while it was being read (its data file " + path
                + " is deleted; nothing is damaged): read a retained version, the layer's versions are now "
                + LogDirectory.describe(versions), cause); // the cause in the constructor: Spark's exceptions fix it there
            throw e;
        }
    }

    private SfcLayerException.CorruptLayer corrupt(String what, Throwable cause) {
        return new SfcLayerException.CorruptLayer("layer " + entry.layer + ": " + what + ". " + advice(), cause);
    }

    /** What to do next, for messages. */
    public static String advice(String layer) {
        return "Run `sfclayer verify " + layer + "` to list all damage, `sfclayer repair " + layer
            + "` to write a version without it, or read with option onCorrupt=skip to skip damaged records";
    }

    private String advice() {
        return advice(entry.layer);
    }

    private void report(Damage d) {
        if (quietRecords && d.records > 0) {
            quietHits++;
            return;
        }
        damaged += d.records;
        LOG.warn("sfclayer: skipping corrupt data: {}", d);
        sink.damaged(d);
    }

    public Path path() {
        return path;
    }

    /** Whether the file could be opened at all (false: skipped whole). */
    public boolean readable() {
        return in != null;
    }

    public int formatVersion() {
        return header == null ? entry.formatVersion : header.formatVersion;
    }

    /** The file's checked index (read now if not yet), to hand to later readers of it; null if unusable. */
    public DataFileIndex loadedIndex() throws IOException {
        if (in == null) {
            return null;
        }
        loadIndex();
        return index;
    }

    /**
     * For a scan of a file on an object store larger than {@link ObjectStores#SCAN_WHOLE_BYTES}: its
     * index read alone first, so that the data file opens asking nothing (its header is read only if
     * needed) and its first GET starts where the scan does. Null otherwise (smaller files are read
     * whole, and with a sink, or where the index cannot be read alone, the reader reads it and reports
     * what is wrong with it).
     */
    public static DataFileIndex indexFirst(Configuration conf, Path path, DataFileEntry entry, DamageSink sink) {
        try {
            if (sink != null || entry.dataBytes <= ObjectStores.SCAN_WHOLE_BYTES
                    || !ObjectStores.isObjectStore(path.getFileSystem(conf))) {
                return null;
            }
            return DataFileIndex.readAlone(conf, path, entry);
        } catch (IOException | RuntimeException e) {
            return null; // the reader reads it again and says what is wrong
        }
    }

    /**
     * For a scan of a small file on an object store ({@link ObjectStores#SCAN_WHOLE_BYTES}): its index
     * is not read, seeks read on from the file's start through the one sequential stream. Call before
     * the first seek; false (and nothing changed) when the file is not such a file or its index is in use.
     */
    public boolean scanWithoutIndex() {
        if (in == null || indexLoaded || sink != null || !ObjectStores.isObjectStore(fs)
                || end > ObjectStores.SCAN_WHOLE_BYTES) {
            return false;
        }
        indexLoaded = true; // and no index: seekCeiling walks from the first record
        return true;
    }

    /** Approximate heap bytes this reader holds (its record buffer and stream buffers; not the index). */
    public long bytesHeld() {
        return buf.length + 8192L;
    }

    /** Moves to the first group whose index is ≥ {@code target}; false if there is none. */
    public boolean seekCeiling(long target) throws IOException {
        if (in == null) {
            return positioned = false;
        }
        loadIndex();
        if (positioned && key == target) {
            return true;
        }
        int e = index == null ? -1 : index.floor(target);
        boolean readOn = positioned && key < target && (index == null || e == seekEntry);
        if (!readOn) {
            seekEntry = e;
            haveLast = false;
            pos = e < 0 ? header().dataStart : index.offsets[e];
            long before = damaged;
            if (!readRecord()) {
                return positioned = false;
            }
            if (e >= 0 && damaged == before && key != index.keys[e]) {
                indexDamaged("its entry for SFC index " + index.keys[e] + " points at byte " + index.offsets[e]
                    + ", where the data holds index " + key);
                return seekCeiling(target);
            }
            if (key >= target) {
                return landed();
            }
        }
        while (readRecord()) {
            if (key >= target) {
                return landed();
            }
        }
        return positioned = false;
    }

    /** Moves to the next group; false at the end of the file. */
    public boolean next() throws IOException {
        if (in == null) {
            return positioned = false;
        }
        return readRecord() ? landed() : (positioned = false);
    }

    /** The reader stops on a group for its caller: counted (groups passed over on the way are not). */
    private boolean landed() {
        groupsRead++;
        return positioned = true;
    }

    /** The group stored exactly at {@code target}, or false. */
    public boolean get(long target) throws IOException {
        return seekCeiling(target) && key == target;
    }

    /**
     * Checks the index whole (verify): every entry must point at an intact record holding its key,
     * and the first entry must be the file's first index. Leaves the reader at the file's start.
     */
    public void verifyIndex() throws IOException {
        if (in == null) {
            return;
        }
        loadIndex();
        quietRecords = true;
        try {
            checkEntries();
        } finally {
            quietRecords = false;
        }
        pos = header().dataStart;
        haveLast = false;
        positioned = false;
        seekEntry = -1;
    }

    private void checkEntries() throws IOException {
        if (index != null) {
            if (index.size() == 0 || index.keys[0] != entry.firstIndex) {
                indexDamaged(index.size() == 0 ? "it has no entries"
                    : "its first entry is SFC index " + index.keys[0] + ", the file's name says " + entry.firstIndex);
            }
            for (int e = 0; index != null && e < index.size(); e++) {
                pos = index.offsets[e];
                haveLast = false;
                long before = quietHits;
                if (readRecord() && quietHits == before && key != index.keys[e]) {
                    indexDamaged("its entry for SFC index " + index.keys[e] + " points at byte " + index.offsets[e]
                        + ", where the data holds index " + key);
                }
            }
        }
    }

    private void loadIndex() throws IOException {
        if (indexLoaded) {
            return;
        }
        indexLoaded = true;
        Path ip = new Path(path, "index");
        try {
            index = DataFileIndex.read(conf, fs, ip, entry.indexCrc32c, header().dataStart, end);
        } catch (FileNotFoundException e) {
            vacuumed(e); // the version's files deleted under this reader (the race model's copy-on-write append found it)
            // the cause kept: a writer reading an entry without its version (a delta it folds) tells a vacuum by it
            indexDamaged("it is missing", e);
        } catch (ChecksumException e) {
            indexDamaged("unreadable (" + e.getMessage() + ")");
        } catch (DataFileIndex.BadIndex e) {
            indexDamaged(SfcLayerException.reason(e));
        } catch (IOException e) { // the file system failed: the index may be intact
            throw failure("cannot read index file " + ip, e);
        }
    }

    /** A damaged index costs no records: without it the file is read from its start. */
    private void indexDamaged(String why) {
        indexDamaged(why, null);
    }

    private void indexDamaged(String why, Throwable cause) {
        String what = "index file " + new Path(path, "index") + " is damaged: " + why;
        if (sink == null) {
            indexLoaded = false; // every later seek fails the same way (a cached reader must not fall back)
            throw corrupt(what + " (repair rebuilds it from the data file)", cause);
        }
        report(new Damage(path.toString(), -1, null, null, header.dataStart, 0, what + "; reading the data file without it"));
        index = null;
        seekEntry = -1;
        positioned = false;
    }

    /** Reads the record at {@link #pos}, going past damage when there is a sink; false at the end. */
    private boolean readRecord() throws IOException {
        while (true) {
            if (pos >= end) {
                if (tailDamage != null) {
                    String what = "data file " + dataPath + " is " + tailDamage + "; records after byte " + end + " are lost";
                    tailDamage = null;
                    report(new Damage(path.toString(), end, null, haveLast ? lastKey : null, -1, 1, what));
                }
                return false;
            }
            long at = pos;
            try {
                if (end - at < RecordFrame.PREFIX_BYTES) {
                    damage(at, null, "only " + (end - at) + " bytes left where a record starts");
                    continue;
                }
                readData(at, prefix, prefix.length);
                int recordLength = RecordFrame.getInt(prefix, 0);
                int keyLength = RecordFrame.getInt(prefix, 4);
                if (recordLength == RecordFrame.SYNC_ESCAPE) {
                    if (end - at >= 4 + RecordFrame.SYNC_BYTES && syncAt(at)) {
                        pos = at + 4 + RecordFrame.SYNC_BYTES;
                        continue;
                    }
                    damage(at, null, "damaged sync marker");
                    continue;
                }
                String bad = RecordFrame.checkLengths(recordLength, keyLength, end - at - RecordFrame.PREFIX_BYTES, checked);
                if (bad != null) {
                    damage(at, null, bad);
                    continue;
                }
                if (buf.length < recordLength) {
                    buf = new byte[(int) Math.min(Integer.MAX_VALUE - 8, Math.max(recordLength, 2L * buf.length))];
                }
                readData(at + RecordFrame.PREFIX_BYTES, buf, recordLength);
                long k = RecordFrame.getLong(buf, 0);
                bad = RecordFrame.checkBody(buf, recordLength, checked);
                boolean lengthsHold = RecordFrame.getInt(buf, RecordFrame.KEY_BYTES)
                    == recordLength - RecordFrame.KEY_BYTES - RecordFrame.SIZE_BYTES;
                if (bad == null && haveLast && k <= lastKey) {
                    bad = "SFC index " + k + " is not after the previous record's " + lastKey;
                }
                if (bad != null) {
                    if (lengthsHold) {
                        // the lengths agree, so the damage is inside this record: the next one starts behind it
                        damageRecord(at, k, bad, at + RecordFrame.PREFIX_BYTES + recordLength);
                    } else {
                        damage(at, null, bad);
                    }
                    continue;
                }
                key = k;
                haveLast = true;
                lastKey = k;
                groupLength = RecordFrame.groupLength(recordLength, checked);
                recordOffset = at;
                pos = at + RecordFrame.PREFIX_BYTES + recordLength;
                bytesRead += RecordFrame.PREFIX_BYTES + recordLength;
                return true;
            } catch (ChecksumException | EOFException e) {
                // the filesystem's own checksum, or a file shorter than it said: what follows is unreadable
                streamPos = -1;
                if (sink == null) {
                    throw corrupt("data file " + dataPath + " is unreadable at byte " + at + ": " + e.getMessage());
                }
                report(new Damage(path.toString(), at, null, haveLast ? lastKey : null, -1, 1,
                    "unreadable from byte " + at + " on (" + e + ")"));
                pos = end;
            }
        }
    }

    /**
     * Reads {@code len} bytes of {@code data} at {@code at}: through the stream (seeking when needed),
     * or, with {@link #usePositionedReads}, from a window filled by one positioned read.
     */
    private void readData(long at, byte[] b, int len) throws IOException {
        try {
            readDataOrFail(at, b, len);
        } catch (FileNotFoundException e) {
            if (sink != null) {
                throw e;
            }
            // an open that asked nothing first (a known length on an object store) learns it here
            vacuumed(e);
            throw corrupt("data file " + path + " (" + entry.indexRange() + ") is unreadable: the listed data file is missing", e);
        }
    }

    private void readDataOrFail(long at, byte[] b, int len) throws IOException {
        if (window == null) {
            seekStream(at);
            in.readFully(b, 0, len);
            streamPos += len;
        } else if (at >= windowStart && at + len <= windowStart + windowLength) {
            System.arraycopy(window, (int) (at - windowStart), b, 0, len);
        } else if (len > window.length) {
            in.readFully(at, b, 0, len);
        } else {
            int n = (int) Math.max(len, Math.min(window.length, end - at));
            windowStart = -1;
            in.readFully(at, window, 0, n);
            windowStart = at;
            windowLength = n;
            System.arraycopy(window, 0, b, 0, len);
        }
    }

    /**
     * Random access for look-ups: records are read by positioned reads of {@code windowBytes} at a
     * time, not by seeking the stream. On HDFS a seek drops the stream's DataNode connection (it was
     * reading on to the end of the block) and the next read opens a new one; a positioned read asks for
     * just its range and the connection goes back to the client's cache. Not on checksummed local
     * files, whose positioned reads reopen the file every time.
     */
    public void usePositionedReads(int windowBytes) {
        if (in != null && !(fs instanceof org.apache.hadoop.fs.ChecksumFileSystem) && windowBytes > 0) {
            window = new byte[windowBytes];
            windowStart = -1;
        }
    }

    private void seekStream(long at) throws IOException {
        if (streamPos != at) {
            in.seek(at);
            streamPos = at;
        }
    }

    private boolean syncAt(long at) throws IOException {
        byte[] s = new byte[RecordFrame.SYNC_BYTES];
        seekStream(at + 4);
        in.readFully(s);
        streamPos += s.length;
        return Arrays.equals(s, header().sync);
    }

    /** A record whose lengths hold but whose content does not: lost alone. */
    private void damageRecord(long at, long claimedIndex, String what, long next) {
        String msg = "data file " + dataPath + ": the record at byte " + at + " (SFC index " + claimedIndex
            + (checked ? ", as stored" : "") + ") is damaged: " + what;
        if (sink == null) {
            throw corrupt(msg);
        }
        report(new Damage(path.toString(), at, claimedIndex, haveLast ? lastKey : null, next, 1, msg));
        pos = next;
    }

    /** Damaged lengths: the record's extent is unknown; go on at the next record that checks whole. */
    private void damage(long at, Long claimedIndex, String what) throws IOException {
        String msg = "data file " + dataPath + ": the record at byte " + at
            + (haveLast ? " (after SFC index " + lastKey + ")" : "") + " is damaged: " + what;
        if (sink == null) {
            throw corrupt(msg);
        }
        long next = resync(at + 1);
        report(new Damage(path.toString(), at, claimedIndex, haveLast ? lastKey : null, next, 1,
            msg + (next < 0 ? "; nothing after it is readable" : "; reading goes on at byte " + next)));
        pos = next < 0 ? end : next;
    }

    /** The first offset ≥ from where an intact record (checked formats) or a sync marker starts; -1 if none. */
    private long resync(long from) throws IOException {
        long limit = Math.min(end, from + RESYNC_WINDOW);
        int n = (int) (limit - from);
        if (n <= 0) {
            return -1;
        }
        byte[] w = new byte[n];
        seekStream(from);
        in.readFully(w);
        streamPos += n;
        for (int p = 0; p + RecordFrame.PREFIX_BYTES <= n; p++) {
            int recordLength = RecordFrame.getInt(w, p);
            if (recordLength == RecordFrame.SYNC_ESCAPE) {
                if (p + 4 + RecordFrame.SYNC_BYTES <= n
                        && Arrays.equals(w, p + 4, p + 4 + RecordFrame.SYNC_BYTES, header.sync, 0, RecordFrame.SYNC_BYTES)) {
                    return from + p;
                }
                continue;
            }
            if (!checked) {
                continue;
            }
            int keyLength = RecordFrame.getInt(w, p + 4);
            if (RecordFrame.checkLengths(recordLength, keyLength, n - p - RecordFrame.PREFIX_BYTES, true) != null) {
                continue;
            }
            byte[] body = Arrays.copyOfRange(w, p + RecordFrame.PREFIX_BYTES, p + RecordFrame.PREFIX_BYTES + recordLength);
            if (RecordFrame.checkBody(body, recordLength, true) == null
                    && (!haveLast || RecordFrame.getLong(body, 0) > lastKey)) {
                return from + p;
            }
        }
        return -1;
    }

    /**
     * What a failure reading a data file is: {@link SfcLayerException.CorruptLayer} when the bytes are bad
     * (a checksum mismatch, a file that ends early, not a SequenceFile, bytes Hadoop cannot decode), else
     * {@link SfcLayerException.StorageError} (permission denied, timeouts, unreachable DataNodes or blocks):
     * the file system failed, the layer may be intact. {@code what} names the file; the cause is kept.
     */
    public static SfcLayerException failure(String what, Exception e) {
        if (e instanceof SfcLayerException) {
            return (SfcLayerException) e;
        }
        boolean damaged = e instanceof RuntimeException || e instanceof ChecksumException || e instanceof EOFException
            || e instanceof DataFileHeader.BadHeader || e instanceof DataFileIndex.BadIndex;
        return damaged ? new SfcLayerException.CorruptLayer(what + ": " + e, e)
            : new SfcLayerException.StorageError(what + ": " + e, e);
    }

    public long index() {
        return key;
    }

    /** The current group's bytes: valid in {@code [offset(), offset() + length())} until the next move. */
    public byte[] bytes() {
        return buf;
    }

    public int offset() {
        return RecordFrame.KEY_BYTES + RecordFrame.SIZE_BYTES;
    }

    public int length() {
        return groupLength;
    }

    /** Byte offset of the current record in {@code data}. */
    public long recordOffset() {
        return recordOffset;
    }

    public long bytesRead() {
        return bytesRead;
    }

    /** Groups the reader stopped on for its caller. */
    public long groupsRead() {
        return groupsRead;
    }

    /** Records lost to damage so far (with a sink). */
    public long damagedRecords() {
        return damaged;
    }

    private void closeQuietly() {
        try {
            if (in != null) in.close();
        } catch (IOException ignored) {
            // nothing more to read from it
        }
        in = null;
    }

    @Override
    public void close() throws IOException {
        if (in != null) {
            in.close();
            in = null;
        }
    }
}
