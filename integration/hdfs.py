"""A real HDFS for sfclayer's tests: start one (MiniHdfs, from Hadoop's own jars) or use an existing one.

The pytest fixtures ``hdfs`` and ``spark`` in the repository's top-level ``conftest.py`` are built on
this module; tests normally use those and import from here only for helpers::

    @pytest.mark.hdfs
    def test_something(spark, hdfs):
        path = hdfs.path("layer")                 # hdfs://127.0.0.1:PORT/sfclayer-tests/<run>/layer-1
        ...
        assert all(blocks >= 1 for _, _, blocks in hdfs.block_locations(spark, path))

MiniHdfs (``integration/hdfs/src/main/java/io/sfclayer/it/MiniHdfs.java``) runs a MiniDFSCluster in
a JVM of its own; ``integration/fetch-jars.sh`` builds it into ``integration/target/hdfs-jars/``.
The JVM's stdin is a pipe from this process: when this process ends, however it ends, the cluster
shuts down.
"""

import itertools
import json
import os
import queue
import shutil
import subprocess
import threading
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
JARS_DIR = REPO / "integration" / "target" / "hdfs-jars"
FETCH_SCRIPT = REPO / "integration" / "fetch-jars.sh"
MAIN_CLASS = "io.sfclayer.it.MiniHdfs"
TEST_ROOT = "/sfclayer-tests"
#: Block size MiniHdfs uses, and the one the test ``spark`` session's HDFS client writes with.
BLOCK_SIZE = 1 << 20


class HdfsUnavailable(RuntimeError):
    """No HDFS can be started here (no Java, no Maven, jars could not be fetched)."""


def running_in_ci():
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def find_java():
    """The ``java`` to run MiniHdfs with: $JAVA_HOME/bin/java, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return os.path.join(home, "bin", "java")
    java = shutil.which("java")
    if not java:
        raise HdfsUnavailable("no `java` on PATH and no JAVA_HOME: MiniHdfs needs a JDK 17")
    return java


def ensure_jars(timeout=900):
    """Make sure ``integration/target/hdfs-jars/`` is complete (runs ``integration/fetch-jars.sh``).

    The script returns at once when the jars are up to date with the pom and MiniHdfs's source.
    """
    bash = shutil.which("bash")
    if not bash:
        raise HdfsUnavailable("no bash to run integration/fetch-jars.sh")
    try:
        proc = subprocess.run([bash, str(FETCH_SCRIPT)], cwd=REPO, capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise HdfsUnavailable(f"integration/fetch-jars.sh took over {timeout} s") from None
    if proc.returncode != 0 or not (JARS_DIR / ".done").exists():
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise HdfsUnavailable("could not fetch MiniHdfs's jars (`make hdfs-jars` / integration/fetch-jars.sh "
                              f"needs Maven, a JDK 17 and Maven Central or a filled ~/.m2):\n{tail}")
    return JARS_DIR


class MiniHdfsProcess:
    """One MiniHdfs JVM: ``start()``, ``command("stop-datanode 0")``, ``stop()``.

    Parameters
    ----------
    base_dir : str or Path
        A fresh directory; the cluster's storage, its log (``minihdfs.log``) and the JVM's own
        output (``minihdfs.out``) go there.
    datanodes, replication : int
    heap : str
        The JVM's -Xmx.
    """

    def __init__(self, base_dir, datanodes=2, replication=2, heap="512m", java=None, jars_dir=JARS_DIR):
        self.base_dir = Path(base_dir).resolve()
        self.datanodes = datanodes
        self.replication = replication
        self.heap = heap
        self.java = java or find_java()
        self.jars_dir = Path(jars_dir).resolve()
        self.proc = None
        self.info = None
        self.start_seconds = None
        self._t0 = None
        self._launched_at = None
        self._lines = queue.Queue()
        self._lock = threading.Lock()
        self._owed = 0  # answers still due to commands that timed out: discarded, never taken as the next answer

    @property
    def url(self):
        return self.info["url"]

    @property
    def log_path(self):
        return self.base_dir / "minihdfs.log"

    def launch(self):
        """Start the JVM and return at once; :meth:`wait_ready` waits for the cluster."""
        if not (self.jars_dir / "sfclayer-minihdfs.jar").exists():
            raise HdfsUnavailable(f"MiniHdfs is not built in {self.jars_dir}: run `make hdfs-jars`")
        self.base_dir.mkdir(parents=True, exist_ok=True)
        ready = self.base_dir / "ready.json"
        if ready.exists():
            ready.unlink()
        # Small and quick to start: one GC thread, C1 only. The same flags as the class-data-sharing
        # archive fetch-jars.sh makes (minihdfs.jsa); without it, or if it no longer fits, the JVM
        # just loads classes the slow way. The JVM's own warnings (e.g. that the archive does not fit
        # a copied checkout) go to stderr: stdout carries only the answers to commands.
        cmd = [self.java, f"-Xmx{self.heap}", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
               "-Xlog:disable", "-Xlog:all=warning:stderr",
               "-Djava.net.preferIPv4Stack=true", "-Djava.awt.headless=true"]
        archive = self.jars_dir / "minihdfs.jsa"
        if archive.exists():
            cmd += ["-Xshare:auto", f"-XX:SharedArchiveFile={archive}"]
        cmd += ["-cp", str(self.jars_dir / "*"), MAIN_CLASS,
                str(self.base_dir), str(self.datanodes), str(self.replication)]
        self._t0 = time.monotonic()
        self._launched_at = time.time()
        with open(self.base_dir / "minihdfs.out", "ab") as out:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=out,
                                         cwd=self.base_dir, text=True, bufsize=1)
        threading.Thread(target=self._pump, name="minihdfs-stdout", daemon=True).start()
        return self

    def wait_ready(self, timeout=120):
        """Wait until the cluster is up (``ready.json`` written); returns self."""
        if self.info is not None:
            return self
        if self.proc is None:
            raise HdfsUnavailable("MiniHdfs was not launched (or was stopped)")
        ready = self.base_dir / "ready.json"
        deadline = self._t0 + timeout
        while not ready.exists():
            if self.proc.poll() is not None:
                raise HdfsUnavailable(f"MiniHdfs exited with {self.proc.returncode} while starting:\n"
                                      + self._log_tail())
            if time.monotonic() > deadline:
                tail = self._log_tail()
                self.stop()
                raise HdfsUnavailable(f"MiniHdfs did not start within {timeout} s:\n" + tail)
            time.sleep(0.05)
        self.info = json.loads(ready.read_text())
        # From launch until ready.json appeared (the caller may look only later).
        self.start_seconds = max(0.0, ready.stat().st_mtime - self._launched_at)
        return self

    def start(self, timeout=120):
        """:meth:`launch` and :meth:`wait_ready`."""
        return self.launch().wait_ready(timeout)

    def _pump(self):
        for line in self.proc.stdout:
            self._lines.put(line.rstrip("\n"))
        self._lines.put(None)

    def _log_tail(self, n=30):
        parts = []
        for name in ("minihdfs.out", "minihdfs.log"):
            p = self.base_dir / name
            if p.exists():
                lines = p.read_text(errors="replace").splitlines()[-n:]
                parts.append(f"--- {p} (last {len(lines)} lines)\n" + "\n".join(lines))
        return "\n".join(parts)

    def command(self, line, timeout=120):
        """Send one command line; return its one-line answer (``RuntimeError`` on ``error: ...``)."""
        with self._lock:
            if self.proc is None or self.proc.poll() is not None:
                raise RuntimeError("MiniHdfs is not running")
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
            deadline = time.monotonic() + timeout
            try:
                while True:
                    answer = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
                    if answer is None or self._owed == 0:
                        break
                    self._owed -= 1  # the late answer of an earlier, timed-out command
            except queue.Empty:
                self._owed += 1
                raise RuntimeError(f"MiniHdfs did not answer {line!r} within {timeout} s") from None
        if answer is None:
            raise RuntimeError(f"MiniHdfs exited while answering {line!r}:\n" + self._log_tail())
        if answer.startswith("error:"):
            raise RuntimeError(f"MiniHdfs {line!r}: {answer}")
        return answer

    def stop(self, timeout=60):
        """Shut the cluster down (cleanly if it will, killed if not)."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            if proc.poll() is None:
                proc.stdin.write("shutdown\n")
                proc.stdin.flush()
                proc.stdin.close()
            proc.wait(timeout=timeout)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait(timeout=30)


class Hdfs:
    """What the ``hdfs`` fixture gives a test.

    Attributes
    ----------
    url : str
        ``hdfs://HOST:PORT`` of the NameNode.
    external : bool
        True when the cluster came from ``SFCLAYER_HDFS_URL`` (then it cannot stop DataNodes).
    datanodes : int or None
        How many DataNodes MiniHdfs started (None for an external cluster).
    """

    def __init__(self, url, process=None):
        self.url = url.rstrip("/")
        self.process = process
        self.external = process is None
        self.datanodes = process.datanodes if process else None
        #: Transfer address (127.0.0.1:port) of each MiniHdfs DataNode, by index (None if external).
        self.datanode_addresses = list(process.info["datanode_addresses"]) if process else None
        self.replication = process.replication if process else None
        self.run_dir = f"{TEST_ROOT}/run-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:8]}"
        self._counter = itertools.count(1)

    def __repr__(self):
        return f"Hdfs({self.url!r}, external={self.external})"

    def path(self, name="data"):
        """A fresh ``hdfs://`` path (not created) under /sfclayer-tests/<this run>/."""
        name = str(name).strip("/").replace("/", "-") or "data"
        return f"{self.url}{self.run_dir}/{name}-{next(self._counter)}"

    def _need_local(self, what):
        if self.external:
            import pytest
            pytest.skip(f"{what} needs the suite's own MiniHdfs; SFCLAYER_HDFS_URL names an external cluster")

    def stop_datanode(self, i):
        """Stop DataNode ``i`` (0-based). The NameNode is not told: readers must fail over."""
        self._need_local("stopping a DataNode")
        self.process.command(f"stop-datanode {int(i)}")

    def restart_datanode(self, i):
        """Start DataNode ``i`` again (same ports) and wait until it has registered."""
        self._need_local("restarting a DataNode")
        self.process.command(f"restart-datanode {int(i)}")

    def status(self):
        """``{"url": ..., "running": [True, False, ...]}`` for MiniHdfs."""
        self._need_local("status")
        return json.loads(self.process.command("status"))

    # --- helpers through the Spark JVM's Hadoop client -------------------------------------------

    @staticmethod
    def filesystem(spark, path):
        jvm = spark._jvm
        p = jvm.org.apache.hadoop.fs.Path(path)
        return p.getFileSystem(spark._jsc.hadoopConfiguration()), p

    @classmethod
    def block_locations(cls, spark, path):
        """``[(file, length, number of blocks), ...]`` for every file under ``path`` (or the file itself),
        sorted by file name, read through Hadoop's FileSystem in the Spark JVM."""
        fs, p = cls.filesystem(spark, path)
        it = fs.listFiles(p, True)
        found = []
        while it.hasNext():
            st = it.next()
            found.append((st.getPath().toString(), st.getLen(), len(st.getBlockLocations())))
        return sorted(found)

    @classmethod
    def block_hosts(cls, spark, path):
        """``{file: [[host:port, ...] per block], ...}``: where each block's replicas are."""
        fs, p = cls.filesystem(spark, path)
        it = fs.listFiles(p, True)
        hosts = {}
        while it.hasNext():
            st = it.next()
            hosts[st.getPath().toString()] = [list(b.getNames()) for b in st.getBlockLocations()]
        return hosts

    @classmethod
    def write_bytes(cls, spark, path, data, block_size=BLOCK_SIZE, chunk=1 << 18):
        """Write ``data`` (bytes) to one HDFS file with the given block size."""
        fs, p = cls.filesystem(spark, path)
        out = fs.createFile(p).overwrite(True).blockSize(int(block_size)).recursive().build()
        try:
            for start in range(0, len(data), chunk):
                out.write(bytearray(data[start:start + chunk]))
        finally:
            out.close()

    @classmethod
    def read_bytes(cls, spark, path):
        fs, p = cls.filesystem(spark, path)
        stream = fs.open(p)
        try:
            return bytes(stream.readAllBytes())
        finally:
            stream.close()

    @classmethod
    def delete(cls, spark, path):
        fs, p = cls.filesystem(spark, path)
        return fs.delete(p, True)

    def close(self):
        if self.process is not None:
            self.process.stop()


def launch(base_dir, datanodes=2, replication=2, fetch=True):
    """Fetch MiniHdfs's jars if needed and start its JVM in ``base_dir`` without waiting for it;
    returns the :class:`MiniHdfsProcess` (call ``wait_ready()``, then wrap it in :class:`Hdfs`)."""
    if fetch:
        ensure_jars()
    return MiniHdfsProcess(base_dir, datanodes=datanodes, replication=replication).launch()


def start(base_dir, datanodes=2, replication=2, fetch=True):
    """Start MiniHdfs in ``base_dir`` and wait for it; returns an :class:`Hdfs`."""
    process = launch(base_dir, datanodes, replication, fetch).wait_ready()
    return Hdfs(process.url, process)


def external_url():
    """``SFCLAYER_HDFS_URL`` (an existing cluster to test against), or None."""
    url = os.environ.get("SFCLAYER_HDFS_URL", "").strip()
    if url and not url.startswith("hdfs://"):
        raise HdfsUnavailable(f"SFCLAYER_HDFS_URL must be an hdfs:// URL, got {url!r}")
    return url or None


def default_datanodes():
    """How many DataNodes the suite's MiniHdfs gets: ``SFCLAYER_HDFS_DATANODES``, default 2."""
    return int(os.environ.get("SFCLAYER_HDFS_DATANODES", "2"))
