"""Ctrl-C during a write cancels its Spark job and commits nothing (issue 37): a write in a child process
gets SIGINT while its job runs; the child ends with KeyboardInterrupt, no version is published, and no
task of the write still runs afterwards (no data file appears later)."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import sfclayer
from sfclayer.errors import LayerNotFound

CHILD = textwrap.dedent("""
    import sys, sfclayer
    spark = sfclayer.session("local[2]", spark_ui_enabled="false", spark_ui_showConsoleProgress="false")
    # each row sleeps 20 ms in the JVM: 2 tasks of 500 rows, ~10 s of writing
    df = spark.range(1000, numPartitions=2).selectExpr(
        "int(id % 40) AS col", "int(id DIV 40) AS row", "id + length(coalesce(reflect('java.lang.Thread', 'sleep', bigint(20)), '')) * 0 AS v")
    print("writing", flush=True)
    try:
        sfclayer.write(df, sys.argv[1], bounds=(0, 0, 39, 24))
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        sys.exit(130)
    print("committed", flush=True)
""")


def _files(path):
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs if not f.startswith("."))


def test_ctrl_c_during_a_write_cancels_it_and_commits_nothing(spark, tmp_path):
    path = str(tmp_path / "layer")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    child = subprocess.Popen([sys.executable, "-c", CHILD, path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env)
    try:
        assert child.stdout.readline().strip() == "writing"
        deadline = time.time() + 120
        while not os.path.exists(path) and time.time() < deadline:  # the write's job has started
            time.sleep(0.2)
        time.sleep(3)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 130, (out, err[:1500], err[-1500:])
    assert "interrupted" in out and "committed" not in out
    with pytest.raises(LayerNotFound):
        sfclayer.history(spark, path)
    left = _files(path)
    time.sleep(2)
    assert _files(path) == left  # no task of the cancelled write still writing
    assert not [f for f in left if "/part-" in f], left  # its data files were removed
