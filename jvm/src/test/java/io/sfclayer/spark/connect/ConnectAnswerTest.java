package io.sfclayer.spark.connect;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;

import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.junit.Test;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/** The Arrow batches the command plugin sends: what the client reads as the relation plugin's rows. */
public class ConnectAnswerTest {
    /** Each Arrow stream of an answer, its rows as {count, data} or {text}. */
    private static List<List<Object[]>> read(List<ConnectAnswer.ArrowBatch> streams) throws IOException {
        List<List<Object[]>> out = new ArrayList<>();
        try (RootAllocator a = new RootAllocator()) {
            for (ConnectAnswer.ArrowBatch s : streams) {
                List<Object[]> rows = new ArrayList<>();
                try (ArrowStreamReader r = new ArrowStreamReader(new ByteArrayInputStream(s.stream()), a)) {
                    VectorSchemaRoot root = r.getVectorSchemaRoot();
                    while (r.loadNextBatch()) {
                        for (int i = 0; i < root.getRowCount(); i++) {
                            if (root.getFieldVectors().size() == 1) {
                                VarCharVector v = (VarCharVector) root.getVector("answer");
                                rows.add(new Object[] {v.isNull(i) ? null : new String(v.get(i), "UTF-8")});
                            } else {
                                rows.add(new Object[] {((IntVector) root.getVector("count")).get(i),
                                    ((VarBinaryVector) root.getVector("data")).get(i)});
                            }
                        }
                    }
                }
                assertEquals("the row count sent with the batch", (long) rows.size(), s.rows());
                out.add(rows);
            }
        }
        return out;
    }

    @Test
    public void textIsOneRowNullIncluded() throws IOException {
        assertEquals("{\"a\":1}", read(ConnectAnswer.text("{\"a\":1}").toArrow(100)).get(0).get(0)[0]);
        List<List<Object[]>> none = read(ConnectAnswer.text(null).toArrow(100));
        assertEquals(1, none.size());
        assertNull(none.get(0).get(0)[0]);
    }

    @Test
    public void recordsSplitIntoBatchesOfAtMostTheLimitUnlessOneRowIsLarger() throws IOException {
        ConnectAnswer answer = ConnectAnswer.records().add(1, new byte[60]).add(2, new byte[50])
            .add(3, new byte[200]).add(4, new byte[10]).add(5, new byte[0]);
        List<List<Object[]>> batches = read(answer.toArrow(100));
        assertEquals(List.of(1, 1, 1, 2), batches.stream().map(List::size).toList()); // 60 | 50 | 200 alone | 10+0
        batches = read(answer.toArrow(110));
        assertEquals(List.of(2, 1, 2), batches.stream().map(List::size).toList());
        assertEquals(3, (int) (Integer) batches.get(1).get(0)[0]);
        assertArrayEquals(new byte[200], (byte[]) batches.get(1).get(0)[1]);
        assertEquals(5, (int) (Integer) batches.get(2).get(1)[0]);
        assertArrayEquals(new byte[0], (byte[]) batches.get(2).get(1)[1]);
    }

    @Test
    public void noRecordsIsOneEmptyBatch() throws IOException {
        List<List<Object[]>> batches = read(ConnectAnswer.records().toArrow(100));
        assertEquals(1, batches.size());
        assertEquals(0, batches.get(0).size());
    }
}
