package org.apache.hadoop.io;

import java.math.BigInteger;
import java.util.Arrays;

/**
 * Test-only copy of GeoTrellis' key class (geotrellis store/src/main/java/org/apache/hadoop/io/BigIntWritable.java,
 * Apache 2.0), so that tests write MapFiles with Hadoop's own MapFile.Writer exactly as GeoTrellis does.
 * Not shipped: the connector reads these files without it (io.sfclayer.geotrellis.GtMapFile).
 */
public class BigIntWritable extends BytesWritable {
    public BigIntWritable() {
        super();
    }

    public BigIntWritable(byte[] bytes) {
        super(bytes);
    }

    @Override
    public int compareTo(BinaryComparable that) {
        BigInteger left = new BigInteger(Arrays.copyOf(this.getBytes(), this.getLength()));
        BigInteger right = new BigInteger(Arrays.copyOf(that.getBytes(), that.getLength()));
        return left.compareTo(right);
    }

    public static class Comparator extends WritableComparator {
        public Comparator() {
            super(BigIntWritable.class);
        }

        @Override
        @SuppressWarnings("rawtypes")
        public int compare(WritableComparable a, WritableComparable b) {
            return a.compareTo(b);
        }
    }

    static {
        WritableComparator.define(BigIntWritable.class, new Comparator());
    }
}
