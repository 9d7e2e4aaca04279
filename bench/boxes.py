"""Study ``boxes``: bounding-box queries of about 0.1 %, 1 % and 10 % of a layer, sfclayer against
Z-sorted Parquet, plain Parquet and an sfclayer full scan, on the same random boxes.

Alone: ``make bench STUDY=boxes`` (writes the layers it queries).
"""

import math

import numpy as np

from common import timed_query

import sfclayer

# The comparators of the bounding-box table, in display order.
COMPARATORS = ["sfclayer", "parquet_zsorted", "parquet_plain", "sfclayer_fullscan"]
LABELS = {
    "sfclayer": "sfclayer (ranges pushed down)",
    "parquet_zsorted": "Parquet, Z-sorted",
    "parquet_plain": "Parquet, plain",
    "sfclayer_fullscan": "sfclayer full scan + Spark filter",
}


def comparators(spark, paths, key_index):
    """Query builders for a key box (c0, r0, c1, r1), by comparator name."""
    from pyspark.sql import functions as F

    def box_filter(df, c0, r0, c1, r1):
        return df.where(F.col("col").between(c0, c1) & F.col("row").between(r0, r1))

    def sfc(c0, r0, c1, r1):
        return sfclayer.read(spark, paths["sfclayer"], keys=(c0, r0, c1, r1))

    def pq_plain(c0, r0, c1, r1):
        return box_filter(spark.read.parquet(paths["parquet_plain"]), c0, r0, c1, r1)

    def pq_sorted(c0, r0, c1, r1):
        # col/row predicates, plus the box corners' Z interval: Z is monotone in col and in row.
        zlo, zhi = key_index.index(c0, r0), key_index.index(c1, r1)
        df = spark.read.parquet(paths["parquet_zsorted"]).where(F.col("z").between(zlo, zhi))
        return box_filter(df, c0, r0, c1, r1)

    def fullscan(c0, r0, c1, r1):
        # abs() of a key cannot be pushed to the source (Spark simplifies `col + 0` to `col`, so not
        # that): every file is read and Spark filters. Keys are >= 0, so the answer is the same.
        df = spark.read.format("sfclayer").load(paths["sfclayer"])
        return df.where(f"abs(col) BETWEEN {c0} AND {c1} AND abs(row) BETWEEN {r0} AND {r1}")

    return {"sfclayer": sfc, "parquet_zsorted": pq_sorted, "parquet_plain": pq_plain, "sfclayer_fullscan": fullscan}


def random_boxes(rng, side, fraction, count):
    """``count`` square key boxes covering about ``fraction`` of a side x side grid."""
    w = max(1, min(side, int(round(side * math.sqrt(fraction)))))
    out = []
    for _ in range(count):
        c0 = int(rng.integers(0, side - w + 1))
        r0 = int(rng.integers(0, side - w + 1))
        out.append((c0, r0, c0 + w - 1, r0 + w - 1))
    return w, out


def per_size(ctx, size):
    from sfclayer import curves

    spark, cfg, rng, log = ctx.spark, ctx.cfg, ctx.rng, ctx.log
    paths, md = size.layers()
    entry, side, n = size.entry, size.side, size.n
    ki = curves.key_index_from_json(md["keyIndex"])
    builders = comparators(spark, paths, ki)

    # JIT/class-loading warm-up: one untimed query per comparator.
    for name in COMPARATORS if cfg.warmup else ():
        timed_query(spark, lambda: builders[name](0, 0, 1, 1))

    entry["bbox"] = []
    for fraction in cfg.fractions:
        w, boxes = random_boxes(rng, side, fraction, cfg.boxes)
        res = {name: {"times": [], "records_read": [], "files_read": [], "bytes_read": [], "returned": []}
               for name in COMPARATORS}
        for i, box in enumerate(boxes):
            # rotate the order so no comparator always runs right after another's reads
            order = COMPARATORS[i % len(COMPARATORS):] + COMPARATORS[:i % len(COMPARATORS)]
            for name in order:
                if name == "sfclayer_fullscan" and i >= cfg.fullscan_boxes:
                    continue
                seconds, count, nbytes, metrics = timed_query(spark, lambda: builders[name](*box))
                assert count == w * w, f"{name} returned {count} tiles for box {box}, expected {w * w}"
                assert nbytes == count * cfg.tile_bytes, (name, nbytes)
                r = res[name]
                r["times"].append(seconds)
                r["records_read"].append(metrics["records_read"])
                r["files_read"].append(metrics["files_read"])
                r["bytes_read"].append(metrics.get("bytesRead", float("nan")))
                r["returned"].append(count)
        summary = {}
        for name, r in res.items():
            summary[name] = {
                "median_s": float(np.median(r["times"])),
                "times": r["times"],
                "returned": float(np.median(r["returned"])),
                "records_read": float(np.median(r["records_read"])),
                "files_read": float(np.median(r["files_read"])),
                "mb_read": float(np.median(r["bytes_read"])) / 1e6,
            }
        total_files = {"sfclayer": md["fileCount"], "sfclayer_fullscan": md["fileCount"],
                       "parquet_plain": entry["writes"]["parquet_plain"]["files"],
                       "parquet_zsorted": entry["writes"]["parquet_zsorted"]["files"]}
        for name in COMPARATORS:
            summary[name]["files_total"] = total_files[name]
        entry["bbox"].append({"fraction": fraction, "box_side": w, "tiles": w * w,
                              "actual_fraction": w * w / n, "results": summary})
        log(f"[{n} tiles] bbox {fraction:.1%}: " + ", ".join(
            f"{name} {summary[name]['median_s'] * 1e3:.0f} ms" for name in COMPARATORS))
