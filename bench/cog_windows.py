"""The warm window rows of bench/cog.py (issue 33): the same box again and a new box each read, each
reader in turn, and the code before a change read in a child process (``--before``); the copies alone.

The child: ``SFCLAYER_BENCH_CODE=DIR/python python bench/cog_windows.py LAYER COG REPS`` opens the layer
in-process with the code of DIR and answers each line of stdin with its :func:`layer_window_reads`.
"""

import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if __name__ == "__main__":  # the child of --before reads through the code before: its python/ directory
    sys.path[:0] = [HERE, ROOT, os.environ["SFCLAYER_BENCH_CODE"]]

import numpy as np  # noqa: E402

__all__ = ["WIDTH", "HEIGHT", "TILE", "EXTENT", "PX", "WINDOW", "SHIFTS", "window_reads", "cog_window_reads",
           "layer_window_reads", "Before", "copy_floor"]

WIDTH, HEIGHT, TILE = 10800, 5400, 256
EXTENT = (-180.0, -90.0, 180.0, 90.0)
PX = 360.0 / WIDTH  # degrees per pixel, both axes
WINDOW = (5000, 1500, 1080, 540)  # col0, row0, width, height: 1 % of the raster, not tile-aligned

#: (columns, rows) the window is moved by for "a new box each read": 97 places, more than a reader keeps plans of
SHIFTS = [((k * 37) % 97, (k * 11) % 97) for k in range(97)]


def _p50(fn, reps):
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def _window_bbox(shift=(0, 0)):
    """The bbox of WINDOW (moved by ``shift`` pixels), a quarter pixel inside its edges (so it meets exactly
    its pixels)."""
    c0, r0, w, h = WINDOW
    c0, r0 = c0 + shift[0], r0 + shift[1]
    q = PX / 4
    return (EXTENT[0] + c0 * PX + q, EXTENT[3] - (r0 + h) * PX + q, EXTENT[0] + (c0 + w) * PX - q, EXTENT[3] - r0 * PX - q)


def _tile_array(tile):
    from sfclayer import raster

    return np.asarray(raster.to_numpy(tile))


def _window_array(layer, bbox):
    if hasattr(layer, "to_numpy"):
        return np.asarray(layer.to_numpy(bbox))
    return np.asarray(layer.to_xarray(bbox).values)  # before to_numpy (issue 33): through xarray


def _shifted(shift):
    return (WINDOW[0] + shift[0], WINDOW[1] + shift[1], WINDOW[2], WINDOW[3])


def window_reads(read, reps):
    """p50 ms of ``read(shift)`` for the same window again, and for a new place each read (every place read
    once before, so every tile is warm)."""
    for sh in SHIFTS:
        read(sh)
    same = _p50(lambda: read((0, 0)), reps)
    it = iter(SHIFTS * (reps // len(SHIFTS) + 2))
    return {"window": same, "window_new": _p50(lambda: read(next(it)), reps)}


def cog_window_reads(src, reps):
    from rasterio.windows import Window

    return window_reads(lambda sh: src.read(window=Window(*_shifted(sh))), reps)


def layer_window_reads(layer, src, reps):
    """:func:`window_reads` of a layer, every place's pixels first checked against the COG's."""
    from rasterio.windows import Window

    for sh in SHIFTS:
        got = _window_array(layer, _window_bbox(sh))
        assert np.array_equal(got, src.read(window=Window(*_shifted(sh)))), sh
    return window_reads(lambda sh: _window_array(layer, _window_bbox(sh)), reps)


def child_windows(path, cog_path, reps):
    """--before's child: opens the layer in-process with the code on its path, then answers each line of
    stdin with the JSON of :func:`layer_window_reads`."""
    import rasterio

    import sfclayer

    with rasterio.open(cog_path) as src, sfclayer.open(path) as layer:
        print(json.dumps({"ready": True}), flush=True)
        for _ in sys.stdin:
            print(json.dumps(layer_window_reads(layer, src, reps)), flush=True)


class Before:
    """The in-process reader of the code before, in a child process: ``reads()`` is one round's figures."""

    def __init__(self, code, path, cog_path, reps):
        import subprocess

        env = dict(os.environ, SFCLAYER_BENCH_CODE=os.path.join(os.path.abspath(code), "python"))
        env.pop("PYTHONPATH", None)
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), path, cog_path, str(reps)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        assert json.loads(self.proc.stdout.readline())["ready"]

    def reads(self):
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(30)


def copy_floor(layer, bbox, reps):
    """p50 ms of the window's numpy copies alone (the same cached tiles, no reader): as 3-d slices, and (where
    the code has it) as the reader's plan copies them, rows of bytes (``WindowPlan.run``)."""
    from sfclayer import _windows
    from sfclayer._windows import Window

    w = Window(layer._window_metadata(), bbox)
    b = w.grid.bounds
    jobs = []
    for t in layer._window_tiles(w.keys):
        t, a = t if isinstance(t, tuple) else (t, _tile_array(t))
        x0, y0 = (t["col"] - b.col_min) * w.tw, (t["row"] - b.row_min) * w.th
        a0, a1, c0, c1 = max(w.i0, x0), min(w.i1, x0 + a.shape[2]), max(w.j0, y0), min(w.j1, y0 + a.shape[1])
        jobs.append((a, (slice(None), slice(c0 - w.j0, c1 - w.j0), slice(a0 - w.i0, a1 - w.i0)),
                     (slice(None), slice(c0 - y0, c1 - y0), slice(a0 - x0, a1 - x0))))
    shape = (jobs[0][0].shape[0], w.j1 - w.j0, w.i1 - w.i0)

    def copies():
        out = np.empty(shape, jobs[0][0].dtype)
        for a, dst, src in jobs:
            out[dst] = a[src]

    copies()
    out = {"slices": _p50(copies, reps)}
    if hasattr(_windows, "WindowPlan"):
        plan = _windows.WindowPlan.of(w, list(layer._window_tiles(w.keys)))
        out["rows"] = _p50(plan.run, reps)
    return out


if __name__ == "__main__":
    child_windows(sys.argv[1], sys.argv[2], int(sys.argv[3]))
