package io.sfclayer.spark;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomSumMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec;
import org.apache.spark.sql.execution.adaptive.QueryStageExec;
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec;
import org.apache.spark.sql.execution.metric.SQLMetric;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The custom metrics of a layer scan, shown on the scan node in the SQL UI and summed over its
 * tasks. Spark instantiates the metric classes by name on the driver, hence the public nested
 * classes with no-argument constructors.
 */
public final class SfcLayerMetrics {
    public static final String FILES_READ = "filesRead";
    public static final String RANGES = "rangesRead";
    public static final String SEEKS = "seeks";
    public static final String GROUPS_READ = "groupsRead";
    public static final String RECORDS_READ = "recordsRead";
    public static final String RECORDS_RETURNED = "recordsReturned";
    public static final String RECORDS_DISCARDED = "recordsDiscarded";
    public static final String BYTES_READ = "bytesRead";
    public static final String CORRUPT_SKIPPED = "corruptRecordsSkipped";
    public static final String FILES_PRUNED_BY_NAME = "filesPrunedByName";
    public static final String FILES_PRUNED_BY_STATS = "filesPrunedByStats";
    public static final String FILES_COUNTED_FROM_STATS = "filesCountedFromStats";

    /** Task metric names in the order of {@link #supported()}. */
    static final String[] NAMES = {
        FILES_READ, RANGES, SEEKS, GROUPS_READ, RECORDS_READ, RECORDS_RETURNED, RECORDS_DISCARDED, BYTES_READ,
        CORRUPT_SKIPPED,
    };

    /** Driver metric names (planning: files removed before any was opened), as {@link Planning#report}. */
    static final String[] DRIVER_NAMES = {FILES_PRUNED_BY_NAME, FILES_PRUNED_BY_STATS, FILES_COUNTED_FROM_STATS};

    private SfcLayerMetrics() {
    }

    /**
     * What planning a scan settled before any file was opened: the driver metrics of both scans
     * ({@link SfcLayerScan} prunes, {@link SfcLayerCountScan} also counts files from the document).
     */
    static final class Planning {
        long filesPrunedByName;
        long filesPrunedByStats;
        long filesCountedFromStats;

        /** These figures with {@code files} counted from statistics (the count scan's, over its scan's). */
        Planning withCountedFromStats(long files) {
            Planning p = new Planning();
            p.filesPrunedByName = filesPrunedByName;
            p.filesPrunedByStats = filesPrunedByStats;
            p.filesCountedFromStats = files;
            return p;
        }

        /** The values in the order of {@link #DRIVER_NAMES}. */
        CustomTaskMetric[] report() {
            return metrics(DRIVER_NAMES, new long[] {filesPrunedByName, filesPrunedByStats, filesCountedFromStats});
        }
    }

    static CustomMetric[] supported() {
        return new CustomMetric[] {
            new FilesRead(), new Ranges(), new Seeks(), new GroupsRead(), new RecordsRead(), new RecordsReturned(),
            new RecordsDiscarded(), new BytesRead(), new CorruptSkipped(), new FilesPrunedByName(),
            new FilesPrunedByStats(), new FilesCountedFromStats(),
        };
    }

    /** A task's values, in the order of {@link #NAMES}. */
    static CustomTaskMetric[] task(long... values) {
        return metrics(NAMES, values);
    }

    private static CustomTaskMetric[] metrics(String[] names, long[] values) {
        CustomTaskMetric[] out = new CustomTaskMetric[names.length];
        for (int i = 0; i < names.length; i++) {
            String name = names[i];
            long value = values[i];
            out[i] = new CustomTaskMetric() {
                @Override
                public String name() {
                    return name;
                }

                @Override
                public long value() {
                    return value;
                }
            };
        }
        return out;
    }

    /**
     * The metrics of every layer scan in an executed query, summed by name (e.g. after
     * {@code df.collect()}: {@code SfcLayerMetrics.of(df)}); an empty map before it ran.
     */
    public static Map<String, Long> of(Dataset<?> df) {
        return of(df.queryExecution().executedPlan());
    }

    public static Map<String, Long> of(SparkPlan plan) {
        Map<String, Long> out = new LinkedHashMap<>();
        List<SparkPlan> todo = new ArrayList<>();
        todo.add(plan);
        while (!todo.isEmpty()) {
            SparkPlan p = todo.remove(todo.size() - 1);
            if (p instanceof AdaptiveSparkPlanExec) {
                todo.add(((AdaptiveSparkPlanExec) p).executedPlan());
            } else if (p instanceof QueryStageExec) {
                todo.add(((QueryStageExec) p).plan());
            } else if (p instanceof BatchScanExec && (((BatchScanExec) p).scan() instanceof SfcLayerScan
                    || ((BatchScanExec) p).scan() instanceof SfcLayerCountScan
                    || ((BatchScanExec) p).scan() instanceof GeoTrellisScan)) {
                Map<String, SQLMetric> metrics = scala.jdk.javaapi.CollectionConverters.asJava(p.metrics());
                for (String[] names : new String[][] {NAMES, DRIVER_NAMES}) {
                    for (String name : names) {
                        SQLMetric m = metrics.get(name);
                        if (m != null) {
                            out.merge(name, m.value(), Long::sum);
                        }
                    }
                }
            }
            todo.addAll(scala.jdk.javaapi.CollectionConverters.asJava(p.children()));
        }
        return out;
    }

    public static final class FilesRead extends CustomSumMetric {
        @Override
        public String name() {
            return FILES_READ;
        }

        @Override
        public String description() {
            return "sfclayer data files read";
        }
    }

    public static final class Ranges extends CustomSumMetric {
        @Override
        public String name() {
            return RANGES;
        }

        @Override
        public String description() {
            return "sfclayer SFC ranges traversed";
        }
    }

    public static final class Seeks extends CustomSumMetric {
        @Override
        public String name() {
            return SEEKS;
        }

        @Override
        public String description() {
            return "sfclayer MapFile seeks";
        }
    }

    public static final class GroupsRead extends CustomSumMetric {
        @Override
        public String name() {
            return GROUPS_READ;
        }

        @Override
        public String description() {
            return "sfclayer index groups read";
        }
    }

    public static final class RecordsRead extends CustomSumMetric {
        @Override
        public String name() {
            return RECORDS_READ;
        }

        @Override
        public String description() {
            return "sfclayer tile records read";
        }
    }

    public static final class RecordsReturned extends CustomSumMetric {
        @Override
        public String name() {
            return RECORDS_RETURNED;
        }

        @Override
        public String description() {
            return "sfclayer tile records returned";
        }
    }

    public static final class RecordsDiscarded extends CustomSumMetric {
        @Override
        public String name() {
            return RECORDS_DISCARDED;
        }

        @Override
        public String description() {
            return "sfclayer tile records discarded by refinement";
        }
    }

    public static final class BytesRead extends CustomSumMetric {
        @Override
        public String name() {
            return BYTES_READ;
        }

        @Override
        public String description() {
            return "sfclayer stored bytes read";
        }
    }

    public static final class CorruptSkipped extends CustomSumMetric {
        @Override
        public String name() {
            return CORRUPT_SKIPPED;
        }

        @Override
        public String description() {
            return "corrupt records skipped";
        }
    }

    public static final class FilesPrunedByName extends CustomSumMetric {
        @Override
        public String name() {
            return FILES_PRUNED_BY_NAME;
        }

        @Override
        public String description() {
            return "sfclayer data files pruned by name";
        }
    }

    public static final class FilesPrunedByStats extends CustomSumMetric {
        @Override
        public String name() {
            return FILES_PRUNED_BY_STATS;
        }

        @Override
        public String description() {
            return "sfclayer data files pruned by statistics";
        }
    }

    public static final class FilesCountedFromStats extends CustomSumMetric {
        @Override
        public String name() {
            return FILES_COUNTED_FROM_STATS;
        }

        @Override
        public String description() {
            return "sfclayer data files counted from metadata, not opened";
        }
    }
}
