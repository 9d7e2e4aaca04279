"""A GeoTrellis layer's georeferencing as sfclayer raster write options.

Pure functions of the ``metadata`` object of a GeoTrellis attribute document
(``_attributes/<name>___<zoom>___metadata.json``: ``cellType``, ``layoutDefinition`` with ``extent``
and ``tileLayout``, ``extent``, ``crs`` as a proj4 string, ``bounds``), used by
:func:`sfclayer.geotrellis.convert` so a converted layer keeps the keys, CRS, extent and nodata, and
is a tile matrix layer (tile server, pyramids) when GeoTrellis' layout is exactly one.

- CRS: ``EPSG:<code>`` when the proj4 string is an EPSG CRS (GDAL's identification, as
  :func:`sfclayer.ingest` names CRSs), else its WKT.
- Tile matrix: ``WebMercatorQuad`` or ``WorldCRS84Quad`` and its zoom when the layout has that
  matrix's CRS, tile counts, tile size and extent (GeoTrellis' ``ZoomedLayoutScheme(WebMercator, 256)``
  is WebMercatorQuad; its LatLng scheme, 2^z × 2^z tiles, is no OGC matrix).
- Key bounds: the whole layout (``0, 0, layoutCols - 1, layoutRows - 1``, grown to hold keys outside
  it), with GeoTrellis' layout extent, so every tile covers the same box as in GeoTrellis.
- Cell type: numpy dtype and the value missing cells hold (docs/FORMAT.md "Raster layers").

Examples
--------
>>> md = {"cellType": "int16ud-9999", "crs": "+proj=utm +zone=33 +datum=WGS84 +units=m +no_defs ",
...       "layoutDefinition": {"extent": {"xmin": 0.0, "ymin": 0.0, "xmax": 80.0, "ymax": 60.0},
...                            "tileLayout": {"layoutCols": 8, "layoutRows": 6, "tileCols": 16, "tileRows": 16}},
...       "bounds": {"minKey": {"col": 1, "row": 1}, "maxKey": {"col": 6, "row": 4}}}
>>> opts = layout_options(md)
>>> opts["crs"], opts["bounds"], opts["extent"]
('EPSG:32633', (0, 0, 7, 5), (0.0, 0.0, 80.0, 60.0))
>>> opts["raster"]["dtype"], opts["raster"]["nodata"], opts["raster"]["tms"]
('int16', -9999.0, None)
"""

import datetime as _dt
import math
import re

from .errors import CorruptLayer, UnsupportedFormat

__all__ = ["TILE_MATRIX_SETS", "cell_type", "crs_name", "tile_matrix", "layout_options"]

#: The OGC tile matrix sets a GeoTrellis layout is recognised as (morecantile names).
TILE_MATRIX_SETS = ("WebMercatorQuad", "WorldCRS84Quad")

# GeoTrellis' cell type names: geotrellis.raster.CellType.fromName
_CELL_TYPE = re.compile(r"^(bool|int8|uint8|int16|uint16|int32|float32|float64)(raw|ud(.+))?$")
_DTYPE = {"bool": "uint8"}  # bit cells are read as uint8 0/1
# the constant nodata of the ND types (float types: NaN)
_CONSTANT_NODATA = {"int8": -128.0, "uint8": 0.0, "int16": -32768.0, "uint16": 0.0, "int32": -2147483648.0,
                    "float32": math.nan, "float64": math.nan}
_RANGE = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767), "uint16": (0, 65535),
          "int32": (-2147483648, 2147483647)}
# Extents and tile matrices agree to this fraction of a tile (float noise, nothing a layout differs by).
_TOLERANCE = 1e-9


def cell_type(name):
    """The numpy dtype and nodata of a GeoTrellis cell type.

    Parameters
    ----------
    name : str
        GeoTrellis' name: ``int16`` (constant nodata), ``int16raw`` (none), ``int16ud-9999``
        (user-defined), ``bool``, ``float32``...

    Returns
    -------
    tuple
        ``(dtype, nodata)``: a numpy type name (``bool`` → ``uint8``) and the value missing cells hold
        (a float, NaN for float types' constant nodata; None for raw types and bits).

    Raises
    ------
    UnsupportedFormat
        If the name is no GeoTrellis cell type.

    Examples
    --------
    >>> cell_type("int8"), cell_type("uint16raw"), cell_type("uint8ud255"), cell_type("bool")
    (('int8', -128.0), ('uint16', None), ('uint8', 255.0), ('uint8', None))
    >>> cell_type("float32")
    ('float32', nan)
    """
    m = _CELL_TYPE.match(str(name))
    if not m:
        raise UnsupportedFormat(f"GeoTrellis cell type {name!r} is not one sfclayer reads (bool, int8, uint8, int16, "
                                f"uint16, int32, float32, float64, each plain, raw or ud<value>)")
    base, variant, ud = m.groups()
    dtype = _DTYPE.get(base, base)
    if base == "bool" or variant == "raw":
        return dtype, None
    if ud is None:
        return dtype, _CONSTANT_NODATA[base]
    try:
        value = float(ud)
    except ValueError:
        raise UnsupportedFormat(f"GeoTrellis cell type {name!r}: user-defined nodata {ud!r} is not a number") from None
    if base in _RANGE:
        lo, hi = _RANGE[base]
        if not (value.is_integer() and lo <= value <= hi):
            raise UnsupportedFormat(f"GeoTrellis cell type {name!r}: nodata {ud} is not a {base} value ({lo}..{hi})")
    return dtype, value


def crs_name(proj4):
    """sfclayer's name for a GeoTrellis CRS: ``EPSG:<code>`` when the proj4 string is one, else WKT.

    Examples
    --------
    >>> crs_name("+proj=longlat +datum=WGS84 +no_defs "), crs_name("+proj=utm +zone=33 +datum=WGS84 +units=m +no_defs")
    ('EPSG:4326', 'EPSG:32633')
    >>> crs_name("+proj=sinu +lon_0=0 +x_0=0 +y_0=0 +R=6371007.181 +units=m +no_defs").startswith("PROJCS")
    True
    """
    from rasterio.crs import CRS
    from rasterio.errors import CRSError

    try:
        crs = CRS.from_proj4(proj4)
    except CRSError as e:
        raise CorruptLayer(f"GeoTrellis crs {proj4!r} is not a proj4 string GDAL reads: {e}") from None
    code = crs.to_epsg()
    return f"EPSG:{code}" if code is not None else crs.to_wkt()


def tile_matrix(crs, layout):
    """The OGC tile matrix a GeoTrellis layout is exactly, or None.

    Parameters
    ----------
    crs : str
        The layer's CRS as :func:`crs_name` names it.
    layout : dict
        The metadata's ``layoutDefinition``: ``extent`` and ``tileLayout``.

    Returns
    -------
    tuple or None
        ``(tile matrix set, zoom)``, e.g. ``("WebMercatorQuad", 3)``.

    Examples
    --------
    >>> w = 20037508.342789244
    >>> tile_matrix("EPSG:3857", {"extent": {"xmin": -w, "ymin": -w, "xmax": w, "ymax": w},
    ...             "tileLayout": {"layoutCols": 8, "layoutRows": 8, "tileCols": 256, "tileRows": 256}})
    ('WebMercatorQuad', 3)
    >>> tile_matrix("EPSG:4326", {"extent": {"xmin": -180, "ymin": -90, "xmax": 180, "ymax": 90},
    ...             "tileLayout": {"layoutCols": 8, "layoutRows": 8, "tileCols": 256, "tileRows": 256}}) is None
    True
    """
    import morecantile

    cols, rows, tw, th = _tile_layout(layout)
    extent = _extent(layout["extent"])
    for name in TILE_MATRIX_SETS:
        t = morecantile.tms.get(name)
        if not _same_crs(crs, _tms_crs(t)):
            continue
        for m in t.tileMatrices:
            if (int(m.matrixWidth), int(m.matrixHeight), int(m.tileWidth), int(m.tileHeight)) != (cols, rows, tw, th):
                continue
            z = int(m.id)
            if _close(extent, _tms_extent(t, z), (extent[2] - extent[0]) / cols, (extent[3] - extent[1]) / rows):
                return name, z
    return None


def layout_options(metadata, bands=1):
    """sfclayer write options (keywords of :func:`sfclayer.write`) for a converted GeoTrellis layer.

    Parameters
    ----------
    metadata : dict
        The ``metadata`` object of the layer's GeoTrellis attribute document.
    bands : int
        Bands per tile (GeoTrellis keeps this in the tiles, not the metadata).

    Returns
    -------
    dict
        ``bounds``, ``extent``, ``crs``, ``raster`` (``tileWidth``, ``tileHeight``, ``bands``, ``dtype``,
        ``nodata``, ``tms``, ``zoom``) and, for space-time layers, ``time_bounds`` (UTC datetimes, inclusive).
        With a tile matrix, bounds, extent and CRS are the matrix's (as :func:`sfclayer.ingest` writes them).

    Raises
    ------
    CorruptLayer
        If a field is missing or the layout is empty.
    UnsupportedFormat
        If the cell type is unknown.
    """
    try:
        layout = metadata["layoutDefinition"]
        cols, rows, tw, th = _tile_layout(layout)
        x0, y0, x1, y1 = _extent(layout["extent"])
        dtype, nodata = cell_type(metadata["cellType"])
        crs = crs_name(metadata["crs"])
        bounds = metadata.get("bounds") or {}
        lo, hi = bounds.get("minKey"), bounds.get("maxKey")
    except (KeyError, TypeError, ValueError) as e:
        raise CorruptLayer(f"GeoTrellis layer metadata: {e!r} is missing or malformed (layoutDefinition, cellType, "
                           f"crs, bounds)") from None
    nodata = None if nodata is None else ("NaN" if math.isnan(nodata) else nodata)
    raster = {"tileWidth": tw, "tileHeight": th, "bands": int(bands), "dtype": dtype, "nodata": nodata,
              "tms": None, "zoom": None}
    out = {}
    matrix = tile_matrix(crs, layout)
    if matrix is not None:
        import morecantile

        t = morecantile.tms.get(matrix[0])
        raster["tms"], raster["zoom"] = matrix
        out.update(bounds=(0, 0, cols - 1, rows - 1), extent=_tms_extent(t, matrix[1]), crs=_tms_crs(t))
    else:
        # the layout, grown by whole tiles to hold keys outside it (GeoTrellis allows them)
        c0, r0 = min(0, int(lo["col"])) if lo else 0, min(0, int(lo["row"])) if lo else 0
        c1, r1 = max(cols - 1, int(hi["col"])) if hi else cols - 1, max(rows - 1, int(hi["row"])) if hi else rows - 1
        w, h = (x1 - x0) / cols, (y1 - y0) / rows
        extent = (x0 + c0 * w if c0 else x0, y1 - (r1 + 1) * h if r1 != rows - 1 else y0,
                  x0 + (c1 + 1) * w if c1 != cols - 1 else x1, y1 - r0 * h if r0 else y1)
        out.update(bounds=(c0, r0, c1, r1), extent=extent, crs=crs)
    out["raster"] = raster
    if lo is not None and "instant" in lo:
        out["time_bounds"] = (_utc(lo["instant"]), _utc(hi["instant"]))
    return out


def _tile_layout(layout):
    tl = layout["tileLayout"]
    cols, rows, tw, th = (int(tl[k]) for k in ("layoutCols", "layoutRows", "tileCols", "tileRows"))
    if min(cols, rows, tw, th) < 1:
        raise CorruptLayer(f"GeoTrellis tileLayout {tl}: every count must be at least 1")
    return cols, rows, tw, th


def _extent(e):
    return tuple(float(e[k]) for k in ("xmin", "ymin", "xmax", "ymax"))


def _utc(millis):
    return _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc) + _dt.timedelta(milliseconds=int(millis))


def _tms_crs(t):
    """A tile matrix set's CRS as sfclayer.ingest names it (EPSG:3857, OGC:CRS84)."""
    from rasterio.crs import CRS

    auth = CRS.from_user_input(t.rasterio_crs).to_authority()
    return f"{auth[0]}:{auth[1]}" if auth else t.rasterio_crs.to_wkt()


def _same_crs(a, b):
    """Same CRS up to axis order (GeoTrellis' LatLng is lon/lat: EPSG:4326 as GDAL reads it, OGC:CRS84)."""
    if a == b:
        return True
    lonlat = {"EPSG:4326", "OGC:CRS84"}
    return a in lonlat and b in lonlat


def _tms_extent(t, zoom):
    """The extent of tile matrix ``zoom`` as sfclayer.ingest's Grid.from_tms computes it."""
    m = t.matrix(zoom)
    first = t.xy_bounds(0, 0, zoom)
    last = t.xy_bounds(m.matrixWidth - 1, m.matrixHeight - 1, zoom)
    return (float(min(first.left, last.left)), float(min(first.bottom, last.bottom)),
            float(max(first.right, last.right)), float(max(first.top, last.top)))


def _close(a, b, tile_width, tile_height):
    sx, sy = abs(tile_width) * _TOLERANCE, abs(tile_height) * _TOLERANCE
    return all(abs(u - v) <= s for u, v, s in zip(a, b, (sx, sy, sx, sy)))
