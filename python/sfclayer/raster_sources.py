"""Raster sources for :func:`sfclayer.ingest`: a source's header (:class:`Source`, its footprint, no
pixels), and sources on Hadoop filesystems, which GDAL cannot read.

Examples
--------
>>> from sfclayer.raster_sources import Source
>>> s = Source("x.tif", "EPSG:4326", (0.5, 0.0, -180.0, 0.0, -0.5, 90.0), 720, 360, 1, "uint8")
>>> s.bounds
(-180.0, -90.0, 180.0, 90.0)
"""

import dataclasses

from .errors import InvalidArgument, InvalidInput

__all__ = ["Source", "HADOOP_SCHEMES"]


@dataclasses.dataclass(frozen=True)
class Source:
    """A source raster's header: what the driver knows of it (no pixels)."""

    uri: str
    crs: str  # WKT
    transform: tuple  # affine a, b, c, d, e, f
    width: int
    height: int
    bands: int
    dtype: str
    nodata: float = None
    shipped: str = None  # a Hadoop source: its SparkFiles name on executors
    length: int = None  # a Hadoop source: its size in bytes

    @classmethod
    def open(cls, uri, opener=None):
        """Read a raster's header with rasterio (through ``opener``, a rasterio opener, if given)."""
        import rasterio

        try:
            with rasterio.open(uri, opener=opener) if opener is not None else rasterio.open(uri) as ds:
                if ds.crs is None:
                    raise InvalidInput(f"raster {uri} has no CRS; sfclayer cannot place it on a grid")
                t = ds.transform
                if t.b != 0 or t.d != 0 or t.a <= 0 or t.e >= 0:
                    raise InvalidInput(f"raster {uri} is rotated or not north-up (transform {tuple(t)[:6]}); "
                                       "warp it north-up first (gdalwarp)")
                dtypes = set(ds.dtypes)
                if len(dtypes) != 1:
                    raise InvalidInput(f"raster {uri} has bands of different types {sorted(dtypes)}")
                return cls(str(uri), ds.crs.to_wkt(), tuple(t)[:6], ds.width, ds.height, ds.count,
                           ds.dtypes[0], ds.nodata)
        except rasterio.errors.RasterioIOError as e:
            raise InvalidInput(f"cannot open raster {uri}: {e}") from e

    @property
    def affine(self):
        from affine import Affine

        return Affine(*self.transform)

    @property
    def bounds(self):
        """``(left, bottom, right, top)`` in the source's CRS."""
        a, _, c, _, e, f = self.transform
        return (c, f + e * self.height, c + a * self.width, f)


# --------------------------------------------------------------------------------------------------
# Sources on Hadoop filesystems
#
# GDAL (in rasterio's wheels) cannot read hdfs://, and an executor's Python worker has no JVM to ask.
# So the driver reads a Hadoop source's header through its JVM's Hadoop FileSystem (a rasterio
# opener: positioned reads of a few KB), and executors read a local copy that Spark fetches once
# per executor with SparkContext.addFile (streamed to the executor's disk by the Hadoop client):
# windowed reads from it keep executor memory bounded as for local files, at the cost of one copy of
# the source on each executor's local disk.

#: URI schemes read through Hadoop's FileSystem rather than GDAL.
HADOOP_SCHEMES = ("hdfs", "viewfs", "webhdfs", "swebhdfs", "ofs", "o3fs")


def _is_hadoop(uri):
    return uri.split(":", 1)[0].lower() in HADOOP_SCHEMES if "://" in uri else False


def _shipped_name(uri):
    return uri.rstrip("/").rsplit("/", 1)[-1]


def _open_source(spark, uri):
    if not _is_hadoop(uri):
        return Source.open(uri)
    from . import _jvm

    length, _ = _jvm.hadoop_file_status(spark, uri)
    return dataclasses.replace(Source.open(uri, opener=_jvm.hadoop_opener(spark)),
                               shipped=_shipped_name(uri), length=length)


def _ship(spark, srcs):
    """Add each Hadoop source to the session's files (executors fetch them by file name). Other sources
    are opened by path on the executors: nothing to ship (and no SparkContext needed: Spark Connect)."""
    if all(s.shipped is None for s in srcs):
        return
    sc = spark.sparkContext
    known = {}
    for uri in list(getattr(sc, "listFiles", [])):
        known.setdefault(_shipped_name(uri), uri)
    for s in srcs:
        if s.shipped is None:
            continue
        other = known.get(s.shipped)
        if other is not None and other.rstrip("/") != s.uri.rstrip("/"):
            raise InvalidArgument(f"source {s.uri}: executors get Hadoop sources by file name, and this Spark "
                                  f"session already ships {other} as {s.shipped!r}; rename or copy one of them")
        if other is None:
            sc.addFile(s.uri)
            known[s.shipped] = s.uri


def _dataset_path(src):
    """Where an executor opens ``src``: its URI, or the local copy of a Hadoop source."""
    if src.shipped is None:
        return src.uri
    import os

    from pyspark import SparkFiles

    local = SparkFiles.get(src.shipped)
    size = os.path.getsize(local)
    if size != src.length:
        raise InvalidInput(f"the executor's copy of {src.uri} has {size} bytes and the source {src.length}: it "
                           "changed after this Spark session first shipped it; ingest it under another name or "
                           "from a new session")
    return local
