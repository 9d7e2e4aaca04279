"""Batched look-ups (``get_many``) on both transports: the loopback look-up socket of a classic session and
a Spark Connect client, undecoded (the transport's answer, ``Layer._client``) and decoded (``Layer.get_many``),
and ``Layer.get`` for scale. Written to compare the tile answers' framing before and after a change to it
(issue 39), so it prints its figures and writes nothing.

    .venv/bin/python bench/get_many.py [--side 128] [--payload 2048] [--repeats 15]

A classic session in this process writes a side x side layer (4 files) and measures; a Connect server (as
bench/connect.py starts it) answers the Connect client. Each figure is the median of ``--repeats`` runs,
the two transports interleaved so they see the same load.
"""

import argparse
import os
import random
import shutil
import statistics
import struct
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [HERE, ROOT, os.path.join(ROOT, "python")]

import sfclayer  # noqa: E402

__all__ = ["measure", "main"]


def _timed(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def measure(sessions, path, side, repeats, sizes=(1000, 10000), gets=300):
    """``{(transport, what): median ms}`` for each session of ``sessions`` (name -> SparkSession)."""
    rng = random.Random(7)
    batches = {n: [(rng.randrange(side), rng.randrange(side)) for _ in range(n)] for n in sizes}
    packed = {n: b"".join(struct.pack(">iiq", c, r, 0) for c, r in keys) for n, keys in batches.items()}
    singles = [(rng.randrange(side), rng.randrange(side)) for _ in range(gets)]
    layers = {name: sfclayer.open(spark, path) for name, spark in sessions.items()}
    times = {}
    try:
        for layer in layers.values():  # warm: files open, JIT, pools
            for n in sizes:
                layer.get_many(batches[n])
            for key in singles[:30]:
                layer.get(*key)
        for _ in range(repeats):
            for name, layer in layers.items():
                for n in sizes:
                    times.setdefault((name, f"raw get_many of {n:,}"), []).append(
                        _timed(lambda: layer._client.get_many(packed[n])))
                    times.setdefault((name, f"Layer.get_many of {n:,}"), []).append(
                        _timed(lambda: layer.get_many(batches[n])))
        for name, layer in layers.items():
            times[(name, "Layer.get (p50)")] = [_timed(lambda: layer.get(*key)) for key in singles]
    finally:
        for layer in layers.values():
            layer.close()
    return {k: 1e3 * statistics.median(v) for k, v in times.items()}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--side", type=int, default=128, help="tiles per side (default 128: 16,384 tiles)")
    p.add_argument("--payload", type=int, default=2048, help="bytes per tile")
    p.add_argument("--repeats", type=int, default=15)
    p.add_argument("--no-connect", action="store_true", help="the classic session only")
    args = p.parse_args(argv)

    from connect import classic_session, start_server, write_square

    work = tempfile.mkdtemp(prefix="sfclayer-bench-get-many-")
    server = None
    classic = classic_session("sfclayer-bench-get-many")
    sessions = {"classic": classic}
    try:
        if not args.no_connect:
            from pyspark.sql.connect.session import SparkSession as ConnectSession

            server, url = start_server(work)
            sessions["connect"] = sfclayer.configure(ConnectSession.builder.remote(url)).create()
        path = os.path.join(work, "layer")
        s = args.side
        write_square(classic, path, s, args.payload)
        t0 = time.perf_counter()
        figures = measure(sessions, path, s, args.repeats)
        seconds = time.perf_counter() - t0
    finally:
        for name, spark in sessions.items():
            if name != "classic":
                spark.stop()
        classic.stop()
        if server is not None:
            server.stdin.close()
            server.wait(60)
        shutil.rmtree(work, ignore_errors=True)
    whats = sorted({w for _, w in figures}, key=lambda w: (w.startswith("Layer.get "), w))
    names = list(sessions)
    print(f"{s}x{s} tiles of {args.payload} B; medians of {args.repeats}; {seconds:.0f} s; "
          f"load average {os.getloadavg()[0]:.1f}")
    print("| " + " | ".join(["operation"] + names) + " |")
    print("|---|" + "---:|" * len(names))
    for w in whats:
        print("| " + " | ".join([w] + [f"{figures[(n, w)]:.2f} ms" for n in names]) + " |")


if __name__ == "__main__":
    main()
