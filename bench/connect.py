"""Spark Connect (issue 21): look-ups and box queries from a Connect client, answered by sfclayer's relation
plugin on the server's driver (no Spark job), against the one-tile Spark query a Connect client had before
and the classic session's ``Layer.get`` (py4j open, loopback socket).

    .venv/bin/python bench/connect.py [--side 128] [--payload 2048] [--out bench/RESULTS.md]

A study of its own: a classic session in this process writes the layer and measures the classic side; a
Connect server (pyspark's ``remote("local[2]")`` server set up by ``sfclayer.configure``) runs in a child
process (tests/scripts/connect_server.py, as the tests start it) and this process is its ``sc://`` client.
It rewrites the ``connect`` block of RESULTS.md. Goals: ``Layer.get`` p50 ≤ 10 ms, query of 100 ≤ 20 ms.
"""

import argparse
import os
import random
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [HERE, ROOT, os.path.join(ROOT, "python")]

import sfclayer  # noqa: E402


def percentiles(times_s):
    ms = sorted(t * 1000 for t in times_s)
    return statistics.median(ms), ms[min(len(ms) - 1, int(round(0.99 * (len(ms) - 1))))]


def each(fn, args):
    out = []
    for a in args:
        t = time.perf_counter()
        fn(*a)
        out.append(time.perf_counter() - t)
    return out


def start_server(work):
    """pyspark's own Connect server with sfclayer set up, in a child process: (process, sc:// URL)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = secrets.token_hex(16)
    jar = shutil.copyfile(sfclayer.jar_path(), os.path.join(work, "sfclayer.jar"))
    env = dict(os.environ, SFCLAYER_JAR=jar, SPARK_CONNECT_AUTHENTICATE_TOKEN=token, SPARK_LOCAL_IP="127.0.0.1",
               PYSPARK_PYTHON=sys.executable, PYTHONPATH=os.path.join(ROOT, "python"))
    for var in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_REMOTE"):
        env.pop(var, None)
    conf = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4", "spark.driver.host": "127.0.0.1"}
    import json

    server = subprocess.Popen([sys.executable, os.path.join(ROOT, "tests", "scripts", "connect_server.py"),
                               str(port), json.dumps(conf)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=open(os.path.join(work, "server.log"), "w"), text=True, env=env, cwd=work)
    for line in server.stdout:
        if line.strip() == "ready":
            return server, f"sc://localhost:{port}/;token={token}"
    raise RuntimeError(f"the Connect server did not start: see {work}/server.log")


def floors(spark, n, get=None):
    """Spark Connect's own costs, no sfclayer: p50/p99 of a one-row local relation the client builds itself
    sent as pyspark sends it (reattachable ExecutePlan and ReleaseExecute) and as sfclayer's short path sends
    its requests (one non-reattachable ExecutePlan, Arrow decoded directly); a bare command answering no rows
    (``GetResourcesCommand``) the short way, what sfclayer's look-ups take; a unary Config call (gRPC alone).
    ``get``, given, is timed among them (a look-up of the next key each time), as ``get_interleaved``."""
    import pyspark.sql.connect.proto as pb2
    from sfclayer import _connect

    client = spark.client
    relation = spark.createDataFrame([(1,)], "a int")._plan.to_proto(client)
    command = pb2.Plan()
    command.command.get_resources_command.SetInParent()
    ways = {"floor_relation": lambda: client.to_table(relation, {}),
            "floor_relation_short": lambda: _connect._execute(client, relation),
            "floor_command": lambda: _connect._execute(client, command),
            "floor_config": lambda: client.get_configs("spark.sql.session.timeZone")}
    if get is not None:
        ways["get_interleaved"] = get
    times = {k: [] for k in ways}
    for f in ways.values():
        each(f, [()] * 20)
    for _ in range(n):  # interleaved, so each sees the same load
        for k, f in ways.items():
            times[k] += each(f, [()])
    return {k: percentiles(v) for k, v in times.items()}


def classic_session(app_name):
    """A local[2] classic session on loopback, quiet, as every Connect comparison measures it beside."""
    spark = sfclayer.session("local[2]", app_name=app_name,
                             **{"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
                                "spark.driver.host": "127.0.0.1", "spark.sql.shuffle.partitions": "4"})
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def write_square(spark, path, side, payload):
    """A side x side layer of ``payload``-byte tiles whose bytes spell their id, in 4 files."""
    df = spark.range(side * side, numPartitions=4).selectExpr(
        f"int(id % {side}) AS col", f"int(id DIV {side}) AS row",
        f"unhex(repeat(lpad(hex(id), 8, '0'), {payload // 4})) AS payload")
    sfclayer.write(df, path, bounds=(0, 0, side - 1, side - 1), partitions=4)


def measure(spark, path, side, n_get, n_job, label):
    rng = random.Random(7)
    keys = [(rng.randrange(side), rng.randrange(side)) for _ in range(n_get)]
    many = [(rng.randrange(side), rng.randrange(side)) for _ in range(1000)]
    out = {}
    with sfclayer.open(spark, path) as layer:
        each(layer.get, keys[:50])  # warm: files open, JIT
        out["get"] = percentiles(each(layer.get, keys))
        out["get_many_1000"] = statistics.median(each(layer.get_many, [(many,)] * 5)) * 1000
        q100 = (10, 10, 19, 19)          # 10 x 10 tiles
        q1000 = (20, 20, 59, 44)         # 40 x 25 tiles
        assert len(list(layer.query(keys=q100))) == 100 and len(list(layer.query(keys=q1000))) == 1000
        out["query_100"] = statistics.median(each(lambda: list(layer.query(keys=q100)), [()] * 15)) * 1000
        out["query_1000"] = statistics.median(each(lambda: list(layer.query(keys=q1000)), [()] * 7)) * 1000
        out["count_1000"] = statistics.median(each(lambda: layer.count(keys=q1000), [()] * 15)) * 1000
    if type(spark).__module__.startswith("pyspark.sql.connect."):
        with sfclayer.open(spark, path) as layer:
            next_key = iter(keys * 2).__next__
            out.update(floors(spark, min(n_get, 200), lambda: layer.get(*next_key())))
    job = lambda c, r: sfclayer.read(spark, path, keys=(c, r, c, r)).collect()  # noqa: E731
    each(job, keys[:3])
    out["job_get"] = percentiles(each(job, keys[:n_job]))
    print(label, {k: (tuple(round(x, 3) for x in v) if isinstance(v, tuple) else round(v, 3)) for k, v in out.items()},
          flush=True)
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--side", type=int, default=128, help="tiles per side (default 128: 16,384 tiles)")
    p.add_argument("--payload", type=int, default=2048, help="bytes per tile")
    p.add_argument("--gets", type=int, default=500, help="look-ups timed for p50/p99")
    p.add_argument("--jobs", type=int, default=30, help="one-tile Spark queries timed")
    p.add_argument("--out", default=os.path.join(HERE, "RESULTS.md"))
    args = p.parse_args(argv)
    if os.environ.get("SFCLAYER_BENCH_QUICK"):
        args.side, args.gets, args.jobs = 64, 100, 5

    work = tempfile.mkdtemp(prefix="sfclayer-bench-connect-")
    server, url = start_server(work)
    classic = classic_session("sfclayer-bench-connect")
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    remote = sfclayer.configure(ConnectSession.builder.remote(url)).create()
    try:
        path = os.path.join(work, "layer")
        s = args.side
        write_square(classic, path, s, args.payload)
        t0 = time.perf_counter()
        on_classic = measure(classic, path, s, args.gets, args.jobs, "classic")
        on_connect = measure(remote, path, s, args.gets, args.jobs, "connect")
        seconds = time.perf_counter() - t0
    finally:
        remote.stop()
        classic.stop()
        server.stdin.close()
        server.wait(60)
        shutil.rmtree(work, ignore_errors=True)

    def ms(v):
        return f"{v:.2f} ms" if v < 10 else f"{v:.1f} ms"

    rows = [
        ("`Layer.get` p50", ms(on_connect["get"][0]), ms(on_classic["get"][0]), "≤ 10 ms"),
        ("`Layer.get` p99", ms(on_connect["get"][1]), ms(on_classic["get"][1]), ""),
        ("Connect's floor p50: a bare command (no rows, no planning), the short way", ms(on_connect["floor_command"][0]),
         "", ""),
        ("Connect's floor p50: a 1-row local relation, the short way", ms(on_connect["floor_relation_short"][0]),
         "", ""),
        ("Connect's floor p50: a 1-row local relation, pyspark's way (`to_table`)", ms(on_connect["floor_relation"][0]),
         "", ""),
        ("a unary gRPC call p50 (Config)", ms(on_connect["floor_config"][0]), "", ""),
        ("one-tile Spark query p50 (`read(keys=)` + collect)", ms(on_connect["job_get"][0]),
         ms(on_classic["job_get"][0]), ""),
        ("one-tile Spark query p99", ms(on_connect["job_get"][1]), ms(on_classic["job_get"][1]), ""),
        ("`get_many` of 1,000 keys", ms(on_connect["get_many_1000"]), ms(on_classic["get_many_1000"]), ""),
        ("`query` of 100 tiles", ms(on_connect["query_100"]), ms(on_classic["query_100"]), "≤ 20 ms"),
        ("`query` of 1,000 tiles", ms(on_connect["query_1000"]), ms(on_classic["query_1000"]), ""),
        ("`count` of 1,000 tiles", ms(on_connect["count_1000"]), ms(on_classic["count_1000"]), ""),
    ]
    md = ["## Spark Connect (bench/connect.py, issue 21)",
          "",
          f"{s}×{s} tiles of {args.payload} B, 4 files, local filesystem, warm. Connect: a thin `sc://` client of "
          "pyspark's own Connect server (`remote(\"local[2]\")` set up by `sfclayer.configure`, another process on "
          "the same machine), its look-ups and queries answered on the server's driver by sfclayer's plugins, "
          "no Spark job; classic: `Layer.get` through py4j and the loopback socket. "
          "Look-ups, queries and counts go as sfclayer's command plugin's commands, their Arrow answers written "
          "by the plugin, in one non-reattachable ExecutePlan call (sfclayer._connect). "
          f"{args.gets} random look-ups for p50/p99, {args.jobs} one-tile Spark queries, medians of 5 to 15 for the "
          f"rest. Reproduce: `.venv/bin/python bench/connect.py`; {seconds:.0f} s on 2 cores, load average "
          f"{os.getloadavg()[0]:.1f} at the end (a shared machine: compare within a row).",
          "",
          "Connect's floors, no sfclayer: what a Connect request costs on this machine at this load. A relation "
          "pays Spark's analysis, optimisation, physical planning and SQL execution events even for one row; a "
          "command (what sfclayer's look-ups are) does not, so `Layer.get` minus the bare command's floor is "
          "sfclayer's part.",
          "",
          "| operation | Connect client | classic session | goal (Connect) |",
          "|---|---:|---:|---|"]
    md += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    met = on_connect["get"][0] <= 10 and on_connect["query_100"] <= 20
    md += ["", f"Goals {'met' if met else 'not met in this run'}: `Layer.get` p50 {ms(on_connect['get'][0])} "
           f"(a bare command's floor {ms(on_connect['floor_command'][0])}; timed among the floors, `Layer.get` p50 "
           f"{ms(on_connect['get_interleaved'][0])}, so sfclayer's part is "
           f"{ms(max(0.0, on_connect['get_interleaved'][0] - on_connect['floor_command'][0]))}), `query` of 100 "
           f"{ms(on_connect['query_100'])}; the one-tile Spark query it replaces: "
           f"{on_connect['job_get'][0] / on_connect['get'][0]:.0f}× slower. A Connect request crosses several "
           "gRPC and Spark threads, each waiting for a core on a busy machine."]
    text = "\n".join(md)
    print(text)
    import report

    report.write_section("connect", text, path=args.out)


if __name__ == "__main__":
    main()
