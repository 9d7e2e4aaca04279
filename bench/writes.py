"""Study ``writes``: the same tiles written three ways (sfclayer, Parquet plain, Parquet Z-sorted).

Alone: ``make bench STUDY=writes``. The other size-based studies (boxes, lookup) query the layers
written here; in a run with them, each size is written once (``sizes.Size.layers()``).
"""

import os

from common import _perf, dir_stats, layer_metadata, source, with_z

import sfclayer
from sfclayer import curves

WRITERS = ["sfclayer", "parquet_plain", "parquet_zsorted"]
WRITER_LABELS = {
    "sfclayer": "sfclayer",
    "parquet_plain": "Parquet, plain",
    "parquet_zsorted": "Parquet, Z-sorted (range shuffle + sort)",
}


def write_all(spark, df, side, parts, work, cfg):
    """Write the three layouts; returns (paths, {writer: stats}, the layer's metadata)."""
    n = side * side
    logical = n * cfg.tile_bytes
    paths = {w: os.path.join(work, w) for w in WRITERS}
    out = {}

    t = _perf()
    sfclayer.write(df, paths["sfclayer"], mode="overwrite", bounds=(0, 0, side - 1, side - 1),
                   partitions=parts)
    out["sfclayer"] = {"seconds": _perf() - t}

    t = _perf()
    df.write.mode("overwrite").parquet(paths["parquet_plain"])
    out["parquet_plain"] = {"seconds": _perf() - t}

    t = _perf()
    (with_z(df)
       .repartitionByRange(parts, "z").sortWithinPartitions("z")
       .write.mode("overwrite")
       .option("parquet.block.size", str(cfg.zsorted_row_group))
       .option("parquet.page.row.count.limit", str(cfg.zsorted_page_rows))
       .parquet(paths["parquet_zsorted"]))
    out["parquet_zsorted"] = {"seconds": _perf() - t}

    md = layer_metadata(spark, paths["sfclayer"])
    assert md["recordCount"] == n, md["recordCount"]
    for w in WRITERS:
        s = out[w]
        s["tiles_per_s"] = n / s["seconds"]
        s["mb_per_s"] = logical / s["seconds"] / 1e6
        s["disk_bytes"], s["files"] = dir_stats(paths[w])
    out["sfclayer"]["files"] = md["fileCount"]
    out["sfclayer"]["block_size"] = md["blockSize"]
    out["sfclayer"]["index_interval"] = md["indexInterval"]

    # The Spark Z expression agrees with sfclayer's Z key index.
    ki = curves.key_index_from_json(md["keyIndex"])
    sample = spark.read.parquet(paths["parquet_zsorted"]).select("col", "row", "z").limit(64).collect()
    bad = [(r["col"], r["row"]) for r in sample if r["z"] != ki.index(r["col"], r["row"])]
    assert not bad, f"Spark's z column disagrees with sfclayer's Z index at {bad[:4]}"
    return paths, out, md


def per_size(ctx, size):
    size.layers()


def warm_up(ctx):
    """A tiny untimed write of each layout, so the first size is not charged for JIT/class loading."""
    wdf, wparts = source(ctx.spark, 16, ctx.cfg)
    write_all(ctx.spark, wdf, 16, wparts, os.path.join(ctx.work, "warmup"), ctx.cfg)
    wdf.unpersist()
