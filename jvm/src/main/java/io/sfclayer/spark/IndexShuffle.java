package io.sfclayer.spark;

import org.apache.spark.Partitioner;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.rdd.ShuffledRDD;
import org.apache.spark.serializer.KryoSerializer;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;

import java.util.Comparator;

/**
 * The one shuffle of a write: (SFC index, encoded record) pairs to the partition of their index,
 * sorted by index within it ({@code repartitionAndSortWithinPartitions}), serialized with Kryo
 * whatever the session's {@code spark.serializer}: the pairs are a long and a byte array, which
 * Java serialization (Spark's default) writes with an object stream's overhead per record, and
 * only a serializer that can relocate serialized records lets Spark sort the map output in its
 * serialized form (bench/write_path.py).
 */
final class IndexShuffle {
    private IndexShuffle() {
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    static JavaPairRDD<Long, byte[]> sortedBy(JavaPairRDD<Long, byte[]> records, Partitioner partitioner) {
        ClassTag<Long> k = ClassTag$.MODULE$.apply(Long.class);
        ClassTag<byte[]> v = ClassTag$.MODULE$.apply(byte[].class);
        ShuffledRDD<Long, byte[], byte[]> s = new ShuffledRDD<>((org.apache.spark.rdd.RDD) records.rdd(), partitioner,
            k, v, v);
        s.setKeyOrdering(scala.math.Ordering$.MODULE$.comparatorToOrdering(Comparator.<Long>naturalOrder()));
        // no reference tracking: a long and a byte array hold no shared references, and tracking
        // clears Kryo's identity map after every record
        s.setSerializer(new KryoSerializer(records.context().getConf().clone().set("spark.kryo.referenceTracking", "false")));
        return JavaPairRDD.fromRDD(s, k, v);
    }
}
