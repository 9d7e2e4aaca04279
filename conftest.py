"""Fixtures shared by the whole test run (tests/ and integration/).

- ``spark``: one local SparkSession for the session, with the sfclayer connector when its jar is
  built (``make jar``), a plain SparkSession otherwise.
- ``hdfs``: a real HDFS for tests marked ``@pytest.mark.hdfs``; a MiniHdfs started once for the
  session, or the cluster named by ``SFCLAYER_HDFS_URL``. See integration/hdfs.py and
  integration/README.md.
- ``connect``: a Spark Connect session (a thin ``sc://`` client, no py4j) on a Connect server in its own
  process, started once for the session with ``start-connect-server.sh`` from pyspark's wheel and the
  settings the README gives users.
- ``s3``: a real S3 server (moto) on loopback, reached through S3A, for tests marked
  ``@pytest.mark.s3``; ``s3_race``: S3Proxy (atomic conditional writes) behind a fault-injecting
  proxy. Each started once for the session; see integration/s3.py.
"""

import os
import shutil
import sys
import tempfile
from unittest import mock

import pytest

ROOT = os.path.dirname(os.path.abspath(__file__))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from integration import hdfs as hdfs_helpers  # noqa: E402
from integration import s3 as s3_helpers  # noqa: E402

_PYTHON_SRC = os.path.join(ROOT, "python")


def _spark_conf(tmp_dir):
    conf = {
        "spark.sql.shuffle.partitions": "4",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.sql.warehouse.dir": os.path.join(tmp_dir, "spark-warehouse"),
        # The HDFS client: connect to DataNodes by the address the NameNode hands out, write files
        # with MiniHdfs's 1 MiB blocks so even small test data spans several blocks.
        "spark.hadoop.dfs.client.use.datanode.hostname": "false",
        "spark.hadoop.dfs.blocksize": str(hdfs_helpers.BLOCK_SIZE),
        # A stopped DataNode is skipped fast; retries are short so a broken cluster fails quickly.
        "spark.hadoop.dfs.client.socket-timeout": "20000",
        "spark.hadoop.ipc.client.connect.max.retries": "3",
        "spark.hadoop.ipc.client.connect.timeout": "5000",
    }
    if not os.environ.get("SFCLAYER_HDFS_URL"):
        conf["spark.hadoop.dfs.replication"] = str(min(2, hdfs_helpers.default_datanodes()))  # as MiniHdfs
    return conf


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    """The test run's SparkSession (local[2], 4 shuffle partitions)."""
    if _PYTHON_SRC not in sys.path:  # normally installed editable; the source tree otherwise
        sys.path.append(_PYTHON_SRC)
    try:
        import sfclayer

        sfclayer.jar_path()
    except Exception as e:  # jar not built yet (or the package is mid-edit): plain Spark still serves
        sfclayer = None     # the HDFS/infrastructure tests; sfclayer's own tests fail on their imports
        print(f"\nspark fixture: a SparkSession without the sfclayer connector ({type(e).__name__}: {e})")

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # everything on loopback
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # Python workers (ingest, pyramid) in this venv
    tmp_dir = str(tmp_path_factory.mktemp("spark"))
    conf = _spark_conf(tmp_dir)
    if sfclayer is not None:
        # Spark loads the connector's classes lazily from the jar file, so a `make jar` elsewhere
        # during the run would swap classes under it (NoClassDefFoundError). Use a private copy.
        snapshot = os.path.join(tmp_dir, "sfclayer.jar")
        shutil.copyfile(sfclayer.jar_path(), snapshot)
        bench_jar = os.path.join(os.path.dirname(os.path.abspath(__file__)), "build", "libs", "sfclayer-bench.jar")
        extra = []
        if os.path.exists(bench_jar):  # the benchmark's JVM helpers (tests/test_bench_smoke.py)
            extra.append(shutil.copyfile(bench_jar, os.path.join(tmp_dir, "sfclayer-bench.jar")))
        try:  # S3A (hadoop-aws and the AWS SDK's s3 modules) for the s3 tests; `make s3-jars`
            extra += s3_helpers.s3a_jars(fetch=False)
        except s3_helpers.S3Unavailable as e:
            print(f"\nspark fixture: no S3A on the class path, the s3 tests will skip ({e})")
        if extra:
            conf["spark.jars"] = ",".join(extra)
        with mock.patch.object(sfclayer, "jar_path", lambda: snapshot):
            session = sfclayer.session("local[2]", app_name="sfclayer-tests", **conf)
    else:
        from pyspark.sql import SparkSession

        builder = SparkSession.builder.master("local[2]").appName("sfclayer-tests")
        for key, value in conf.items():
            builder = builder.config(key, value)
        session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def connect_url(tmp_path_factory):
    """The ``sc://`` URL (with its token) of the run's own Connect server, started as the README tells users
    to (``$SPARK_HOME/sbin/start-connect-server.sh --jars <the jar> --conf ...`` with the catalog and the two
    plugins; pyspark's own directory as ``$SPARK_HOME``), in the foreground (``--wait``) of a child process,
    local[2], on loopback with a token."""
    import secrets
    import socket
    import subprocess
    import time

    pytest.importorskip("grpc", reason="the Spark Connect client needs pyspark[connect] (make setup)")
    if _PYTHON_SRC not in sys.path:
        sys.path.append(_PYTHON_SRC)
    import pyspark

    import sfclayer

    tmp_dir = str(tmp_path_factory.mktemp("connect"))
    snapshot = shutil.copyfile(sfclayer.jar_path(), os.path.join(tmp_dir, "sfclayer.jar"))  # as `spark` does
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = secrets.token_hex(16)
    home = os.path.dirname(pyspark.__file__)
    conf = {k: v for k, v in _spark_conf(tmp_dir).items() if not k.startswith("spark.hadoop.dfs")}
    conf.update({  # the README's settings ("Spark Connect"), then the run's own
        "spark.sql.catalog.sfclayer": sfclayer.CATALOG,
        sfclayer.RELATION_PLUGINS: sfclayer._connect.PLUGIN,
        sfclayer.COMMAND_PLUGINS: sfclayer._connect.COMMAND_PLUGIN,
        "spark.connect.grpc.binding.port": str(port), "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.app.name": "sfclayer-connect-tests", "spark.driver.memory": "1g"})
    cmd = [os.path.join(home, "sbin", "start-connect-server.sh"), "--wait", "--master", "local[2]", "--jars", snapshot]
    for key, value in conf.items():
        cmd += ["--conf", f"{key}={value}"]
    env = dict(os.environ, SPARK_HOME=home, SPARK_LOG_DIR=tmp_dir, SPARK_PID_DIR=tmp_dir,
               SPARK_CONNECT_AUTHENTICATE_TOKEN=token, SPARK_LOCAL_IP="127.0.0.1",
               PYSPARK_PYTHON=os.environ.get("PYSPARK_PYTHON", sys.executable),
               PYTHONPATH=os.pathsep.join([_PYTHON_SRC, os.environ.get("PYTHONPATH", "")]))
    for var in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_REMOTE", "SFCLAYER_JAR", "PYSPARK_SUBMIT_ARGS"):
        env.pop(var, None)
    log = open(os.path.join(tmp_dir, "server.log"), "w")
    server = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                              cwd=tmp_dir, start_new_session=True)

    def listening():
        with socket.socket() as s:
            s.settimeout(1)
            return s.connect_ex(("127.0.0.1", port)) == 0

    deadline = time.monotonic() + 240
    while not listening() and server.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    if server.poll() is not None or not listening():
        _stop_group(server)
        log.close()
        with open(log.name) as f:
            tail = f.read()[-3000:]
        pytest.fail(f"the Spark Connect server did not start (log {log.name}):\n{tail}", pytrace=False)
    yield f"sc://localhost:{port}/;token={token}"
    _stop_group(server)
    log.close()


def _stop_group(proc):
    """SIGTERM the process group of ``proc`` (spark-submit's JVM under the scripts), then SIGKILL if need be."""
    import signal
    import subprocess

    for sig, wait in ((signal.SIGTERM, 60), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


@pytest.fixture(scope="session")
def connect(connect_url):
    """A Spark Connect session on the run's own Connect server (:func:`connect_url`), a thin ``sc://`` client.
    It is built with Connect's own builder, so this process stays in classic mode for ``spark``."""
    pytest.importorskip("grpc", reason="the Spark Connect client needs pyspark[connect] (make setup)")
    import sfclayer
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    session = sfclayer.configure(ConnectSession.builder.remote(connect_url)).create()
    yield session
    session.stop()


# MiniHdfs boots (~5 s) while Spark does: it is launched as soon as collection shows a test that
# will use the hdfs fixture, and the fixture waits for it.
_early = {}


def _minihdfs_dir(config):
    factory = getattr(config, "_tmp_path_factory", None)
    parent = factory.getbasetemp() if factory is not None else None
    return tempfile.mkdtemp(prefix="minihdfs-", dir=parent)


def _launch_minihdfs(config):
    n = hdfs_helpers.default_datanodes()
    return hdfs_helpers.launch(_minihdfs_dir(config), datanodes=n, replication=min(2, n))


def pytest_collection_finish(session):
    if session.config.option.collectonly or os.environ.get("SFCLAYER_HDFS_URL"):
        return
    if not any("hdfs" in getattr(item, "fixturenames", ()) for item in session.items):
        return
    try:
        _early["process"] = _launch_minihdfs(session.config)
    except hdfs_helpers.HdfsUnavailable as e:
        _early["error"] = e


def pytest_sessionfinish(session):
    process = _early.pop("process", None)  # launched but never used
    if process is not None:
        process.stop()


@pytest.fixture(scope="session")
def hdfs(request):
    """A real HDFS for the session: ``.url``, ``.path(name)``, ``.stop_datanode(i)``,
    ``.restart_datanode(i)``, ``.block_locations(spark, path)``; see integration/hdfs.py."""
    try:
        url = hdfs_helpers.external_url()
        if url:
            cluster = hdfs_helpers.Hdfs(url)
        else:
            if "error" in _early:
                raise _early.pop("error")
            process = _early.pop("process", None) or _launch_minihdfs(request.config)
            try:
                process.wait_ready()
            except BaseException:
                process.stop()
                raise
            cluster = hdfs_helpers.Hdfs(process.url, process)
    except hdfs_helpers.HdfsUnavailable as e:
        if hdfs_helpers.running_in_ci():
            pytest.fail(f"no HDFS for the hdfs tests (CI=true, so this fails instead of skipping): {e}",
                        pytrace=False)
        pytest.skip(f"no HDFS for the hdfs tests: {e}")
    if cluster.external:
        # Set Spark up first so it is still there to delete this run's files at the end.
        request.getfixturevalue("spark")
    else:
        print(f"\nMiniHdfs at {cluster.url}: {cluster.datanodes} datanodes, ready {cluster.process.start_seconds:.1f} s "
              f"after launch (in-JVM start {cluster.process.info['start_seconds']:.1f} s; "
              f"log {cluster.process.log_path})")
    yield cluster
    if cluster.external:
        _delete_run_dir(cluster)
    cluster.close()


def _delete_run_dir(cluster):
    """On an external cluster, remove what this run wrote (through the Spark JVM, if one runs)."""
    try:
        from pyspark.sql import SparkSession

        active = SparkSession.getActiveSession() or SparkSession._instantiatedSession
        if active is not None:
            hdfs_helpers.Hdfs.delete(active, cluster.url + cluster.run_dir)
    except Exception as e:  # cleanup only
        print(f"could not delete {cluster.url}{cluster.run_dir}: {e}")


def _s3_unavailable(e):
    if hdfs_helpers.running_in_ci():
        pytest.fail(f"no S3 server for the s3 tests (CI=true, so this fails instead of skipping): {e}",
                    pytrace=False)
    pytest.skip(f"no S3 server for the s3 tests: {e}")


def _s3a_loaded(spark):
    try:
        spark._jvm.java.lang.Class.forName("org.apache.hadoop.fs.s3a.S3AFileSystem", False,
                                           spark._jvm.java.lang.Thread.currentThread().getContextClassLoader())
    except Exception as e:
        raise s3_helpers.S3Unavailable(f"S3A is not on the Spark session's class path (`make s3-jars`): {e}")


@pytest.fixture(scope="session")
def s3(spark):
    """moto's S3 server for the session, bucket ``sfclayer-tests``: ``.path(name)`` gives a fresh
    ``s3a://`` path, ``.server`` the :class:`integration.s3.MotoS3` (request counts, latency)."""
    try:
        _s3a_loaded(spark)
        server = s3_helpers.MotoS3().start()
    except s3_helpers.S3Unavailable as e:
        _s3_unavailable(e)
    bucket = s3_helpers.S3Bucket(server, "sfclayer-tests")
    server.create_bucket(bucket.name)
    s3_helpers.configure_spark(spark, s3_helpers.s3a_settings(bucket.name, server.endpoint))
    yield bucket
    server.stop()


@pytest.fixture(scope="session")
def s3_race(spark, tmp_path_factory):
    """S3Proxy (transient-nio2: conditional writes decided atomically) behind a
    :class:`integration.s3.FaultProxy`, bucket ``sfclayer-race``: ``.path(name)``, ``.proxy``."""
    try:
        _s3a_loaded(spark)
        server = s3_helpers.S3Proxy(tmp_path_factory.mktemp("s3proxy")).start()
    except s3_helpers.S3Unavailable as e:
        _s3_unavailable(e)
    proxy = s3_helpers.FaultProxy(server.endpoint).start()
    bucket = s3_helpers.S3Bucket(server, "sfclayer-race", proxy=proxy)
    try:
        server.create_bucket(bucket.name, spark)
        s3_helpers.configure_spark(spark, s3_helpers.s3a_settings(bucket.name, proxy.endpoint))
        yield bucket
    finally:
        proxy.stop()
        server.stop()
