package io.sfclayer.lookup;

import io.sfclayer.SfcLayerException;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;

/**
 * The one binary framing of tile answers, whichever way they travel: the loopback socket's answers
 * ({@link LookupServer}) and a Spark Connect client's ({@code spark.connect.SfcLayerRelationPlugin}) are
 * written here, and read by one Python class ({@code sfclayer._answers.TileAnswers}). Big-endian:
 * <ul>
 * <li>an <em>answer</em> is {@code int length, length bytes} (an encoded tile record), {@code int -1}
 *     ({@link #MISSING}) for a missing key, or {@code int -2} ({@link #ERROR}), {@code int length}, UTF-8
 *     {@code "ErrorClass\tmessage"} for an error;
 * <li>the answer to {@code n} look-ups ({@link #writeMany}) is {@code n × (int position, answer)}, in the
 *     order the source finds them (index order), {@code position} the key's place in the request; when
 *     the source fails, each key not answered yet gets the error.
 * </ul>
 */
public final class TileAnswers {
    public static final int MISSING = -1;
    public static final int ERROR = -2;

    private TileAnswers() {
    }

    /**
     * What the socket does around each answer it writes in the middle of a source's work: its deadlines
     * are the client's I/O's, not the source's ({@link LookupServer}). {@link #NONE} for a buffer.
     */
    public interface Pacing {
        Pacing NONE = new Pacing() { };

        /** About to write (the client's I/O from now on). */
        default void writing() {
        }

        /** Written; the source works on. */
        default void working() {
        }
    }

    /** An answer: the record, or {@link #MISSING} for null. */
    public static void writeRecord(DataOutputStream out, byte[] record) throws IOException {
        if (record == null) {
            out.writeInt(MISSING);
        } else {
            out.writeInt(record.length);
            out.write(record);
        }
    }

    /** An error answer for {@code e}: its class if it is sfclayer's, else {@link SfcLayerException} with its text. */
    public static void writeError(DataOutputStream out, Exception e) throws IOException {
        writeError(out, errorText(e));
    }

    /** An error answer of class {@code cls} (a Java class name the client maps to its own) and {@code message}. */
    public static void writeError(DataOutputStream out, String cls, String message) throws IOException {
        writeError(out, (cls + "\t" + message).getBytes(StandardCharsets.UTF_8));
    }

    private static void writeError(DataOutputStream out, byte[] text) throws IOException {
        out.writeInt(ERROR);
        out.writeInt(text.length);
        out.write(text);
    }

    private static byte[] errorText(Exception e) {
        String cls = e instanceof SfcLayerException ? e.getClass().getName() : SfcLayerException.class.getName();
        String msg = e instanceof SfcLayerException ? SfcLayerException.reason(e) : e.toString();
        return (cls + "\t" + msg).getBytes(StandardCharsets.UTF_8);
    }

    /** An exception of the output stream, apart from the source's own. */
    private static final class WriteFailed extends RuntimeException {
        private static final long serialVersionUID = 1L;

        WriteFailed(IOException cause) {
            super(cause);
        }
    }

    /**
     * Looks the keys up in {@code source} and writes the answer to them as it comes ({@code n × (int
     * position, answer)}). The source's failure is answered (each key not answered yet gets it); a failure
     * of {@code out} is thrown, as it came.
     */
    public static void writeMany(TileSource<?> source, int[] cols, int[] rows, long[] times, DataOutputStream out,
                                 Pacing pacing) throws IOException {
        int n = cols.length;
        boolean[] answered = new boolean[n];
        try {
            source.getMany(cols, rows, times, (i, record) -> {
                try {
                    pacing.writing();
                    out.writeInt(i);
                    writeRecord(out, record);
                    pacing.working();
                } catch (IOException e) {
                    throw new WriteFailed(e);
                }
                answered[i] = true;
            });
        } catch (WriteFailed e) {
            throw (IOException) e.getCause();
        } catch (RuntimeException | IOException e) {
            pacing.writing();
            byte[] text = errorText(e);
            for (int i = 0; i < n; i++) {
                if (!answered[i]) {
                    out.writeInt(i);
                    writeError(out, text);
                }
            }
        }
    }

    /** The answer to the look-ups of keys packed as {@link PackedKeys}, as bytes (Spark Connect's, py4j's). */
    public static byte[] many(TileSource<?> source, byte[] packedKeys) throws IOException {
        PackedKeys k = PackedKeys.decode(packedKeys);
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        writeMany(source, k.cols, k.rows, k.times, new DataOutputStream(bytes), Pacing.NONE);
        return bytes.toByteArray();
    }

}
