"""The benchmark studies, one line each: ``make bench STUDY=<name>`` runs one, ``make bench`` all.

A study is a module under bench/. Either it plugs into the shared run (``per_size(ctx, size)``
and/or ``once(ctx)``, see common.py; its figures go into ``ctx.report`` and report.py renders them),
or it stands alone with a ``main(argv)`` (run in its own process as ``python bench/<module>.py``;
it writes its own block of RESULTS.md with ``report.write_section``). A study whose module is not
there yet is skipped with a note, so a line can land before its module does.
"""

import importlib
import importlib.util
import os

HERE = os.path.dirname(os.path.abspath(__file__))

# name: (module under bench/, what it measures)
STUDIES = {
    "writes": ("writes", "write throughput: sfclayer, Parquet plain, Parquet Z-sorted"),
    "boxes": ("boxes", "bounding-box queries against Parquet and a full scan"),
    "lookup": ("points", "point look-ups: cold, warm, socket, py4j, through Spark; get_many batches"),
    "tiles": ("tile_sizes", "look-ups by tile size (2 to 128 KiB), per transport"),
    "intervals": ("intervals", "the MapFile index interval's look-up trade-off"),
    "updates": ("updates", "appends, upserts, deletes, compaction (issue 10)"),
    "lookups": ("lookups", "sfclayer.open, driver box queries, random look-ups over many files (local and HDFS), cold opens (issue 16)"),
    "spark_path": ("spark_path", "the Spark path against Spark's floor, count push-down, pruning by file statistics (issue 16)"),
    "ingest": ("ingest", "GeoTIFF ingest and pyramids (issue 13)"),
    "serving": ("serving", "the tile server under load (issue 14)"),
    "integrity": ("integrity", "the cost of checking every record: format 3 vs 2, scans and look-ups (issue 11)"),
    "bloom": ("bloom", "bloom filters per data file: look-up misses cold and warm, with and without (issue 16)"),
    "s3": ("s3", "S3 (moto through S3A, 20 ms per request) against local files: write, append, bbox, look-ups; Parquet on S3 (issue 28)"),
    "connect": ("connect", "Spark Connect: look-ups and box queries from a Connect client through sfclayer's relation plugin, against the Spark-job path and classic Layer.get (issue 21)"),
    "compression": ("compression", "codecs x rasters: size, codec speed, look-ups; GDAL's tiled GeoTIFF alongside (issue 23)"),
    "cog": ("cog", "a COG read with rasterio against the same raster as a layer, JVM look-up path and in-process reader; S3 rows on moto (issue 33)"),
    "object_stores": ("object_stores", "obstore against s3fs for the in-process reader: requests and latency of a cold look-up on moto with 20 ms per request (issue 33)"),
    "streaming": ("streaming", "the Structured Streaming sink: micro-batches of 1,000 tiles of 1 KiB, tiles/s and the commit's share (issue 38)"),
    "metadata": ("metadata", "metadata at scale: open, plan, one-tile append and heap by number of file entries, 10 to 10^6 (issue 20)"),
}


def available(name):
    """Whether the study's module exists under bench/."""
    return os.path.exists(os.path.join(HERE, STUDIES[name][0] + ".py"))


def load(name):
    """The study's module, or None when it is not there yet."""
    if name not in STUDIES:
        raise KeyError(f"unknown study {name!r} (expected one of {', '.join(STUDIES)})")
    return importlib.import_module(STUDIES[name][0]) if available(name) else None


def is_shared(module):
    """Whether the study plugs into the shared run (else it runs alone through its main)."""
    return hasattr(module, "per_size") or hasattr(module, "once")
