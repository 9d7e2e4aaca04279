"""Zonal statistics: per-zone statistics of a raster layer's pixels for many polygons, in one Spark query.

How it runs (GeoTrellis' ``polygonalSummary`` shape, without a cross join):

1. each zone's tiles: the tiles whose envelope meets it (its tile cover on the layer's grid);
2. the zones gathered per tile, and joined to the layer's tiles by key (``col``, ``row``), so a tile
   travels once whatever the number of zones over it;
3. each tile rasterizes only the zones over it, with GDAL's rule (rasterio's ``geometry_mask``, the
   call rasterstats makes): a pixel counts when its centre lies in the zone, or with
   ``all_touched=True`` when the zone touches it; missing pixels never count (those a tile's
   validity mask clears, else nodata and NaN values: ``sfclayer.raster``; a black pixel of a layer
   without nodata is data). Partial
   results per zone and band: count, sum, sum of squared deviations, min, max;
4. the partials merged per zone (Chan's rule for the variance), then joined back to every zone, so a
   zone over no pixel (outside the layer, or over nodata only) has count 0 and null statistics.

Needs the ``geo`` extra (shapely; pyproj with ``geometry_crs``).
"""

import json

from . import _jvm
from .errors import InvalidArgument

__all__ = ["zonal_stats", "STATS"]

#: The statistics :func:`zonal_stats` answers (``std`` is the population standard deviation, as
#: numpy's and rasterstats').
STATS = ("count", "sum", "mean", "min", "max", "std")


def _check_stats(stats):
    if isinstance(stats, str):
        stats = stats.split()
    stats = tuple(stats)
    unknown = [s for s in stats if s not in STATS]
    if unknown or not stats:
        raise InvalidArgument(f"stats: {unknown or list(stats)!r} is not known ({', '.join(STATS)})")
    return stats


def _zones_frame(spark, zones, id_column, geometry_column, geometry_crs):
    """(A DataFrame of ``id``, ``geometry`` — WKT/WKB/GeoJSON strings or WKB bytes —, its CRS or None)."""
    from pyspark.sql import DataFrame

    if isinstance(zones, DataFrame):
        for c in (id_column, geometry_column):
            if c not in zones.columns:
                raise InvalidArgument(f"zones: no column {c!r} (columns: {', '.join(zones.columns)}; "
                                      "name them with id_column= and geometry_column=)")
        return zones.select(zones[id_column].alias("id"), zones[geometry_column].alias("geometry")), geometry_crs
    from .geometry import as_shape

    crs = geometry_crs
    if hasattr(zones, "geometry") and hasattr(zones, "crs") and hasattr(zones, "index"):  # a GeoDataFrame
        if crs is None and zones.crs is not None:
            crs = zones.crs.to_wkt()
        ids = zones[id_column].tolist() if id_column in zones.columns else zones.index.tolist()
        shapes = list(zones.geometry)
    else:
        shapes = list(zones)
        ids = list(range(len(shapes)))
    rows = [(_python(i), bytes(as_shape(g, f"zones[{n}]").wkb)) for n, (i, g) in enumerate(zip(ids, shapes))]
    if not rows:
        raise InvalidArgument("zones: no zones given (a Spark DataFrame, a list or a GeoDataFrame of geometries)")
    kind = "long" if all(isinstance(i, int) for i, _ in rows) else "string"
    if kind == "string":
        rows = [(str(i), g) for i, g in rows]
    return spark.createDataFrame(rows, f"id {kind}, geometry binary"), crs


def _check_zones(zdf, zcrs, layer_crs):
    """Zones of a DataFrame checked at the door, by a job that returns the first bad zone as data.

    Parsed only inside the statistics' tasks, a bad zone would fail a task, which Spark retries (a retry
    cannot fix the input) and logs at ERROR before the user's action fails with a Python traceback from
    an executor. This pass costs a scan of the zones (parsing each geometry once more), usually small
    beside the raster's; the error names the zone's id.
    """
    from pyspark.sql.types import StringType, StructType

    def bad(batches):
        import pandas as pd

        from .errors import SfcLayerError
        from .geometry import as_shape, reproject

        for pdf in batches:
            for zid, geom in zip(pdf["id"], pdf["geometry"]):
                try:
                    shape = as_shape(geom, f"zone {_python(zid)!r}")
                    if zcrs is not None:
                        reproject(shape, zcrs, layer_crs)
                except (SfcLayerError, ValueError, TypeError) as e:
                    yield pd.DataFrame({"id": [repr(_python(zid))], "error": [str(e)]})
                    return

    schema = StructType().add("id", StringType()).add("error", StringType())
    found = zdf.mapInPandas(bad, schema).limit(1).collect()
    if found:
        raise InvalidArgument(f"zones: zone {found[0]['id']} is not a usable geometry: {found[0]['error']}")


def _envelopes(zones):
    """The union of the zones' envelopes (a read's geometry: the tiles any zone may need)."""
    import shapely

    from .geometry import as_shape

    shapes = list(zones.geometry) if hasattr(zones, "geometry") and hasattr(zones, "crs") else list(zones)
    return shapely.union_all([as_shape(g).envelope for g in shapes])


def _ids(pd, ids):
    """Zone ids as a pandas column Spark's Arrow conversion takes on pandas 2 and 3 alike: plain Python
    objects (pandas 3 would infer its Arrow-backed ``str`` dtype for string ids, which pyspark 4.x
    cannot turn into a record batch: "Cannot convert pyarrow.lib.ChunkedArray to pyarrow.lib.Array")."""
    return pd.Series(ids, dtype=object)


def _python(v):
    return v.item() if hasattr(v, "item") else v


def zonal_stats(spark, path, zones, stats=STATS, all_touched=False, id_column="id", geometry_column="geometry",
                zoom=None, geometry_crs=None):
    """Per-zone statistics of a raster layer's pixels.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
    path : str
        A raster layer (``sfclayer.ingest``) with an extent; spatial keys.
    zones : pyspark.sql.DataFrame, list or geopandas.GeoDataFrame
        A DataFrame with an id column and a geometry column (WKT, hex WKB or GeoJSON strings, or WKB
        bytes); or geometries (shapely, WKT, WKB, GeoJSON), whose ids are their positions (a
        GeoDataFrame's: its ``id_column`` if it has one, else its index; its CRS is used).
    stats : sequence of str
        Among :data:`STATS`.
    all_touched : bool
        GDAL's rule: False counts pixels whose centre is in the zone, True every pixel it touches.
    id_column, geometry_column : str
        The zones DataFrame's columns.
    zoom : int, optional
        A pyramid level of the layer.
    geometry_crs : str, optional
        The zones' CRS when not the layer's (reprojected with pyproj on the executors).

    Returns
    -------
    pyspark.sql.DataFrame
        One row per zone (per zone and ``band``, 1-based, for multiband layers), ``id_column`` and
        a column per statistic; ``count`` 0 and null statistics for a zone over no valid pixel.
        Lazy: the work runs at its action, whose progress ``with sfclayer.progress(spark, "zonal
        statistics"):`` shows (tasks done of total, rate, time left).

    Examples
    --------
    >>> sfclayer.zonal_stats(spark, "/layers/dem", ["POLYGON ((...))"], stats=["mean"])  # doctest: +SKIP
    """
    from ._extras import require

    for module in ("shapely", "pandas"):  # pandas: Spark's mapInPandas runs the zones' pixels
        require(module, "geo", "sfclayer.zonal_stats")
    from pyspark.sql import DataFrame, functions as F
    from pyspark.sql.types import BinaryType, DoubleType, IntegerType, LongType, StructType

    from . import _deploy
    from ._args import check_crs, check_path
    from .grid import TileGrid
    from .layer import read

    path = check_path(path)
    _deploy.check_executors(spark, {"shapely": "geo", "pandas": "spark", "pyarrow": "spark", "rasterio": "spark"},
                            "sfclayer.zonal_stats")
    stats = _check_stats(stats)
    if geometry_crs is not None:  # at the door: the executors reproject with it, every task would fail
        check_crs("geometry_crs", geometry_crs)
    # zones given here are parsed before the layer is read (a DataFrame's, on the executors)
    zdf, zcrs = _zones_frame(spark, zones, id_column, geometry_column, geometry_crs)
    zdf_local = None if isinstance(zones, DataFrame) else _envelopes(zones)
    if zoom is not None:
        from ._pyramid_levels import level_path

        path = level_path(spark, path, zoom)
    md = json.loads(_jvm.layer_metadata_json(spark, path, files=0))
    grid = TileGrid.from_metadata(md)
    if grid is None or not md.get("raster"):
        raise InvalidArgument(f"path: {path!r} is not a raster layer with an extent (write one with sfclayer.ingest)")
    if md["keyIndex"].get("kind") == "z3":
        raise InvalidArgument(f"path: {path!r} is a space-time layer; zonal_stats answers spatial layers "
                              "(read one time with sfclayer.read(time=...) and write it as its own layer)")
    bands = int(md["raster"].get("bands", 1))
    layer_crs = md.get("crs")
    if zcrs is not None and layer_crs is None:
        raise InvalidArgument(f"geometry_crs: {zcrs!r} given, but the layer at {path} has no CRS")
    if zdf_local is None:
        _check_zones(zdf, zcrs, layer_crs)
    id_type = zdf.schema["id"].dataType
    extent = (md["extent"]["xmin"], md["extent"]["ymin"], md["extent"]["xmax"], md["extent"]["ymax"])
    bounds = tuple(grid.bounds)

    def covers(batches):
        import pandas as pd

        from .geometry import as_shape, reproject, tile_cover
        from .grid import TileGrid

        g = TileGrid(extent, bounds)
        for pdf in batches:
            ids, cols, rows, wkbs = [], [], [], []
            for zid, geom in zip(pdf["id"], pdf["geometry"]):
                shape = as_shape(geom, f"zone {zid!r}")
                if zcrs is not None:
                    shape = reproject(shape, zcrs, layer_crs)
                wkb = shape.wkb
                for c, r in tile_cover(g, shape):
                    ids.append(zid)
                    cols.append(c)
                    rows.append(r)
                    wkbs.append(wkb)
            yield pd.DataFrame({"id": _ids(pd, ids), "col": pd.array(cols, dtype="int32"), "row": pd.array(rows, dtype="int32"),
                                "wkb": wkbs})

    pair_schema = (StructType().add("id", id_type).add("col", IntegerType()).add("row", IntegerType())
                   .add("wkb", BinaryType()))
    pairs = zdf.mapInPandas(covers, pair_schema)
    per_tile = pairs.groupBy("col", "row").agg(F.collect_list(F.struct("id", "wkb")).alias("zones"))
    # Zones given here: read only the tiles under their envelopes (a DataFrame of zones is not
    # collected for this; its tile join alone picks the tiles, after a full scan).
    where = {} if zdf_local is None or zcrs is not None else {"geometry": zdf_local}
    tiles = read(spark, path, **where)
    masks = ["mask"] if "mask" in tiles.columns else []  # the tiles' validity masks (format 5)
    tiles = tiles.select("col", "row", "pixels", "width", "height", "bands", "dtype", "nodata", *masks)
    joined = tiles.join(per_tile, ["col", "row"])

    def partials(batches):
        import numpy as np
        import pandas as pd
        import shapely
        from affine import Affine
        from rasterio.features import geometry_mask

        from .grid import TileGrid
        from .raster import to_numpy, unpack_mask

        g = TileGrid(extent, bounds)
        b0 = g.bounds

        def in_pixels(shape, t):
            """``shape`` in the layer's pixel space (x right, y up, as map units, so that GDAL's rule for
            centres on horizontal edges is the north-up source's; one unit a pixel, centres at
            half-integers), with coordinates within 1e-6 px of a half-integer put on it: an edge through
            pixel centres in the source stays exactly there (the layer's grid repeats the source's transform
            up to rounding), so GDAL's half-open rule for centres on an edge is applied as on the source
            (rasterstats), not to whichever side the last bit of a tile's origin puts them."""
            rx, ry = g.tile_width / t.width, g.tile_height / t.height

            def convert(xy):
                px = np.column_stack([(xy[:, 0] - g.xmin(b0.col_min)) / rx, (g.ymax(b0.row_min) - xy[:, 1]) / ry])
                half = np.round(px * 2) / 2
                return np.where(np.abs(px - half) < 1e-6, half, px) * [1, -1]

            return shapely.transform(shape, convert)

        for pdf in batches:
            out = {k: [] for k in ("id", "band", "n", "s", "m2", "lo", "hi")}
            for t in pdf.itertuples(index=False):
                a = to_numpy({"pixels": t.pixels, "width": t.width, "height": t.height, "bands": t.bands,
                              "dtype": t.dtype})
                mask = getattr(t, "mask", None)
                if mask is not None:  # the tile says which pixels are valid (sfclayer.raster)
                    valid = np.broadcast_to(unpack_mask(mask, t.height, t.width), a.shape)
                else:
                    valid = np.ones(a.shape, dtype=bool)
                if mask is None and a.dtype.kind == "f":
                    valid &= ~np.isnan(a)
                if mask is None and t.nodata is not None and not np.isnan(t.nodata):
                    valid &= a != a.dtype.type(t.nodata)
                # the tile's place in the layer's pixel space: integer offsets, so exact
                transform = Affine(1, 0, (t.col - b0.col_min) * t.width, 0, -1, -(t.row - b0.row_min) * t.height)
                for zone in t.zones:
                    zid, wkb = zone["id"], zone["wkb"]
                    inside = geometry_mask([in_pixels(shapely.from_wkb(wkb), t)], out_shape=(t.height, t.width),
                                           transform=transform, all_touched=all_touched, invert=True)
                    for b in range(a.shape[0]):
                        v = a[b][inside & valid[b]].astype("float64")
                        if v.size == 0:
                            continue
                        mean = v.mean()
                        out["id"].append(zid)
                        out["band"].append(b + 1)
                        out["n"].append(v.size)
                        out["s"].append(float(v.sum()))
                        out["m2"].append(float(((v - mean) ** 2).sum()))
                        out["lo"].append(float(v.min()))
                        out["hi"].append(float(v.max()))
            out["id"] = _ids(pd, out["id"])
            yield pd.DataFrame(out)

    part_schema = StructType().add("id", id_type).add("band", IntegerType()).add("n", LongType())
    for name in ("s", "m2", "lo", "hi"):
        part_schema = part_schema.add(name, DoubleType())
    parts = joined.mapInPandas(partials, part_schema)
    # Chan et al.: M2 = sum(M2_i) + sum(n_i * mean_i^2) - n * mean^2, with n_i * mean_i^2 = s_i^2 / n_i
    merged = parts.groupBy("id", "band").agg(
        F.sum("n").alias("count"), F.sum("s").alias("sum"), F.min("lo").alias("min"), F.max("hi").alias("max"),
        F.sum("m2").alias("_m2"), F.sum(F.col("s") * F.col("s") / F.col("n")).alias("_sq"))
    merged = (merged.withColumn("mean", F.col("sum") / F.col("count"))
              .withColumn("std", F.sqrt(F.greatest(F.lit(0.0), (F.col("_m2") + F.col("_sq") - F.col("sum") * F.col("mean"))
                                                   / F.col("count")))))
    every = zdf.select("id").distinct().crossJoin(spark.range(1, bands + 1).select(F.col("id").cast("int").alias("band")))
    result = every.join(merged, ["id", "band"], "left").withColumn("count", F.coalesce(F.col("count"), F.lit(0)))
    columns = [F.col("id").alias(id_column)] + ([F.col("band")] if bands > 1 else []) + [F.col(s) for s in stats]
    return result.select(*columns)
