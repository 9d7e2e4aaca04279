"""Geometries as queries: the tiles whose envelope meets a polygon, line or point.

A query geometry may be a shapely geometry, WKT, WKB (bytes or hexadecimal), GeoJSON (a dict, its
text, or anything with ``__geo_interface__``); Polygon, MultiPolygon, LineString, MultiLineString,
Point, MultiPoint or a collection of them. Given in another CRS (``geometry_crs``), it is reprojected
into the layer's with pyproj, its edges first split so none spans more than 1/256 of its extent (a
straight edge in one CRS is a curve in another).

The JVM computes the tile cover (``io.sfclayer.layer.GeometryCover``, one rule for Spark reads,
driver queries and the SQL predicate); this module only parses and reprojects, and hands it over as
hexadecimal WKB, which carries the doubles exactly.

Needs the ``geo`` extra (``pip install sfclayer[geo]``: shapely, pyproj).

Examples
--------
>>> as_shape("POINT (1 2)").wkt
'POINT (1 2)'
>>> as_shape({"type": "LineString", "coordinates": [[0, 0], [1, 1]]}).geom_type
'LineString'
"""

import json

from .errors import InvalidArgument

__all__ = ["as_shape", "reproject", "query_wkb", "tile_cover"]

#: How finely edges are split before reprojection: each edge at most this share of the extent.
SEGMENTS = 256


def _shapely():
    try:
        import shapely
    except ImportError as e:  # the geo extra
        raise InvalidArgument("geometry: shapely is not installed (pip install 'sfclayer[geo]')") from e
    return shapely


def as_shape(geometry, name="geometry"):
    """A shapely geometry from any of the accepted forms.

    Parameters
    ----------
    geometry : shapely geometry, str, bytes, dict or object with ``__geo_interface__``
        WKT, WKB (bytes or hex), GeoJSON (dict or text).
    name : str
        The argument's name in error messages.

    Returns
    -------
    shapely.Geometry

    Raises
    ------
    InvalidArgument
        If it is none of these, is empty, or is an invalid polygon (shapely.make_valid repairs one).
    """
    shapely = _shapely()
    g = None
    try:
        if isinstance(geometry, shapely.Geometry):
            g = geometry
        elif isinstance(geometry, (bytes, bytearray, memoryview)):
            g = shapely.from_wkb(bytes(geometry))
        elif isinstance(geometry, str):
            text = geometry.strip()
            if text.startswith("{"):
                g = shapely.geometry.shape(_geojson(json.loads(text)))
            elif text and all(c in "0123456789abcdefABCDEF" for c in text):
                g = shapely.from_wkb(bytes.fromhex(text))
            else:
                g = shapely.from_wkt(text)
        elif isinstance(geometry, dict) or hasattr(geometry, "__geo_interface__"):
            gi = geometry if isinstance(geometry, dict) else geometry.__geo_interface__
            g = shapely.geometry.shape(_geojson(gi))
    except (shapely.errors.ShapelyError, ValueError, TypeError, KeyError, AttributeError) as e:
        shown = repr(geometry)
        raise InvalidArgument(f"{name}: {shown[:80]}{'...' if len(shown) > 80 else ''} is not a geometry "
                              f"({e}) (shapely geometry, WKT, WKB or GeoJSON)") from None
    if g is None:
        raise InvalidArgument(f"{name}: {type(geometry).__name__} is not a geometry "
                              "(shapely geometry, WKT, WKB or GeoJSON)")
    if g.is_empty:
        raise InvalidArgument(f"{name}: {g.wkt[:80]} is empty (give a geometry with coordinates)")
    if shapely.get_dimensions(g) == 2 and not g.is_valid:
        raise InvalidArgument(f"{name}: {g.wkt[:80]}... is not valid ({shapely.is_valid_reason(g)}) "
                              "(repair it, e.g. with shapely.make_valid)")
    return g


def _geojson(obj):
    """The geometry of a GeoJSON Feature (or the object itself)."""
    if isinstance(obj, dict) and obj.get("type") == "Feature":
        return obj["geometry"]
    return obj


def reproject(shape, from_crs, to_crs):
    """``shape`` moved from ``from_crs`` to ``to_crs`` (pyproj, x/y order), edges split first; the
    same shape when either CRS is None or both are equal."""
    if from_crs is None or to_crs is None:
        return shape
    from ._extras import require

    pyproj = require("pyproj", "geo", "geometry_crs (reprojecting a query geometry)")

    src, dst = pyproj.CRS.from_user_input(from_crs), pyproj.CRS.from_user_input(to_crs)
    if src == dst:
        return shape
    shapely = _shapely()
    xmin, ymin, xmax, ymax = shape.bounds
    span = max(xmax - xmin, ymax - ymin)
    if span > 0 and shape.geom_type not in ("Point", "MultiPoint"):
        shape = shapely.segmentize(shape, span / SEGMENTS)
    t = pyproj.Transformer.from_crs(src, dst, always_xy=True)
    return shapely.transform(shape, lambda xy: _stacked(t.transform(xy[:, 0], xy[:, 1])))


def _stacked(xy):
    import numpy as np

    out = np.column_stack(xy)
    if not np.isfinite(out).all():
        raise InvalidArgument("geometry_crs: the geometry does not reproject into the layer's CRS "
                              "(some coordinates fall outside its area of use)")
    return out


def query_wkb(geometry, geometry_crs=None, layer_crs=None):
    """The hexadecimal WKB the connector's ``geometry`` read option and box queries take.

    Parameters
    ----------
    geometry
        See :func:`as_shape`.
    geometry_crs : str or pyproj.CRS, optional
        The geometry's CRS when not the layer's.
    layer_crs : str, optional
        The layer's CRS (its metadata's ``crs``); needed with ``geometry_crs``.

    Returns
    -------
    str
    """
    shape = as_shape(geometry)
    if geometry_crs is not None:
        if layer_crs is None:
            raise InvalidArgument(f"geometry_crs: {geometry_crs!r} given, but the layer has no CRS to "
                                  "reproject into (give the geometry in the layer's coordinates)")
        shape = reproject(shape, geometry_crs, layer_crs)
    return _shapely().to_wkb(shape, hex=True)


def tile_cover(grid, shape):
    """The tiles ``(col, row)`` whose closed envelope meets ``shape``, in Python (a brute-force twin of
    the JVM's cover, for zonal statistics' tile join and tests).

    Parameters
    ----------
    grid : sfclayer.grid.TileGrid
    shape : shapely.Geometry
        In the grid's coordinates.

    Returns
    -------
    list of tuple
    """
    import numpy as np

    shapely = _shapely()
    kb = grid.key_box(*shape.bounds)
    if kb is None:
        return []
    cols = np.arange(kb.col_min, kb.col_max + 1)
    rows = np.arange(kb.row_min, kb.row_max + 1)
    cc, rr = np.meshgrid(cols, rows)
    cc, rr = cc.ravel(), rr.ravel()
    boxes = shapely.box(grid.xmin(cc), grid.ymin(rr), grid.xmax(cc), grid.ymax(rr))
    shapely.prepare(shape)
    hit = shapely.intersects(boxes, shape)
    return list(zip(cc[hit].tolist(), rr[hit].tolist()))
