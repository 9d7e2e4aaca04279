"""A Spark standalone cluster on 127.0.0.1 for the integration suite: one master and two workers of
one core each, started from pyspark's own ``bin/spark-class`` and stopped by the process ids they were
started with. Logs stay in the directory given (the test run's tmp dir). Every daemon binds 127.0.0.1,
but the second worker calls its host ``localhost``: Spark never runs a speculative copy of a task on
the host of its running attempt (``TaskSetManager``), so two host names are what lets the speculation
test (cluster_driver.py ``speculation``) see speculative attempts at all.

Everything else in the suite runs on ``local[2]``, one JVM; this is where non-serializable state,
driver-only assumptions and jar shipping break. The suite's shared SparkSession cannot be pointed at
another master, so the checks run in a driver process of their own (integration/cluster_driver.py).
"""

import os
import re
import signal
import socket
import subprocess
import time

import pyspark

__all__ = ["StandaloneCluster", "free_port"]

SPARK_HOME = os.path.dirname(os.path.abspath(pyspark.__file__))
SPARK_CLASS = os.path.join(SPARK_HOME, "bin", "spark-class")


def free_port():
    """A port free on 127.0.0.1 now (the master needs one known in advance)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class StandaloneCluster:
    """``start()`` a master and ``workers`` workers; ``.url`` is ``spark://127.0.0.1:<port>``; ``stop()``."""

    def __init__(self, log_dir, workers=2, worker_memory="640m", daemon_memory="256m"):
        self.log_dir = log_dir
        self.workers = workers
        self.worker_memory = worker_memory
        self.daemon_memory = daemon_memory
        self.port = free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.processes = []  # (name, Popen, log path)

    def _env(self):
        env = dict(os.environ)
        env.update({
            "SPARK_HOME": SPARK_HOME,
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_DAEMON_MEMORY": self.daemon_memory,
            # no REST submission server, web UIs on ephemeral ports
            "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
            "SPARK_NO_DAEMONIZE": "1",
        })
        env.pop("SPARK_CONF_DIR", None)
        return env

    def _launch(self, name, args):
        log = os.path.join(self.log_dir, f"{name}.log")
        out = open(log, "wb")
        # spark-class execs java, so this pid is the daemon's JVM
        p = subprocess.Popen([SPARK_CLASS] + args, stdout=out, stderr=subprocess.STDOUT, env=self._env(),
                             cwd=self.log_dir, start_new_session=True)
        out.close()
        self.processes.append((name, p, log))
        return log

    def _wait_for(self, log, pattern, what, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with open(log, errors="replace") as f:
                text = f.read()
            if re.search(pattern, text):
                return
            for name, p, _ in self.processes:
                if p.poll() is not None:
                    raise RuntimeError(f"spark {name} exited ({p.returncode}) before {what}; log {log}:\n{text[-3000:]}")
            time.sleep(0.3)
        raise RuntimeError(f"{what} took over {timeout} s; log {log}")

    def start(self, timeout=120):
        os.makedirs(self.log_dir, exist_ok=True)
        try:
            log = self._launch("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                          "--port", str(self.port), "--webui-port", "0"])
            self._wait_for(log, r"I have been elected leader|Starting Spark master at", "the master's start", timeout)
            logs = []
            for i in range(self.workers):
                work = os.path.join(self.log_dir, f"worker-{i}-work")
                os.makedirs(work, exist_ok=True)
                host = "localhost" if i % 2 else "127.0.0.1"  # both 127.0.0.1 (see the module's note)
                logs.append(self._launch(f"worker-{i}", [
                    "org.apache.spark.deploy.worker.Worker", "--host", host, "--port", "0",
                    "--webui-port", "0", "--cores", "1", "--memory", self.worker_memory, "--work-dir", work,
                    self.url]))
            for log in logs:
                self._wait_for(log, r"Successfully registered with master", "a worker's registration", timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self, timeout=30):
        """Stops the processes this object started (by pid, workers first)."""
        for name, p, _ in reversed(self.processes):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for name, p, _ in reversed(self.processes):
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(10)
        self.processes = []

    def logs(self):
        return [log for _, _, log in self.processes]
