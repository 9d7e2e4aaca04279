"""Descriptions for map clients: TileJSON 3.0 and the OGC API – Tiles core documents.

OGC API – Tiles addresses a tile as ``{tileMatrix}/{tileRow}/{tileCol}`` (row before column), XYZ
as ``{z}/{x}/{y}``; both reach the same ``(col, row)`` key of a layer on a standard tile matrix set
(morecantile knows their definitions).
"""

import functools

__all__ = ["lonlat_bounds", "tilejson", "tile_matrix_sets", "tile_matrix_set", "tileset", "collection",
           "landing", "conformance", "TILES_CONFORMANCE"]

TILES_CONFORMANCE = [
    "http://www.opengis.net/spec/ogcapi-common-1/1.0/conf/core",
    "http://www.opengis.net/spec/ogcapi-tiles-1/1.0/conf/core",
    "http://www.opengis.net/spec/ogcapi-tiles-1/1.0/conf/tileset",
    "http://www.opengis.net/spec/ogcapi-tiles-1/1.0/conf/tilesets-list",
    "http://www.opengis.net/spec/ogcapi-tiles-1/1.0/conf/geodata-tilesets",
    "http://www.opengis.net/spec/ogcapi-tiles-1/1.0/conf/png",
]

_WORLD = [-180.0, -85.0511287798066, 180.0, 85.0511287798066]


@functools.lru_cache(maxsize=64)
def _lonlat(extent, crs):
    if extent is None or not crs:
        return None
    if crs.upper() in ("EPSG:4326", "OGC:CRS84", "CRS84", "WGS84"):
        return [float(v) for v in extent]
    try:
        from pyproj import Transformer

        t = Transformer.from_crs(crs, "EPSG:4326", always_xy=True)
        return [float(v) for v in t.transform_bounds(*extent, densify_pts=21)]
    except Exception:  # an unknown CRS: the layer still serves, without geographic bounds
        return None


def lonlat_bounds(grid):
    """The layer's extent in longitude/latitude, or None when it has no (known) CRS."""
    return _lonlat(tuple(grid.extent) if grid.extent else None, grid.crs)


def tilejson(name, served, base_url, fmt="png", query=""):
    """TileJSON 3.0.0 for a served layer or pyramid."""
    grid = served.base.grid
    try:  # the data's bounds, not the key bounds: a layer ingested on WebMercatorQuad spans the world
        from .tiler import data_bounds

        bounds = _lonlat(tuple(data_bounds(served)), grid.crs)
    except Exception:  # a layer without a tile size: its extent still says where it is
        bounds = None
    bounds = bounds or lonlat_bounds(grid) or _WORLD
    zooms = served.zooms
    center = [(bounds[0] + bounds[2]) / 2, (bounds[1] + bounds[3]) / 2, zooms[0]]
    out = {
        "tilejson": "3.0.0",
        "name": name,
        "scheme": "xyz",
        "tiles": [f"{base_url}layers/{name}/tiles/{{z}}/{{x}}/{{y}}.{fmt}{query}"],
        "minzoom": zooms[0],
        "maxzoom": zooms[-1],
        "bounds": bounds,
        "center": center,
        "version": f"1.0.{served.base.version or 0}",
        "attribution": "",
    }
    if grid.tms:
        out["tileMatrixSet"] = grid.tms
    return out


def _tms(tms_id):
    import morecantile

    return morecantile.tms.get(tms_id)


def tile_matrix_sets(base_url, ids):
    """``/tileMatrixSets``: the sets the served layers use."""
    out = []
    for tms_id in sorted(ids):
        tms = _tms(tms_id)
        out.append({
            "id": tms_id,
            "title": tms.title or tms_id,
            "uri": getattr(tms, "uri", None),
            "links": [{"href": f"{base_url}tileMatrixSets/{tms_id}", "rel": "self",
                       "type": "application/json", "title": f"{tms_id} definition"}],
        })
    return {"tileMatrixSets": out}


def tile_matrix_set(tms_id):
    """The OGC 2D Tile Matrix Set 2.0 document of ``tms_id`` (morecantile's).

    Not readable by GDAL before 3.8 (Debian 12's 3.6 OGCAPI driver reads 1.0 documents only, and
    a document with both versions' members is refused by morecantile); see the README.
    """
    import json

    return json.loads(_tms(tms_id).model_dump_json(exclude_none=True, by_alias=True))


def tileset(name, served, base_url):
    """``/collections/{name}/tiles/{tms}``: one tileset, its limits per tile matrix."""
    tms_id = served.base.grid.tms
    limits = []
    for z in served.zooms:
        g = served.levels[z].grid
        limits.append({"tileMatrix": str(z), "minTileRow": g.row_min, "maxTileRow": g.row_max,
                       "minTileCol": g.col_min, "maxTileCol": g.col_max})
    bounds = lonlat_bounds(served.base.grid)
    out = {
        "title": name,
        "dataType": "map",
        "crs": _tms(tms_id).crs.srs if hasattr(_tms(tms_id).crs, "srs") else str(_tms(tms_id).crs),
        "tileMatrixSetURI": getattr(_tms(tms_id), "uri", None),
        "tileMatrixSetLimits": limits,
        "links": [
            {"href": f"{base_url}collections/{name}/tiles/{tms_id}", "rel": "self", "type": "application/json"},
            {"href": f"{base_url}tileMatrixSets/{tms_id}", "rel": "http://www.opengis.net/def/rel/ogc/1.0/tiling-scheme",
             "type": "application/json"},
            {"href": f"{base_url}collections/{name}/tiles/{tms_id}/{{tileMatrix}}/{{tileRow}}/{{tileCol}}",
             "rel": "item", "type": "image/png", "templated": True},
        ],
    }
    if bounds:
        out["boundingBox"] = {"lowerLeft": bounds[:2], "upperRight": bounds[2:],
                              "crs": "http://www.opengis.net/def/crs/OGC/1.3/CRS84"}
    return out


def collection(name, served, base_url):
    """``/collections/{name}``."""
    out = {"id": name, "title": name, "links": [
        {"href": f"{base_url}collections/{name}", "rel": "self", "type": "application/json"}]}
    bounds = lonlat_bounds(served.base.grid)
    if bounds:
        out["extent"] = {"spatial": {"bbox": [bounds]}}
    if served.base.grid.tms:
        out["links"].append({"href": f"{base_url}collections/{name}/tiles", "type": "application/json",
                             "rel": "http://www.opengis.net/def/rel/ogc/1.0/tilesets-map"})
    return out


def landing(base_url):
    """The OGC API landing page (``/?f=json``)."""
    links = [("", "self", "this document"), ("conformance", "conformance", "conformance classes"),
             ("collections", "data", "the served layers"), ("tileMatrixSets",
             "http://www.opengis.net/def/rel/ogc/1.0/tiling-schemes", "tile matrix sets"),
             ("layers", "alternate", "the served layers (sfclayer JSON)")]
    return {"title": "sfclayer tile server", "links": [
        {"href": f"{base_url}{p}", "rel": rel, "type": "application/json", "title": t} for p, rel, t in links]}


def conformance():
    return {"conformsTo": TILES_CONFORMANCE}
