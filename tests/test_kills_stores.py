"""Writers killed on HDFS and S3 (issue 35): the JUnit KillTest's writer process (io.sfclayer.testing.RaceHarness's
main in the test jar: appends on the driver and shuffled, deletes, compactions, zero-retention vacuums and restores,
one after the other) run against a layer on the MiniHdfs fixture or on S3Proxy and killed with SIGKILL a random while
after a random operation began. Then, through the session's Spark, every version it reported committed and every
version left in the log reads as the dict model says (the operation in flight wholly in or wholly out), verifies
clean, and a next append and a vacuum work (RaceHarness.checkAfterKill).

One kill per run, on HDFS or S3 by the seed (a rotating sample: the writer is a JVM and a Spark session of its own,
20-40 s); the seed and store are printed and SFCLAYER_KILL_SEED with SFCLAYER_KILL_STORE (hdfs or s3) replays
it, SFCLAYER_KILL_ROUNDS=N runs N on each store (``make races``)."""

import os
import random
import signal
import subprocess
import threading
import time

import pytest

from tests import helpers

pytestmark = pytest.mark.usefixtures("spark")

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _classpath(spark):
    """The writer's class path: Spark's jars (pyspark's), then the session's own (the connector, the test jar,
    S3A), as the session loaded them."""
    import pyspark

    jars = [os.path.join(os.path.dirname(pyspark.__file__), "jars", "*")]
    loaded = spark.sparkContext.getConf().get("spark.jars", "")
    jars += [j[len("file:"):] if j.startswith("file:") else j for j in loaded.split(",") if j]
    connector = spark.sparkContext.getConf().get("spark.driver.extraClassPath", "")
    jars += [j for j in connector.split(os.pathsep) if j]
    return os.pathsep.join(jars)


#: The run's one seed: drawn once for both tests, so exactly one of them kills a writer.
_SEED = int(os.environ.get("SFCLAYER_KILL_SEED") or random.randrange(10**9))


def _seeds(store):
    rounds = int(os.environ.get("SFCLAYER_KILL_ROUNDS") or 0)
    if rounds:
        return [random.randrange(10**9) for _ in range(rounds)]
    if os.environ.get("SFCLAYER_KILL_SEED") and os.environ.get("SFCLAYER_KILL_STORE"):
        # a replay on the store it ran on (a round of SFCLAYER_KILL_ROUNDS ran on both, whatever its parity)
        return [_SEED] if os.environ["SFCLAYER_KILL_STORE"] == store else []
    # one store a run, by the seed's parity: HDFS on even seeds, S3 on odd (a replayed seed, its own store)
    return [_SEED] if (_SEED % 2 == 0) == (store == "hdfs") else []


def _kill_and_check(spark, path, seed, settings, tmp_path):
    jvm = spark._jvm
    helpers.test_jar_class(spark, "RaceHarness")
    rng = random.Random(seed)
    victim = 1 + rng.randrange(4)
    delay = rng.randrange(1500) / 1000
    java = os.path.join(os.environ.get("JAVA_HOME") or os.path.dirname(os.path.dirname(
        os.path.realpath(subprocess.check_output(["which", "java"], text=True).strip()))), "bin", "java")
    cmd = [java, "-Xmx768m", *jvm.org.apache.spark.launcher.JavaModuleOptions.defaultModuleOptions().split(),
           *[f"-Dspark.hadoop.{k}={v}" for k, v in settings.items()],
           "-Dspark.driver.bindAddress=127.0.0.1", "-Dspark.driver.host=127.0.0.1",
           "-cp", _classpath(spark), "io.sfclayer.testing.RaceHarness", path, str(seed)]
    log = open(tmp_path / f"writer-{seed}.log", "wb")
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True)
    lines, began = [], threading.Event()

    def read():
        for line in p.stdout:
            lines.append(line.rstrip("\n"))
            if line.startswith(f"race start {victim} "):
                began.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        reached = began.wait(240)
        if reached:
            time.sleep(delay)
    finally:
        p.send_signal(signal.SIGKILL)  # no shutdown hook, no cleanup, no finally
        p.wait(60)
        reader.join(60)
        log.close()
    assert reached, f"the writer reached operation {victim} within 240 s (its log: {log.name})"
    history = jvm.java.util.ArrayList()
    for line in lines:
        history.add(line)
    last = lines[-1] if lines else "(nothing)"
    result = jvm.io.sfclayer.testing.RaceHarness.checkAfterKill(spark._jsparkSession, path, seed, history)
    return f"killed {delay:.3f} s after operation {victim} began (last line: {last}): {result}"


def _run(spark, store, make_path, settings, tmp_path):
    seeds = _seeds(store)
    if not seeds:
        pytest.skip(f"this run kills a writer on the other store (one store a run; SFCLAYER_KILL_ROUNDS=N runs both)")
    failures = []
    for seed in seeds:
        print(f"kill seed {seed} on {store} (replay: SFCLAYER_KILL_SEED={seed} SFCLAYER_KILL_STORE={store})")
        try:
            print(_kill_and_check(spark, make_path(f"killed-{seed}"), seed, settings, tmp_path))
        except AssertionError:
            raise
        except Exception as e:
            replay = f"SFCLAYER_KILL_SEED={seed} SFCLAYER_KILL_STORE={store}"
            failures.append(f"kill seed {seed} on {store} (replay: {replay}): {e}")
    assert not failures, "\n".join(failures)


@pytest.mark.hdfs
def test_a_writer_killed_on_hdfs_loses_nothing_committed(spark, hdfs, tmp_path):
    _run(spark, "hdfs", hdfs.path, {}, tmp_path)


@pytest.mark.s3
def test_a_writer_killed_on_s3_loses_nothing_committed(spark, s3_race, tmp_path):
    from integration import s3 as s3_helpers

    settings = s3_helpers.s3a_settings(s3_race.name, s3_race.proxy.endpoint)
    _run(spark, "s3", s3_race.path, settings, tmp_path)
