"""The in-process reader: sfclayer layers read in Python, with no JVM and no pyspark.

``sfclayer.open(path)`` (no SparkSession) returns a :class:`~sfclayer.reader.layer.LocalLayer`. Modules:
:mod:`~sfclayer.reader.source` (the ``ByteSource`` contract and local files), ``objectstore`` (S3, GCS,
Azure), :mod:`~sfclayer.reader.documents` (version documents, the newest version, manifests),
:mod:`~sfclayer.reader.datafile` (MapFile indexes and checked records), :mod:`~sfclayer.reader.bloom`,
:mod:`~sfclayer.reader.cache` (the byte-sized LRU, fork hooks), :mod:`~sfclayer.reader.version` (one
pinned version: look-ups, scans, decoded blocks), :mod:`~sfclayer.reader.deltas` (format 7 delta files), :mod:`~sfclayer.reader.pyramid` (zoom levels) and
:mod:`~sfclayer.reader.layer`.
"""

__all__ = []
