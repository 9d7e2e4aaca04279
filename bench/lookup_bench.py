"""Point look-ups: sfclayer's ``Layer.get`` / ``ValueReader`` against Parquet point queries through
Spark, batch throughput (``get_many``), and the MapFile index-interval trade-off.

Used by ``bench/run.py``; every function takes the SparkSession and a layer path and returns plain
dicts of numbers (seconds, counts) that ``run.py`` renders.

Vocabulary
----------
cold
    A fresh reader (``sfclayer.open``) and its first ``get``: the data file is opened and its
    MapFile index read before the seek. The OS page cache is *not* dropped (the files were just
    written), so this is "cold for sfclayer", not "cold disk".
warm, neighbourhood
    A map viewer's order: a region of tiles visited viewport by viewport (8 x 8 tiles, panning in a
    serpentine), once to warm up and again measured: the files are open, the indexes in memory.
warm, random
    Random keys over the whole layer with every data file open (cache as large as the layer):
    each ``get`` is an in-memory index search plus a seek and a short scan (up to
    ``indexInterval - 1`` records) in the data file.
raw JVM
    ``ValueReader.get`` called through py4j, returning the record's bytes undecoded: sfclayer's JVM
    work plus one py4j round trip, without the Avro decode ``Layer.get`` adds in Python.
batch
    ``ValueReader.getMany`` on packed keys: one py4j call for the whole batch (keys sorted by
    index, each file walked once). Its time includes moving the answer to Python; the JVM-internal
    per-key cost is estimated as (batch time - py4j transfer time of a byte[] of the answer's size)
    / keys, there being no JVM-side timing helper.
"""

import math
import os
import struct
import time

import numpy as np

import sfclayer
from sfclayer import _jvm

__all__ = [
    "summarize",
    "random_keys",
    "neighbourhood_keys",
    "lookups",
    "spark_point_queries",
    "interval_point",
    "py4j_transfer",
    "transfer_seconds",
]

_perf = time.perf_counter


def summarize(seconds):
    """p50 / p99 / mean in milliseconds of a list of durations in seconds."""
    a = np.asarray(seconds, dtype=float) * 1e3
    if a.size == 0:
        return {"n": 0, "p50_ms": float("nan"), "p99_ms": float("nan"), "mean_ms": float("nan")}
    return {
        "n": int(a.size),
        "p50_ms": float(np.percentile(a, 50)),
        "p99_ms": float(np.percentile(a, 99)),
        "mean_ms": float(a.mean()),
    }


def random_keys(rng, side, n):
    """``n`` uniformly random keys of a ``side`` x ``side`` grid starting at (0, 0)."""
    cols = rng.integers(0, side, size=n)
    rows = rng.integers(0, side, size=n)
    return list(zip(cols.tolist(), rows.tolist()))


def neighbourhood_keys(rng, side, region, viewport=8):
    """Every key of a ``region`` x ``region`` square at a random place, in a map viewer's order:
    viewport by viewport (``viewport`` x ``viewport`` tiles), panning along viewport rows in a
    serpentine."""
    region = max(1, min(region, side))
    viewport = max(1, min(viewport, region))
    c0 = int(rng.integers(0, side - region + 1))
    r0 = int(rng.integers(0, side - region + 1))
    keys = []
    steps = list(range(0, region, viewport))
    for i, vy in enumerate(steps):
        for vx in (steps if i % 2 == 0 else steps[::-1]):
            for y in range(vy, min(vy + viewport, region)):
                for x in range(vx, min(vx + viewport, region)):
                    keys.append((c0 + x, r0 + y))
    return keys


def _pack(keys):
    return b"".join(struct.pack(">iiq", int(c), int(r), 0) for c, r in keys)


def _unpack_lengths(blob):
    """Record lengths in a ``getMany`` answer (-1 for a missing key)."""
    out, pos = [], 0
    while pos < len(blob):
        (n,) = struct.unpack_from(">i", blob, pos)
        pos += 4 + max(n, 0)
        out.append(n)
    return out


def _raw_reader(spark, path, cache_size):
    return _jvm.open_value_reader(spark, path, cache_size)


def _timed_gets(get, keys):
    out = []
    for c, r in keys:
        t = _perf()
        get(c, r)
        out.append(_perf() - t)
    return out


def _batch(reader, keys, repeats=1):
    """Raw ``getMany`` calls on the same keys: (median seconds, bytes of the answer, keys missing)."""
    packed = _pack(keys)
    times = []
    for _ in range(repeats):
        t = _perf()
        blob = bytes(reader.getMany(packed))
        times.append(_perf() - t)
    lengths = _unpack_lengths(blob)
    return float(np.median(times)), len(blob), sum(1 for n in lengths if n < 0)


def transfer_seconds(spark, nbytes, repeats=5):
    """Median time to bring a JVM ``byte[]`` of ``nbytes`` to Python through py4j (no sfclayer
    work: ``java.util.Arrays.copyOf`` of a 16-byte array): the transport share of a call."""
    copy_of = spark.sparkContext._jvm.java.util.Arrays.copyOf  # resolved once: one round trip per call
    seed = bytearray(16)
    copy_of(seed, 16)
    times = []
    for _ in range(repeats):
        t = _perf()
        copy_of(seed, int(nbytes))
        times.append(_perf() - t)
    return float(np.median(times))


def py4j_transfer(spark, sizes=(2 << 10, 6 << 10, 8 << 10, 32 << 10, 128 << 10, 512 << 10, 2 << 20)):
    """py4j transfer time of a returned byte[] by size: what any tile of that size costs to move."""
    return [{"bytes": n, "ms": 1e3 * transfer_seconds(spark, n)} for n in sizes]


def _batch_entry(spark, keys, seconds, nbytes):
    transfer = transfer_seconds(spark, nbytes)
    return {"keys": len(keys), "seconds": seconds, "us_per_key": 1e6 * seconds / len(keys),
            "keys_per_s": len(keys) / seconds, "answer_bytes": nbytes, "transfer_s": transfer,
            "jvm_us_per_key": max(0.0, 1e6 * (seconds - transfer) / len(keys))}


def lookups(spark, path, side, n_files, cfg, rng):
    """sfclayer point look-ups on one layer: cold and warm, Python and raw JVM, batches.

    Returns a dict of ``summarize`` results (and a few counters) keyed by measurement name.
    """
    out = {}

    # py4j round trip: a trivial JVM call, the floor under every per-key call from Python.
    reader = _raw_reader(spark, path, cfg.cache_size)
    samples = []
    for _ in range(cfg.rtt_calls):
        t = _perf()
        reader.openFiles()
        samples.append(_perf() - t)
    reader.close()
    out["py4j_round_trip"] = summarize(samples)

    # Cold: a fresh Layer per key (open = metadata + listing; first get = file open, index read, seek).
    cold_keys = random_keys(rng, side, cfg.cold)
    opens, firsts = [], []
    for c, r in cold_keys:
        t0 = _perf()
        layer = sfclayer.open(spark, path, cache_size=cfg.cache_size)
        t1 = _perf()
        layer.get(c, r)
        firsts.append(_perf() - t1)
        opens.append(t1 - t0)
        layer.close()
    out["open"] = summarize(opens)
    out["cold_python"] = summarize(firsts)

    raw_firsts = []
    for c, r in random_keys(rng, side, cfg.cold):
        reader = _raw_reader(spark, path, cfg.cache_size)
        t = _perf()
        reader.get(c, r)
        raw_firsts.append(_perf() - t)
        reader.close()
    out["cold_raw"] = summarize(raw_firsts)

    # Warm, neighbourhood order: warm-up pass, then the same keys again, measured.
    hood = neighbourhood_keys(rng, side, cfg.warm_region)
    with sfclayer.open(spark, path, cache_size=cfg.cache_size) as layer:
        for c, r in hood:
            layer.get(c, r)
        out["warm_python"] = summarize(_timed_gets(layer.get, hood))
        stats = layer.stats()
    out["warm_files_opened"] = stats["files_opened"]
    out["warm_keys"] = len(hood)

    reader = _raw_reader(spark, path, cfg.cache_size)
    try:
        for c, r in hood:
            reader.get(c, r)
        out["warm_raw"] = summarize(_timed_gets(reader.get, hood))
    finally:
        reader.close()

    # Warm, random keys with every file open.
    reader = _raw_reader(spark, path, max(cfg.cache_size, n_files + 1))
    try:
        for c, r in random_keys(rng, side, max(cfg.warm_random, 2 * n_files)):
            reader.get(c, r)
        out["warm_random_raw"] = summarize(_timed_gets(reader.get, random_keys(rng, side, cfg.warm_random)))
    finally:
        reader.close()

    # Batches: one getMany of random keys on a fresh reader (cold), then again (warm);
    # the neighbourhood as one batch; and Layer.get_many (decoding in Python).
    batch_keys = random_keys(rng, side, cfg.batch)
    warm_keys = random_keys(rng, side, cfg.batch)
    reader = _raw_reader(spark, path, max(cfg.cache_size, n_files + 1))
    try:
        cold_s, cold_b, missing = _batch(reader, batch_keys)
        warm_s, warm_b, _ = _batch(reader, warm_keys, repeats=3)
        hood_s, hood_b, _ = _batch(reader, hood, repeats=3)
    finally:
        reader.close()
    assert missing == 0, f"{missing} of {len(batch_keys)} batch keys missing from {path}"
    out["batch_cold"] = _batch_entry(spark, batch_keys, cold_s, cold_b)
    out["batch_warm"] = _batch_entry(spark, warm_keys, warm_s, warm_b)
    out["batch_hood"] = _batch_entry(spark, hood, hood_s, hood_b)

    with sfclayer.open(spark, path, cache_size=max(cfg.cache_size, n_files + 1)) as layer:
        layer.get_many(batch_keys)  # warm the files
        keys = random_keys(rng, side, cfg.batch)
        t = _perf()
        tiles = layer.get_many(keys)
        dt = _perf() - t
    assert all(t is not None for t in tiles)
    out["get_many_python"] = {"keys": len(keys), "seconds": dt, "us_per_key": 1e6 * dt / len(keys),
                              "keys_per_s": len(keys) / dt}
    out["py4j_transfer"] = py4j_transfer(spark, cfg.transfer_sizes)
    return out


def spark_point_queries(spark, run_query, keys):
    """Point queries through Spark, one job each: ``run_query(c, r)`` returns (rows, scan metrics).

    Returns latency percentiles, the first query's time, and the median records read per query.
    """
    times, read, files = [], [], []
    for c, r in keys:
        t = _perf()
        rows, metrics = run_query(c, r)
        times.append(_perf() - t)
        assert rows == 1, f"point query ({c}, {r}) returned {rows} rows"
        read.append(metrics.get("records_read", float("nan")))
        files.append(metrics.get("files_read", float("nan")))
    out = summarize(times)
    out["first_ms"] = times[0] * 1e3 if times else float("nan")
    out["records_read"] = float(np.median(read)) if read else float("nan")
    out["files_read"] = float(np.median(files)) if files else float("nan")
    return out


def _index_file_bytes(local_path, data_dir):
    total = 0
    root = os.path.join(local_path, data_dir)
    for dirpath, _, names in os.walk(root):
        for name in names:
            if name == "index":
                total += os.path.getsize(os.path.join(dirpath, name))
    return total


# Heap per in-memory MapFile index entry: a LongWritable (12-byte header + 8-byte long, aligned to
# 24), its reference in the keys array (4, compressed oops) and the long position (8): 36 bytes,
# before the arrays' growth slack (MapFile.Reader grows them by 3/2).
INDEX_ENTRY_HEAP_BYTES = 36


def interval_point(spark, path, local_path, side, cfg, rng):
    """Look-up costs and index size of one layer, for the index-interval table."""
    reader = _raw_reader(spark, path, 1)
    try:
        import json

        md = json.loads(reader.metadataJson())
    finally:
        reader.close()
    interval = int(md["indexInterval"])
    entries = sum(math.ceil(f["indexes"] / interval) for f in md["files"])
    n_files = int(md["fileCount"])
    out = {
        "interval": interval,
        "files": n_files,
        "index_bytes": _index_file_bytes(local_path, md["dataDir"]),
        "index_entries": entries,
        "index_heap_bytes": entries * INDEX_ENTRY_HEAP_BYTES,
        "data_bytes": int(md["dataBytes"]),
        # a get seeks to the index entry at or before the key, then reads up to interval - 1 groups
        "scan_bytes_max": (interval - 1) * int(md["dataBytes"]) / max(1, int(md["indexCount"])),
    }
    cold = []
    for c, r in random_keys(rng, side, cfg.cold):
        reader = _raw_reader(spark, path, cfg.cache_size)
        t = _perf()
        reader.get(c, r)
        cold.append(_perf() - t)
        reader.close()
    out["cold_raw"] = summarize(cold)

    hood = neighbourhood_keys(rng, side, cfg.warm_region)
    reader = _raw_reader(spark, path, max(cfg.cache_size, n_files + 1))
    try:
        for c, r in hood:
            reader.get(c, r)
        out["warm_raw"] = summarize(_timed_gets(reader.get, hood))
        for c, r in random_keys(rng, side, max(cfg.warm_random, 2 * n_files)):
            reader.get(c, r)
        out["warm_random_raw"] = summarize(_timed_gets(reader.get, random_keys(rng, side, cfg.warm_random)))
        keys = random_keys(rng, side, cfg.batch)
        _batch(reader, keys)
        dt, nbytes, _ = _batch(reader, keys, repeats=3)
        b = _batch_entry(spark, keys, dt, nbytes)
        out["batch_warm_us_per_key"] = b["us_per_key"]
        out["batch_warm_jvm_us_per_key"] = b["jvm_us_per_key"]
    finally:
        reader.close()
    return out
