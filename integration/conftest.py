"""Fixtures for integration/ only. ``spark`` and ``hdfs`` live in the top-level conftest.py.

``docker_hdfs``: an HDFS from the apache/hadoop image (integration/docker-compose.yml) started
with testcontainers' DockerCompose, for tests marked ``@pytest.mark.docker``. Where no Docker
engine answers it skips ("no Docker engine: ...") within seconds; nothing here waits unbounded.
"""

import os
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from integration import hdfs as hdfs_helpers

HERE = Path(__file__).resolve().parent
COMPOSE_FILE = HERE / "docker-compose.yml"
IMAGE = os.environ.get("SFCLAYER_HADOOP_IMAGE", "apache/hadoop:3")
PULL_TIMEOUT = int(os.environ.get("SFCLAYER_DOCKER_PULL_TIMEOUT", "600"))
UP_TIMEOUT = 240
READY_TIMEOUT = 120


def docker_unavailable():
    """None when Docker can run the compose file, else why not (quick: short timeouts)."""
    try:
        import docker

        client = docker.from_env(timeout=5)
        client.ping()
    except Exception as e:  # no SDK, no socket, engine not answering
        return f"no Docker engine: {type(e).__name__}: {e}"
    docker_cli = shutil.which("docker")
    if not docker_cli:
        return "no `docker` command for `docker compose`"
    try:
        subprocess.run([docker_cli, "compose", "version"], check=True, capture_output=True, timeout=15)
    except (subprocess.SubprocessError, OSError) as e:
        return f"no `docker compose` plugin: {e}"
    try:
        client.images.get(IMAGE)
    except Exception:
        try:
            subprocess.run([docker_cli, "pull", "--quiet", IMAGE], check=True, capture_output=True,
                           timeout=PULL_TIMEOUT)
        except (subprocess.SubprocessError, OSError) as e:
            return f"cannot pull {IMAGE}: {e}"
    return None


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _call_with_timeout(fn, timeout, what):
    done, error = threading.Event(), []

    def run():
        try:
            fn()
        except BaseException as e:  # re-raised below
            error.append(e)
        finally:
            done.set()

    threading.Thread(target=run, name=what, daemon=True).start()
    if not done.wait(timeout):
        raise TimeoutError(f"{what} took over {timeout} s")
    if error:
        raise error[0]


@pytest.fixture(scope="session")
def docker_hdfs(request):
    """An HDFS in Docker (1 NameNode, 1 DataNode, replication 1): an ``integration.hdfs.Hdfs`` with
    ``.url``, ``.path(name)``, ``.block_locations(spark, path)`` (no DataNode stop/restart)."""
    reason = docker_unavailable()
    if reason:
        pytest.skip(reason)
    from testcontainers.compose import DockerCompose

    nn_port, dn_port = _free_port(), _free_port()
    os.environ["SFCLAYER_DOCKER_NN_PORT"] = str(nn_port)
    os.environ["SFCLAYER_DOCKER_DN_PORT"] = str(dn_port)
    os.environ["SFCLAYER_HADOOP_IMAGE"] = IMAGE
    compose = DockerCompose(str(HERE), compose_file_name=COMPOSE_FILE.name, pull=False, wait=True)

    def down():
        try:
            _call_with_timeout(compose.stop, 120, "docker compose down")
        except Exception as e:
            print(f"docker compose down failed: {e}")

    try:
        _call_with_timeout(compose.start, UP_TIMEOUT, "docker compose up")
    except Exception as e:
        out = getattr(e, "stderr", b"") or b""
        down()
        pytest.fail(f"the Docker HDFS did not come up: {e}\n{out.decode(errors='replace')[-3000:]}", pytrace=False)

    spark = request.getfixturevalue("spark")
    conf = spark._jsc.hadoopConfiguration()
    key = "dfs.client.use.datanode.hostname"
    before = conf.get(key)
    # The DataNode calls itself 127.0.0.1 and is published there; its container IP may be unroutable.
    conf.set(key, "true")
    cluster = hdfs_helpers.Hdfs(f"hdfs://127.0.0.1:{nn_port}")
    try:
        _wait_until_writable(spark, cluster)
        yield cluster
    finally:
        if before is None:
            conf.unset(key)
        else:
            conf.set(key, before)
        down()


def _wait_until_writable(spark, cluster):
    """Until the DataNode has registered, writes fail ("could only be written to 0 ... nodes")."""
    probe = cluster.path("ready-probe")
    deadline = time.monotonic() + READY_TIMEOUT
    while True:
        try:
            cluster.write_bytes(spark, probe, b"ok")
            if cluster.read_bytes(spark, probe) == b"ok":
                return
        except Exception as e:
            last = e
        if time.monotonic() > deadline:
            pytest.fail(f"the Docker HDFS at {cluster.url} took over {READY_TIMEOUT} s to accept a write: {last}",
                        pytrace=False)
        time.sleep(2)


@pytest.fixture(scope="session")
def standalone(tmp_path_factory):
    """A Spark standalone master and two one-core workers (integration/standalone.py), started once per
    run and stopped by the process ids it started. Logs: <tmp>/standalone*/."""
    from integration.standalone import StandaloneCluster

    cluster = StandaloneCluster(str(tmp_path_factory.mktemp("standalone")))
    try:
        cluster.start()
    except RuntimeError as e:
        pytest.fail(f"the standalone cluster did not start: {e}", pytrace=False)
    yield cluster
    cluster.stop()
