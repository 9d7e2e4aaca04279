package io.sfclayer.spark.connect;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowStreamWriter;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.plans.logical.LocalRelation;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.types.DataTypeUtils;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import scala.jdk.javaapi.CollectionConverters;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.Channels;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The answer to one {@link ConnectRequest}, in one of two shapes: a text ({@code answer STRING}, one
 * row, JSON mostly, or null) or records ({@code count INT, data BINARY}, a row per batch of encoded tile
 * records, as the loopback look-up socket sends them). The relation plugin hands it to Spark as a local
 * relation ({@link #toRelation}); the command plugin writes it to the client itself as Arrow IPC streams
 * ({@link #toArrow}), the same columns Spark would send for the relation.
 */
final class ConnectAnswer {
    static final StructType TEXT = new StructType().add("answer", DataTypes.StringType, true);
    static final StructType RECORDS = new StructType()
        .add("count", DataTypes.IntegerType, false).add("data", DataTypes.BinaryType, false);
    private static final Schema ARROW_TEXT = new Schema(List.of(
        new Field("answer", FieldType.nullable(ArrowType.Utf8.INSTANCE), null)));
    private static final Schema ARROW_RECORDS = new Schema(List.of(
        new Field("count", FieldType.notNullable(new ArrowType.Int(32, true)), null),
        new Field("data", FieldType.notNullable(ArrowType.Binary.INSTANCE), null)));
    private static final BufferAllocator ALLOCATOR = new RootAllocator(Long.MAX_VALUE);

    private final String text;             // a text answer (may be null), or
    private final List<Integer> counts;    // record batches: null for a text answer
    private final List<byte[]> data;

    private ConnectAnswer(String text, List<Integer> counts, List<byte[]> data) {
        this.text = text;
        this.counts = counts;
        this.data = data;
    }

    static ConnectAnswer text(String text) {
        return new ConnectAnswer(text, null, null);
    }

    /** Records: an empty answer to fill with {@link #add}. */
    static ConnectAnswer records() {
        return new ConnectAnswer(null, new ArrayList<>(), new ArrayList<>());
    }

    /** Adds a batch of {@code count} records back to back in {@code bytes}. */
    ConnectAnswer add(int count, byte[] bytes) {
        counts.add(count);
        data.add(bytes);
        return this;
    }

    /** A local relation of the answer's rows, already in Spark's internal form (no encoder, no analysis). */
    @SuppressWarnings({"unchecked", "rawtypes"})
    LogicalPlan toRelation() {
        List<InternalRow> rows = new ArrayList<>();
        if (counts == null) {
            rows.add(new GenericInternalRow(new Object[] {text == null ? null : UTF8String.fromString(text)}));
        } else {
            for (int i = 0; i < counts.size(); i++) {
                rows.add(new GenericInternalRow(new Object[] {counts.get(i), data.get(i)}));
            }
        }
        scala.collection.immutable.Seq attributes = DataTypeUtils.toAttributes(counts == null ? TEXT : RECORDS);
        return new LocalRelation(attributes, CollectionConverters.asScala(rows).toSeq(), false, scala.Option.empty());
    }

    /** One Arrow IPC stream (a schema and one record batch) and its row count. */
    record ArrowBatch(long rows, byte[] stream) { }

    /**
     * The answer as Arrow IPC streams (schema and one record batch each) of at most about
     * {@code maxBytes} of data each (a larger single row goes alone), with their row counts: what the
     * client gets as {@code arrow_batch} responses. Never empty: no rows is one empty batch, as Spark sends.
     */
    List<ArrowBatch> toArrow(long maxBytes) {
        List<ArrowBatch> out = new ArrayList<>();
        if (counts == null) {
            out.add(new ArrowBatch(1L, arrowText()));
            return out;
        }
        int from = 0;
        while (from < counts.size() || out.isEmpty()) {
            int to = from;
            long bytes = 0;
            while (to < counts.size() && (to == from || bytes + data.get(to).length <= maxBytes)) {
                bytes += data.get(to++).length;
            }
            out.add(new ArrowBatch(to - from, arrowRecords(from, to)));
            from = to;
        }
        return out;
    }

    private byte[] arrowText() {
        try (BufferAllocator a = ALLOCATOR.newChildAllocator("sfclayer-connect", 0, Long.MAX_VALUE);
             VectorSchemaRoot root = VectorSchemaRoot.create(ARROW_TEXT, a)) {
            VarCharVector v = (VarCharVector) root.getVector(0);
            v.allocateNew(1);
            if (text == null) {
                v.setNull(0);
            } else {
                v.setSafe(0, text.getBytes(StandardCharsets.UTF_8));
            }
            root.setRowCount(1);
            return write(root);
        }
    }

    private byte[] arrowRecords(int from, int to) {
        try (BufferAllocator a = ALLOCATOR.newChildAllocator("sfclayer-connect", 0, Long.MAX_VALUE);
             VectorSchemaRoot root = VectorSchemaRoot.create(ARROW_RECORDS, a)) {
            IntVector c = (IntVector) root.getVector(0);
            VarBinaryVector d = (VarBinaryVector) root.getVector(1);
            long bytes = 0;
            for (int i = from; i < to; i++) {
                bytes += data.get(i).length;
            }
            c.allocateNew(to - from);
            d.allocateNew(Math.max(1, bytes), to - from);
            for (int i = from; i < to; i++) {
                c.set(i - from, counts.get(i));
                d.setSafe(i - from, data.get(i));
            }
            root.setRowCount(to - from);
            return write(root);
        }
    }

    private static byte[] write(VectorSchemaRoot root) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ArrowStreamWriter w = new ArrowStreamWriter(root, null, Channels.newChannel(bytes))) {
            w.start();
            w.writeBatch();
            w.end();
        } catch (IOException e) {
            throw new UncheckedIOException(e); // a byte array does not fail
        }
        return bytes.toByteArray();
    }
}
