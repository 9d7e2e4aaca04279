"""The one polling loop of the progress bars that ask for their counts (sfclayer._progress): apart,
so that the transports can use it without importing the progress module, which imports them."""

import threading
from contextlib import contextmanager

__all__ = ["polled"]


@contextmanager
def polled(look, every=0.25, last=False):
    """Call ``look()`` every ``every`` seconds while the block runs (and once more after it, with
    ``last``): the one polling loop of the bars that ask for their counts (the status tracker of a
    classic session in :mod:`sfclayer._classic`; a vacuum's removals counted by the JVM). A failed look
    stops the polling; the work goes on."""
    stop = threading.Event()

    def loop():
        while not stop.wait(every):
            try:
                look()
            except Exception:  # noqa: BLE001 - a failed look only stops the bar
                return

    thread = threading.Thread(target=loop, name="sfclayer-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        if last:
            try:
                look()  # the last counts, so a finished operation's bar shows its true count
            except Exception:  # noqa: BLE001
                pass
