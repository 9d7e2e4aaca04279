"""Request coalescing: tile look-ups arriving within a short window go to the JVM as one
``get_many``, keys sorted by space-filling-curve index, so each data file is read once, in order.

Seed 000's idea ("an actor-based caching layer to re-order the requests and read MapFiles in
order"), on asyncio: the first request of a window arms a timer; when it fires (or the batch is
full) the distinct keys of every waiting request are looked up together on a worker thread and
each request gets its tile. A window of 0 sends each request on its own.
"""

import asyncio

__all__ = ["Coalescer"]


class Coalescer:
    """Gathers concurrent look-ups on one layer.

    Parameters
    ----------
    layer : ServedLayer
        ``layer.layer.get_many(keys)`` does the reading, ``layer.index(*key)`` orders the keys.
    executor : concurrent.futures.Executor
        Where the (blocking) look-ups run.
    window : float
        Seconds to wait for company after a batch's first request; 0 disables coalescing.
    max_batch : int
        A batch this big goes at once, without waiting out the window.
    """

    def __init__(self, layer, executor, window=0.002, max_batch=256):
        self.layer = layer
        self.executor = executor
        self.window = float(window)
        self.max_batch = int(max_batch)
        self._pending = {}   # key -> [futures]
        self._handle = None
        self.batches = 0     # counters, for the benchmark and tests
        self.requests = 0
        self.keys_read = 0

    async def get(self, key):
        """The tile at ``key`` (a dict of value columns), or None."""
        loop = asyncio.get_running_loop()
        self.requests += 1
        if self.window <= 0:
            self.batches += 1
            self.keys_read += 1
            return (await loop.run_in_executor(self.executor, self.layer.layer.get_many, [key]))[0]
        future = loop.create_future()
        self._pending.setdefault(key, []).append(future)
        if len(self._pending) >= self.max_batch:
            self._flush()
        elif self._handle is None:
            self._handle = loop.call_later(self.window, self._flush)
        return await future

    def _flush(self):
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        pending, self._pending = self._pending, {}
        if not pending:
            return
        keys = sorted(pending, key=lambda k: self.layer.index(*k))
        self.batches += 1
        self.keys_read += len(keys)
        loop = asyncio.get_running_loop()
        done = loop.run_in_executor(self.executor, self.layer.layer.get_many, keys)

        def deliver(task):
            error = task.exception()
            tiles = None if error is not None else task.result()
            for i, key in enumerate(keys):
                for future in pending[key]:
                    if future.done():  # the request went away (client disconnected)
                        continue
                    if error is not None:
                        future.set_exception(error)
                    else:
                        future.set_result(tiles[i])

        done.add_done_callback(deliver)
