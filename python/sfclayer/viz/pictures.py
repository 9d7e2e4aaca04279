"""Pictures of layers (matplotlib, Agg backend): a layer's file layout, and a stitched query region.

* :func:`tile_files` maps tile keys to the data file holding them, from the layer's metadata alone
  (the files' names, which carry their first indexes, as readers use them, and the key index), with
  no data file opened.
* :func:`layout_picture` draws every tile of the key grid in its data file's colour, so the curve's
  locality shows: with Z-order or Hilbert, each file is a compact patch of the map; with row-major,
  a band of rows. Optionally the curve's path, a query box and the files the query read.
* :func:`region_picture` draws a raster stitched back from tiles, with the query box.

matplotlib is imported lazily, on the Agg backend, so importing this module costs nothing.

About 500 lines: the two pictures and the layout's geometry helpers, which serve only them.

Examples
--------
>>> import os, sfclayer, tempfile
>>> out = tempfile.mkdtemp()
>>> df = spark.range(1024).selectExpr("int(id % 32) AS col", "int(id DIV 32) AS row", "id AS value")
>>> sfclayer.write(df, out + "/layer", bounds=(0, 0, 31, 31), block_size=65536, partitions=2)
>>> with sfclayer.open(spark, out + "/layer") as layer:
...     info = layout_picture(layer.metadata, out + "/layout.png")
>>> info["grid_shape"], os.path.getsize(out + "/layout.png") > 0
((32, 32), True)
"""

import colorsys
import math
import os
import re

import numpy as np

from ..curves import key_index_from_json
from .._text import human_bytes
from ..errors import CorruptLayer
from ..grid import TileGrid

__all__ = ["tile_files", "file_colors", "layout_grid", "layout_picture", "region_picture"]

# Grids larger than this per axis are sampled (every k-th tile) for the layout picture.
MAX_CELLS_PER_AXIS = 1024
# The curve path and the borders between files are drawn up to this many tiles per axis.
MAX_PATH_CELLS = 128
MAX_BORDER_CELLS = 256


def _pyplot():
    import matplotlib

    if matplotlib.get_backend().lower() != "agg":
        matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


_DATA_FILE = re.compile(r"part-r-(\d{5,})-(\d+)")


def _first_index(name):
    """A data file's first index, from its name (``part-r-<partition>-<first index>``), as readers get it."""
    m = _DATA_FILE.fullmatch(name)
    if m is None:
        raise CorruptLayer(f"not an sfclayer data file name: '{name}' (expected part-r-<partition>-<first index>)")
    return int(m.group(2))


def _sorted_files(metadata):
    """The data files by first index (from their names), and those first indexes."""
    files = sorted(metadata.get("files") or [], key=lambda f: _first_index(f["name"]))
    first = np.array([_first_index(f["name"]) for f in files], dtype=np.int64)
    return files, first


def tile_files(metadata, cols, rows, times=None):
    """The data file that holds each tile key, by the readers' rule: from the files' names alone.

    A file's name carries its first index; a file holds the indexes from its first up to the next
    file's first (the metadata's per-file statistics are informational and not used). No data file
    is opened, so a key in a file's span may still be absent from the layer.

    Parameters
    ----------
    metadata : dict
        The layer's metadata document (``Layer.metadata``).
    cols, rows : array_like of int
        Tile keys, inside the layer's key bounds.
    times : array_like of int, optional
        Epoch microseconds, for space-time (z3) layers.

    Returns
    -------
    numpy.ndarray of int
        For each key, the position of its file in the files sorted by first index, or -1 where the
        key's index comes before every file's first index (the layer has no tile there).

    Examples
    --------
    >>> md = {"keyIndex": {"kind": "rowmajor", "colMin": 0, "rowMin": 0, "colMax": 9, "rowMax": 9},
    ...       "files": [{"name": "part-r-00001-50"}, {"name": "part-r-00000-3"}]}
    >>> tile_files(md, [0, 3, 9, 0], [0, 0, 4, 5]).tolist()   # indexes 0, 3, 49, 50
    [-1, 0, 0, 1]
    """
    ki = key_index_from_json(metadata["keyIndex"])
    idx = ki.index_array(np.asarray(cols, dtype=np.int64), np.asarray(rows, dtype=np.int64), times)
    _, first = _sorted_files(metadata)
    if first.size == 0:
        return np.full(idx.shape, -1, dtype=np.int64)
    return np.searchsorted(first, idx, side="right") - 1


def file_colors(n):
    """``n`` RGB colours in which neighbours along the curve (files i and i+1) differ clearly.

    Hues step by the golden angle; lightness and saturation alternate, so even many files stay
    distinguishable from their neighbours.
    """
    out = np.zeros((max(n, 0), 3))
    for i in range(n):
        h = (0.08 + i * 0.381966) % 1.0
        s = (0.55, 0.8, 0.65)[i % 3]
        v = (0.95, 0.75, 0.85)[(i // 3) % 3]
        out[i] = colorsys.hsv_to_rgb(h, s, v)
    return out


def layout_grid(metadata, time=None, present=None):
    """The key grid (sampled if huge) with each tile's file position.

    Parameters
    ----------
    metadata : dict
    time : int, optional
        Epoch microseconds of the time bin to draw (z3 layers; default the first bin).
    present : iterable of (col, row), optional
        The tiles that exist; other cells get -1. Without it, every cell inside some file's index
        range counts as present.

    Returns
    -------
    dict
        ``grid`` (2-D int array, rows × cols, -1 = no tile), ``cols`` and ``rows`` (the key of each
        grid column / row), ``step`` (sampling step, 1 when every tile is drawn).
    """
    ki = key_index_from_json(metadata["keyIndex"])
    b = ki.bounds
    step = max(1, math.ceil(max(b.width, b.height) / MAX_CELLS_PER_AXIS))
    cols = np.arange(b.col_min, b.col_max + 1, step, dtype=np.int64)
    rows = np.arange(b.row_min, b.row_max + 1, step, dtype=np.int64)
    cc, rr = np.meshgrid(cols, rows)
    times = None
    if ki.is_space_time:
        t = ki.time_bounds.min_micros if time is None else int(time)
        times = np.full(cc.shape, t, dtype=np.int64)
    grid = tile_files(metadata, cc, rr, times)
    if present is not None:
        mask = np.zeros(grid.shape, dtype=bool)
        for c, r in present:
            if (c - b.col_min) % step == 0 and (r - b.row_min) % step == 0:
                mask[(r - b.row_min) // step, (c - b.col_min) // step] = True
        grid = np.where(mask, grid, -1)
    return {"grid": grid, "cols": cols, "rows": rows, "step": step}


def _cell_geometry(metadata, cols, rows, step):
    """Axes extent and a function from (col, row) to the cell centre, in map units if there is an
    extent (row ``rowMin`` on top), else in key units."""
    ki = key_index_from_json(metadata["keyIndex"])
    b = ki.bounds
    grid = TileGrid.from_metadata(metadata)
    if grid is not None:
        tw, th = grid.tile_width, grid.tile_height

        def centre(c, r):
            return grid.xmin(np.asarray(c)) + tw / 2, grid.ymax(np.asarray(r)) - th / 2

        # The sampled grid's last cell may reach past the bounds; imshow spans whole cells.
        return ((grid.xmin(b.col_min), grid.xmin(cols[-1] + step), grid.ymax(rows[-1] + step), grid.ymax(b.row_min)),
                centre, (tw, th), True)

    def centre(c, r):
        return np.asarray(c, dtype=float), np.asarray(r, dtype=float)

    return ((b.col_min - 0.5, cols[-1] + step - 0.5, rows[-1] + step - 0.5, b.row_min - 0.5),
            centre, (1.0, -1.0), False)


def _borders(grid, extent):
    """Line segments between neighbouring cells of different files (in axes units)."""
    h, w = grid.shape
    x0, x1, y0, y1 = extent
    cw, ch = (x1 - x0) / w, (y1 - y0) / h  # y measured downwards from y1 (top)
    segs = []
    diff_h = (grid[:, 1:] != grid[:, :-1]) & ((grid[:, 1:] >= 0) | (grid[:, :-1] >= 0))
    for r, c in zip(*np.nonzero(diff_h)):
        x = x0 + (c + 1) * cw
        segs.append([(x, y1 - r * ch), (x, y1 - (r + 1) * ch)])
    diff_v = (grid[1:, :] != grid[:-1, :]) & ((grid[1:, :] >= 0) | (grid[:-1, :] >= 0))
    for r, c in zip(*np.nonzero(diff_v)):
        y = y1 - (r + 1) * ch
        segs.append([(x0 + c * cw, y), (x0 + (c + 1) * cw, y)])
    return segs


_KIND_NAMES = {"z": "Z-order", "z3": "Z-order 3D", "hilbert": "Hilbert", "rowmajor": "row-major"}


def _ltrb(extent, mapped):
    """(xmin, ymin, xmax, ymax) of an imshow extent (left, right, bottom, top)."""
    x0, x1, b, t = extent
    return (x0, min(b, t), x1, max(b, t)) if mapped else (x0, b, x1, t)


def _tinted(background, bext, grid, extent, colors):
    """The background image tinted by the colour of the file under each pixel, resampled to the
    grid's extent (at most 1600 px a side). Outside the background: light grey."""
    bg = np.asarray(background)
    if bg.dtype.kind in "ui":
        bg = bg.astype(np.float64) / float(np.iinfo(bg.dtype).max)
    if bg.ndim == 3:
        lum = 0.2126 * bg[..., 0] + 0.7152 * bg[..., 1] + 0.0722 * bg[..., 2]
    else:
        lum = bg.astype(np.float64)
    gh, gw = grid.shape
    x0, x1, yb, yt = extent  # imshow's (left, right, bottom, top): yt is the grid's first row
    width = int(min(1600, max(8 * gw, lum.shape[1])))
    height = int(min(1600, max(1, round(width * abs(yt - yb) / max(abs(x1 - x0), 1e-12)))))
    # Each output pixel's grid cell, and its coordinates (first output row = first grid row).
    gc = np.minimum((np.arange(width) * gw) // width, gw - 1)
    gr = np.minimum((np.arange(height) * gh) // height, gh - 1)
    xs = x0 + (np.arange(width) + 0.5) * (x1 - x0) / width
    ys = yt + (np.arange(height) + 0.5) * (yb - yt) / height
    bx0, by0, bx1, by1 = bext
    bh, bw = lum.shape
    # Background row 0 is at by1 (the north) in map units, at by0 (the smallest row) in key units.
    fy = (by1 - ys) / (by1 - by0) if yt > yb else (ys - by0) / (by1 - by0)
    fx = (xs - bx0) / (bx1 - bx0)
    pc = np.clip((fx * bw).astype(np.int64), 0, bw - 1)
    pr = np.clip((fy * bh).astype(np.int64), 0, bh - 1)
    lum = np.where(np.outer((fy >= 0) & (fy < 1), (fx >= 0) & (fx < 1)), lum[np.ix_(pr, pc)], 0.8)
    files = grid[np.ix_(gr, gc)]
    out = np.ones((height, width, 4))
    out[..., :3] = 0.97
    has = files >= 0
    shade = 0.42 + 0.58 * np.sqrt(np.clip(lum, 0, 1))
    out[has, :3] = colors[files[has]] * shade[has][:, None]
    return out


def _label_cell(cells):
    """The cell of a patch deepest inside it (farthest from its edge), nearest its centroid among
    equals: where a label reads as belonging to the patch."""
    rr = np.array([c[0] for c in cells])
    cc = np.array([c[1] for c in cells])
    r0, c0 = rr.min(), cc.min()
    mask = np.zeros((rr.max() - r0 + 3, cc.max() - c0 + 3), dtype=bool)
    mask[rr - r0 + 1, cc - c0 + 1] = True
    depth = np.zeros(mask.shape, dtype=np.int64)
    cur = mask.copy()
    while cur.any():
        depth += cur
        inner = cur.copy()
        inner[1:, :] &= cur[:-1, :]
        inner[:-1, :] &= cur[1:, :]
        inner[:, 1:] &= cur[:, :-1]
        inner[:, :-1] &= cur[:, 1:]
        cur = inner
    d = depth[rr - r0 + 1, cc - c0 + 1]
    dist = (rr - rr.mean()) ** 2 + (cc - cc.mean()) ** 2
    k = np.lexsort((dist, -d))[0]
    return int(rr[k]), int(cc[k])


def _components(grid):
    """Yield (file, [(row, col), ...]) for every 4-connected patch of equal non-negative cells."""
    h, w = grid.shape
    seen = np.zeros(grid.shape, dtype=bool)
    for r0 in range(h):
        for c0 in range(w):
            v = grid[r0, c0]
            if v < 0 or seen[r0, c0]:
                continue
            seen[r0, c0] = True
            todo, cells = [(r0, c0)], []
            while todo:
                r, c = todo.pop()
                cells.append((r, c))
                for rn, cn in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
                    if 0 <= rn < h and 0 <= cn < w and not seen[rn, cn] and grid[rn, cn] == v:
                        seen[rn, cn] = True
                        todo.append((rn, cn))
            yield int(v), cells


def layout_picture(metadata, out, *, present=None, time=None, background=None, background_extent=None,
                   query_box=None, files_read=None, curve=None, title=None, dpi=110):
    """Draw a layer's data-file layout over its tile grid, and save it as a PNG.

    Parameters
    ----------
    metadata : dict
        The layer's metadata (``Layer.metadata``).
    out : str
        The PNG file to write.
    present : iterable of (col, row), optional
        Tiles that exist (see :func:`layout_grid`).
    time : int, optional
        Epoch microseconds of the time bin drawn, for z3 layers (default the first).
    background : numpy.ndarray, optional
        An image (e.g. a thumbnail of the raster), drawn beneath the (then translucent) files.
    background_extent : tuple of float, optional
        ``(xmin, ymin, xmax, ymax)`` the background covers; default the whole grid's.
    query_box : tuple of float, optional
        ``(xmin, ymin, xmax, ymax)`` in the axes' units (map units with an extent), drawn dashed.
    files_read : iterable of str, optional
        Names of the files a query read: labelled in bold, the others faded.
    curve : bool, optional
        Draw the curve's path through the tiles; by default when the grid has at most
        ``MAX_PATH_CELLS`` tiles per axis.
    title : str, optional
    dpi : int

    Returns
    -------
    dict
        ``path``, ``files`` (number of data files), ``deltas`` (number of delta files, format 7: their
        index spans drawn dashed), ``grid_shape`` (rows, cols drawn), ``step``.
    """
    plt = _pyplot()
    from matplotlib.collections import LineCollection
    from matplotlib.patches import Rectangle

    files, _ = _sorted_files(metadata)
    ki = key_index_from_json(metadata["keyIndex"])
    lg = layout_grid(metadata, time=time, present=present)
    grid, cols, rows, step = lg["grid"], lg["cols"], lg["rows"], lg["step"]
    extent, centre, _, mapped = _cell_geometry(metadata, cols, rows, step)
    n = len(files)
    names = [f["name"] for f in files]
    read = set(os.path.basename(f) for f in files_read) if files_read is not None else None
    colors = file_colors(n)
    if read is not None:  # files the query did not read: washed out
        for i, nm in enumerate(names):
            if nm not in read:
                colors[i] = 0.3 * colors[i] + 0.7 * np.array([0.93, 0.93, 0.93])
    gh, gw = grid.shape

    aspect_data = (extent[1] - extent[0]) / max(abs(extent[3] - extent[2]), 1e-12)
    fig_w = 11.0
    fig_h = min(max(fig_w / max(aspect_data, 1e-3) * 0.92 + 1.3, 4.0), 14.0)
    fig, ax = plt.subplots(figsize=(fig_w, fig_h), dpi=dpi)
    ax.set_facecolor("#f7f7f7")
    if background is not None:
        image = _tinted(background, background_extent or _ltrb(extent, mapped), grid, extent, colors)
        ax.imshow(image, extent=extent, origin="upper", interpolation="antialiased", zorder=1)
    else:
        rgba = np.zeros(grid.shape + (4,))
        has = grid >= 0
        rgba[has, :3] = colors[grid[has]]
        rgba[has, 3] = 1.0
        ax.imshow(rgba, extent=extent, origin="upper", interpolation="nearest", zorder=1)

    if max(gh, gw) <= MAX_BORDER_CELLS:
        segs = _borders(grid, extent)
        if segs:
            ax.add_collection(LineCollection(segs, colors="black", linewidths=1.2 if max(gh, gw) <= 80 else 0.6,
                                             zorder=3))

    deltas = metadata.get("deltas") or []
    if deltas:  # format 7: the cells whose index a delta file's span holds (docs/FORMAT.md section 11)
        cc, rr = np.meshgrid(cols, rows)
        times = None
        if ki.is_space_time:
            times = np.full(cc.shape, ki.time_bounds.min_micros if time is None else int(time), dtype=np.int64)
        idx = ki.index_array(cc, rr, times)
        spans = np.zeros(idx.shape, dtype=bool)
        for d in deltas:
            spans |= (idx >= int(d["firstIndex"])) & (idx <= int(d["lastIndex"]))
        segs = _borders(np.where(spans, 0, -1), extent) if spans.any() else []
        if segs:
            ax.add_collection(LineCollection(segs, colors="#d6007e", linewidths=1.6, linestyles="--", zorder=5,
                                             label=f"spans of the {len(deltas)} delta files"))

    draw_curve = curve if curve is not None else max(gh, gw) <= MAX_PATH_CELLS
    if draw_curve and step == 1:
        cc, rr = np.meshgrid(cols, rows)
        sel = grid >= 0
        c_sel, r_sel = cc[sel], rr[sel]
        if c_sel.size > 1:
            times = None
            if ki.is_space_time:
                t = ki.time_bounds.min_micros if time is None else int(time)
                times = np.full(c_sel.shape, t, dtype=np.int64)
            order = np.argsort(ki.index_array(c_sel, r_sel, times), kind="stable")
            x, y = centre(c_sel[order], r_sel[order])
            lw = 0.9 if c_sel.size <= 1024 else 0.55
            ax.plot(x, y, color="#202020", linewidth=lw, alpha=0.3 if background is not None else 0.45, zorder=4,
                    label=f"{_KIND_NAMES.get(ki.kind, ki.kind)} curve through the tiles")
            ax.plot(x[:1], y[:1], "o", color="#202020", markersize=4, zorder=4)

    # Number every piece of each file (a file's index range can cover disconnected patches).
    if n and n <= 400 and max(gh, gw) <= MAX_BORDER_CELLS:
        font = 9 if n <= 40 else 7
        min_cells = max(2, int(0.004 * gh * gw))
        for i, cells in _components(grid):
            if len(cells) < min_cells and len(cells) < (grid == i).sum():
                continue
            r_lab, c_lab = _label_cell(cells)
            x, y = centre(cols[c_lab], rows[r_lab])
            bold = read is not None and names[i] in read
            ax.text(float(x), float(y), str(i), ha="center", va="center", fontsize=font + (1 if bold else 0),
                    fontweight="bold" if bold else "normal", color="black", zorder=8,
                    bbox=dict(boxstyle="round,pad=0.2", fc="#ffe14d" if bold else "white", ec="black" if bold else "none",
                              lw=0.6, alpha=0.9))

    if query_box is not None:
        qx0, qy0, qx1, qy1 = query_box
        ax.add_patch(Rectangle((qx0, qy0), qx1 - qx0, qy1 - qy0, fill=False, ec="red", lw=2.2, ls="--",
                               zorder=7, label="query box"))

    ax.set_xlim(extent[0], extent[1])
    ax.set_ylim(min(extent[2], extent[3]), max(extent[2], extent[3]))
    if not mapped:
        ax.invert_yaxis()
        ax.set_xlabel("col")
        ax.set_ylabel("row")
    else:
        crs = metadata.get("crs") or "map units"
        lonlat = str(crs).upper() in ("EPSG:4326", "OGC:CRS84", "CRS:84")
        ax.set_xlabel("longitude (°)" if lonlat else f"x ({crs})")
        ax.set_ylabel("latitude (°)" if lonlat else f"y ({crs})")
    if title is None:
        b = ki.bounds
        title = (f"{n} data files over {b.width} × {b.height} tiles ({_KIND_NAMES.get(ki.kind, ki.kind)}), "
                 f"{metadata.get('recordCount', '?')} tiles, {human_bytes(metadata.get('dataBytes', 0))}")
        if deltas:
            added = sorted({int(d["addedIn"]) for d in deltas})
            title += (f"\n+ {len(deltas)} delta files added in version{'s' if len(added) > 1 else ''} "
                      f"{', '.join(map(str, added))}, merged over them (dashed: their spans)")
        if read is not None:
            title += f"\nthe query box (red) read the {len(read & set(names))} files in yellow labels; the other {n - len(read & set(names))} were pruned by name"
        if step > 1:
            title += f"\n(every {step}th tile drawn)"
        if ki.is_space_time:
            from ..curves import format_micros
            t = ki.time_bounds.min_micros if time is None else int(time)
            title += f"\ntime bin of {format_micros(t)}"
    ax.set_title(title, fontsize=11)
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="lower center", ncol=len(handles), fontsize=9, frameon=False)
        fig.tight_layout(rect=(0, 0.035, 1, 1))
    else:
        fig.tight_layout()
    fig.savefig(out, dpi=dpi)
    plt.close(fig)
    return {"path": out, "files": n, "deltas": len(deltas), "grid_shape": grid.shape, "step": step}


def region_picture(image, extent, out, *, query_box=None, tile_boxes=None, points=None, title=None,
                   cmap="terrain", value_label=None, xlabel="x", ylabel="y", dpi=110):
    """Draw a raster region (e.g. stitched back from tiles) with the query box; save a PNG.

    Parameters
    ----------
    image : numpy.ndarray
        ``H × W`` (drawn with ``cmap`` and a colour bar) or ``H × W × 3|4`` (drawn as it is).
    extent : tuple of float
        ``(xmin, ymin, xmax, ymax)`` the image covers, in map units.
    out : str
    query_box : tuple of float, optional
        ``(xmin, ymin, xmax, ymax)``, drawn red and dashed.
    tile_boxes : iterable of tuple, optional
        Tile envelopes ``(xmin, ymin, xmax, ymax)``, drawn as a thin grid.
    points : iterable of (x, y, label), optional
        Labelled points.
    title : str, optional
    cmap : str
    value_label : str, optional
        The colour bar's label (single-band images).
    xlabel, ylabel : str
    dpi : int

    Returns
    -------
    str
        ``out``.
    """
    plt = _pyplot()
    from matplotlib.collections import LineCollection
    from matplotlib.patches import Rectangle

    x0, y0, x1, y1 = extent
    h, w = image.shape[:2]
    aspect = (x1 - x0) / max(y1 - y0, 1e-12)
    fig_w = 11.0
    fig_h = min(max(fig_w / max(aspect, 1e-3) * 0.9 + 1.0, 4.0), 14.0)
    fig, ax = plt.subplots(figsize=(fig_w, fig_h), dpi=dpi)
    if image.ndim == 2:
        shown = ax.imshow(image, extent=(x0, x1, y0, y1), origin="upper", cmap=cmap, interpolation="nearest")
        cb = fig.colorbar(shown, ax=ax, fraction=0.035, pad=0.02)
        if value_label:
            cb.set_label(value_label)
    else:
        ax.imshow(image, extent=(x0, x1, y0, y1), origin="upper",
                  interpolation="nearest" if max(h, w) <= 1500 else "antialiased")
    if tile_boxes:
        segs = []
        for bx0, by0, bx1, by1 in tile_boxes:
            segs += [[(bx0, by0), (bx1, by0)], [(bx1, by0), (bx1, by1)], [(bx1, by1), (bx0, by1)],
                     [(bx0, by1), (bx0, by0)]]
        ax.add_collection(LineCollection(segs, colors="white", linewidths=0.5, alpha=0.45, zorder=3))
    if query_box is not None:
        qx0, qy0, qx1, qy1 = query_box
        ax.add_patch(Rectangle((qx0, qy0), qx1 - qx0, qy1 - qy0, fill=False, ec="red", lw=2.2, ls="--",
                               zorder=5, label="query box"))
    for px, py, label in points or ():
        ax.plot([px], [py], "o", color="yellow", mec="black", markersize=6, zorder=6)
        ax.annotate(label, (px, py), xytext=(5, 5), textcoords="offset points", fontsize=9,
                    color="black", zorder=6,
                    bbox=dict(boxstyle="round,pad=0.2", fc="white", ec="none", alpha=0.8))
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize=11)
    if query_box is not None:
        ax.legend(loc="lower left", fontsize=8, framealpha=0.85)
    fig.tight_layout()
    fig.savefig(out, dpi=dpi)
    plt.close(fig)
    return out
