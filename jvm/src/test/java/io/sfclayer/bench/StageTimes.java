package io.sfclayer.bench;

import org.apache.spark.executor.TaskMetrics;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerStageCompleted;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.StageInfo;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Where a job's time goes, stage by stage (bench/write_path.py): a listener summing each completed
 * stage's task metrics. {@link #drain} returns the stages completed since the last call, oldest first,
 * each as "name=value;..." (milliseconds; shuffle write time converted from nanoseconds).
 */
public final class StageTimes extends SparkListener {
    private final Map<Integer, long[]> sums = new LinkedHashMap<>();
    private final List<String> done = new ArrayList<>();

    private static final String[] NAMES = {"tasks", "runMs", "cpuMs", "gcMs", "deserMs", "resultSerMs",
        "shuffleWriteMs", "shuffleWriteBytes", "shuffleReadBytes", "shuffleFetchWaitMs", "inputBytes",
        "outputBytes", "wallMs"};

    @Override
    public synchronized void onTaskEnd(SparkListenerTaskEnd e) {
        TaskMetrics m = e.taskMetrics();
        if (m == null) return;
        long[] s = sums.computeIfAbsent(e.stageId(), k -> new long[NAMES.length]);
        s[0]++;
        s[1] += m.executorRunTime();
        s[2] += m.executorCpuTime() / 1_000_000;
        s[3] += m.jvmGCTime();
        s[4] += m.executorDeserializeTime();
        s[5] += m.resultSerializationTime();
        s[6] += m.shuffleWriteMetrics().writeTime() / 1_000_000;
        s[7] += m.shuffleWriteMetrics().bytesWritten();
        s[8] += m.shuffleReadMetrics().totalBytesRead();
        s[9] += m.shuffleReadMetrics().fetchWaitTime();
        s[10] += m.inputMetrics().bytesRead();
        s[11] += m.outputMetrics().bytesWritten();
    }

    @Override
    public synchronized void onStageCompleted(SparkListenerStageCompleted e) {
        StageInfo info = e.stageInfo();
        long[] s = sums.remove(info.stageId());
        if (s == null) s = new long[NAMES.length];
        if (info.submissionTime().isDefined() && info.completionTime().isDefined()) {
            s[12] = (Long) info.completionTime().get() - (Long) info.submissionTime().get();
        }
        StringBuilder b = new StringBuilder("stage=").append(info.stageId()).append(";name=")
            .append(info.name().replace(';', ',').replace('=', ':'));
        for (int i = 0; i < NAMES.length; i++) b.append(';').append(NAMES[i]).append('=').append(s[i]);
        done.add(b.toString());
    }

    /** The stages completed since the last call (listener events arrive asynchronously: wait a little first). */
    public synchronized String[] drain() {
        String[] out = done.toArray(new String[0]);
        done.clear();
        return out;
    }
}
