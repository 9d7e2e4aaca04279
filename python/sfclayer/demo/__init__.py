"""The demo (``sfclayer demo``, ``make demo``): a real raster through a layer and back.

:mod:`~sfclayer.demo.sources` loads the rasters and cuts them into tiles; :mod:`~sfclayer.demo.run`
writes, queries and looks them up, and draws the pictures (with :mod:`sfclayer.viz`).
"""

from .run import DemoResult, run_demo, scan_report
from .sources import SOURCES, Raster, load_raster, stitch, tile_pixels, tile_table

__all__ = ["Raster", "SOURCES", "load_raster", "tile_table", "tile_pixels", "stitch", "scan_report", "run_demo", "DemoResult"]
