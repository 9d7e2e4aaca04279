"""The cost of durability (issue 35): writes with every file synced to stable storage against the same
writes without (the Hadoop setting ``sfclayer.sync=false``), on local files.

    .venv/bin/python bench/durability.py [--rounds 5]

Each round, in alternating order, with syncing on and off: a first write of 64 x 64 tiles of 2,048 bytes
(8 partitions), a one-tile append (the small-append path) and a 1,024-tile shuffled append. Prints one JSON
line with the median seconds of each and their ratio. What syncing adds on local files: FileChannel.force on
each data file, index, bloom sidecar, manifest and temporary document (and their checksum sidecars), and on
the directories naming them (docs/FORMAT.md section 6, "Durability").
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
sys.path.insert(0, HERE)

import common  # noqa: E402
import sfclayer  # noqa: E402


def tiles(spark, side, col0=0, row0=0):
    return spark.range(side * side).selectExpr(
        f"int(id % {side}) + {col0} AS col", f"int(id DIV {side}) + {row0} AS row",
        "unhex(repeat(lpad(hex(id), 8, '0'), 512)) AS payload")


def one_round(spark, work, sync, n):
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    conf.set("sfclayer.sync", "true" if sync else "false")
    path = os.path.join(work, f"layer-{n}-{'sync' if sync else 'nosync'}")
    out = {}
    t0 = time.perf_counter()
    sfclayer.write(tiles(spark, 64), path, bounds=(0, 0, 127, 127), partitions=8)
    out["write_4096"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    sfclayer.write(tiles(spark, 1, 100, 100), path, mode="append")
    out["append_1"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    sfclayer.write(tiles(spark, 32, 64, 64), path, mode="append", small_append_bytes=0)
    out["append_1024_shuffled"] = time.perf_counter() - t0
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    spark = common.make_session()
    # a new FileSystem per use, so the setting changed between rounds reaches the writers
    spark.sparkContext._jsc.hadoopConfiguration().set("fs.file.impl.disable.cache", "true")
    work = tempfile.mkdtemp(prefix="sfclayer-durability-")
    one_round(spark, work, True, -1)  # warm-up (JIT, first jobs), not counted
    one_round(spark, work, False, -1)
    runs = {True: [], False: []}
    for n in range(args.rounds):
        for sync in ((True, False) if n % 2 == 0 else (False, True)):
            runs[sync].append(one_round(spark, work, sync, n))
    result = {"rounds": args.rounds, "load": round(os.getloadavg()[0], 2)}
    for op in runs[True][0]:
        on = statistics.median(r[op] for r in runs[True])
        off = statistics.median(r[op] for r in runs[False])
        result[op] = {"synced_s": round(on, 3), "unsynced_s": round(off, 3), "ratio": round(on / off, 2)}
    print(json.dumps(result))
    spark.stop()


if __name__ == "__main__":
    main()
