"""Point look-ups: sfclayer's ``Layer.get`` against Parquet point queries through Spark, batch
throughput (``get_many``), the tile-size sensitivity of the Python-to-JVM path, and the MapFile
index-interval trade-off.

Used by ``bench/run.py``; every function takes the SparkSession and a layer path and returns plain
dicts of numbers (seconds, counts) that ``run.py`` renders.

Vocabulary
----------
cold
    A fresh ``Layer`` (``sfclayer.open``) and its first ``get``: the data file is opened and its
    MapFile index read before the seek. The OS page cache is *not* dropped (the files were just
    written), so this is "cold for sfclayer", not "cold disk".
warm, neighbourhood
    A map viewer's order: a region of tiles visited viewport by viewport (8 x 8 tiles, panning in a
    serpentine), once to warm up and again measured: the files are open, the indexes in memory.
warm, random
    Random keys over the whole layer with every data file open (cache as large as the layer):
    each ``get`` is an in-memory index search plus a seek and a short scan (up to
    ``indexInterval - 1`` records) in the data file.
Layer.get
    The public call: the record comes over the Layer's look-up socket (``LookupServer``, a loopback
    TCP_NODELAY socket served by the driver JVM) and is decoded to a dict with fastavro.
raw (socket)
    The same socket, the record's bytes left undecoded (``Layer._client``): the JVM's look-up plus
    the transport, without the decode.
via py4j
    ``ValueReader.get`` called through py4j (``Layer._reader``), undecoded: the path ``Layer.get``
    took before the look-up socket. py4j moves a byte[] as base64 text in several writes, which
    costs ~40 ms once an answer passes a few KiB (Nagle's algorithm against delayed ACKs).
batch
    One ``get_many`` request for many keys (keys sorted by index in the JVM, each file walked once).
    Over the socket, undecoded, its per-key time is the JVM's look-up cost plus a memory copy; the
    per-call time inside the JVM is measured apart (``_jvm_timed``: the bench jar's ``LookupTiming``).
"""

import json
import math
import os
import struct
import time

import numpy as np

import sfclayer

__all__ = [
    "summarize",
    "random_keys",
    "neighbourhood_keys",
    "lookups",
    "spark_point_queries",
    "interval_study",
    "tile_size_point",
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


def _raw_get(layer):
    """(col, row) -> record bytes over the Layer's look-up socket, undecoded."""
    client = layer._client
    return lambda c, r: client.get(int(c), int(r), 0)


def _py4j_get(layer):
    """(col, row) -> record bytes through py4j (``ValueReader.get``), undecoded."""
    reader = layer._reader
    return lambda c, r: reader.get(int(c), int(r))


def _timed(get, keys):
    out = []
    for c, r in keys:
        t = _perf()
        value = get(c, r)
        out.append(_perf() - t)
        if value is None:
            raise AssertionError(f"no tile at ({c}, {r})")
    return out


def _batch(get_many, keys, repeats=1):
    """``get_many(packed)`` on the same keys: (median seconds, answer bytes)."""
    packed = _pack(keys)
    times = []
    for _ in range(repeats):
        t = _perf()
        answer = get_many(packed)
        times.append(_perf() - t)
    assert all(a is not None for a in answer), "a batch key is missing"
    return float(np.median(times)), sum(len(a) for a in answer)


def _batch_entry(keys, seconds, nbytes):
    return {"keys": len(keys), "seconds": seconds, "us_per_key": 1e6 * seconds / len(keys),
            "keys_per_s": len(keys) / seconds, "mb_per_s": nbytes / seconds / 1e6}


def _jvm_timed(layer, keys):
    """Seconds per look-up measured inside the JVM (``io.sfclayer.bench.LookupTiming``, in
    build/libs/sfclayer-bench.jar): no transport at all."""
    from pyspark import SparkContext

    timing = SparkContext._active_spark_context._jvm.io.sfclayer.bench.LookupTiming
    try:
        nanos = list(timing.timeGets(layer._reader, _pack(keys)))
    except TypeError:  # py4j: no such class
        raise RuntimeError("the benchmark's JVM helpers are not on the driver's classpath: "
                           "build build/libs/sfclayer-bench.jar (make setup) and start Spark with it") from None
    if any(n < 0 for n in nanos):
        raise AssertionError("a key timed in the JVM is missing")
    return [n / 1e9 for n in nanos]


def _warm(layer, keys, cfg):
    """Warm latencies on ``keys``, visited once to warm up, then measured on every transport."""
    for c, r in keys:
        layer.get(c, r)
    return {
        "warm_python": summarize(_timed(layer.get, keys)),
        "warm_socket": summarize(_timed(_raw_get(layer), keys)),
        "warm_py4j": summarize(_timed(_py4j_get(layer), keys[:cfg.py4j_gets])),
        "warm_jvm": summarize(_jvm_timed(layer, keys)),
    }


def _cold(spark, path, cfg, keys, decode):
    """A fresh Layer per key: (open seconds, first-get seconds) lists."""
    opens, firsts = [], []
    for c, r in keys:
        t0 = _perf()
        layer = sfclayer.open(spark, path, cache_size=cfg.cache_size)
        t1 = _perf()
        value = layer.get(c, r) if decode else _raw_get(layer)(c, r)
        firsts.append(_perf() - t1)
        opens.append(t1 - t0)
        layer.close()
        assert value is not None
    return opens, firsts


def lookups(spark, path, side, n_files, cfg, rng):
    """sfclayer point look-ups on one layer: cold and warm, decoded and raw, socket and py4j, batches.

    Returns a dict of ``summarize`` results (and a few counters) keyed by measurement name.
    """
    out = {}
    all_open = max(cfg.cache_size, n_files + 1)

    # Floors: a round trip that does no look-up, on each transport.
    with sfclayer.open(spark, path, cache_size=cfg.cache_size) as layer:
        raw = _raw_get(layer)
        samples = []
        for _ in range(cfg.rtt_calls):
            t = _perf()
            raw(-1, -1)  # outside the key bounds: answered before any file is touched
            samples.append(_perf() - t)
        out["socket_round_trip"] = summarize(samples)
        reader = layer._reader
        samples = []
        for _ in range(cfg.rtt_calls):
            t = _perf()
            reader.openFiles()
            samples.append(_perf() - t)
        out["py4j_round_trip"] = summarize(samples)

    # Cold.
    opens, firsts = _cold(spark, path, cfg, random_keys(rng, side, cfg.cold), decode=True)
    out["open"] = summarize(opens)
    out["cold_python"] = summarize(firsts)
    _, firsts = _cold(spark, path, cfg, random_keys(rng, side, cfg.cold), decode=False)
    out["cold_socket"] = summarize(firsts)
    cold_jvm = []
    for key in random_keys(rng, side, cfg.cold):
        with sfclayer.open(spark, path, cache_size=cfg.cache_size) as layer:
            cold_jvm += _jvm_timed(layer, [key])
    out["cold_jvm"] = summarize(cold_jvm)

    # Warm, neighbourhood order: a warm-up pass, then the same keys again, measured.
    hood = neighbourhood_keys(rng, side, cfg.warm_region)
    with sfclayer.open(spark, path, cache_size=cfg.cache_size) as layer:
        out.update(_warm(layer, hood, cfg))
        stats = layer.stats()
    out["warm_files_opened"] = stats["files_opened"]
    out["warm_keys"] = len(hood)

    # Warm, random keys with every file open.
    with sfclayer.open(spark, path, cache_size=all_open) as layer:
        raw = _raw_get(layer)
        for c, r in random_keys(rng, side, max(cfg.warm_random, 2 * n_files)):
            raw(c, r)
        out["warm_random_socket"] = summarize(_timed(raw, random_keys(rng, side, cfg.warm_random)))

    # Batches: random keys on a fresh Layer (cold), then others with the files open (warm), the
    # neighbourhood; over the socket undecoded, decoded (Layer.get_many), and through py4j.
    with sfclayer.open(spark, path, cache_size=all_open) as layer:
        client = layer._client
        keys = random_keys(rng, side, cfg.batch)
        s, b = _batch(client.get_many, keys)
        out["batch_cold"] = _batch_entry(keys, s, b)
        keys = random_keys(rng, side, cfg.batch)
        s, b = _batch(client.get_many, keys, repeats=3)
        out["batch_warm"] = _batch_entry(keys, s, b)
        s, b = _batch(client.get_many, hood, repeats=3)
        out["batch_hood"] = _batch_entry(hood, s, b)
        keys = random_keys(rng, side, cfg.batch)
        layer.get_many(keys)
        t = _perf()
        tiles = layer.get_many(keys)
        s = _perf() - t
        assert all(x is not None for x in tiles)
        out["get_many_python"] = _batch_entry(keys, s, sum(len(x["values"]) for x in tiles))
        reader = layer._reader

        from sfclayer._answers import TileAnswers
        from sfclayer._java_errors import error_from_payload

        tile_answers = spark.sparkContext._jvm.io.sfclayer.lookup.TileAnswers

        def py4j_many(packed):  # the answer in the socket's framing, moved by py4j
            answer = [None] * (len(packed) // 16)
            TileAnswers.of_bytes(bytes(tile_answers.many(reader, packed)), error_from_payload).many(len(answer), answer)
            return answer

        s, b = _batch(py4j_many, keys, repeats=3)
        out["batch_py4j"] = _batch_entry(keys, s, b)
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
    for dirpath, _, names in os.walk(os.path.join(local_path, data_dir)):
        for name in names:
            if name == "index":
                total += os.path.getsize(os.path.join(dirpath, name))
    return total


# Heap per in-memory MapFile index entry: a LongWritable (12-byte header + 8-byte long, aligned to
# 24), its reference in the keys array (4, compressed oops) and the long position (8): 36 bytes,
# before the arrays' growth slack (MapFile.Reader grows them by 3/2).
INDEX_ENTRY_HEAP_BYTES = 36


def interval_study(spark, layers, side, cfg, rng):
    """Look-up costs and index sizes of the same tiles written with different index intervals.

    ``layers`` is a list of (local path) of layers; every measurement uses the same keys on every
    layer, in ``cfg.interval_rounds`` rounds that rotate the layers' order, so that drift on a busy
    machine spreads over all of them. Look-ups are raw gets over the look-up socket (undecoded).
    """
    results, opened = [], []
    for path in layers:
        with sfclayer.open(spark, path, cache_size=1) as layer:
            md = layer.metadata
        interval = int(md["indexInterval"])
        results.append({
            "interval": interval,
            "files": int(md["fileCount"]),
            "index_bytes": _index_file_bytes(path, md["dataDir"]),
            "index_entries": sum(math.ceil(f["indexes"] / interval) for f in md["files"]),
            "data_bytes": int(md["dataBytes"]),
            # a get seeks to the index entry at or before the key, then reads up to interval - 1 groups
            "scan_bytes_max": (interval - 1) * int(md["dataBytes"]) / max(1, int(md["indexCount"])),
        })
        results[-1]["index_heap_bytes"] = results[-1]["index_entries"] * INDEX_ENTRY_HEAP_BYTES
    rounds = max(1, cfg.interval_rounds)
    hood = neighbourhood_keys(rng, side, cfg.warm_region)
    cold_keys = random_keys(rng, side, cfg.cold)
    warm_keys = random_keys(rng, side, cfg.warm_random)
    batch_keys = random_keys(rng, side, cfg.batch)
    samples = [{"cold": [], "hood": [], "random": [], "batch": []} for _ in layers]
    try:
        for path, r in zip(layers, results):
            layer = sfclayer.open(spark, path, cache_size=max(cfg.cache_size, r["files"] + 1))
            opened.append(layer)
            raw = _raw_get(layer)
            for c, rr in hood + random_keys(rng, side, max(cfg.warm_random, 4 * r["files"])):
                raw(c, rr)
            _batch(layer._client.get_many, batch_keys)
        for k in range(rounds):
            order = list(range(len(layers)))
            order = order[k % len(order):] + order[:k % len(order)]
            for i in order:
                chunk = slice(k * len(cold_keys) // rounds, (k + 1) * len(cold_keys) // rounds)
                samples[i]["cold"] += _cold(spark, layers[i], cfg, cold_keys[chunk], decode=False)[1]
                raw = _raw_get(opened[i])
                samples[i]["hood"] += _timed(raw, hood)
                chunk = slice(k * len(warm_keys) // rounds, (k + 1) * len(warm_keys) // rounds)
                samples[i]["random"] += _timed(raw, warm_keys[chunk])
                samples[i]["batch"].append(_batch(opened[i]._client.get_many, batch_keys))
    finally:
        for layer in opened:
            layer.close()
    for r, smp in zip(results, samples):
        r["cold_socket"] = summarize(smp["cold"])
        r["warm_socket"] = summarize(smp["hood"])
        r["warm_random_socket"] = summarize(smp["random"])
        seconds = float(np.median([t for t, _ in smp["batch"]]))
        r["batch_warm"] = _batch_entry(batch_keys, seconds, smp["batch"][0][1])
        r["batch_rounds_us_per_key"] = [1e6 * t / len(batch_keys) for t, _ in smp["batch"]]
    return results


def tile_size_point(spark, path, side, tile_bytes, cfg, rng):
    """Warm and cold look-up latency on a layer of ``tile_bytes`` tiles: decoded, raw over the
    socket, and through py4j (fewer samples: py4j is slow for big answers)."""
    out = {"tile_bytes": tile_bytes}
    hood = neighbourhood_keys(rng, side, cfg.tile_study_region)
    with sfclayer.open(spark, path, cache_size=cfg.cache_size) as layer:
        out.update(_warm(layer, hood, cfg))
        s, b = _batch(layer._client.get_many, hood, repeats=3)
        out["batch_socket"] = _batch_entry(hood, s, b)
    _, firsts = _cold(spark, path, cfg, random_keys(rng, side, max(3, cfg.cold // 3)), decode=True)
    out["cold_python"] = summarize(firsts)
    return out


def layer_metadata(spark, path):
    """The metadata document of a layer's current version, through a Layer."""
    with sfclayer.open(spark, path, cache_size=1) as layer:
        return json.loads(json.dumps(layer.metadata))
