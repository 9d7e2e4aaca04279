"""Driver-side box queries (``Layer.query``) against a Spark read, and random look-ups over many files.

Run alone (it starts its own local Spark and writes its layers under ``--work``)::

    .venv/bin/python bench/lookups.py            # both studies, writes its section of bench/RESULTS.md
    .venv/bin/python bench/lookups.py --quick    # small layers, nothing written (a smoke run)

Studies
-------
open
    ``sfclayer.open`` + ``close`` on the ~300-file layer below: the first open of the session (it starts
    the driver's shared look-up server), warm opens, and, side by side, the way it opened before (a
    server per layer, the whole version document sent to Python and parsed there, the schema parsed
    again); with the JVM's share of an open timed inside the JVM (``LookupTiming.timeOpens``).
query
    A 2^16-tile layer (256 x 256 tiles of 2 KiB). Boxes of 10 x 10 = 100 and 32 x 32 = 1,024 tiles at
    random places; each box asked once to warm the files up, then timed: ``list(layer.query(keys=box))``
    (decoded dicts in Python), ``layer.count(keys=box)``, and ``sfclayer.read(spark, path,
    keys=box).collect()`` (a Spark job) on the same box. Medians over the boxes.
random
    A 2^20-tile layer (1024 x 1024 tiles of ~280 bytes) written with 1 MiB blocks: ~300 data files.
    A fresh ``Layer`` answers uniformly random keys with ``Layer.get``; p50/p99 per key, timed in
    Python (socket and decode included) and inside the JVM (``LookupTiming.timeGets``: no transport).
    Each way of opening data files the reader offers is measured in the same run (see RESULTS.md).
"""

import argparse
import datetime as dt
import os
import platform
import shutil
import struct
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

import sfclayer  # noqa: E402

__all__ = ["open_study", "query_study", "random_study", "main"]

_perf = time.perf_counter
SECTION = "Driver box queries and random look-ups (bench/lookups.py)"


def _ms(seconds):
    a = np.asarray(seconds, dtype=float) * 1e3
    return {"n": int(a.size), "p50": float(np.percentile(a, 50)), "p99": float(np.percentile(a, 99)),
            "mean": float(a.mean())}


def _write_grid(spark, path, side, value_bytes, block_size, partitions, extent=None):
    from pyspark.sql import functions as F

    df = (spark.range(side * side, numPartitions=partitions)
          .select((F.col("id") % side).cast("int").alias("col"),
                  (F.col("id") / side).cast("int").alias("row"))
          .withColumn("values", F.expr(f"substring(unhex(repeat(sha2(cast(col * 7919 + row as string), 256), "
                                       f"{(value_bytes + 31) // 32})), 1, {value_bytes})")))
    t = _perf()
    sfclayer.write(df, path, mode="overwrite", bounds=(0, 0, side - 1, side - 1), block_size=block_size,
                   partitions=partitions, extent=extent)
    return _perf() - t


def _old_open(spark, path):
    """sfclayer.open as it was before the shared server (the 'before' row): a reader and a server of its
    own, the whole version document to Python, the tile schema parsed by fastavro every time."""
    import json

    import fastavro

    from sfclayer._java_errors import error_from_payload
    from sfclayer._lookup import LookupClient
    from sfclayer.curves import key_index_from_json

    from common import open_value_reader, start_lookup_server

    reader = open_value_reader(spark, path)
    server, host, port, token = start_lookup_server(spark, reader)
    md = json.loads(reader.metadataJson())
    key_index_from_json(md["keyIndex"])
    fastavro.parse_schema(md["tileSchema"])
    client = LookupClient(host, port, token, error_from_payload)

    def close():
        client.close()
        server.close()
        reader.close()
    return close


def open_study(spark, path, repeats=30, log=print):
    """sfclayer.open: the session's first, warm ones, and the way it opened before, side by side."""
    t = _perf()
    layer = sfclayer.open(spark, path)
    first = _perf() - t
    t = _perf()
    layer.close()
    first_close = _perf() - t
    jvm = spark.sparkContext._jvm
    rows = {"new": [], "new_close": [], "old": [], "old_close": [], "metadata": [], "py4j": []}
    for _ in range(repeats):  # interleaved, so load hits both alike
        t = _perf()
        layer = sfclayer.open(spark, path)
        t1 = _perf()
        layer.close()
        t2 = _perf()
        close = _old_open(spark, path)
        t3 = _perf()
        close()
        t4 = _perf()
        with sfclayer.open(spark, path) as layer:
            t5 = _perf()
            layer.metadata
            t6 = _perf()
        jvm.java.lang.System.nanoTime()
        t7 = _perf()
        rows["new"].append(t1 - t)
        rows["new_close"].append(t2 - t1)
        rows["old"].append(t3 - t2)
        rows["old_close"].append(t4 - t3)
        rows["metadata"].append(t6 - t5)
        rows["py4j"].append(t7 - t6)
    raw = np.array(list(_timing(spark).timeOpens(spark._jsparkSession, path, repeats)), dtype=float).reshape(-1, 5) / 1e6
    out = {"first_ms": 1e3 * first, "first_close_ms": 1e3 * first_close, "repeats": repeats,
           **{k: _ms(v) for k, v in rows.items()},
           "jvm": [{"phase": p, "p50": float(np.percentile(raw[:, k], 50))} for k, p in enumerate(
               ["the session's Hadoop configuration", "Layer.open (version log, cached document)",
                "ValueReader.open (the same, and the reader)",
                "SparkLookups.open (the same, registered on the shared server, the answer for Python)",
                "LookupSessions.close"])]}
    log(f"open: first {out['first_ms']:.2f} ms, warm p50 {out['new']['p50']:.2f} ms (close {out['new_close']['p50']:.2f} ms); "
        f"before p50 {out['old']['p50']:.2f} ms (close {out['old_close']['p50']:.2f} ms); "
        f"metadata on demand {out['metadata']['p50']:.2f} ms; py4j round trip {out['py4j']['p50']:.2f} ms")
    for j in out["jvm"]:
        log(f"open in the JVM: {j['phase']}: p50 {j['p50']:.3f} ms")
    return out


def query_study(spark, work, side=256, tile_bytes=2048, boxes=7, repeats=5, log=print):
    """Layer.query/count against sfclayer.read(...).collect() on 100- and 1,024-tile boxes."""
    path = os.path.join(work, f"query-{side}")
    _write_grid(spark, path, side, tile_bytes, "32m", 2)
    rng = np.random.default_rng(11)
    out = {"tiles": side * side, "tile_bytes": tile_bytes, "rows": []}
    with sfclayer.open(spark, path) as layer:
        out["files"] = len(layer.metadata["files"])
        for edge in (10, 32):
            q, c, s = [], [], []
            for _ in range(boxes):
                c0, r0 = (int(v) for v in rng.integers(0, side - edge, size=2))
                box = (c0, r0, c0 + edge - 1, r0 + edge - 1)
                got = list(layer.query(keys=box))  # warm-up: the box's files open
                assert len(got) == edge * edge, (box, len(got))
                q.append(min(_timed(lambda: list(layer.query(keys=box))) for _ in range(repeats)))
                c.append(min(_timed(lambda: layer.count(keys=box)) for _ in range(repeats)))
                rows = sfclayer.read(spark, path, keys=box).collect()
                assert len(rows) == edge * edge
                s.append(min(_timed(lambda: sfclayer.read(spark, path, keys=box).collect())
                             for _ in range(max(2, repeats // 2))))
            row = {"tiles": edge * edge, "query_ms": 1e3 * float(np.median(q)),
                   "count_ms": 1e3 * float(np.median(c)), "spark_ms": 1e3 * float(np.median(s))}
            out["rows"].append(row)
            log(f"query {row['tiles']} tiles: Layer.query {row['query_ms']:.2f} ms, count {row['count_ms']:.2f} ms, "
                f"read().collect() {row['spark_ms']:.1f} ms")
    return out


def _timed(fn):
    t = _perf()
    fn()
    return _perf() - t


def _timing(spark):
    """The JVM-side timers (``io.sfclayer.bench.LookupTiming``, in build/libs/sfclayer-bench.jar)."""
    return spark.sparkContext._jvm.io.sfclayer.bench.LookupTiming


def _pack(keys):
    return b"".join(struct.pack(">iiq", int(c), int(r), 0) for c, r in keys)


#: Ways the reader can open data files: name -> (sfclayer.open keywords, "mapfile": True for Hadoop's
#: MapFile.Reader (bench/common.py's open_mapfile_layer); whether the indexes shared by the session's
#: earlier readers are forgotten first: the layer's first open in the session).
OPEN_MODES = {
    "MapFile.Reader, LRU of 16 files (before)": ({"cache_size": 16, "mapfile": True}, True),
    "MapFile.Reader, memory-sized LRU": ({"mapfile": True}, True),
    "index in the driver, memory-sized LRU, first open in the session": ({}, True),
    "index in the driver, memory-sized LRU, opened before in the session (default)": ({}, False),
}


def _open(spark, path, kw):
    """``sfclayer.open`` with an OPEN_MODES entry's keywords."""
    kw = dict(kw)
    if kw.pop("mapfile", False):
        from common import open_mapfile_layer

        return open_mapfile_layer(spark, path, **kw)
    return sfclayer.open(spark, path, **kw)


def random_path(work, side):
    return os.path.join(work, f"random-{side}")


def write_random(spark, path, side=1024, tile_bytes=280, block_size="1m"):
    """The random study's layer: side x side tiles of tile_bytes, block_size blocks; seconds taken."""
    return _write_grid(spark, path, side, tile_bytes, block_size, 4)


def random_study(spark, path, side=1024, tile_bytes=280, keys=3000, block_size="1m", log=print, modes=None,
                 write_s=None):
    """Random-key Layer.get over a layer of ~300 files (written by write_random), for each way of opening data files."""
    rng = np.random.default_rng(5)
    sample = list(zip(rng.integers(0, side, size=keys).tolist(), rng.integers(0, side, size=keys).tolist()))
    out = {"tiles": side * side, "tile_bytes": tile_bytes, "block_size": block_size, "keys": keys,
           "write_s": write_s, "rows": []}
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    _timing(spark).timeColdOpens(conf, path, 20)  # JIT warm-up
    with sfclayer.open(spark, path) as layer:
        n = len(layer.metadata["files"])
    raw = np.array(list(_timing(spark).timeColdOpens(conf, path, n)), dtype=float).reshape(-1, 5) / 1e6
    phases = ["MapFile.Reader open (index and data SequenceFile headers)",
              "its first get (index read and inflated, seek, read)",
              "index read alone (done once per file, then kept)",
              "data file open alone", "first get from the kept index"]
    out["cold"] = [{"phase": p, "p50": float(np.percentile(raw[:, k], 50)),
                    "mean": float(raw[:, k].mean())} for k, p in enumerate(phases)]
    for c in out["cold"]:
        log(f"cold open: {c['phase']}: p50 {c['p50']:.3f} ms, mean {c['mean']:.3f} ms")
    forget = spark.sparkContext._jvm.io.sfclayer.lookup.ValueReader.forgetSharedIndexes
    for name, (kw, cold) in (modes or OPEN_MODES).items():
        try:
            if cold:
                forget()
            with _open(spark, path, kw) as layer:
                out["files"] = len(layer.metadata["files"])
                py = []
                for c, r in sample:
                    t = _perf()
                    layer.get(c, r)
                    py.append(_perf() - t)
                stats = layer.stats()
            if cold:
                forget()
            with _open(spark, path, kw) as layer:
                nanos = list(_timing(spark).timeGets(layer._reader, _pack(sample)))
                assert all(n >= 0 for n in nanos)
        except TypeError as e:  # a mode this version does not offer
            log(f"random: skipping {name}: {e}")
            continue
        row = {"mode": name, "python": _ms(py), "jvm": _ms([n / 1e9 for n in nanos]), **stats}
        out["rows"].append(row)
        log(f"random {name}: Layer.get p50 {row['python']['p50']:.3f} ms p99 {row['python']['p99']:.3f} ms; "
            f"JVM p50 {row['jvm']['p50']:.3f} ms p99 {row['jvm']['p99']:.3f} ms; {stats}")
    return out


def _render_random(rnd, where):
    lines = [f"### Random look-ups over many files, {where} ({rnd['tiles']:,} tiles of ~{rnd['tile_bytes']} bytes, "
             f"{rnd['block_size']} blocks, {rnd.get('files', '?')} files)", "",
             f"{rnd['keys']:,} uniformly random keys on a fresh `Layer` (cold opens included), "
             "`Layer.get` timed in Python and the same keys timed inside the JVM on another fresh "
             "reader. \"First open in the session\": the indexes the session's readers share are forgotten "
             "before each reader (every index read cold, in the background and by the look-ups that need "
             "it first); \"opened before\": a layer opened again in the session finds them read. "
             "Goals: p50 ≤ 0.3 ms, p99 ≤ 2 ms.", "",
             "| data files opened by | Layer.get p50 | p99 | JVM p50 | JVM p99 | files opened | open at the end |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for r in rnd["rows"]:
        lines.append(f"| {r['mode']} | {r['python']['p50']:.3f} ms | {r['python']['p99']:.3f} ms | "
                     f"{r['jvm']['p50']:.3f} ms | {r['jvm']['p99']:.3f} ms | {r['files_opened']} | "
                     f"{r['open_files']} |")
    lines.append("")
    if rnd.get("cold"):
        lines += [f"Where a cold open goes ({where}: every file of the layer opened once each way, timed inside "
                  "the JVM, `LookupTiming.timeColdOpens`):", "",
                  "| phase | p50 | mean |", "|---|---:|---:|"]
        for c in rnd["cold"]:
            lines.append(f"| {c['phase']} | {c['p50']:.3f} ms | {c['mean']:.3f} ms |")
        lines.append("")
    return lines


def render(results, command, seconds):
    lines = [f"## {SECTION}", "",
             f"Generated by `{command}` on {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC in "
             f"{seconds / 60:.1f} min ({platform.machine()}, {os.cpu_count()} cores, "
             f"load average at the end {os.getloadavg()[0]:.1f}). Other studies share the machine: figures "
             "are side by side in one run, not absolute.", ""]
    o = results.get("open")
    if o:
        lines += [f"### Opening a layer for look-ups (`sfclayer.open`, the {results['random'].get('files', '?')}-file "
                  "layer below)" if results.get("random") else "### Opening a layer for look-ups (`sfclayer.open`)", "",
                  f"The session's first open, then the median of {o['repeats']} opens of each kind, interleaved. "
                  "Now: one py4j call; the driver's look-up server, started by the first open, serves every "
                  "layer; the version document (every file and its statistics) crosses to Python only when "
                  "`layer.metadata` is read; tile schemas are parsed once per process. Before: a reader and a "
                  "server per layer, the whole document serialised, sent and parsed at every open, ~30 py4j "
                  "calls (each class and method looked up again). Goal: ≤ 5 ms.", "",
                  "| | open | close |", "|---|---:|---:|",
                  f"| `sfclayer.open`, first in the session (starts the shared server) | {o['first_ms']:.2f} ms | "
                  f"{o['first_close_ms']:.2f} ms |",
                  f"| `sfclayer.open`, warm (p50) | {o['new']['p50']:.2f} ms | {o['new_close']['p50']:.2f} ms |",
                  f"| before: a server per layer, the whole document to Python (p50) | {o['old']['p50']:.2f} ms | "
                  f"{o['old_close']['p50']:.2f} ms |",
                  f"| `layer.metadata` when first read (p50) | {o['metadata']['p50']:.2f} ms | |",
                  f"| py4j round trip, the floor of one call (p50) | {o['py4j']['p50']:.2f} ms | |", "",
                  "The JVM's share of an open, timed inside the JVM (`LookupTiming.timeOpens`, p50):", "",
                  "| step | p50 |", "|---|---:|"]
        for j in o["jvm"]:
            lines.append(f"| {j['phase']} | {j['p50']:.3f} ms |")
        lines.append("")
    q = results.get("query")
    if q:
        lines += [f"### Box queries on the driver ({q['tiles']:,} tiles of {q['tile_bytes']:,} bytes, "
                  f"{q['files']} files, warm)", "",
                  "Median over 7 random boxes of the best of 5 runs. `Layer.query`: the tiles as decoded "
                  "dicts in Python, streamed over the look-up socket; `sfclayer.read(...).collect()`: "
                  "the same box through a Spark job. Goals: 100 tiles ≤ 10 ms, 1,000 tiles ≤ 50 ms.", "",
                  "| box | Layer.query | Layer.count | read().collect() | × faster |",
                  "|---:|---:|---:|---:|---:|"]
        for r in q["rows"]:
            lines.append(f"| {r['tiles']:,} tiles | {r['query_ms']:.2f} ms | {r['count_ms']:.2f} ms | "
                         f"{r['spark_ms']:.1f} ms | {r['spark_ms'] / r['query_ms']:.0f}× |")
        lines.append("")
    if results.get("random"):
        lines += _render_random(results["random"], "local filesystem (OS page cache warm)")
    if results.get("random_hdfs"):
        lines += _render_random(results["random_hdfs"], "HDFS (MiniDFSCluster, 2 DataNodes, replication 2, "
                                "same machine: every cold open also asks the NameNode and a DataNode)")
    elif results.get("hdfs_skipped"):
        lines += [f"HDFS variant not run: {results['hdfs_skipped']}", ""]
    lines += ["The look-up server under abuse (200 connections that never authenticate, garbage after a "
              "valid token, a wrong token, a request stopped midway, a request for 2^31 keys, a client "
              "that never reads) is a test, not a benchmark: `pytest -s tests/test_lookup_server.py -k abuse` "
              "prints the honest clients' p50/p99 during the abuse.", ""]
    extra = results.get("notes")
    if extra:
        lines += [extra, ""]
    return "\n".join(lines)


def write_section(text):
    """Replaces this study's block of RESULTS.md (``lookups``), leaving the others alone."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import report

    report.write_section("lookups", text)


def _hdfs_random(spark, args, log=print):
    """The random study on a MiniDFSCluster started as integration/hdfs.py starts the tests' one."""
    import tempfile

    sys.path.insert(0, ROOT)
    from integration import hdfs as hdfs_helpers

    base = tempfile.mkdtemp(prefix="sfclayer-bench-minihdfs-")
    try:
        cluster = hdfs_helpers.start(base, datanodes=2, replication=2)
    except hdfs_helpers.HdfsUnavailable as e:
        shutil.rmtree(base, ignore_errors=True)
        return None, str(e).splitlines()[0]
    try:
        side = 128 if args.quick else 1024
        block = "64k" if args.quick else "1m"
        path = cluster.path("random")
        write_s = write_random(spark, path, side=side, block_size=block)
        log(f"random (HDFS): wrote {path} in {write_s:.1f} s")
        return random_study(spark, path, side=side, keys=300 if args.quick else 3000, block_size=block,
                            write_s=write_s), None
    finally:
        cluster.close()
        shutil.rmtree(base, ignore_errors=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small layers; RESULTS.md untouched")
    ap.add_argument("--only", choices=["open", "query", "random", "hdfs"], help="one study")
    ap.add_argument("--no-hdfs", action="store_true", help="skip the HDFS variant of the random study")
    ap.add_argument("--work", default="/tmp/sfclayer-bench-lookups")
    args = ap.parse_args(argv)
    args.quick = args.quick or os.environ.get("SFCLAYER_BENCH_QUICK") == "1"  # bench/run.py --quick
    t0 = _perf()
    sys.path.insert(0, ROOT)
    from integration import hdfs as hdfs_helpers

    spark = sfclayer.session("local[2]", app_name="sfclayer-bench-lookups", **{
        "spark.jars": os.path.join(ROOT, "build", "libs", "sfclayer-bench.jar"),  # gradle benchJar
        "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false", "spark.driver.memory": "4g",
        "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
        # the HDFS client as the tests configure it (integration/hdfs.py's MiniDFSCluster)
        "spark.hadoop.dfs.client.use.datanode.hostname": "false",
        "spark.hadoop.dfs.blocksize": str(hdfs_helpers.BLOCK_SIZE), "spark.hadoop.dfs.replication": "2"})
    spark.sparkContext.setLogLevel("WARN")
    os.makedirs(args.work, exist_ok=True)
    results = {}
    side = 128 if args.quick else 1024
    block = "64k" if args.quick else "1m"
    try:
        rpath = random_path(args.work, side)
        if args.only in (None, "open", "random"):
            write_s = write_random(spark, rpath, side=side, block_size=block)
        if args.only in (None, "open"):  # first, so that its first open is the session's first
            results["open"] = open_study(spark, rpath, repeats=10 if args.quick else 30)
        if args.only in (None, "query"):
            results["query"] = query_study(spark, args.work, side=64 if args.quick else 256)
        if args.only in (None, "random"):
            results["random"] = random_study(spark, rpath, side=side, keys=300 if args.quick else 3000,
                                             block_size=block, write_s=write_s)
        if args.only == "hdfs" or (args.only is None and not args.no_hdfs):
            results["random_hdfs"], results["hdfs_skipped"] = _hdfs_random(spark, args)
    finally:
        spark.stop()
        shutil.rmtree(args.work, ignore_errors=True)
    text = render(results, "python bench/lookups.py" + (f" --only {args.only}" if args.only else ""), _perf() - t0)
    print(text)
    if not args.quick:
        write_section(text)


if __name__ == "__main__":
    main()
