"""Streaming queries killed for real, again and again (issue 38, Tests, "Streaming").

A writer process (tests/scripts/stream_writer.py: its own Spark application) runs two queries side by
side, each from a rate-limited, deterministic source of tiles (batch ``b`` always the source values
``b*ROWS .. (b+1)*ROWS - 1``) into its own layer with its own checkpoint: ``sink``
(``writeStream.format("sfclayer")``) and ``foreach`` (``foreachBatch`` with the write options
``txnAppId``/``txnVersion``); the sink's batches are delta appends, with an automatic compaction
after every third. The test kills the process with SIGKILL and starts it again from the same
checkpoints, over and over, then lets it finish. Kill points, drawn from a seed:

* ``published``: right after one query's version of batch ``b`` was published and before Spark's
  checkpoint recorded it (``commits/b``): the test jar's io.sfclayer.testing.StallingCheckpointFileManager
  holds that checkpoint file back, and the test kills the process once the layer holds ``b`` and the
  checkpoint does not; the restarted query re-runs ``b``, which must not be written again (the other
  query is wherever it is then);
* ``before-publish`` and ``after-publish``: inside the sink's commit, at a chosen filesystem call (the
  test jar's io.sfclayer.testing.StallingCommitFs, the writer's local filesystem, stalls there once):
  after the batch's delta files were written and before its document is written and linked (nothing
  published: the replay writes the batch again), and after the document was published and before the
  hint ``_last_version`` (the replay must find the batch in the layer through the stale hint, and skip it);
* ``random``: a random while (0-1.5 s) after the run finished 0, 1 or 2 batches: during a replayed
  batch's planning, its tasks, the sink's commit (or an automatic compaction after it), the
  checkpoint's writes.

Between runs the test sometimes vacuums every old version (retain 0), and during a run it sometimes
vacuums one layer while the queries write to it (every version before the run): the (query id, batch
id) pairs must survive it. The reference is a dict model of the source: after every kill each new version of each
layer is checked against it, and at the end

* each layer holds exactly the model's tiles (tiles repeat across batches: a batch written twice, late
  or lost changes what it holds);
* the versions recording stream batches record batch ids 0, 1, 2, ... each once and in order, each
  holding the model after that batch (so each batch's tiles came in exactly one version); any other
  version is an automatic compaction holding what the version before it held;
* every retained version verifies clean; ``history`` shows each version's (query id, batch id); the
  sink reported each batch replayed after a ``published`` kill as skipped.

``SFCLAYER_STREAM_KILLS=N`` sets the number of kills (default 4, one of each kind; ``make races`` runs 30),
``SFCLAYER_STREAM_KILL_SEED=S`` replays a run's kill points (the seed is printed, and named by a
failure; where a random kill lands also depends on the machine's load).
"""

import datetime
import importlib.util
import json
import os
import queue
import random
import signal
import subprocess
import sys
import threading
import time

import pytest

import sfclayer
from tests import helpers

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts", "stream_writer.py")
_spec = importlib.util.spec_from_file_location("stream_writer", SCRIPT)
writer_script = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(writer_script)

ROWS = 20          # tiles a batch
START_TIMEOUT = 240  # seconds for a Spark application to start at a heavy load


class Writer:
    """One writer process: started at once, its queries only on :meth:`go` (Spark's start overlaps the
    previous writer's run)."""

    def __init__(self, root, batches, n):
        self.stall = os.path.join(root, "logs", f"stall-{n}")
        self.commit_stall = os.path.join(root, "logs", f"commit-stall-{n}")
        env = dict(os.environ, SFCLAYER_JAR=sfclayer.jar_path(), SFCLAYER_TEST_JAR=helpers.TEST_JAR,
                   SFCLAYER_TEST_STALL_FILE=self.stall, SFCLAYER_TEST_COMMIT_STALL_FILE=self.commit_stall,
                   SPARK_LOCAL_IP="127.0.0.1",
                   PYTHONPATH=os.pathsep.join([os.path.join(os.path.dirname(SCRIPT), "..", "..", "python"),
                                               os.environ.get("PYTHONPATH", "")]))
        self.log = os.path.join(root, "logs", f"writer-{n}.log")
        self.proc = subprocess.Popen([sys.executable, SCRIPT, root, str(batches), str(ROWS)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(self.log, "w"),
                                     env=env, text=True, start_new_session=True)
        self.lines = []
        self._queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.strip())
            self._queue.put(line.strip())
        self._queue.put(None)

    def wait_for(self, prefix, timeout=START_TIMEOUT):
        """Waits for a line starting with ``prefix``; returns it, or None when the process ended first."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._queue.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"writer printed no '{prefix}' in {timeout} s; its log: {self._tail()}")
            if line is None:
                return None
            if line.startswith(prefix):
                return line

    def go(self, stall=None, commit_stall=None):
        """Starts the queries; ``stall``: (query, batch) whose checkpoint commit is held back; ``commit_stall``:
        the part of a path inside the layers whose creation stalls the commit making it (StallingCommitFs)."""
        if stall is not None:
            with open(self.stall, "w") as f:
                f.write(f"/{stall[0]}-ckpt/commits/{stall[1]}")
        if commit_stall is not None:
            with open(self.commit_stall, "w") as f:
                f.write(commit_stall)
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def kill(self):
        """SIGKILL to the writer's process group: its Python and the Spark JVM it started, at once (killing
        the Python alone would let the JVM notice and shut down in order, running Spark's shutdown hooks);
        returns once every process of the group is gone."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the group this writer leads (start_new_session)
        except ProcessLookupError:
            pass  # it ended by itself
        self.proc.wait(60)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if not _group_alive(self.proc.pid):
                return
            time.sleep(0.02)
        raise AssertionError(f"the writer's processes (group {self.proc.pid}) outlived SIGKILL by 60 s")

    def end(self):
        """Kills the writer if it still runs (a failed test leaves none behind)."""
        if self.proc.poll() is None or _group_alive(self.proc.pid):
            self.kill()

    def finish(self):
        """Waits for the writer to end by itself, and checks it said so."""
        self.proc.stdin.close()
        assert self.wait_for("done", timeout=600) is not None, f"the writer failed: {self.lines}, {self._tail()}"
        assert self.proc.wait(120) == 0, self._tail()

    def _tail(self):
        with open(self.log) as f:
            return f.read()[-3000:]


def _group_alive(pgid):
    """Whether a process of group ``pgid`` still runs (zombies, dead but not reaped yet, do not count)."""
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue  # gone meanwhile
            if int(fields[2]) == pgid and fields[0] != "Z":
                return True
    return False


class Model:
    """The source as a dict, batch after batch; and the checks of each version against it."""

    def __init__(self, batches, app_id=None):
        self.after = []  # after[b]: the tiles after batches 0..b
        tiles = {}
        for b in range(batches):
            for v in range(b * ROWS, (b + 1) * ROWS):
                tiles[writer_script.tile_of(v)] = (v, b, writer_script.payload_of(v))
            self.after.append(dict(tiles))
        self.app_id = app_id
        self.checked = {}  # version -> batch id it holds (None: a compaction)
        self.last_batch = -1
        self.last_tiles = {}

    def check_new_versions(self, layer):
        """Checks every version published since the last call (oldest first) against the model."""
        for n in sorted(_version_numbers(layer)):
            if n in self.checked:
                continue
            assert n == max(self.checked, default=0) + 1, f"version {n} follows {max(self.checked, default=0)}"
            doc = _document(layer, n)
            op = doc.get("operation") or {"name": "write"}
            txn = op.get("transaction")
            tiles = _tiles(layer, n)
            if txn is None:
                assert op["name"] == "compact" and op.get("auto"), (n, op)
                assert tiles == self.last_tiles, f"version {n}, a compaction, changed the tiles"
            else:
                if self.app_id is None:
                    self.app_id = txn["appId"]
                batch = txn["txnVersion"]
                assert txn["appId"] == self.app_id, (n, txn)
                assert batch == self.last_batch + 1, (f"version {n} holds batch {batch}; the batch before it"
                                                      f" was {self.last_batch}: a batch twice or one lost")
                assert tiles == self.after[batch], f"version {n} (batch {batch}) differs from the model"
                self.last_batch, self.last_tiles = batch, tiles
            assert doc.get("transactions") == {self.app_id: self.last_batch}, (n, doc.get("transactions"))
            self.checked[n] = None if txn is None else txn["txnVersion"]


def _version_numbers(layer):
    d = os.path.join(layer, "_sfclayer")
    if not os.path.isdir(d):
        return []
    return [int(name[1:-5]) for name in os.listdir(d) if name.startswith("v") and name.endswith(".json")]


def _document(layer, n):
    with open(os.path.join(layer, "_sfclayer", f"v{n:08d}.json")) as f:
        return json.load(f)


def _tiles(layer, version):
    """The tiles of one version, read in-process (no JVM): {(col, row): (v, batch, payload)}."""
    with sfclayer.open(layer, version=version) as lyr:
        return {(t["col"], t["row"]): (t["v"], t["batch"], bytes(t["payload"])) for t in lyr.query()}


def _committed(ckpt):
    """The batch ids the checkpoint records as done."""
    d = os.path.join(ckpt, "commits")
    return {int(n) for n in os.listdir(d) if n.isdigit()} if os.path.isdir(d) else set()


def _wait_published(layer, ckpt, batch, writer, timeout=START_TIMEOUT):
    """Waits until the layer holds ``batch`` while the checkpoint does not (the stalled checkpoint commit)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        numbers = _version_numbers(layer)
        if numbers and max((_document(layer, max(numbers)).get("transactions") or {}).values(), default=-1) >= batch:
            assert batch not in _committed(ckpt), (
                f"checkpoint commit {batch} was not held back: is io.sfclayer.testing.StallingCheckpointFileManager"
                f" in the test jar {helpers.TEST_JAR} (make setup)?")
            return
        if writer.proc.poll() is not None:
            raise AssertionError(f"the writer ended before publishing batch {batch}: {writer._tail()}")
        time.sleep(0.02)
    raise AssertionError(f"batch {batch} not published in {timeout} s: {writer._tail()}")


#: The kill points inside the sink's commit: the file whose creation StallingCommitFs stalls at.
COMMIT_POINTS = {
    # the batch's delta files written (under data-<writeId>, with its _pending marker), its document not
    # yet written nor linked: nothing published, the replayed batch is written again
    "before-publish": "/sink-layer/_sfclayer/.tmp-",
    # the document published (linked), the hint _last_version not yet updated: the replayed batch is
    # found in the layer (its stale hint notwithstanding) and skipped
    "after-publish": "/sink-layer/_sfclayer/_last_version",
}


def _wait_commit_stall(writer, timeout=START_TIMEOUT):
    """Waits until the writer stalls inside the sink's commit; returns the path it stalls at."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.exists(writer.commit_stall + ".reached"):
            with open(writer.commit_stall + ".reached") as f:
                return f.read()
        if writer.proc.poll() is not None:
            raise AssertionError(f"the writer ended before its commit stalled: {writer._tail()}")
        time.sleep(0.02)
    raise AssertionError(f"the sink's commit did not stall in {timeout} s: {writer._tail()}")


def _hint(layer):
    """The version the hint ``_last_version`` names (0: none yet, or a hint caught while it is rewritten in
    place: empty or cut short, which readers also take as no hint, FORMAT.md section 6)."""
    try:
        with open(os.path.join(layer, "_sfclayer", "_last_version")) as f:
            return int(f.read())
    except (FileNotFoundError, ValueError):
        return 0


def _pending_dirs(layer):
    """The layer's write directories still marked in progress (``_pending``)."""
    if not os.path.isdir(layer):
        return set()
    return {d for d in os.listdir(layer) if d.startswith("data-") and os.path.exists(os.path.join(layer, d, "_pending"))}


def _kill_in_commit(kind, writer, layers, stalled, events, pending_before):
    """Kills the writer stalled at one of :data:`COMMIT_POINTS` of the sink's commit, checking it is there
    (``pending_before``: the write directories in progress before the run)."""
    layer = layers["sink"]
    at = _wait_commit_stall(writer)
    versions, pending = set(_version_numbers(layer)), _pending_dirs(layer) - pending_before
    writer.kill()
    assert set(_version_numbers(layer)) == versions, f"{kind}: a version was published after the stall"
    if kind == "before-publish":
        assert at.endswith(".json") and "/.tmp-" in at, at
        assert pending, f"{kind}: the batch's files (a new data-<writeId> with its _pending marker) are not written"
        events.append(f"killed inside the sink's commit before its document was published ({sorted(pending)})")
    else:
        newest = max(versions)
        assert _hint(layer) < newest, f"{kind}: the hint {_hint(layer)} already names version {newest}"
        batch = (_document(layer, newest).get("operation") or {}).get("transaction", {}).get("txnVersion")
        if batch is not None:  # the batch's own version (not the compaction after it): its replay is skipped
            stalled["sink"].append(batch)
        events.append(f"killed inside the sink's commit after version {newest} (batch {batch}) was published,"
                      f" before _last_version")


def _run(spark, root, rng, kinds, batches, layers, ckpts, models, writers, events, stalled, t0):
    """The runs of the writer, one per kind, each checked after it ended; returns the vacuums done."""
    vacuums = 0
    writer = writers[0]
    for i, kind in enumerate(kinds + ["finish"]):
        assert writer.wait_for("ready") is not None, writer._tail()
        ready = time.monotonic() - t0
        target = None
        if kind == "published":
            query = rng.choice(writer_script.QUERIES)
            # a batch the layer does not hold yet: the kill then follows its commit
            batch = max(max(_committed(ckpts[query]), default=-1), models[query].last_batch) + 1 + rng.randint(0, 1)
            target = (query, batch) if batch < batches else None
        pending_before = _pending_dirs(layers["sink"])
        writer.go(stall=target, commit_stall=COMMIT_POINTS.get(kind))
        went = time.monotonic()
        assert writer.wait_for("started") is not None, writer._tail()
        following = Writer(root, batches, i + 1) if kind != "finish" else None
        writers.append(following)
        if kind == "finish":
            writer.finish()
            events.append("finished")
        elif kind in COMMIT_POINTS:
            _kill_in_commit(kind, writer, layers, stalled, events, pending_before)
        elif target is not None:
            query, batch = target
            _wait_published(layers[query], ckpts[query], batch, writer)
            writer.kill()
            assert batch not in _committed(ckpts[query])
            stalled[query].append(batch)
            events.append(f"killed after {query} published batch {batch}")
        else:
            # after 0-2 batches of this run (the first is often a replay), at a random moment of what follows
            after, delay = rng.randint(0, 2), rng.uniform(0.0, 1.5)
            for _ in range(after):
                if writer.wait_for("batch ") is None:  # it ended: all batches done, or it failed
                    assert writer.proc.wait(60) == 0, f"the writer failed: {writer.lines} {writer._tail()}"
                    break
            vacuumed = ""
            if rng.random() < 0.5 and all(_version_numbers(layer) for layer in layers.values()):
                # a vacuum while the queries write: every version before this run goes (all checked
                # already), the newer ones stay for the checks after the kill
                vacuumed = rng.choice(writer_script.QUERIES)
                retain = datetime.timedelta(seconds=time.monotonic() - went + 5)
                sfclayer.vacuum(spark, layers[vacuumed], retain=retain, enforce_retention=False, quiet=True)
                vacuums += 1
                vacuumed = f" and a vacuum of {vacuumed}"
            time.sleep(delay)
            writer.kill()
            events.append(f"killed {delay:.2f} s after {after} batches{vacuumed} (checkpoints done to "
                          + ", ".join(f"{q} {max(_committed(c), default=-1)}" for q, c in ckpts.items()) + ")")
        killed = time.monotonic() - t0
        for q, layer in layers.items():
            models[q].check_new_versions(layer)
            # the newest version, the one a kill may have caught half-made, reads back clean
            if _version_numbers(layer):
                report = sfclayer.verify(spark, layer, quiet=True)
                assert report.clean, f"{q}: {report}"
            if kind != "finish" and rng.random() < 0.3 and _version_numbers(layer):
                sfclayer.vacuum(spark, layer, retain=0, enforce_retention=False)
                vacuums += 1
        events[-1] += f" (ready at {ready:.1f} s, ended at {killed:.1f} s, checked at {time.monotonic() - t0:.1f} s)"
        writer = following
    return vacuums


#: The kinds of kills, taken in this order (a run of N kills takes the first N, cycling), then shuffled.
KINDS = ("published", "before-publish", "after-publish", "random")


def run_kills(spark, root, seed, kills, batches):
    """Kills the writer ``kills`` times (kinds drawn from ``seed``), lets the last run finish, checks."""
    rng = random.Random(seed)
    os.makedirs(os.path.join(root, "logs"))
    layers = {q: os.path.join(root, f"{q}-layer") for q in writer_script.QUERIES}
    ckpts = {q: os.path.join(root, f"{q}-ckpt") for q in writer_script.QUERIES}
    models = {"sink": Model(batches), "foreach": Model(batches, writer_script.APP_ID)}
    kinds = [KINDS[i % len(KINDS)] for i in range(kills)]
    rng.shuffle(kinds)
    events, stalled = [], {q: [] for q in writer_script.QUERIES}
    t0 = time.monotonic()
    writer = Writer(root, batches, 0)
    writers = [writer]
    try:
        vacuums = _run(spark, root, rng, kinds, batches, layers, ckpts, models, writers, events, stalled, t0)
    finally:
        for w in writers:
            if w is not None:
                w.end()
    elapsed = time.monotonic() - t0

    for q, layer in layers.items():
        model = models[q]
        assert {(r["col"], r["row"]): (r["v"], r["batch"], bytes(r["payload"]))
                for r in sfclayer.read(spark, layer).collect()} == model.after[batches - 1], q
        batch_versions = sorted(b for b in model.checked.values() if b is not None)
        assert batch_versions == list(range(batches)), f"{q}: each batch in exactly one version"
        for n in sorted(_version_numbers(layer)):  # every retained version verifies clean
            report = sfclayer.verify(spark, layer, version=n, quiet=True)
            assert report.clean, f"{q} version {n}: {report}"
        hist = sfclayer.history(spark, layer)
        assert [(v.version, v.transaction) for v in hist] == [
            (n, None if model.checked[n] is None else {"appId": model.app_id, "txnVersion": model.checked[n]})
            for n in sorted(_version_numbers(layer))], q
    # the sink's batches killed between the layer's commit and the checkpoint's were replayed, and skipped
    replays = [line.split() for w in writers if w is not None for line in w.lines if line.startswith("batch sink ")]
    assert all(r[3] == "skipped" for r in replays if int(r[2]) in stalled["sink"]), replays
    # the sink's versions name its query, whose id the checkpoint kept across every restart
    started = {line.split()[2] for w in writers if w is not None
               for line in w.lines if line.startswith("started sink ")}
    assert started == {models["sink"].app_id}, started
    return {"events": events, "stalled": stalled, "vacuums": vacuums, "seconds": round(elapsed, 1),
            "versions": {q: len(m.checked) for q, m in models.items()}}


@pytest.fixture
def test_jar():
    if not os.path.exists(helpers.TEST_JAR):
        pytest.skip(f"the killed writer's checkpoint stall is in the test jar {helpers.TEST_JAR} (make setup)")


def test_streams_killed_again_and_again_write_every_batch_once(spark, tmp_path, test_jar):
    s = os.environ.get("SFCLAYER_STREAM_KILL_SEED")
    seed = int(s) if s else random.randrange(1_000_000_000)
    kills = int(os.environ.get("SFCLAYER_STREAM_KILLS", 4))
    print(f"\nstreaming kills: seed {seed} (replay: SFCLAYER_STREAM_KILL_SEED={seed}), {kills} kills")
    try:
        out = run_kills(spark, str(tmp_path), seed, kills, batches=2 * kills + 4)
    except AssertionError as e:
        raise AssertionError(f"streaming kills seed {seed} (replay: SFCLAYER_STREAM_KILL_SEED={seed}): {e}") from e
    print(out)
