"""Pictures of layers (matplotlib, Agg backend), for the ``layout`` command, the demo and the tile server.

Everything lives in :mod:`sfclayer.viz.pictures` and is re-exported here.
"""

from .pictures import file_colors, layout_grid, layout_picture, region_picture, tile_files

__all__ = ["tile_files", "file_colors", "layout_grid", "layout_picture", "region_picture"]
