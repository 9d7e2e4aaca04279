"""The tile grid of a layer with an extent: tiles' envelopes in map units, and the tiles a map box meets.

The one Python implementation of this rule, the twin of the JVM's ``io.sfclayer.layer.TileGrid``
(the scan's envelope columns and the ``bbox`` read option): the same arithmetic in the same order,
so both give the same answers bit for bit; ``tests/vectors/tilegrid.json`` holds golden cases both
test suites check, tiles that only touch a box's edges among them.

The extent covers the key bounds: tiles are ``(xmax - xmin) / width`` wide and
``(ymax - ymin) / height`` high, row ``row_min`` at the top (the raster convention).

Examples
--------
>>> g = TileGrid((0, 0, 10, 10), (0, 0, 9, 9))
>>> g.envelope(2, 7)
(2.0, 2.0, 3.0, 3.0)
>>> g.key_box(2, 2, 3, 3)          # tile (2, 7) and the eight tiles that touch it
KeyBounds(col_min=1, row_min=6, col_max=3, row_max=8)
>>> g.key_box(2.5, 2.5, 2.7, 2.7)
KeyBounds(col_min=2, row_min=7, col_max=2, row_max=7)
>>> g.key_box(11, 0, 12, 1) is None
True
"""

import math

from .curves import KeyBounds
from .errors import InvalidArgument

__all__ = ["TileGrid"]


class TileGrid:
    """The georeferencing of a layer's key grid.

    Parameters
    ----------
    extent : tuple of float or dict
        ``(xmin, ymin, xmax, ymax)``, or the metadata's ``{"xmin": .., "ymin": .., ...}``.
    bounds : KeyBounds or tuple of int
        The layer's key bounds ``(col_min, row_min, col_max, row_max)``.
    """

    __slots__ = ("bounds", "tile_width", "tile_height", "_x0", "_y1")

    def __init__(self, extent, bounds):
        if isinstance(extent, dict):
            extent = (extent["xmin"], extent["ymin"], extent["xmax"], extent["ymax"])
        xmin, ymin, xmax, ymax = (float(v) for v in extent)
        self.bounds = bounds if isinstance(bounds, KeyBounds) else KeyBounds(*bounds)
        self._x0 = xmin
        self._y1 = ymax
        #: Width and height of a tile in map units.
        self.tile_width = (xmax - xmin) / float(self.bounds.width)
        self.tile_height = (ymax - ymin) / float(self.bounds.height)

    @classmethod
    def from_metadata(cls, metadata):
        """The grid of a layer's metadata document, or ``None`` when the layer has no extent."""
        from .curves import key_index_from_json

        extent = metadata.get("extent")
        if not extent:
            return None
        return cls(extent, key_index_from_json(metadata["keyIndex"]).bounds)

    # Edges: the JVM's xAt / yAt, so the doubles are the same. Work on numpy arrays too.

    def xmin(self, col):
        return self._x0 + (col - self.bounds.col_min) * self.tile_width

    def xmax(self, col):
        return self.xmin(col) + self.tile_width

    def ymax(self, row):
        return self._y1 - (row - self.bounds.row_min) * self.tile_height

    def ymin(self, row):
        return self.ymax(row) - self.tile_height

    def envelope(self, col, row):
        """``(xmin, ymin, xmax, ymax)`` of tile ``(col, row)``."""
        return (self.xmin(col), self.ymin(row), self.xmax(col), self.ymax(row))

    def key_box(self, xmin, ymin, xmax, ymax):
        """The tiles whose closed envelope meets the closed map box (touching counts).

        Returns
        -------
        KeyBounds or None
            Within the key bounds; ``None`` when no tile meets the box.

        Raises
        ------
        InvalidArgument
            If a coordinate is NaN or the box is inverted.
        """
        box = [float(v) for v in (xmin, ymin, xmax, ymax)]
        text = ",".join(repr(v) for v in box)
        if any(math.isnan(v) for v in box):
            raise InvalidArgument(f"map box: {text} has a NaN coordinate (numbers xmin,ymin,xmax,ymax)")
        x0, y0, x1, y1 = box
        if x0 > x1 or y0 > y1:
            raise InvalidArgument(f"map box: {text} has a minimum above its maximum (xmin <= xmax and ymin <= ymax)")
        b = self.bounds
        # cols: xmax(col) >= x0 and xmin(col) <= x1; coordinates grow with the col
        c0 = b.col_min + _first_true(b.width, lambda k: self.xmin(b.col_min + k) + self.tile_width >= x0)
        c1 = b.col_min + _first_true(b.width, lambda k: not self.xmin(b.col_min + k) <= x1) - 1
        # rows: ymax(row) >= y0 and ymin(row) <= y1; coordinates shrink as the row grows
        r0 = b.row_min + _first_true(b.height, lambda k: self.ymax(b.row_min + k) - self.tile_height <= y1)
        r1 = b.row_min + _first_true(b.height, lambda k: not self.ymax(b.row_min + k) >= y0) - 1
        if c0 > c1 or r0 > r1:
            return None
        return KeyBounds(c0, r0, c1, r1)

    def key_at(self, x, y):
        """The tile ``(col, row)`` holding map point ``(x, y)``; a point outside the extent gives the
        nearest tile, a point on an edge between tiles the lower col and row.

        Examples
        --------
        >>> TileGrid((0, 0, 10, 10), (0, 0, 9, 9)).key_at(2.5, 7.5), TileGrid((0, 0, 10, 10), (0, 0, 9, 9)).key_at(-5, 50)
        ((2, 2), (0, 0))
        """
        b = self.bounds
        x = min(max(float(x), self.xmin(b.col_min)), self.xmax(b.col_max))
        y = min(max(float(y), self.ymin(b.row_max)), self.ymax(b.row_min))
        kb = self.key_box(x, y, x, y)
        return kb.col_min, kb.row_min

    def __repr__(self):
        return (f"TileGrid({self.bounds}, tiles {self.tile_width!r} x {self.tile_height!r} "
                f"from ({self._x0!r}, {self._y1!r}))")


def _first_true(n, p):
    """The smallest k in [0, n) where the monotone (false, then true) predicate holds; n if none."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) // 2
        if p(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo
