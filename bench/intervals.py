"""Study ``intervals``: the MapFile index interval's trade-off: the same tiles written with each
``indexInterval``, look-ups measured side by side (lookup_bench.interval_study).

Alone: ``make bench STUDY=intervals``. In a run whose sizes include ``cfg.interval_size``, it reuses
that size's layer; otherwise it writes its own.
"""

import os

import lookup_bench
from common import _perf
from sizes import Size

import sfclayer


def bench_intervals(spark, df, side, parts, size_dir, main_path, main_md, cfg, rng, log):
    """The index-interval study: the same tiles written with each interval, measured side by side."""
    paths, writes = [], []
    for interval in cfg.intervals:
        if interval == main_md["indexInterval"]:
            paths.append(main_path)
            writes.append(None)
            continue
        path = os.path.join(size_dir, f"sfclayer-interval-{interval}")
        t = _perf()
        sfclayer.write(df, path, mode="overwrite", bounds=(0, 0, side - 1, side - 1), partitions=parts,
                       index_interval=interval)
        writes.append(_perf() - t)
        paths.append(path)
    results = lookup_bench.interval_study(spark, paths, side, cfg, rng)
    for interval, r, w in zip(cfg.intervals, results, writes):
        assert r["interval"] == interval, (r["interval"], interval)
        r["write_s"] = w
        log(f"[intervals] {interval}: index {r['index_bytes'] / 1024:.1f} KiB, cold p50 "
            f"{r['cold_socket']['p50_ms']:.2f} ms, warm random p50 {r['warm_random_socket']['p50_ms']:.3f} ms")
    return {"tiles": side * side, "results": results}


def per_size(ctx, size):
    cfg = ctx.cfg
    if cfg.intervals and size.n == Size(ctx, cfg.interval_size).n:
        df, parts = size.data()
        paths, md = size.layers()
        ctx.report["intervals"] = bench_intervals(ctx.spark, df, size.side, parts, size.dir, paths["sfclayer"], md,
                                                  cfg, ctx.rng, ctx.log)


def once(ctx):
    cfg = ctx.cfg
    if ctx.report.get("intervals") is not None or not cfg.intervals:
        return
    # interval_size is not among the sizes: a separate layer for the study
    size = Size(ctx, cfg.interval_size, "intervals")
    try:
        df, parts = size.data()
        paths, md = size.layers()
        ctx.report["intervals"] = bench_intervals(ctx.spark, df, size.side, parts, size.dir, paths["sfclayer"], md,
                                                  cfg, ctx.rng, ctx.log)
    finally:
        size.close()
