"""One layer size, shared by the studies of a run: its tiles generated once, and the three layouts
(writes.py) written on first use of ``layers()``, their write figures recorded in the size's report
entry.
"""

import os
import shutil

import writes
from common import _perf, grid_side, source


class Size:
    """The layers of one size: data generated and the three layouts written on first use."""

    def __init__(self, ctx, n, name=None):
        self.ctx = ctx
        self.side = grid_side(n)
        self.n = self.side * self.side
        self.dir = os.path.join(ctx.work, name or f"n{self.n}")
        self.entry = {"tiles": self.n, "side": self.side, "tile_bytes": ctx.cfg.tile_bytes}
        self._df = self._parts = self._layers = None

    def data(self):
        """(cached DataFrame, partitions) of this size's tiles."""
        if self._df is None:
            t = _perf()
            self._df, self._parts = source(self.ctx.spark, self.side, self.ctx.cfg)
            self.entry["partitions"] = self._parts
            self.ctx.log(f"[{self.n} tiles] generated and cached in {_perf() - t:.1f} s ({self._parts} partitions)")
        return self._df, self._parts

    def layers(self):
        """(paths by layout, the sfclayer layer's metadata); the writes are recorded in ``entry``."""
        if self._layers is None:
            df, parts = self.data()
            paths, self.entry["writes"], md = writes.write_all(self.ctx.spark, df, self.side, parts, self.dir,
                                                               self.ctx.cfg)
            self.entry["sfclayer_files"] = md["fileCount"]
            self.ctx.log(f"[{self.n} tiles] writes: " + ", ".join(
                f"{w} {s['seconds']:.1f} s" for w, s in self.entry["writes"].items()))
            self._layers = paths, md
        return self._layers

    def close(self):
        if self._df is not None:
            self._df.unpersist()
            self._df = None
        shutil.rmtree(self.dir, ignore_errors=True)
