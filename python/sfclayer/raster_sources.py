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
    carried: bool = False  # a Hadoop source on Spark Connect: tasks get its bytes in their rows (binaryFile)

    @classmethod
    def open(cls, uri, opener=None):
        """Read a raster's header with rasterio (through ``opener``, a rasterio opener, if given)."""
        import rasterio

        try:
            with rasterio.open(uri, opener=opener) if opener is not None else rasterio.open(uri) as ds:
                return cls.of_dataset(uri, ds)
        except rasterio.errors.RasterioIOError as e:
            raise InvalidInput(f"cannot open raster {uri}: {e}") from e

    @classmethod
    def of_dataset(cls, uri, ds):
        """The header of ``ds``, an open rasterio dataset of the raster at ``uri``."""
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
#
# A Spark Connect client has neither a JVM nor addFile. There Spark's binaryFile data source reads a
# Hadoop source (any Hadoop filesystem, on the cluster) as one row of bytes, which rasterio opens in
# memory (MemoryFile): once on an executor for the header, and once per task slice whose tiles need
# it, joined to the slice's row (ingestion._tile_frame). So a task holds the whole bytes of the Hadoop
# sources its slice draws from, and each slice reads them again: fit for sources of up to some
# hundred MB (binaryFile refuses files over spark.sql.sources.binaryFile.maxLength, 2 GiB).

#: URI schemes read through Hadoop's FileSystem rather than GDAL.
HADOOP_SCHEMES = ("hdfs", "viewfs", "webhdfs", "swebhdfs", "ofs", "o3fs")


def _is_hadoop(uri):
    return uri.split(":", 1)[0].lower() in HADOOP_SCHEMES if "://" in uri else False


def _shipped_name(uri):
    return uri.rstrip("/").rsplit("/", 1)[-1]


def _open_sources(spark, uris):
    """The headers of ``uris``. On Spark Connect, whose client has no JVM, Hadoop sources are read by
    Spark's ``binaryFile`` data source on the cluster and their headers by rasterio from those bytes
    (:func:`_carried_headers`); their tasks then get the bytes in their rows (module comment)."""
    from . import _jvm

    if not _jvm.transport(spark).driver_jvm:
        carried = _carried_headers(spark, [(i, u) for i, u in enumerate(uris) if _is_hadoop(u)])
        return [carried[i] if i in carried else Source.open(u) for i, u in enumerate(uris)]
    return [_open_source(spark, u) for u in uris]


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


def _contents(spark, indexed_uris):
    """A DataFrame ``(src, length, content)`` of the files ``indexed_uris`` (``(index, uri)``) name, read
    by Spark's binaryFile data source: a row per file, or more for a directory or pattern."""
    import functools

    # SQL expressions, not pyspark.sql.functions: a process may hold classic and Connect sessions both
    frames = [spark.read.format("binaryFile").load(u).selectExpr(f"{int(i)} AS src", "length", "content")
              for i, u in indexed_uris]
    return functools.reduce(lambda a, b: a.unionByName(b), frames)


def _carried_headers(spark, indexed_uris):
    """Headers of Hadoop sources on a Spark Connect session, read from their bytes on an executor: by
    index, each a :class:`Source` with ``carried`` set."""
    import json

    if not indexed_uris:
        return {}
    uris = dict(indexed_uris)
    from . import _jvm

    try:
        with _jvm.translated():
            rows = _contents(spark, indexed_uris).mapInArrow(
                lambda batches: _header_batches(uris, batches), "src int, length long, header string, error string"
            ).collect()
    except InvalidInput:
        raise
    except Exception as e:  # Spark's PATH_NOT_FOUND, as the classic path's FileNotFoundException
        if "PATH_NOT_FOUND" in str(e) or "does not exist" in str(e):
            missing = [u for u in uris.values() if u.rstrip("/").rsplit("/", 1)[-1] in str(e)] or list(uris.values())
            raise InvalidInput(f"cannot open {missing[0]}: no such file ({str(e).splitlines()[0]})") from e
        raise
    found = {}
    for r in rows:
        if r.error is not None:
            raise InvalidInput(r.error)
        if r.src in found:
            raise InvalidInput(f"cannot open {uris[r.src]}: it is a directory or a pattern (name one file)")
        header = json.loads(r.header)
        header.update(transform=tuple(header["transform"]), length=r.length, carried=True)
        found[r.src] = Source(**header)
    for i, u in uris.items():
        if i not in found:
            raise InvalidInput(f"cannot open {u}: it is a directory without files, or matches none")
    return found


def _header_batches(uris, batches):
    """``mapInArrow``'s function: each file's header (a :class:`Source` as JSON) from its bytes, or the
    error that says why it is none (raised on the client as :class:`InvalidInput`)."""
    import json

    import pyarrow as pa
    from rasterio.io import MemoryFile

    for b in batches:
        out = {"src": [], "length": [], "header": [], "error": []}
        for src, length, content in zip(*(b.column(c).to_pylist() for c in ("src", "length", "content"))):
            header = error = None
            try:
                with MemoryFile(content) as mem, mem.open() as ds:
                    header = json.dumps(dataclasses.asdict(Source.of_dataset(uris[src], ds)))
            except InvalidInput as e:
                error = str(e)
            except Exception as e:  # rasterio's: not a raster GDAL reads
                error = f"cannot open raster {uris[src]}: {e}"
            for k, v in zip(out, (src, length, header, error)):
                out[k].append(v)
        yield pa.RecordBatch.from_pydict(out, schema=pa.schema([("src", pa.int32()), ("length", pa.int64()),
                                                                ("header", pa.string()), ("error", pa.string())]))
