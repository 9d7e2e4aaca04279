"""Progress of sfclayer's long operations (issue 37): Spark's tasks done of total, with rate and time
left, as a tqdm bar in a terminal or a notebook.

One bar per operation (ingest, a pyramid level, a GeoTrellis conversion, zonal statistics, compact,
verify, write): it follows the Spark jobs the operation starts and counts their stages' tasks, the
total growing as stages are submitted (a stage Spark skips, its output already computed, is never
counted). Where the jobs come from:

* classic sessions: the operation's jobs carry a job group (the caller's own if the thread has one,
  else sfclayer's for the operation's time; local properties are per thread, pyspark pins Python
  threads to JVM threads) and a daemon thread polls ``SparkContext.statusTracker()`` for them;
* Spark Connect: a handler given to ``spark.registerProgressHandler`` receives the stages of each
  operation the server reports (every ``spark.connect.progress.reportInterval``, 2 s by default).

When it shows, ``quiet`` decides: ``True`` never; ``False`` always, from the first task (a log file
gets the bar too, redrawn at most every 10 s there); ``None`` (every operation's default) as the
process says: the ``sfclayer`` command's ``--quiet`` (:data:`DEFAULT_QUIET`), else ``SFCLAYER_QUIET=1``
silences every operation whose caller did not say otherwise, else the bar shows when stderr is a
terminal or the code runs in a Jupyter kernel, once the operation has run for a second (a quick one
prints nothing), and not in pipes, scripts' logs and test runs, where a redrawn line is noise. Inside
an operation's bar, the operations it calls (ingest's write) draw no bar of their own. A classic
session whose own ``spark.ui.showConsoleProgress`` is on already has Spark's bar on stderr: sfclayer
then draws none (two bars would overwrite each other); :func:`sfclayer.session` and the ``sfclayer``
command leave Spark's off.

tqdm (not rich): a dependency without dependencies, whose ``tqdm.notebook`` bar is a Jupyter widget
(with ipywidgets; a text line otherwise) and whose text bar is the same in a terminal and a log.
"""

import os
import sys
import threading
import time
from contextlib import contextmanager

from ._polling import polled  # noqa: F401 (the loop of the bars that ask for their counts)

__all__ = ["DEFAULT_QUIET", "enabled", "track", "Tracker"]

_DELAY = 1.0  # seconds before a bar shows by default (quiet=None): operations quicker than that print nothing

#: What ``quiet=None`` means in this process before the environment is asked: None (ask it), or a
#: bool the ``sfclayer`` command sets from ``--quiet``.
DEFAULT_QUIET = None

_active = threading.local()  # inside an operation's track(): nested operations draw no bar of their own


def _in_notebook():
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    try:
        ip = shell.get_ipython()
    except Exception:  # noqa: BLE001 - an IPython without a shell
        return False
    return ip is not None and "IPKernelApp" in getattr(ip, "config", {})


def _is_tty(stream):
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _columns(stream):
    """The terminal's width; 0 for a terminal of unknown size (``script``, some CI runners: tqdm would
    draw an empty line there); None for a file."""
    if not _is_tty(stream):
        return None
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, ValueError, OSError):
        return 0


def enabled(quiet=None):
    """Whether an operation called with ``quiet`` shows progress (module docstring)."""
    if quiet is None:
        quiet = DEFAULT_QUIET
    if quiet is not None:
        return not quiet
    if os.environ.get("SFCLAYER_QUIET", "").strip().lower() in ("1", "true", "yes", "on"):
        return False
    return _is_tty(sys.stderr) or _in_notebook()


def _bar_class():
    if _in_notebook():
        try:
            import ipywidgets  # noqa: F401 - tqdm.notebook's widget needs it
            from tqdm.notebook import tqdm
            return tqdm
        except ImportError:
            pass
    from tqdm import tqdm
    return tqdm


class Tracker:
    """A tqdm bar of the tasks of the stages that ran since it started (see :func:`track`). The bar is
    drawn from the first report of work to count: an operation that fails (or finishes) before any
    prints nothing, so a refused input stays one line."""

    def __init__(self, what, delay=0.0, unit="task"):
        self._what, self._delay, self._unit = what, delay, unit
        self._started = time.monotonic()
        self.bar = None
        self._stages = {}  # (key, stage id) -> [done, total]
        self._lock = threading.Lock()

    def _draw(self, total):
        tqdm = _bar_class()
        out = sys.stderr
        width = _columns(out)
        sized = {} if width != 0 else {"ncols": 80, "nrows": 24}  # tqdm draws nothing in 0 columns
        delay = max(0.0, self._delay - (time.monotonic() - self._started))  # counted from the operation's start
        self.bar = tqdm(total=total, desc=self._what, unit=self._unit, file=out, leave=True, dynamic_ncols=bool(width),
                        mininterval=0.2 if _is_tty(out) else 10.0, smoothing=0.1, delay=delay, **sized)

    def stages(self, key, stages):
        """Record the latest ``(stage id, tasks done, tasks)`` of the stages of ``key`` (a job, an
        operation) and redraw."""
        with self._lock:
            for sid, done, total in stages:
                self._stages[(key, sid)] = [min(done, total), total]
            done = sum(d for d, _ in self._stages.values())
            total = sum(t for _, t in self._stages.values())
            if self.bar is None:
                if total == 0:
                    return
                self._draw(total)
            if total != self.bar.total:
                _set_total(self.bar, total)
            if done != self.bar.n:
                self.bar.update(done - self.bar.n)

    def close(self, ok):
        with self._lock:
            if self.bar is None:
                return
            if ok and self.bar.total:  # a finished stage may not have reported its last tasks yet
                self.bar.update(self.bar.total - self.bar.n)
            self.bar.close()


def _set_total(bar, total):
    """A bar's new total, drawn with its next update (tqdm keeps to its mininterval). A notebook's bar
    (``tqdm.notebook``) is a widget whose length tqdm sets only when the bar is made or reset: its
    ``max`` follows here, or the widget would stay as long as the first stage's tasks."""
    bar.total = total
    container = getattr(bar, "container", None)
    children = getattr(container, "children", None)
    if children is not None and len(children) == 3:  # (label, IProgress, counts), tqdm.notebook's layout
        children[1].max = total


@contextmanager
def track(spark, what, quiet=None, follow=None, unit="task"):
    """Show the progress of the Spark jobs run inside the ``with`` block on stderr, as
    ``what: 40%|████ | 12/30 [00:05<00:07, 2.41task/s]`` (tasks done of total, elapsed, time left,
    rate); ``sfclayer.progress`` publicly, for actions sfclayer does not run itself (a zonal statistics
    DataFrame's ``collect``, a user's own write).

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
        Classic or Spark Connect.
    what : str
        The bar's label.
    quiet : bool, optional
        None: shown in a terminal or a notebook after a second, unless ``SFCLAYER_QUIET=1``; False:
        always, at once; True: never (module docstring).
    follow : callable, optional
        ``tracker -> context manager`` feeding the bar, for work that runs no Spark tasks (vacuum:
        :func:`polled`); by default the session's own job progress.
    unit : str
        What the bar counts.

    Yields
    ------
    Tracker or None
        The bar, or None when none is drawn.

    Examples
    --------
    >>> stats = sfclayer.zonal_stats(spark, "/layers/dem", zones)  # doctest: +SKIP
    >>> with sfclayer.progress(spark, "zonal statistics"):         # doctest: +SKIP
    ...     rows = stats.collect()
    """
    from . import _jvm

    if getattr(_active, "inside", False):  # an operation's inner one: its bar (or its silence) covers it
        yield None
        return
    _active.inside = True
    try:
        if not enabled(quiet) or spark is None or _jvm.transport(spark).console_bar_on():
            yield None
            return
        explicit = quiet is False or (quiet is None and DEFAULT_QUIET is False)
        tracker = Tracker(what, delay=0.0 if explicit else _DELAY, unit=unit)
        ok = False
        try:
            with (follow or _jvm.transport(spark).follow_progress)(tracker):
                yield tracker
            ok = True
        finally:
            tracker.close(ok)
    finally:
        _active.inside = False
