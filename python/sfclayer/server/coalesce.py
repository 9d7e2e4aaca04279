"""Request coalescing: tile look-ups arriving within a short window go to the JVM as one
``get_many``, keys sorted by space-filling-curve index, so each data file is read once, in order.

Seed 000's idea ("an actor-based caching layer to re-order the requests and read MapFiles in
order"), on asyncio, as a group commit: a request that finds no look-up of its layer under way goes
at once (no added latency when the server is quiet); requests arriving while one is under way
gather, and go together when it finishes or when the window has passed since the first of them
(or the batch is full). The distinct keys of a batch are looked up in one ``get_many`` on a worker
thread and each request gets its tile. A window of 0 sends each request on its own.

A key whose look-up fails (a damaged data file) fails its own requests only: the batch's failed
keys are looked up again one by one (the JVM stops a batch at its first failing file, so keys after
it failed only by company), and each request gets its tile or its key's error.
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
        Longest wait, in seconds, of a request that found a look-up under way; 0 disables coalescing.
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
        self.inflight = 0
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
        if self.inflight == 0 or len(self._pending) >= self.max_batch:
            self._flush()
        elif self._handle is None:
            self._handle = loop.call_later(self.window, self._flush)
        return await future

    def _look_up(self, keys):
        """Tiles (or None, or the key's error) for ``keys``; a failed key is retried alone."""
        get_many = self.layer.layer.get_many
        tiles = get_many(keys, errors_as_values=True)
        if len(keys) > 1:
            for i, tile in enumerate(tiles):
                if isinstance(tile, Exception):
                    tiles[i] = get_many([keys[i]], errors_as_values=True)[0]
        return tiles

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
        self.inflight += 1
        loop = asyncio.get_running_loop()
        done = loop.run_in_executor(self.executor, self._look_up, keys)

        def deliver(task):
            self.inflight -= 1
            if self._pending and self.inflight == 0:
                self._flush()  # the requests that gathered meanwhile go now
            cancelled = task.cancelled()  # the server is stopping
            error = None if cancelled else task.exception()
            tiles = None if cancelled or error is not None else task.result()
            for i, key in enumerate(keys):
                for future in pending[key]:
                    if future.done():  # the request went away (client disconnected)
                        continue
                    if cancelled:
                        future.cancel()
                    elif error is not None:
                        future.set_exception(error)
                    elif isinstance(tiles[i], Exception):
                        future.set_exception(tiles[i])
                    else:
                        future.set_result(tiles[i])

        done.add_done_callback(deliver)
