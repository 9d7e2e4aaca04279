"""Two connector jars side by side on Spark Connect: a server for each (``BEFORE_JAR`` and this tree's jar)
answers the same ``get_many`` requests from one client process, interleaved, so both see the same load;
the raw request is timed (the Connect round trip and the plugin's answer, no decoding). Written for the
tile answers' framing change (issue 39; bench/RESULTS.md), where separate runs on a loaded machine moved
by 2x. Prints its figures, writes nothing.

    .venv/bin/python bench/get_many_ab.py BEFORE_JAR [REPEATS]
"""

import base64
import json
import os
import random
import secrets
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "bench"), os.path.join(ROOT, "python")]

import sfclayer  # noqa: E402

__all__ = ["start", "main"]


def start(work, jar):
    """A Connect server with ``jar`` (tests/scripts/connect_server.py): (process, sc:// URL)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = secrets.token_hex(16)
    env = dict(os.environ, SFCLAYER_JAR=jar, SPARK_CONNECT_AUTHENTICATE_TOKEN=token, SPARK_LOCAL_IP="127.0.0.1",
               PYSPARK_PYTHON=sys.executable, PYTHONPATH=os.path.join(ROOT, "python"))
    conf = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4", "spark.driver.host": "127.0.0.1"}
    p = subprocess.Popen([sys.executable, os.path.join(ROOT, "tests", "scripts", "connect_server.py"), str(port),
                          json.dumps(conf)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=open(os.path.join(work, f"server-{port}.log"), "w"), text=True, env=env, cwd=work)
    for line in p.stdout:
        if line.strip() == "ready":
            return p, f"sc://localhost:{port}/;token={token}"
    raise RuntimeError(f"the Connect server did not start: see {work}/server-{port}.log")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    repeats = int(argv[1]) if len(argv) > 1 else 15
    work = tempfile.mkdtemp(prefix="sfclayer-bench-get-many-ab-")
    jars = {"before": shutil.copyfile(argv[0], os.path.join(work, "before.jar")),
            "after": shutil.copyfile(sfclayer.jar_path(), os.path.join(work, "after.jar"))}
    servers = {k: start(work, j) for k, j in jars.items()}
    classic = sfclayer.session("local[1]", **{"spark.ui.enabled": "false", "spark.driver.host": "127.0.0.1"})
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    remotes = {k: sfclayer.configure(ConnectSession.builder.remote(url)).create() for k, (_, url) in servers.items()}
    try:
        path, s = os.path.join(work, "layer"), 128
        df = classic.range(s * s, numPartitions=4).selectExpr(
            f"int(id % {s}) AS col", f"int(id DIV {s}) AS row", "unhex(repeat(lpad(hex(id), 8, '0'), 512)) AS payload")
        sfclayer.write(df, path, bounds=(0, 0, s - 1, s - 1), partitions=4)
        layers = {k: sfclayer.open(r, path) for k, r in remotes.items()}
        rng = random.Random(7)
        times = {}
        for n in (1000, 10000):
            keys = b"".join(struct.pack(">iiq", rng.randrange(s), rng.randrange(s), 0) for _ in range(n))
            b64 = base64.b64encode(keys).decode()
            for layer in layers.values():
                layer._client._records("get_many", keys=b64)  # warm
            for _ in range(repeats):
                for k, layer in layers.items():
                    t = time.perf_counter()
                    layer._client._records("get_many", keys=b64)
                    times.setdefault((k, n), []).append(time.perf_counter() - t)
        for layer in layers.values():
            layer.close()
    finally:
        for r in remotes.values():
            r.stop()
        classic.stop()
        for p, _ in servers.values():
            p.stdin.close()
            p.wait(60)
        shutil.rmtree(work, ignore_errors=True)
    print(f"load average {os.getloadavg()[0]:.1f}; {repeats} requests each, interleaved")
    for (k, n), v in sorted(times.items(), key=lambda x: (x[0][1], x[0][0])):
        print(f"{k:6s} {n:6d} keys: median {1e3 * statistics.median(v):.1f} ms, min {1e3 * min(v):.1f} ms")


if __name__ == "__main__":
    main()
