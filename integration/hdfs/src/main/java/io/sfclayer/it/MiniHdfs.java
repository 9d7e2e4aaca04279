package io.sfclayer.it;

import java.io.BufferedReader;
import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.server.datanode.DataNode;

/**
 * A throw-away HDFS for sfclayer's integration tests: one NameNode and N DataNodes (a
 * MiniDFSCluster) on 127.0.0.1 with free ports, all in one JVM.
 *
 * <pre>
 * usage: MiniHdfs BASE_DIR [DATANODES (2)] [REPLICATION (2)]
 * </pre>
 *
 * <p>BASE_DIR must not hold a previous cluster (its {@code data/} must not exist). The cluster keeps
 * its storage in {@code BASE_DIR/data}, logs to {@code BASE_DIR/minihdfs.log}, and once it is up
 * writes {@code BASE_DIR/ready.json}: {@code {"url": "hdfs://127.0.0.1:PORT", "datanodes": N, ...}}.
 *
 * <p>Then it reads one command a line on stdin and answers one line on stdout ({@code ok}, a JSON
 * object, or {@code error: ...}):
 * <ul>
 *   <li>{@code stop-datanode I}: stops DataNode I (0-based; indices stay stable across stops);
 *       the NameNode is not told, so clients must fail over to another replica by themselves.</li>
 *   <li>{@code restart-datanode I}: starts DataNode I again on its old ports and waits until it
 *       has registered.</li>
 *   <li>{@code status}: JSON with which DataNodes run.</li>
 *   <li>{@code shutdown}: stops the cluster and exits.</li>
 * </ul>
 * When stdin closes (the test process ended, however it ended) the cluster shuts down as well.
 */
public final class MiniHdfs {
    private MiniHdfs() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 1 || args.length > 3) {
            System.err.println("usage: MiniHdfs BASE_DIR [DATANODES (2)] [REPLICATION (2)]");
            System.exit(2);
        }
        File base = new File(args[0]).getAbsoluteFile();
        int datanodes = args.length > 1 ? Integer.parseInt(args[1]) : 2;
        int replication = args.length > 2 ? Integer.parseInt(args[2]) : Math.min(2, datanodes);
        if (datanodes < 1 || replication < 1 || replication > datanodes) {
            System.err.println("need 1 <= REPLICATION <= DATANODES, got " + replication + " and " + datanodes);
            System.exit(2);
        }
        if (new File(base, "data").exists()) {
            System.err.println(base + " already holds a cluster (data/ exists): give a fresh directory");
            System.exit(2);
        }
        Files.createDirectories(base.toPath());

        // Logging goes to a file before any Hadoop class is loaded (they set up log4j statically).
        File logFile = new File(base, "minihdfs.log");
        File log4j = new File(base, "log4j.properties");
        Files.writeString(log4j.toPath(), String.join("\n",
            "log4j.rootLogger=INFO,file",
            "log4j.appender.file=org.apache.log4j.FileAppender",
            "log4j.appender.file.File=" + logFile.getPath().replace("\\", "/"),
            "log4j.appender.file.layout=org.apache.log4j.PatternLayout",
            "log4j.appender.file.layout.ConversionPattern=%d{HH:mm:ss,SSS} %-5p %c{1}: %m%n",
            "log4j.logger.org.apache.hadoop.metrics2=WARN",
            "log4j.logger.org.eclipse.jetty=WARN",
            ""), StandardCharsets.UTF_8);
        System.setProperty("log4j.configuration", log4j.toURI().toString());
        System.setProperty("hadoop.log.dir", base.getPath());

        // Answers go to the real stdout; anything else that prints goes to stderr (the caller's log).
        PrintStream answers = new PrintStream(new FileOutputStream(java.io.FileDescriptor.out), true, "UTF-8");
        System.setOut(System.err);

        Cluster cluster = new Cluster(base, datanodes, replication);
        Runtime.getRuntime().addShutdownHook(new Thread(cluster::shutdown, "minihdfs-shutdown"));
        cluster.start();

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            line = line.trim();
            if (line.isEmpty()) continue;
            if (line.equals("shutdown")) break;
            String answer;
            try {
                answer = cluster.command(line);
            } catch (Exception e) {
                e.printStackTrace();
                answer = "error: " + (e.getMessage() == null ? e.toString() : e.getMessage()).replace('\n', ' ');
            }
            answers.println(answer);
        }
        cluster.shutdown();
        answers.println("ok");
        System.exit(0);
    }

    /** The cluster itself; a separate class so no Hadoop class loads before logging is set up. */
    static final class Cluster {
        private final File base;
        private final int datanodes;
        private final int replication;
        private final AtomicBoolean down = new AtomicBoolean();
        private MiniDFSCluster dfs;
        /** Transfer address (127.0.0.1:port) of DataNode i, its identity across stops and restarts. */
        private final List<String> names = new ArrayList<>();
        private final Map<Integer, MiniDFSCluster.DataNodeProperties> stopped = new HashMap<>();

        Cluster(File base, int datanodes, int replication) {
            this.base = base;
            this.datanodes = datanodes;
            this.replication = replication;
        }

        void start() throws Exception {
            long t0 = System.nanoTime();
            Configuration conf = new HdfsConfiguration();
            conf.setLong("dfs.blocksize", 1L << 20);
            conf.setLong("dfs.namenode.fs-limits.min-block-size", 65536);
            conf.setInt("dfs.replication", replication);
            conf.setBoolean("dfs.permissions.enabled", false);
            conf.set("hadoop.tmp.dir", new File(base, "tmp").getPath());
            // DataNodes name themselves by IP, so clients with dfs.client.use.datanode.hostname=true work too.
            conf.set("dfs.datanode.hostname", "127.0.0.1");
            conf.setInt("dfs.namenode.safemode.extension", 0);
            // No WebHDFS: its Jersey set-up is most of the NameNode's start time, and nothing uses it.
            conf.setBoolean("dfs.webhdfs.enabled", false);
            // Quick liveness bookkeeping: a stopped DataNode is declared dead after ~15 s, not 10 min.
            conf.setLong("dfs.heartbeat.interval", 1);
            conf.setInt("dfs.namenode.heartbeat.recheck-interval", 2500);
            // Small: this runs next to Spark on a test machine.
            conf.setInt("dfs.namenode.handler.count", 4);
            conf.setInt("dfs.namenode.service.handler.count", 2);
            conf.setInt("dfs.datanode.handler.count", 3);
            conf.setInt("dfs.datanode.max.transfer.threads", 256);

            dfs = new MiniDFSCluster.Builder(conf, new File(base, "data"))
                .numDataNodes(datanodes)
                .nameNodePort(0)
                .nameNodeHttpPort(0)
                .format(true)
                .waitSafeMode(true)
                .build();
            dfs.waitActive();
            for (DataNode dn : dfs.getDataNodes()) {
                names.add(dn.getDatanodeId().getXferAddr());
            }
            String url = "hdfs://127.0.0.1:" + dfs.getNameNodePort();
            double seconds = (System.nanoTime() - t0) / 1e9;
            String ready = String.format(java.util.Locale.ROOT,
                "{\"url\": \"%s\", \"datanodes\": %d, \"replication\": %d, \"pid\": %d, "
                    + "\"datanode_addresses\": %s, \"log\": \"%s\", \"start_seconds\": %.2f}%n",
                url, datanodes, replication, ProcessHandle.current().pid(), jsonList(names),
                json(new File(base, "minihdfs.log").getPath()), seconds);
            File tmp = new File(base, "ready.json.tmp");
            Files.writeString(tmp.toPath(), ready, StandardCharsets.UTF_8);
            Files.move(tmp.toPath(), new File(base, "ready.json").toPath(), StandardCopyOption.ATOMIC_MOVE);
            System.err.println("MiniHdfs up at " + url + " in " + seconds + " s");
        }

        synchronized String command(String line) throws Exception {
            String[] words = line.split("\\s+");
            switch (words[0]) {
                case "ping":
                    return "ok";
                case "status":
                    return status();
                case "stop-datanode": {
                    int i = index(words);
                    if (!stopped.containsKey(i)) {
                        MiniDFSCluster.DataNodeProperties props = dfs.stopDataNode(names.get(i));
                        if (props == null) throw new IllegalStateException("datanode " + i + " is not running");
                        stopped.put(i, props);
                    }
                    return "ok";
                }
                case "restart-datanode": {
                    int i = index(words);
                    MiniDFSCluster.DataNodeProperties props = stopped.remove(i);
                    boolean done = props != null ? dfs.restartDataNode(props, true) : dfs.restartDataNode(names.get(i));
                    if (!done) throw new IllegalStateException("datanode " + i + " did not restart");
                    dfs.waitActive();
                    return "ok";
                }
                default:
                    return "error: unknown command '" + words[0]
                        + "' (stop-datanode I, restart-datanode I, status, ping, shutdown)";
            }
        }

        private int index(String[] words) {
            if (words.length != 2) throw new IllegalArgumentException(words[0] + " takes one datanode index");
            int i = Integer.parseInt(words[1]);
            if (i < 0 || i >= names.size()) {
                throw new IllegalArgumentException("no datanode " + i + " (there are " + names.size() + ")");
            }
            return i;
        }

        private String status() {
            StringBuilder running = new StringBuilder("[");
            for (int i = 0; i < names.size(); i++) {
                if (running.length() > 1) running.append(", ");
                running.append(!stopped.containsKey(i));
            }
            return "{\"url\": \"hdfs://127.0.0.1:" + dfs.getNameNodePort() + "\", \"running\": " + running + "]}";
        }

        void shutdown() {
            if (down.compareAndSet(false, true) && dfs != null) {
                try {
                    dfs.shutdown(true);
                } catch (Throwable t) {
                    t.printStackTrace();
                }
            }
        }

        private static String json(String s) {
            return s.replace("\\", "\\\\").replace("\"", "\\\"");
        }

        private static String jsonList(List<String> items) {
            StringBuilder b = new StringBuilder("[");
            for (String s : items) {
                if (b.length() > 1) b.append(", ");
                b.append('"').append(json(s)).append('"');
            }
            return b.append(']').toString();
        }
    }
}
