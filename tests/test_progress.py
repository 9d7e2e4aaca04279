"""Progress on long work (issue 37): sfclayer's bar (module sfclayer._progress) counts the tasks of the
Spark jobs an operation runs, with rate and time left; on in the ``sfclayer`` command and off with
``--quiet``; in Python shown with ``quiet=False`` (or on a terminal/notebook by default) and never with
``quiet=True``. Captured from real runs: the last state of a bar is its final count, which must reach
its total."""

import os
import re
import subprocess
import sys

import pytest

import sfclayer
from sfclayer import _progress

from .raster_sources import dem_tif  # noqa: F401 (fixture)

# tqdm's bar: "ingest 42 tiles: 100%|██████████| 6/6 [00:03<00:00,  1.93task/s]"
BAR = re.compile(r"([^\r\n|]+?): +(\d+)%\|[^|]*\| (\d+)/(\d+) \[[0-9:]+<[0-9:?]+, *([0-9.?]+)(?:s/)?(?:task|file)")
SPARK_BAR = re.compile(r"\[Stage \d+:")


def _bars(text):
    """The last state of each bar in ``text`` (label -> (done, total)); tqdm redraws with \\r."""
    last = {}
    for m in BAR.finditer(text):
        last[m.group(1).strip()] = (int(m.group(3)), int(m.group(4)))
    return last


def _cli(*args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    env.pop("SFCLAYER_QUIET", None)
    return subprocess.run([sys.executable, "-m", "sfclayer", *args], capture_output=True, text=True, env=env,
                          timeout=600)


def test_cli_shows_progress_reaching_the_total_and_quiet_silences_it(dem_tif, tmp_path):  # noqa: F811
    base = str(tmp_path / "a")
    run = _cli("ingest", dem_tif, base, "--zoom", "9", "--partitions", "2")
    assert run.returncode == 0, run.stderr[-2000:]
    planned = int(re.search(r"(\d+) tiles planned", run.stdout).group(1))
    bars = _bars(run.stderr)
    # one bar, labelled with the planned tile count, whose count reached its total; not Spark's bar
    assert list(bars) == [f"ingest {planned} tiles"], run.stderr[-2000:]
    done, total = bars[f"ingest {planned} tiles"]
    assert done == total > 0, run.stderr[-2000:]
    assert not SPARK_BAR.search(run.stderr), run.stderr[-2000:]
    # a pyramid: one bar per level, coarsest last, each complete
    run = _cli("pyramid", base, "--min-zoom", "7")
    assert run.returncode == 0, run.stderr[-2000:]
    bars = _bars(run.stderr)
    assert list(bars) == ["pyramid level 8", "pyramid level 7"], run.stderr[-2000:]
    assert all(d == t > 0 for d, t in bars.values()), bars
    quiet = _cli("--quiet", "ingest", dem_tif, str(tmp_path / "b"), "--zoom", "9", "--partitions", "2")
    assert quiet.returncode == 0, quiet.stderr[-2000:]
    assert not _bars(quiet.stderr) and "task" not in quiet.stderr, quiet.stderr[-2000:]


def _last(capsys):
    return _bars(capsys.readouterr().err)


def test_python_api_bars_reach_their_totals_and_quiet_silences_them(spark, dem_tif, tmp_path, capsys,  # noqa: F811
                                                                     monkeypatch):
    monkeypatch.delenv("SFCLAYER_QUIET", raising=False)
    path = str(tmp_path / "dem")
    r = sfclayer.ingest(spark, dem_tif, path, zoom=9, partitions=2, quiet=False)
    bars = _last(capsys)
    # ingest's bar alone (its write draws none of its own), complete
    label = f"ingest {r.candidates} tiles"
    assert list(bars) == [label] and bars[label][0] == bars[label][1] > 0, bars
    assert sfclayer.pyramid(spark, path, min_zoom=7, quiet=False) == [7, 8]
    bars = _last(capsys)
    assert list(bars) == ["pyramid level 8", "pyramid level 7"] and all(d == t > 0 for d, t in bars.values()), bars
    other = str(tmp_path / "other")
    sfclayer.write(spark.range(0, 64, 1, 4).selectExpr("int(id % 8) AS col", "int(id DIV 8) AS row", "id AS v"),
                   other, bounds=(0, 0, 7, 7), partitions=4, quiet=False)
    sfclayer.compact(spark, other, quiet=False)  # four small files: one rewritten
    assert sfclayer.verify(spark, path, quiet=False).clean
    bars = _last(capsys)
    assert list(bars) == [f"write {other}", f"compact {other}", f"verify {path}"], bars
    assert all(d == t > 0 for d, t in bars.values()), bars
    # vacuum runs no Spark tasks: its bar counts the removals the JVM makes (compaction left 4 files)
    report = sfclayer.vacuum(spark, other, retain=0, enforce_retention=False, quiet=False)
    assert len(report["filesRemoved"]) == 4, report
    bars = _last(capsys)
    assert list(bars) == [f"vacuum {other}"] and bars[f"vacuum {other}"][0] == bars[f"vacuum {other}"][1] >= 4, bars
    # quiet=True: nothing on stderr; the default (None) under pytest (stderr not a terminal, no notebook)
    # shows nothing either, nor with SFCLAYER_QUIET=1 when stderr is a terminal
    assert sfclayer.verify(spark, path, quiet=True).clean
    assert sfclayer.verify(spark, path).clean
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(_progress, "_is_tty", lambda stream: True)
    assert _progress.enabled()
    monkeypatch.setenv("SFCLAYER_QUIET", "1")
    assert not _progress.enabled() and _progress.enabled(quiet=False)


def test_a_users_own_action_and_an_enclosing_quiet(spark, tmp_path, capsys):
    # sfclayer.progress around an action sfclayer does not run (a zonal statistics DataFrame's collect):
    # the tasks of every stage its jobs ran, the shuffle's included
    df = spark.range(0, 1000, 1, 5).selectExpr("id % 7 AS k").groupBy("k").count()
    with sfclayer.progress(spark, "groups", quiet=False):
        assert len(df.collect()) == 7
    (done, total), = _last(capsys).values()
    assert done == total >= 5
    # inside a quiet operation, the operations it calls draw nothing either
    with sfclayer.progress(spark, "outer", quiet=True):
        sfclayer.write(spark.range(4).selectExpr("int(id) AS col", "0 AS row", "id AS v"), str(tmp_path / "x"),
                       bounds=(0, 0, 3, 0), quiet=False)
    assert capsys.readouterr().err == ""


def test_connect_bar_follows_the_servers_progress_reports(connect, tmp_path, capsys):
    # a job long enough for the server's progress reports (every 2 s): the bar reaches its total
    df = connect.range(0, 8, 1, 8).selectExpr("int(id) AS col", "0 AS row",
                                              "reflect('java.lang.Thread', 'sleep', bigint(700)) AS v")
    path = str(tmp_path / "c")
    sfclayer.write(df, path, bounds=(0, 0, 7, 0), quiet=False)
    err = capsys.readouterr().err
    bars = _bars(err)
    assert list(bars) == [f"write {path}"] and bars[f"write {path}"][0] == bars[f"write {path}"][1] >= 8, err


def test_demo_prints_its_report_lines_whole_with_complete_bars_between_them(spark, tmp_path):
    # `make demo` (sfclayer demo): stdout and stderr in one stream, as a terminal shows them; every line,
    # as the terminal leaves it (the text after its last carriage return), is a report line or a
    # finished bar, never a bar cut into a report line
    import contextlib
    import io

    from sfclayer import cli

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        assert cli.main(["demo", "--source", "jacksboro", "--tile-size", "48", "--out", str(tmp_path)],
                        spark_factory=lambda: (spark, False)) == 0
    lines = [line.split("\r")[-1] for line in out.getvalue().split("\n") if line.strip()]
    bars = [line for line in lines if "task" in line and "|" in line]
    assert [b.split(":")[0] for b in bars] == [f"ingest {9 * 8} tiles", "zonal statistics"], lines
    assert all(d == t > 0 for d, t in _bars("\n".join(bars)).values()), bars
    report = [line for line in lines if line not in bars]
    assert all(re.match(r"(\[\d/\d\] |      |done in )", line) for line in report), report
    assert report[0].startswith("[0/6] start Spark") and any(line.startswith("[6/6] draw the pictures")
                                                             for line in report)
    assert any("identical to the source pixels" in line for line in report)
    assert report[-1].startswith("done in ") and "matches the source" in report[-1]
    assert os.path.exists(tmp_path / "region.png") and os.path.exists(tmp_path / "layout.png")
