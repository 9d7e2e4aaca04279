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

pytestmark = pytest.mark.hdfs

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _drive(standalone, hdfs, spark, tmp_path_factory, *mode):
    """Runs integration/cluster_driver.py against the cluster; returns its findings."""
    # the HDFS client settings of the suite's session, for the cluster's driver and executors
    conf = {k: v for k, v in spark.sparkContext.getConf().getAll() if k.startswith("spark.hadoop.")}
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "python"), ROOT, env.get("PYTHONPATH", "")])
    env["SFCLAYER_JAR"] = sfclayer.jar_path()
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    log = tmp_path_factory.mktemp("cluster-driver") / "driver.log"
    proc = subprocess.run([sys.executable, os.path.join(HERE, "cluster_driver.py"), standalone.url,
                           hdfs.path("standalone"), json.dumps(conf), *mode],
                          env=env, cwd=str(log.parent), capture_output=True, text=True, timeout=600)
    log.write_text(proc.stdout + "\n----- stderr -----\n" + proc.stderr)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert proc.returncode == 0 and lines, (
        f"cluster driver failed ({proc.returncode}); log {log}; cluster logs {standalone.logs()}:\n"
        f"{proc.stderr[-4000:]}")
    return json.loads(lines[-1])


@pytest.fixture(scope="module")
def findings(standalone, hdfs, spark, tmp_path_factory):
    return _drive(standalone, hdfs, spark, tmp_path_factory)


@pytest.fixture(scope="module")
def speculated(standalone, hdfs, spark, tmp_path_factory):
    """A write and an append with spark.speculation on, one task's first attempt stalled in each."""
    events = tmp_path_factory.mktemp("event-log")
    return _drive(standalone, hdfs, spark, tmp_path_factory, "speculation", str(events))


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


# ---- spark.speculation: only the attempt Spark accepted is published --------------------------------

def _jobs(speculated):
    """Per step (write, append): the task attempts of its writing stage (the job's last), from the event log."""
    out = []
    for step, kind in zip(speculated["steps"], ("sfclayer: write ", "sfclayer: append to ")):
        attempts = [a for a in speculated["tasks"] if a["job"].startswith(kind)]
        assert attempts, f"no task of a job '{kind}...' in the event log"
        last = max(a["stage"] for a in attempts)
        out.append((step, [a for a in attempts if a["stage"] == last]))
    return out


def test_speculative_copies_overtook_the_stalled_attempts(speculated):
    for step, attempts in _jobs(speculated):
        slow = [a for a in attempts if a["index"] == step["slow"]]
        won = [a for a in slow if a["reason"] == "Success"]
        # the stalled first attempt was overtaken by a speculative copy on the other host, then killed
        assert len(won) == 1 and won[0]["speculative"] and won[0]["attempt"] >= 1, slow
        first = [a for a in slow if a["attempt"] == 0]
        # (killed, not finished: the job did not wait out its 120 s stall)
        assert first and first[0]["reason"] == "TaskKilled" and first[0]["host"] != won[0]["host"], slow


def test_speculation_publishes_exactly_the_accepted_attempts_files(speculated):
    for step, attempts in _jobs(speculated):
        doc = step["version"]
        accepted = {a["index"]: a["taskId"] for a in attempts if a["reason"] == "Success"}
        assert sorted(accepted) == [0, 1, 2, 3]  # one accepted attempt per task
        new = [f for f in doc["files"] if f["dir"].startswith(doc["dataDir"] + "/")]
        assert new, doc["files"]
        for f in new:
            partition = int(f["name"].split("-")[2])
            # each new file lies in the directory of its task's accepted attempt: one file set per task
            assert f["dir"] == f"{doc['dataDir']}/attempt-{accepted[partition]}", (f, accepted)
        spans = sorted((f["firstIndex"], f["lastIndex"]) for f in doc["files"])
        assert all(a[1] < b[0] for a, b in zip(spans, spans[1:]))  # disjoint: no file is listed twice
        assert sum(f["records"] for f in doc["files"]) == doc["recordCount"] == 1024
        # every published file is on disk; files of other attempts, if any are left, are not published
        published = {f"{f['dir']}/{f['name']}" for f in doc["files"]}
        assert published <= set(step["on_disk"])


def test_speculated_layer_reads_the_input(speculated):
    model = {(c, r): r * 32 + c + (100000 if 8 <= r <= 23 else 0) for c in range(32) for r in range(32)}
    got = {(c, r): v for c, r, v in speculated["data"]}
    assert len(speculated["data"]) == 1024 and got == model
    assert speculated["lookups"] == [3 * 32 + 5, 9 * 32 + 5 + 100000]


def test_vacuum_removes_what_no_version_references(speculated):
    newest = {f"{f['dir']}/{f['name']}" for f in speculated["newest"]["files"]}
    assert newest <= set(speculated["before_vacuum"])
    assert set(speculated["vacuum"]["filesRemoved"]) == set(speculated["before_vacuum"]) - newest
    assert set(speculated["after_vacuum"]) == newest
    assert speculated["data_after_vacuum"] == speculated["data"]
