"""Progress on long work in the CLI (issue 37): Spark's console progress bar, each stage's tasks done of
total, is on in the ``sfclayer`` command and off with ``--quiet``. Captured from a real run (a child
process: the bar belongs to the SparkContext the command starts)."""

import os
import re
import subprocess
import sys

from .raster_sources import dem_tif  # noqa: F401 (fixture)

BAR = re.compile(r"\[Stage (\d+):[=> ]*\((\d+) \+ (\d+)\) / (\d+)\]")


def _ingest(tif, path, *flags):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return subprocess.run([sys.executable, "-m", "sfclayer", *flags, "ingest", tif, path, "--tms", "none",
                           "--tile-size", "64", "--partitions", "2"], capture_output=True, text=True, env=env,
                          timeout=600)


def test_cli_shows_spark_progress_reaching_the_total_and_quiet_silences_it(dem_tif, tmp_path):  # noqa: F811
    run = _ingest(dem_tif, str(tmp_path / "a"))
    assert run.returncode == 0, run.stderr[-2000:]
    assert "42 tiles planned" in run.stdout
    bars = [tuple(map(int, m.groups())) for m in BAR.finditer(run.stderr)]
    assert bars, run.stderr[-2000:]
    # a bar counts a stage's tasks against its total (done + running, never beyond it); how far a bar got
    # before its stage ended depends on the machine's speed (Spark redraws every 200 ms), so at least one
    # state shows tasks under way
    assert all(done + running <= total for _, done, running, total in bars), bars
    assert any(done + running > 0 for _, done, running, _ in bars), bars
    quiet = _ingest(dem_tif, str(tmp_path / "b"), "--quiet")
    assert quiet.returncode == 0, quiet.stderr[-2000:]
    assert not BAR.search(quiet.stderr), quiet.stderr[-2000:]
