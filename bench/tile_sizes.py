"""Study ``tiles``: small layers of growing tiles (2 to 128 KiB), warm and cold look-ups per
transport (Layer.get over the socket, raw socket, py4j, batches).

Alone: ``make bench STUDY=tiles``.
"""

import dataclasses
import os
import shutil

import lookup_bench
from common import grid_side, source

import sfclayer


def bench_tile_sizes(spark, cfg, work, rng, log):
    """The tile-size study: small layers of growing tiles, warm and cold look-ups per transport."""
    side = grid_side(cfg.tile_study_tiles)
    out = []
    for tile_side in cfg.tile_study_sides:
        c = dataclasses.replace(cfg, tile_side=tile_side)
        df, parts = source(spark, side, c)
        path = os.path.join(work, f"tiles-{c.tile_bytes}")
        sfclayer.write(df, path, mode="overwrite", bounds=(0, 0, side - 1, side - 1), partitions=parts)
        df.unpersist()
        r = lookup_bench.tile_size_point(spark, path, side, c.tile_bytes, cfg, rng)
        shutil.rmtree(path, ignore_errors=True)
        out.append(r)
        log(f"[tile size] {c.tile_bytes} B: Layer.get warm p50 {r['warm_python']['p50_ms']:.3f} ms, "
            f"py4j {r['warm_py4j']['p50_ms']:.3f} ms")
    return {"tiles": side * side, "results": out}


def once(ctx):
    if ctx.cfg.tile_study_sides:
        ctx.report["tile_sizes"] = bench_tile_sizes(ctx.spark, ctx.cfg, ctx.work, ctx.rng, ctx.log)
