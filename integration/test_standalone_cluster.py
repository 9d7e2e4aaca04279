"""sfclayer on a real multi-JVM cluster: a Spark standalone master and two one-core workers on
127.0.0.1 (integration/standalone.py), with the layer on the MiniDFSCluster. The checks run in a
driver process of their own (integration/cluster_driver.py), the suite's local session untouched.
"""

import json
import os
import subprocess
import sys

import pytest

import sfclayer
from integration.standalone import StandaloneCluster

pytestmark = pytest.mark.hdfs

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


@pytest.fixture(scope="session")
def standalone(tmp_path_factory):
    """Started once per run; stopped by the process ids it started. Logs: <tmp>/standalone*/."""
    cluster = StandaloneCluster(str(tmp_path_factory.mktemp("standalone")))
    try:
        cluster.start()
    except RuntimeError as e:
        pytest.fail(f"the standalone cluster did not start: {e}", pytrace=False)
    yield cluster
    cluster.stop()


@pytest.fixture(scope="module")
def findings(standalone, hdfs, spark, tmp_path_factory):
    # the HDFS client settings of the suite's session, for the cluster's driver and executors
    conf = {k: v for k, v in spark.sparkContext.getConf().getAll() if k.startswith("spark.hadoop.")}
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "python"), ROOT, env.get("PYTHONPATH", "")])
    env["SFCLAYER_JAR"] = sfclayer.jar_path()
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    log = tmp_path_factory.mktemp("cluster-driver") / "driver.log"
    proc = subprocess.run([sys.executable, os.path.join(HERE, "cluster_driver.py"), standalone.url,
                           hdfs.path("standalone"), json.dumps(conf)],
                          env=env, cwd=str(log.parent), capture_output=True, text=True, timeout=600)
    log.write_text(proc.stdout + "\n----- stderr -----\n" + proc.stderr)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert proc.returncode == 0 and lines, (
        f"cluster driver failed ({proc.returncode}); log {log}; cluster logs {standalone.logs()}:\n"
        f"{proc.stderr[-4000:]}")
    return json.loads(lines[-1])


def test_the_cluster_has_two_executors(findings, standalone):
    assert findings["master"] == standalone.url
    assert findings["block_managers"] == 3  # the driver and one executor per worker


def test_write_and_bbox_read(findings):
    assert findings["count"] == 1024
    # bbox x 3.5..7.5, y 20.5..24.5 of a 32 x 32 extent: cols 3..7, rows 7..11 (row 0 at the top)
    assert findings["bbox"] == sorted([c, r, r * 32 + c] for c in range(3, 8) for r in range(7, 12))


def test_sql(findings):
    rows = [(c, r) for c in range(10, 13) for r in range(4)]
    assert findings["sql"] == {"n": len(rows), "s": sum(r * 32 + c for c, r in rows)}


def test_lookups(findings):
    assert findings["lookup"] == {"v": 9 * 32 + 17, "w": (9 * 32 + 17) * 0.5}
    assert findings["lookup_many"] == [{"v": 0, "w": 0.0}, {"v": 1023, "w": 511.5}]


def test_a_failed_write_leaves_the_layer_intact(findings):
    assert findings["failed_write"].startswith("InvalidInput: duplicate key (col=3, row=3)")
    assert findings["files_after_failed_write"] == findings["files_before_failed_write"]
    assert findings["count_after_failed_write"] == 1024
    assert findings["lookup_after_failed_write"] == {"v": 3 * 32 + 3, "w": (3 * 32 + 3) * 0.5}


def test_an_append(findings):
    assert findings["count_after_append"] == 1024
    assert findings["row31_after_append"] == [31 * 32 + c + 100000 for c in range(32)]
    assert findings["lookup_after_append"] == [{"v": 31 * 32 + 4 + 100000, "w": (31 * 32 + 4) * 0.5},
                                               {"v": 30 * 32 + 4, "w": (30 * 32 + 4) * 0.5}]
