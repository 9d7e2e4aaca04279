"""sfclayer benchmarks: ``make bench`` runs every study, ``make bench STUDY=lookup`` one
(``.venv/bin/python bench/run.py --study lookup``).

The studies are listed in studies.py (one line each). The shared ones write the same synthetic tiles
as an sfclayer layer, as Parquet written plainly and as Parquet sorted by the same Z index, then run
bounding-box queries (about 0.1 %, 1 % and 10 % of the layer), point look-ups (cold and warm, from
Python and through the JVM), batch look-ups, the tile-size and the MapFile index-interval studies,
side by side, and write their blocks of ``RESULTS.md`` (and ``results.png`` when boxes and look-ups
both ran). Studies that stand alone run in their own process and write their own blocks.

    .venv/bin/python bench/run.py                      # every study (2^14, 2^16, 2^18 tiles)
    .venv/bin/python bench/run.py --quick              # a small run, a minute or two
    .venv/bin/python bench/run.py --study boxes,lookup --sizes 12,14 --out /tmp/bench

See bench/README.md for what each number means.
"""

import argparse
import dataclasses
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import plots  # noqa: E402
import report as reporting  # noqa: E402
import studies  # noqa: E402
from boxes import COMPARATORS, LABELS  # noqa: E402,F401  (the smoke test reads these here)
from common import DEFAULT, QUICK, SMOKE, Config, Context, _perf, loadavg, machine_info, make_session, parse_sizes  # noqa: E402,F401
from points import BATCHES, POINT_METHODS, SHORT_POINT_LABELS  # noqa: E402,F401
from sizes import Size  # noqa: E402
from writes import WRITER_LABELS, WRITERS  # noqa: E402,F401

render_markdown = reporting.render_markdown
plot = plots.plot

# The studies of a plain `make bench`, in the order they run (each size's layers are shared).
SHARED = ["writes", "boxes", "lookup", "intervals", "tiles"]


def run(spark, cfg, work, log=print, only=None):
    """Run the shared studies ``only`` (default all) with ``spark``, files under ``work``; returns the report."""
    names = list(only or SHARED)
    modules = [m for m in (studies.load(n) for n in names) if m is not None and studies.is_shared(m)]
    rng = np.random.default_rng(cfg.seed)
    os.makedirs(work, exist_ok=True)
    report = {
        "config": dataclasses.asdict(cfg),
        "machine": machine_info(spark),
        "started": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "loadavg_start": loadavg(),
        "studies": names,
        "sizes": [],
        "intervals": None,
        "tile_sizes": None,
    }
    ctx = Context(spark, cfg, work, rng, log, report)
    t0 = _perf()
    per_size = [m for m in modules if hasattr(m, "per_size")]
    if cfg.warmup and per_size:
        import writes

        writes.warm_up(ctx)
        shutil.rmtree(os.path.join(work, "warmup"), ignore_errors=True)
    for n in cfg.sizes if per_size else ():
        size = Size(ctx, n)
        try:
            for m in per_size:
                m.per_size(ctx, size)
        finally:
            size.close()
        if len(size.entry) > 3:  # more than tiles/side/tile_bytes: some study measured this size
            report["sizes"].append(size.entry)
    for m in modules:
        if hasattr(m, "once"):
            m.once(ctx)
    report["seconds"] = _perf() - t0
    report["loadavg_end"] = loadavg()
    return report


def write_outputs(report, out_dir, command):
    """Rewrite the blocks of ``report``'s studies in ``out_dir``/RESULTS.md (others stay), and results.png."""
    os.makedirs(out_dir, exist_ok=True)
    md_path = reporting.write_blocks(reporting.blocks(report, command), os.path.join(out_dir, "RESULTS.md"))
    if reporting._sizes(report, "bbox") and reporting._sizes(report, "lookups"):
        plot(report, os.path.join(out_dir, "results.png"))
    return md_path


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--study", help="comma-separated studies to run (default: all); see bench/studies.py: "
                                   + ", ".join(studies.STUDIES))
    p.add_argument("--sizes", help="layer sizes: powers of two (14,16,18) or tile counts")
    p.add_argument("--quick", action="store_true", help="a small, fast run (2^10 and 2^12 tiles)")
    p.add_argument("--out", default=HERE, help="where RESULTS.md and results.png go (default: bench/)")
    p.add_argument("--work", help="scratch directory for the layers (default: a temporary directory)")
    p.add_argument("--json", help="also write the raw report as JSON here")
    p.add_argument("--intervals", help="index intervals to compare, e.g. 1,4,16,128")
    p.add_argument("--interval-size", help="tiles of the index-interval layer (power of two or count)")
    args = p.parse_args(argv)

    names = [s.strip() for s in args.study.split(",") if s.strip()] if args.study else list(studies.STUDIES)
    unknown = [s for s in names if s not in studies.STUDIES]
    if unknown:
        p.error(f"unknown study {', '.join(unknown)} (expected one of {', '.join(studies.STUDIES)})")
    missing = [s for s in names if not studies.available(s)]
    for s in missing:
        print(f"study {s}: bench/{studies.STUDIES[s][0]}.py is not there yet; skipped", flush=True)
    names = [s for s in names if s not in missing]
    shared = [s for s in names if studies.is_shared(studies.load(s))]
    alone = [s for s in names if s not in shared]

    cfg = QUICK if args.quick else DEFAULT
    if args.sizes:
        cfg = dataclasses.replace(cfg, sizes=parse_sizes(args.sizes))
    if args.intervals:
        cfg = dataclasses.replace(cfg, intervals=tuple(int(x) for x in args.intervals.split(",")))
    if args.interval_size:
        cfg = dataclasses.replace(cfg, interval_size=parse_sizes(args.interval_size)[0])
    args_text = " ".join(sys.argv[1:] if argv is None else argv)
    command = ".venv/bin/python bench/run.py" + (f" {args_text}" if args_text else " (= make bench)")

    failed = []
    if shared:
        work = args.work or tempfile.mkdtemp(prefix="sfclayer-bench-")
        spark = make_session()
        t = _perf()
        try:
            report = run(spark, cfg, work, log=lambda s: print(f"{_perf() - t:7.1f}s  {s}", flush=True), only=shared)
        finally:
            if not args.work:
                shutil.rmtree(work, ignore_errors=True)
        report["command"] = command
        path = write_outputs(report, args.out, command)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(report, f, indent=1, default=float)
        spark.stop()
        print(f"wrote {path} ({', '.join(shared)}) in {report['seconds'] / 60:.1f} min", flush=True)
    for s in alone:
        # A study of its own: its own process (and Spark session), its own block of RESULTS.md.
        script = os.path.join(HERE, studies.STUDIES[s][0] + ".py")
        # --quick reaches it as SFCLAYER_BENCH_QUICK=1 (its own flags are its own business).
        print(f"study {s}: {sys.executable} {os.path.relpath(script)}", flush=True)
        env = dict(os.environ, SFCLAYER_BENCH_QUICK="1" if args.quick else "")
        rc = subprocess.call([sys.executable, script], env=env)
        if rc != 0:
            failed.append(s)
    if failed:
        sys.exit(f"studies failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
