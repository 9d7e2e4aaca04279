"""Restore and repair's listing of a version's data files on local files (issue 35): this tree against a
checkout of the code before a change, side by side in one run.

    PYTHONPATH=python .venv/bin/python bench/restore.py [--before DIR] [--reps 7] [--rounds 3]

The layer: 200,000 tiles of 200 bytes, 64 KiB blocks (about 700 data files), then a 10-tile append; made once
into ``bench/restore-output/`` (git-ignored). Each round, every tree in turn: ``sfclayer.restore(spark, path,
version=1)`` ``--reps`` times in a process of its own (its p50). A restore reads no tile: it checks that every
data file of the version is still there (a listing of its data directories) and commits a document. Before
this change that listing built a ``LocatedFileStatus`` per file, and without Hadoop's native library (a
pip-installed PySpark has none) each of those ran ``ls`` in a child process for the file's permissions.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT = os.path.join(HERE, "restore-output")

CHILD = r"""
import json, os, statistics, sys, time
import sfclayer
spark = sfclayer.session("local[2]", app_name="bench-restore", **{"spark.ui.enabled": "false",
    "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"})
spark.sparkContext.setLogLevel("ERROR")
path, reps = sys.argv[1], int(sys.argv[2])
if not os.path.exists(path):
    df = spark.range(200_000).selectExpr("int(id % 500) AS col", "int(id DIV 500) AS row",
                                         "repeat('x', 200) AS v")
    df.write.format("sfclayer").option("bounds", "0,0,499,399").option("blockSize", "64k").save(path)
    df.limit(10).write.format("sfclayer").mode("append").save(path)
sfclayer.restore(spark, path, version=1)  # the JVM's classes loaded
ts = []
for _ in range(reps):
    t = time.perf_counter()
    sfclayer.restore(spark, path, version=1)
    ts.append(time.perf_counter() - t)
files = sum(1 for _, _, names in os.walk(path) for n in names if n == "data")
print(json.dumps({"p50_ms": statistics.median(ts) * 1000, "files": files}))
"""


def run(tree, path, reps):
    env = dict(os.environ, PYTHONPATH=os.path.join(tree, "python"))
    out = subprocess.run([sys.executable, "-c", CHILD, path, str(reps)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--before", metavar="DIR", help="a checkout of the code before (its python/ and jar)")
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", default=os.path.join(HERE, "RESULTS.md"))
    args = p.parse_args(argv)
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, "layer")
    trees = {"this tree": ROOT} | ({"before": os.path.abspath(args.before)} if args.before else {})
    load = os.getloadavg()[0]
    got = {k: [] for k in trees}
    files = None
    for i in range(args.rounds):
        for name, tree in trees.items():
            r = run(tree, path, args.reps)
            files = r["files"]
            got[name].append(r["p50_ms"])
            print(f"[restore] round {i + 1} {name}: {r['p50_ms']:.0f} ms", flush=True)
    med = {k: statistics.median(v) for k, v in got.items()}
    rows = [f"| {k} | {med[k]:,.0f} ms | {', '.join(f'{x:,.0f}' for x in got[k])} |" for k in trees]
    command = "PYTHONPATH=python .venv/bin/python bench/restore.py" + (" --before DIR" if args.before else "")
    text = "\n".join([
        "## Restore on local files (bench/restore.py, issue 35)", "",
        f"`sfclayer.restore(spark, path, version=1)` of a version of {files} data files on local files: p50 of "
        f"{args.reps} restores per process, the median of {args.rounds} rounds, the trees in turn.", "",
        "| code | restore | rounds |", "|---|---:|---|", *rows, "",
        f"Load average at the start: {load:.1f} on {os.cpu_count()} cores. Command: `{command}` (DIR: "
        "`git worktree add DIR <commit before>`, its jar built with `gradle jar` and copied to "
        "`DIR/python/sfclayer/jars/`).", ""])
    print(text)
    sys.path.insert(0, HERE)
    import report

    report.write_section("restore", text, args.out)


if __name__ == "__main__":
    main()
