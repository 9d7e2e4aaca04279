"""Raster tiles as Arrow record batches: what the Python side of ingest and pyramid builds hands Spark
through DataFrame operations (``mapInArrow``, ``applyInArrow``), which classic and Spark Connect
sessions run alike (no RDDs).

A tile is a tuple ``(col, row, pixels, width, height, bands, dtype, nodata, mask)``, in the column
order of :func:`sfclayer.raster.spark_schema`.
"""

from . import raster

__all__ = []

# Pixel bytes per record batch: a few tiles at a time, so a task holds little more than the tile it draws.
_BATCH_BYTES = 8 << 20


def _schema():
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(raster.spark_schema())


def tile_table(tiles, schema=None):
    """A ``pyarrow.Table`` of tile tuples (none: an empty table of the tile schema)."""
    import pyarrow as pa

    schema = schema or _schema()
    columns = list(zip(*tiles)) or [[] for _ in schema.names]
    # the system allocator: Arrow's default (mimalloc) reserves address space far beyond a large tile's bytes,
    # and Spark bounds a Python worker's address space (spark.executor.pyspark.memory)
    pool = pa.system_memory_pool()
    return pa.Table.from_arrays([pa.array(list(c), type=f.type, memory_pool=pool) for c, f in zip(columns, schema)],
                                schema=schema)


def tile_batches(tiles, max_bytes=_BATCH_BYTES):
    """Record batches of the tile tuples ``tiles`` yields, each of about ``max_bytes`` pixel bytes."""
    schema = _schema()
    chunk, size = [], 0
    for t in tiles:
        chunk.append(t)
        size += len(t[2])
        if size >= max_bytes:
            yield from tile_table(chunk, schema).to_batches()
            chunk, size = [], 0
    if chunk:
        yield from tile_table(chunk, schema).to_batches()


def rows(batch, names):
    """The rows of an Arrow record batch or table as tuples of the columns ``names``."""
    return zip(*(batch.column(n).to_pylist() for n in names))
