package io.sfclayer.lookup;

import io.sfclayer.SfcLayerException;
import io.sfclayer.geotrellis.GtLayer;
import io.sfclayer.geotrellis.GtTile;
import io.sfclayer.geotrellis.GtValueReader;
import org.apache.hadoop.conf.Configuration;
import org.junit.Assume;
import org.junit.Test;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.File;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

/** A GeoTrellis layer (the committed catalog GeoTrellis wrote) served by a LookupServer beside sfclayer readers. */
public class GtTileSourceTest {
    private static final File CATALOG = new File("tests/data/geotrellis/catalog");

    @Test
    public void servesGetsCountsAndQueriesAsTheReaderReadsThem() throws Exception {
        Assume.assumeTrue("tests/data/geotrellis is not there", CATALOG.isDirectory());
        Configuration conf = new Configuration();
        GtLayer layer = GtLayer.open(CATALOG.getAbsolutePath(), "files", 0, conf);
        try (GtValueReader reader = new GtValueReader(layer, conf, 4);
             LookupServer s = new LookupServer(null, InetAddress.getLoopbackAddress(), 4, 3_000, 30_000)) {
            byte[] token = s.register(new GtTileSource(reader));
            List<GtTile> all = reader.query(layer.colMin, layer.rowMin, layer.colMax, layer.rowMax, Long.MIN_VALUE,
                Long.MAX_VALUE, -1);
            assertTrue(all.size() > 2);
            GtTile t = all.get(1);
            String box = "c0=" + layer.colMin + "\nr0=" + layer.rowMin + "\nc1=" + layer.colMax + "\nr1=" + layer.rowMax + "\n";
            try (Socket socket = new Socket(s.host(), s.port())) {
                socket.setSoTimeout(30_000);
                DataInputStream in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
                DataOutputStream out = new DataOutputStream(socket.getOutputStream());
                out.write(token);
                out.flush();
                assertEquals("handshake", 0, in.readInt());

                out.write('G');
                out.writeInt(t.col);
                out.writeInt(t.row);
                out.writeLong(0);
                out.flush();
                byte[] record = new byte[in.readInt()];
                in.readFully(record);
                assertArrayEquals(GtTileSource.record(t), record);

                out.write('G');
                out.writeInt(10_000);
                out.writeInt(10_000);
                out.writeLong(0);
                out.flush();
                assertEquals("a missing key", TileAnswers.MISSING, in.readInt());

                spec(out, 'C', box);
                assertEquals(8, in.readInt());
                assertEquals(all.size(), in.readLong());

                spec(out, 'Q', box + "limit=2\n");
                assertEquals(2, in.readInt());
                byte[] two = new byte[in.readInt()];
                in.readFully(two);
                byte[] a = GtTileSource.record(all.get(0));
                byte[] b = GtTileSource.record(all.get(1));
                assertEquals(a.length + b.length, two.length);
                assertArrayEquals(b, java.util.Arrays.copyOfRange(two, a.length, two.length));
                assertEquals("end of the query", 0, in.readInt());

                spec(out, 'C', "c0=one\n");
                assertEquals(TileAnswers.ERROR, in.readInt());
                byte[] message = new byte[in.readInt()];
                in.readFully(message);
                String m = new String(message, StandardCharsets.UTF_8);
                assertTrue(m, m.startsWith(SfcLayerException.InvalidArgument.class.getName() + "\t")
                    && m.contains("c0=one"));
            }
        }
    }

    private static void spec(DataOutputStream out, char op, String spec) throws java.io.IOException {
        byte[] b = spec.getBytes(StandardCharsets.UTF_8);
        out.write(op);
        out.writeInt(b.length);
        out.write(b);
        out.flush();
    }
}
