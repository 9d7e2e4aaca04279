"""Benchmark of what commits read and write on a layer of many file entries (issue 20, write side).

    .venv/bin/python bench/commits.py [--sizes 10000,100000]

For each size, a layer of that many data file entries (``SyntheticLayer`` from the bench jar: synthetic
entries whose files do not exist and nothing reads, but for 4 real one-tile files; format 6, 32 files a
leaf manifest, 64 references a node) gets a one-tile append through the shuffle (``small_append_bytes=0``),
a one-tile delete, and an overwrite of one tile, each through Spark. For each: the manifests it read from
storage (its JVM's parsed manifests forgotten first), the metadata it wrote (new manifests and the version
document) and its wall time. Prints one JSON line per size and operation.
"""

import argparse
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
sys.path.insert(0, HERE)

import common  # noqa: E402
from py4j.java_gateway import get_field  # noqa: E402
import sfclayer  # noqa: E402


def written(path, before):
    """Bytes of the files under _sfclayer/ that were not in `before` (new manifests and documents)."""
    log = os.path.join(path, "_sfclayer")
    total = 0
    for root, _, names in os.walk(log):
        for n in names:
            p = os.path.join(root, n)
            if p not in before and not n.startswith(".") and n != "_last_version":
                total += os.path.getsize(p)
    return total


def listing(path):
    return {os.path.join(r, n) for r, _, names in os.walk(os.path.join(path, "_sfclayer")) for n in names}


def measure(spark, path, action):
    manifest = spark._jvm.io.sfclayer.format.Manifest
    manifest.forgetCached()
    before_files = listing(path)
    before = manifest.readsTotal()
    t0 = time.perf_counter()
    action()
    seconds = time.perf_counter() - t0
    return {"manifests_read": manifest.readsTotal() - before, "metadata_bytes_written": written(path, before_files),
            "seconds": round(seconds, 3)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,100000")
    args = ap.parse_args()
    spark = common.make_session()
    jvm = spark._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    work = tempfile.mkdtemp(prefix="sfclayer-commits-")
    # warm-up (JIT, the first Spark jobs), not printed
    for entries in [1000] + [int(s) for s in args.sizes.split(",")]:
        path = os.path.join(work, f"layer-{entries}")
        layer = jvm.io.sfclayer.bench.SyntheticLayer.build(conf, jvm.org.apache.hadoop.fs.Path(path), entries, 4)
        keys = [(k[0], k[1]) for k in get_field(layer, "keys")]
        manifests = len(os.listdir(os.path.join(path, "_sfclayer", "manifests")))

        def one(c, r, v):
            return spark.range(1).selectExpr(f"{c} AS col", f"{r} AS row", f"CAST({v} AS BIGINT) AS v")

        (c, r) = keys[1]
        append = measure(spark, path, lambda: sfclayer.write(one(c, r, 42), path, mode="append", partitions=8,
                                                              small_append_bytes=0))
        (c, r) = keys[2]
        delete = measure(spark, path, lambda: sfclayer.delete(spark, path, keys=(c, r, c, r)))
        (c, r) = keys[3]
        side = 1 << 16  # SyntheticLayer.SIDE
        bounds = (0, 0, side - 1, side - 1)
        overwrite = measure(spark, path, lambda: sfclayer.write(one(c, r, 7), path, mode="overwrite", bounds=bounds,
                                                                key_index="z", partitions=1))
        for name, m in (("shuffled append of 1 tile", append), ("delete of 1 tile", delete),
                        ("overwrite", overwrite)) if entries != 1000 or args.sizes.startswith("1000,") else ():
            print(json.dumps({"entries": entries, "manifests": manifests, "operation": name, **m,
                              "load": common.loadavg()}), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
